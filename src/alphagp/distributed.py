"""Data-parallel training on ``torch.distributed``.

Every process runs the same fit on the same rows (a memory-map costs nothing to share): the
global mini-batch order is the same everywhere, and each process computes the share of each
global batch given by :func:`local_share`, reading only those rows. Per step, the batch's
contributions are summed across processes with all-reduce:

* the objective and the gradients (the trainer), so every process takes the same optimiser
  step;
* inside a method, the sums that update q in closed form (SEP's tied factor: the batch's site
  totals and the number of factors updated; the augmented method's natural-gradient sums; the
  per-point EP methods' old and new batch contributions to the running sum and the Gram sum of
  q restricted to the batch, the last differentiably, :meth:`Reducer.sum_rows`);
* per-point state: the EP methods' updated sites of each process's rows are gathered by every
  process (:meth:`Reducer.gather_rows`), so all hold the same N sites.

A method's objective is ``global term + N / |B| * (sum over the batch of data terms)``; in a
data-parallel step each process adds ``global term / world size`` and its rows' data terms,
scaled by the size of the global batch, so the sums equal the one-process objective.
Floating-point sums in another order are the only difference from a one-process fit with the
same global batch and seed (tested to 1e-9 with two gloo processes).

**Class split.** The processes form a grid of ``class_blocks`` x ``row_blocks``. Where a method
can (``Capabilities.class_parallel``), each process owns a contiguous block of the C latent
functions and does only their algebra (kernel, Cholesky factors, projections, q): the per-class
tensors (leading dimension C: inducing inputs, per-class kernel parameters, q or the tied
factor) move only on their owner. Per step, the processes that hold the same rows exchange
what the likelihood couples across classes, each point's marginal means and variances
(``[B, C]``, :meth:`Reducer.gather_classes`), and every one of them evaluates the likelihood's
terms for all classes (cheap: O(B C) quadrature); the gradient of those terms reaches each
process's own classes through its own marginals. Gradients of the per-class tensors are summed
only over the processes of the same class block (the row split), the others over all. Once an
epoch, and at the end, the blocks are copied to every process (:meth:`Reducer.assemble_classes`),
so every process ends with the whole model.

Run with ``torchrun --standalone --nproc-per-node=2 fit.py`` where ``fit.py`` builds
``GPClassifier(..., distributed=True)``: the process group is initialised from torchrun's
environment variables (backend gloo on the CPU, nccl on CUDA) unless the script has done so.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


class _SumOverProcesses(torch.autograd.Function):
    """All-reduce (sum) as a differentiable function: the sum's gradient with respect to each
    process's input is the sum of every process's incoming gradient (an all-reduce again)."""

    @staticmethod
    def forward(ctx, tensor, group):
        ctx.group = group
        total = tensor.clone(memory_format=torch.contiguous_format)
        dist.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone(memory_format=torch.contiguous_format)
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class Reducer:
    """Sums and gathers tensors across the processes of a distributed fit; a no-op in one process.

    The processes form a grid of ``class_blocks`` x ``world_size / class_blocks`` (module
    docstring): rank r owns class block ``r % class_blocks`` and row block ``r // class_blocks``.
    ``class_group`` holds the processes with the same rows (they exchange marginals),
    ``row_group`` those with the same classes (they sum their rows' contributions); ``None``
    stands for the default group or, where the group has one process, for no communication.

    ``global_batch`` is the size of the current global mini-batch (set by the trainer before
    each step); ``None`` means the local batch is the whole batch.
    """

    def __init__(self, world_size: int = 1, rank: int = 0, class_blocks: int = 1, class_group=None, row_group=None):
        self.world_size, self.rank = int(world_size), int(rank)
        if class_blocks < 1 or self.world_size % class_blocks:
            raise ValueError(f"class_blocks must divide the number of processes ({self.world_size}), got {class_blocks}")
        self.class_blocks = int(class_blocks)
        self.row_blocks = self.world_size // self.class_blocks
        self.class_rank, self.row_rank = self.rank % self.class_blocks, self.rank // self.class_blocks
        self.class_group, self.row_group = class_group, row_group
        self.global_batch: int | None = None

    @classmethod
    def from_process_group(cls, class_blocks: int = 1) -> Reducer:
        """The reducer of the initialised default group, with ``class_blocks`` class blocks (every
        process must call this with the same argument: it creates the grid's subgroups)."""
        world, rank = dist.get_world_size(), dist.get_rank()
        if class_blocks < 1 or world % class_blocks:
            raise ValueError(f"class_blocks must divide the number of processes ({world}), got {class_blocks}")
        rows = world // class_blocks
        class_group = row_group = None
        if 1 < class_blocks < world:      # a 2-D grid: subgroups (every process creates every group)
            for r in range(rows):
                group = dist.new_group([r * class_blocks + k for k in range(class_blocks)])
                class_group = group if r == rank // class_blocks else class_group
            for k in range(class_blocks):
                group = dist.new_group([r * class_blocks + k for r in range(rows)])
                row_group = group if k == rank % class_blocks else row_group
        return cls(world, rank, class_blocks, class_group, row_group)

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """All-reduce ``tensor`` in place (sum over every process) and return it."""
        if self.active:
            dist.all_reduce(tensor)
        return tensor

    def sum_rows_(self, tensor: torch.Tensor) -> torch.Tensor:
        """All-reduce ``tensor`` in place over the processes of this class block (their rows) and
        return it: the batch sums of this process's classes."""
        if self.row_blocks > 1:
            dist.all_reduce(tensor, group=self.row_group)
        return tensor

    def sum_rows(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum of ``tensor`` over the processes of this class block, as a new tensor through
        which gradients flow: the backward pass sums the incoming gradients the same way, so each
        process's ``tensor`` receives the gradient of every process's objective."""
        if self.row_blocks == 1:
            return tensor
        return _SumOverProcesses.apply(tensor, self.row_group)

    @torch.no_grad()
    def gather_rows(self, local: torch.Tensor) -> torch.Tensor:
        """The global batch's rows ``[B, ...]`` from every process's share ``local`` ``[b, ...]``
        (all_gather over the processes of this class block, in the order :func:`local_share`
        splits the batch; shares may differ in length by one row)."""
        if self.row_blocks == 1:
            return local
        total = self.batch_size(local.shape[0])
        sizes = [len(part) for part in torch.tensor_split(torch.arange(total), self.row_blocks)]
        padded = local.new_zeros(sizes[0], *local.shape[1:])
        padded[:local.shape[0]] = local
        pieces = [torch.empty_like(padded) for _ in sizes]
        dist.all_gather(pieces, padded, group=self.row_group)
        return torch.cat([piece[:size] for piece, size in zip(pieces, sizes)])

    def max_(self, tensor: torch.Tensor) -> torch.Tensor:
        """All-reduce ``tensor`` in place (maximum) and return it."""
        if self.active:
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor

    def batch_size(self, local: int) -> int:
        """Rows in the global batch whose share this process holds (``local`` of them)."""
        return local if self.global_batch is None else self.global_batch

    def share(self, value: torch.Tensor) -> torch.Tensor:
        """This process's part of a term that every process of a class block computes in full
        (summed over the processes: the term once)."""
        return value / self.row_blocks if self.row_blocks > 1 else value

    # ------------------------------------------------------------------ the class split
    def class_slice(self, n_classes: int) -> slice:
        """The block of the ``n_classes`` latent functions this process owns (all of them without
        a class split); blocks are contiguous, the first ones one larger where C does not divide."""
        if self.class_blocks == 1:
            return slice(None)
        sizes = [len(b) for b in torch.tensor_split(torch.arange(n_classes), self.class_blocks)]
        start = sum(sizes[:self.class_rank])
        return slice(start, start + sizes[self.class_rank])

    def gather_classes(self, local: torch.Tensor, n_classes: int) -> torch.Tensor:
        """``[C, ...]`` from every process's block ``local`` ``[C_own, ...]`` (all_gather over the
        processes with the same rows). The own block is ``local`` itself, so gradients reach this
        process's classes; the others' blocks are constants here (their owners differentiate them)."""
        if self.class_blocks == 1:
            return local
        blocks = torch.tensor_split(torch.arange(n_classes), self.class_blocks)
        width = len(blocks[0])
        padded = local.detach()
        if padded.shape[0] < width:    # all_gather takes equal shapes
            padded = torch.cat([padded, padded.new_zeros(width - padded.shape[0], *padded.shape[1:])])
        pieces = [torch.empty_like(padded) for _ in blocks]
        dist.all_gather(pieces, padded.contiguous(), group=self.class_group)
        pieces = [piece[:len(block)] for piece, block in zip(pieces, blocks)]
        pieces[self.class_rank] = local
        return torch.cat(pieces)

    @torch.no_grad()
    def assemble_classes(self, tensors: list[torch.Tensor], n_classes: int) -> None:
        """Copy every class block of ``tensors`` (each ``[C, ...]``) from its owner to every process,
        in place, in one collective."""
        if self.class_blocks == 1 or not tensors:
            return
        own = self.class_slice(n_classes)
        rows = [t[own].reshape(own.stop - own.start, -1) for t in tensors]
        full = self.gather_classes(torch.cat(rows, 1), n_classes)
        offset = 0
        for t, r in zip(tensors, rows):
            t.copy_(full[:, offset:offset + r.shape[1]].reshape(t.shape))
            offset += r.shape[1]


class DataParallel:
    """The process grid of one fit and what the trainer does with it (the module docstring):
    ``reducer`` splits and sums a step; :meth:`sum_gradients` all-reduces a step's gradients and
    objective, :meth:`assemble_classes` makes every process whole after an epoch of a class
    split, and :meth:`sum_counters` totals the events each process counted on its own rows.

    ``distributed``: ``False`` (one process: every method is a no-op), ``True`` (classes where
    ``method.capabilities.class_parallel``, rows for the rest of the processes) or ``"rows"``.
    Hands the method the group's reducer (its closed-form sums are over the global batch) until
    :meth:`release`."""

    def __init__(self, method, distributed: bool | str = False):
        if distributed not in (False, True, "rows"):
            raise ValueError(f"distributed must be False, True or 'rows', got {distributed!r}")
        split_classes = distributed is True and method.capabilities.class_parallel
        if not distributed:
            self.reducer = Reducer()
        else:
            self.reducer = Reducer.from_process_group(
                class_blocks_for(dist.get_world_size(), method.n_classes) if split_classes else 1)
        if self.reducer.active and not method.capabilities.data_parallel:
            raise ValueError(f"{type(method).__name__} cannot split a step across processes: its updates are not "
                             "sums over the batch's rows (batch-only or sampling methods); use an EP method (ep, sep, "
                             "rep, pep), a gradient-fitted one (vi, apep, arpep, rpapep) or augmented for "
                             "distributed=True")
        self.method = method
        #: the tensors a class split divides (their gradients are summed over the row block only)
        self.per_class = ([t for _, t in per_class_tensors(method, method.n_classes)]
                          if self.reducer.class_blocks > 1 else [])
        method.reducer = self.reducer

    def release(self) -> None:
        """Give the method a one-process reducer again: the fitted model works on its own."""
        self.method.reducer = Reducer()

    def sum_gradients(self, params: list[torch.Tensor], objective: torch.Tensor) -> torch.Tensor:
        """All-reduce the gradients of ``params`` and the ``objective``; returns the summed objective.

        Without a class split, everything goes in one flat tensor summed over all processes. In a
        class split, the own block of each per-class tensor's gradient is summed over the
        processes of the same class block (the rest of it is zero here and stays unused), and the
        other gradients and the objective over all processes."""
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        per_class = {id(t) for t in self.per_class}
        if per_class and self.reducer.row_blocks > 1:
            own = self.reducer.class_slice(self.method.n_classes)
            _sum_in_place([p.grad[own] for p in params if id(p) in per_class], self.reducer.sum_rows_)
        value = objective.detach().reshape(1).clone()
        _sum_in_place([p.grad for p in params if id(p) not in per_class] + [value], self.reducer.sum_)
        return value[0]

    def assemble_classes(self, optimizer: torch.optim.Optimizer | None) -> None:
        """After an epoch of a class split: every process gets every class block of the model and
        of the ``optimizer``'s per-element state (so validation, checkpoints and the returned
        model are whole)."""
        if not self.per_class:
            return
        tensors = list(self.per_class)
        if optimizer is not None:
            for t in self.per_class:
                tensors += [v for v in optimizer.state.get(t, {}).values() if torch.is_tensor(v) and v.shape == t.shape]
        self.reducer.assemble_classes(tensors, self.method.n_classes)

    def sum_counters(self) -> None:
        """Sum the buffers the method names in ``PROCESS_COUNTERS`` (events each process counts on
        its own rows) over the processes of each class block, so that every process ends the fit
        with the totals a one-process fit would have (one process: nothing to sum)."""
        if not self.reducer.active:
            return
        for name, buffer in self.method.named_buffers():
            if name.rsplit(".", 1)[-1] in self.method.PROCESS_COUNTERS:
                self.reducer.sum_rows_(buffer)


def _sum_in_place(tensors: list[torch.Tensor], reduce) -> None:
    """Sum ``tensors`` (views allowed) across processes with ``reduce`` in one flat collective."""
    flat = reduce(torch.cat([t.reshape(-1) for t in tensors]))
    offset = 0
    for t in tensors:
        t.copy_(flat[offset:offset + t.numel()].view_as(t))
        offset += t.numel()


def class_blocks_for(world_size: int, n_classes: int) -> int:
    """The class blocks of a fit of ``n_classes`` latent functions on ``world_size`` processes:
    the largest divisor of the world size that is at most C (every process owns a class; the
    rest of the split is by rows)."""
    return max(k for k in range(1, world_size + 1) if world_size % k == 0 and k <= n_classes)


def per_class_tensors(module: torch.nn.Module, n_classes: int) -> list[tuple[str, torch.Tensor]]:
    """The parameters and buffers of ``module`` whose leading dimension indexes the ``n_classes``
    latent functions (``[C, ...]``): what a class split divides among the processes."""
    return [(name, t) for name, t in [*module.named_parameters(), *module.named_buffers()]
            if t.dim() > 0 and t.shape[0] == n_classes]


def local_rows(reducer: Reducer, local: int) -> tuple[int, slice]:
    """``(rows of the global batch, this process's rows in it)`` for a share of ``local`` rows, as
    :func:`local_share` splits the batch: draws made for the global batch and sliced so give each
    row the draw it would get in one process."""
    total = reducer.batch_size(local)
    if reducer.row_blocks == 1:
        return total, slice(0, total)
    start = sum(len(part) for part in torch.tensor_split(torch.arange(total), reducer.row_blocks)[:reducer.row_rank])
    return total, slice(start, start + local)


def local_share(idx: torch.Tensor, reducer: Reducer) -> torch.Tensor:
    """This process's contiguous share of the global batch ``idx`` (its row block's)."""
    return torch.tensor_split(idx, reducer.row_blocks)[reducer.row_rank] if reducer.row_blocks > 1 else idx


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
    """Copy every parameter and buffer of ``module`` from process ``src`` to all processes.

    Tensors that are all zeros on ``src`` (a fresh fit's per-point sites: 0.9 GB on MNIST for EP)
    are zeroed in place on the others instead of sent: one broadcast of a flag per tensor first."""
    with torch.no_grad():
        tensors = [t.data for t in list(module.parameters()) + list(module.buffers())]
        if not tensors:
            return
        if dist.get_rank() == src:  # only the sender's tensors decide; the others' are overwritten
            zero = torch.tensor([not t.any() for t in tensors], device=tensors[0].device)
        else:
            zero = torch.zeros(len(tensors), dtype=torch.bool, device=tensors[0].device)
        dist.broadcast(zero, src)
        for tensor, is_zero in zip(tensors, zero.tolist()):
            if is_zero:
                tensor.zero_()
            else:
                dist.broadcast(tensor, src)
