"""Inference methods and their registry.

Each method is a ``torch.nn.Module`` with ``local_update`` (returns the batch objective),
``objective``, ``predict_f``, ``predict_proba``, ``config()`` and a ``TRAINING_STATE`` tuple
of buffer names needed only to continue training (see DESIGN.md). The estimator finds a
method by name in :data:`METHODS` and never branches on names itself.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from torch import nn

from .ep import ScalableEP

#: name -> factory ``(inducing_points, kernel, n_data, alpha, damping, site_storage) -> module``
METHODS: dict[str, Callable[..., nn.Module]] = {
    "ep": partial(ScalableEP, tied=False),
    "sep": partial(ScalableEP, tied=True),
}


def build_method(name: str, inducing_points, kernel, **config) -> nn.Module:
    """The method registered as ``name``; raises ``ValueError`` naming the registered ones."""
    try:
        factory = METHODS[name]
    except KeyError:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {name!r}") from None
    return factory(inducing_points, kernel, **config)


__all__ = ["METHODS", "ScalableEP", "build_method"]
