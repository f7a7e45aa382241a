"""Data-parallel training on ``torch.distributed``.

Every process runs the same fit on the same rows (a memory-map costs nothing to share): the
global mini-batch order is the same everywhere, and each process computes the share of each
global batch given by :func:`local_share`, reading only those rows. Per step, the batch's
contributions are summed across processes with all-reduce:

* the objective and the gradients (the trainer), so every process takes the same optimiser
  step;
* inside a method, the sums that update q in closed form (SEP's tied factor: the batch's site
  totals and the number of factors updated).

A method's objective is ``global term + N / |B| * (sum over the batch of data terms)``; in a
data-parallel step each process adds ``global term / world size`` and its rows' data terms,
scaled by the size of the global batch, so the sums equal the one-process objective.
Floating-point sums in another order are the only difference from a one-process fit with the
same global batch and seed (tested to 1e-9 with two gloo processes).

Run with ``torchrun --standalone --nproc-per-node=2 fit.py`` where ``fit.py`` builds
``GPClassifier(..., distributed=True)``: the process group is initialised from torchrun's
environment variables (backend gloo on the CPU, nccl on CUDA) unless the script has done so.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


class Reducer:
    """Sums tensors across the processes of a data-parallel fit; a no-op in one process.

    ``global_batch`` is the size of the current global mini-batch (set by the trainer before
    each step); ``None`` means the local batch is the whole batch.
    """

    def __init__(self, world_size: int = 1, rank: int = 0):
        self.world_size, self.rank = int(world_size), int(rank)
        self.global_batch: int | None = None

    @classmethod
    def from_process_group(cls) -> Reducer:
        return cls(dist.get_world_size(), dist.get_rank())

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """All-reduce ``tensor`` in place (sum) and return it."""
        if self.active:
            dist.all_reduce(tensor)
        return tensor

    def max_(self, tensor: torch.Tensor) -> torch.Tensor:
        """All-reduce ``tensor`` in place (maximum) and return it."""
        if self.active:
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor

    def batch_size(self, local: int) -> int:
        """Rows in the global batch whose share this process holds (``local`` of them)."""
        return local if self.global_batch is None else self.global_batch

    def share(self, value: torch.Tensor) -> torch.Tensor:
        """This process's part of a term every process computes in full (summed: the term once)."""
        return value / self.world_size if self.active else value


def local_rows(reducer: Reducer, local: int) -> tuple[int, slice]:
    """``(rows of the global batch, this process's rows in it)`` for a share of ``local`` rows, as
    :func:`local_share` splits the batch: draws made for the global batch and sliced so give each
    row the draw it would get in one process."""
    total = reducer.batch_size(local)
    if not reducer.active:
        return total, slice(0, total)
    start = sum(len(part) for part in torch.tensor_split(torch.arange(total), reducer.world_size)[:reducer.rank])
    return total, slice(start, start + local)


def local_share(idx: torch.Tensor, reducer: Reducer) -> torch.Tensor:
    """This process's contiguous share of the global batch ``idx``."""
    return torch.tensor_split(idx, reducer.world_size)[reducer.rank] if reducer.active else idx


def ensure_process_group(device: torch.device) -> None:
    """Initialise the default process group from torchrun's environment if none exists."""
    if not dist.is_available():
        raise RuntimeError("distributed=True needs a PyTorch build with torch.distributed")
    if dist.is_initialized():
        return
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise RuntimeError(f"distributed=True but no process group is initialised and {missing} are not set; "
                           "start the script with torchrun (torchrun --standalone --nproc-per-node=2 fit.py) or call "
                           "torch.distributed.init_process_group first")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def broadcast_state(module: torch.nn.Module, src: int = 0) -> None:
    """Copy every parameter and buffer of ``module`` from process ``src`` to all processes."""
    with torch.no_grad():
        for tensor in list(module.parameters()) + list(module.buffers()):
            dist.broadcast(tensor.data, src)
