"""The torch device a ``device`` parameter names, checked once for every estimator and stage."""

from __future__ import annotations

import torch


def device_of(value) -> torch.device:
    """``value`` (a ``device`` parameter: ``None``, a name such as ``"cuda:1"``, or a
    ``torch.device``) as a ``torch.device`` (``None``: the CPU); a ``ValueError`` that says what to
    give where it names no device, or a CUDA device this PyTorch build cannot see."""
    if value is None:
        return torch.device("cpu")
    try:
        device = torch.device(value)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda', got {value!r}") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={value!r} was asked for but this PyTorch build sees no CUDA device "
                         f"(torch {torch.__version__}); use device='cpu'")
    return device
