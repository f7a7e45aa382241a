"""What the trainer relies on in a method: :class:`TrainableMethod` (DESIGN.md, "Method interface").

Every registered method (:class:`~alphagp.methods.SparseGPMethod`) and the deep GP
(:class:`~alphagp.methods.dgp.DeepGP`) satisfy it; the contract tests check each registry entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import torch

from ..objective import ObjectiveTerms


@runtime_checkable
class TrainableMethod(Protocol):
    """A torch module the :class:`~alphagp.training.Trainer` fits.

    ``local_update(X, y, idx)`` refines what it updates in closed form on the batch (rows ``idx``
    of the training set) and returns the batch objective's terms; the optimiser steps on the
    module's parameters. ``capabilities`` says how the batch may be split and optimised;
    ``reducer`` is set by the trainer for a data-parallel fit; ``n_classes`` and
    ``PROCESS_COUNTERS`` are read in a class split and after a data-parallel fit."""

    reducer: object
    PROCESS_COUNTERS: tuple[str, ...]

    @property
    def capabilities(self): ...

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms: ...

    def parameters(self, recurse: bool = True) -> Iterator[torch.nn.Parameter]: ...

    def modules(self) -> Iterator[torch.nn.Module]: ...

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, torch.Tensor]]: ...

    def state_dict(self, *args, **kwargs) -> dict: ...

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False): ...
