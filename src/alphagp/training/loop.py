"""The training loop: epochs of batches, local updates and optimiser steps, early stopping,
callbacks and checkpoints (see :mod:`alphagp.training`)."""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..distributed import DataParallel, local_share
from ..numerics import time_limit
from .checkpoints import CheckpointResumed, data_fingerprint, read_checkpoint, write_checkpoint
from .optim import make_optimizer
from .progress import progress


def uses_mini_batches(batch_size: int | None, n_rows: int) -> bool:
    """Whether steps of ``batch_size`` rows (``None``: all) see fewer than all ``n_rows`` rows: the
    one formula for "is this a mini-batch fit?" (the trainer and the estimators' planners read it)."""
    return batch_size is not None and batch_size < n_rows


@dataclass
class TrainingState:
    """What callbacks see after each epoch. ``validation_scores`` and ``best_epoch`` (the epoch
    whose state the fit returns) are kept with a ``validation`` score; ``stopped_by`` says what
    ended the fit early (``"validation"``, ``"objective"``, ``"max_time"``, ``"callback"``, ``"converged"``:
    the optimiser's own test, L-BFGS's). ``fit_so_far``: what a callback predicts with, where the
    trainer was given one (an estimator's fit hands it a copy of the estimator holding the model in
    training, so ``state.fit_so_far.predict_proba(X)`` is the model as it is now); not part of a
    checkpoint."""

    epoch: int = 0
    objective: float = float("nan")
    train_seconds: float = 0.0
    history: list[dict] = field(default_factory=list)
    best_objective: float = -math.inf
    epochs_without_improvement: int = 0
    stop: bool = False
    validation_scores: list[float] = field(default_factory=list)
    best_validation: float = math.inf
    best_epoch: int = 0
    stopped_by: str = ""
    fit_so_far: Any = field(default=None, repr=False, compare=False)

    def record(self) -> dict:
        """The state as a checkpoint keeps it: plain data, without ``fit_so_far``."""
        plain = asdict(replace(self, fit_so_far=None))
        del plain["fit_so_far"]
        return plain


class Trainer:
    """Fits a method (see DESIGN.md's method interface) to ``X`` ``[N, D]``, ``y`` ``[N]``.

    Parameters
    ----------
    method
        module with ``local_update`` (returning the batch objective) and parameters
        to learn.
    max_iter
        number of epochs (in batch training, one epoch is one iteration).
    batch_size
        rows per mini-batch; ``None`` for batch training.
    optimizer
        ``"adam"`` or ``"sign-adaptive"`` (see :func:`make_optimizer`); ignored when
        nothing is trainable.
    learning_rate
        initial learning rate.
    learning_rate_decay
        Adam's schedule. A number in (0, 1]: the rate is
        ``learning_rate * learning_rate_decay**epoch`` (exponential decay per epoch; 1 keeps
        it constant). ``"cosine"``: the rate is ``learning_rate * (1 + cos(pi p)) / 2`` at every
        step, where p is the share of the run done, the larger of the epochs' share of
        ``max_iter`` and the training time's share of ``max_time`` (when set): a schedule in
        fractions of the budget, so a faster step is not penalised as under a per-epoch
        decay. The sign-adaptive rule sets its own rates, so it accepts only 1. A resumed fit
        follows the schedule given to this trainer, not the one saved in the checkpoint, so a
        run can be continued at a new rate.
    tol, n_iter_no_change
        without ``validation``, stop when the epoch's mean objective has
        not risen by more than ``tol * |best|`` above the best so far for ``n_iter_no_change``
        epochs in a row; ``tol=None`` never stops early. With ``tol`` set, a fit that reaches
        ``max_iter`` while its last epoch still rose by more than ``tol * |best|`` warns
        with scikit-learn's ``ConvergenceWarning``. With ``validation``, stop when the
        validation score has not fallen below ``best - tol * |best|`` (``tol=None``: 0) for
        ``n_iter_no_change`` epochs.
    validation
        called after each epoch (not counted in ``train_seconds``), it returns a
        score of the method's current state on held-out data, lower is better (the
        estimators: the validation NLL). The fit ends with the state of the best score
        restored (kept in memory and in the checkpoint), whatever stopped it.
    max_time
        seconds of training (``train_seconds``) this call of ``fit`` may spend; it
        stops after the step that reaches it, or whose successor would pass it if it took as
        long (L-BFGS's line search: the same of its evaluations), so a fit ends within a step of
        the budget, and most end before it. The epoch it cuts short counts, with the mean
        objective of its processed rows. A resumed fit gets its own budget.
    spent
        seconds of ``max_time`` the fit spent before the training (its build: the kernel start),
        counted as spent by this call. A method that holds a fit as built
        (``holds_a_fit()``: its kernel start's search left its state) takes no step where less
        than ``spent`` is left, a step costing about what the search's did.
    clock
        the time source of ``train_seconds`` and ``max_time`` (tests pass a fake one).
    n_points
        the number of points the objective counts (the sum of the sample weights of a
        weighted fit; default the rows N): the optimiser steps on objective / ``n_points``,
        so that a step does not depend on whether a point is weighted or repeated.
    callbacks
        called as ``cb(state)`` after each epoch; time spent in them is not counted
        in ``state.train_seconds``. A callback may set ``state.stop = True``.
    fit_so_far
        what callbacks predict with, as ``state.fit_so_far`` (the estimators hand a copy of
        themselves holding the model in training).
    checkpoint
        path of a checkpoint file, written every ``checkpoint_every`` epochs and
        read back (resuming, with a :class:`CheckpointResumed` warning) when it exists at
        the start of ``fit``. A fit stopped by a callback (a time budget) continues when
        ``fit`` is called again; one that met the early-stopping rule or ``max_iter``
        stays finished.
    settings
        plain-data description of the settings that define the model (method,
        sizes, ...); stored in the checkpoint and compared when resuming. Settings of the
        schedule (``max_iter``, learning rate, ``tol``) may change between runs.
    verbose
        show progress (a bar on a terminal, a line every few seconds otherwise).
    seed
        seed of the batch order.
    distributed
        training split across the processes of the initialised
        ``torch.distributed`` group (:mod:`alphagp.distributed`): every process must call
        ``fit`` with the same data, settings and seed. ``True`` splits the classes where the
        method can (``Capabilities.class_parallel``; as many class blocks as divide the
        processes and the classes allow) and the rows of every batch among the rest;
        ``"rows"`` splits only the rows. The objective, the gradients and the method's
        closed-form batch sums are summed across processes, so every process ends with the
        same model. Only the first process writes the checkpoint and shows progress.
    """

    def __init__(self, method, max_iter: int = 250, batch_size: int | None = None,
                 optimizer: str = "sign-adaptive", learning_rate: float = 1e-2,
                 learning_rate_decay: float | str = 1.0, tol: float | None = None, n_iter_no_change: int = 10,
                 callbacks: list[Callable[[TrainingState], None]] | None = None,
                 checkpoint: str | os.PathLike | None = None, checkpoint_every: int = 1,
                 settings: dict | None = None, verbose: bool = False, seed: int = 0,
                 distributed: bool | str = False, validation: Callable[[], float] | None = None,
                 max_time: float | None = None, clock: Callable[[], float] = time.perf_counter,
                 n_points: float | None = None, spent: float = 0.0, fit_so_far=None):
        if max_time is not None and not (isinstance(max_time, numbers.Real) and max_time > 0):
            raise ValueError(f"max_time must be a positive number of seconds or None, got {max_time!r}")
        if learning_rate_decay != "cosine" and not (isinstance(learning_rate_decay, numbers.Real)
                                                    and 0.0 < learning_rate_decay <= 1.0):
            raise ValueError(f"learning_rate_decay must lie in (0, 1] or be 'cosine', got {learning_rate_decay!r}")
        if learning_rate_decay != 1.0 and optimizer != "adam":
            raise ValueError("learning_rate_decay applies to Adam (mini-batch training); the "
                             "sign-adaptive rule of batch training adapts its own rates")
        if not (isinstance(learning_rate, numbers.Real) and math.isfinite(learning_rate) and learning_rate > 0):
            raise ValueError(f"learning_rate must be a positive number, got {learning_rate!r}")
        self.method = method
        self.parallel = DataParallel(method, distributed)
        self.reducer = self.parallel.reducer
        self.learning_rate, self.learning_rate_decay = learning_rate, learning_rate_decay
        self.max_iter = int(max_iter)
        self.batch_size = batch_size
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.callbacks = list(callbacks or [])
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.checkpoint_every = max(1, int(checkpoint_every))
        self.settings = dict(settings or {})
        self.verbose = verbose if self.reducer.rank == 0 else False
        self.generator = torch.Generator().manual_seed(int(seed))
        # inputs follow the model: its floating dtype and its device
        self._dtype = next(t.dtype for t in method.state_dict().values() if t.is_floating_point())
        self._device = next(iter(method.state_dict().values())).device
        self._params = [p for p in method.parameters() if p.requires_grad]
        #: (parameter, bound): parameters whose change per step a module bounds (its ``STEP_BOUNDS``)
        self._bounded = [(getattr(m, name), bound) for m in method.modules()
                         for name, bound in getattr(m, "STEP_BOUNDS", {}).items() if getattr(m, name).requires_grad]
        self.optimizer = make_optimizer(optimizer, self._params, learning_rate) if self._params else None
        self.validation, self.max_time, self.clock = validation, max_time, clock
        self.n_points = n_points
        self.fit_so_far = fit_so_far
        self.state = TrainingState(fit_so_far=fit_so_far)
        self._fingerprint: dict = {}
        self._best_state: dict | None = None
        self._time_at_start = 0.0
        self.spent = float(spent)
        self._epoch_start: float | None = None
        #: seconds of the last step, and of the last evaluation inside one (L-BFGS's line search)
        self._step_seconds = self._evaluation_seconds = 0.0

    # ------------------------------------------------------------------ checkpoints
    def _save(self) -> None:
        write_checkpoint(self.checkpoint, self._fingerprint, self.method.state_dict(),
                         None if self.optimizer is None else self.optimizer.state_dict(),
                         self.generator.get_state(), self.state.record(), self._best_state)

    def _load(self) -> None:
        ckpt = read_checkpoint(self.checkpoint, self._fingerprint)
        self.method.load_state_dict(ckpt["method"])
        self.generator.set_state(ckpt["generator"])
        self.state = TrainingState(**ckpt["state"], fit_so_far=self.fit_so_far)
        self._best_state = ckpt.get("best")
        if self.optimizer and ckpt["optimizer"]:
            self.optimizer.load_state_dict(ckpt["optimizer"])
            self._set_scheduled_rate()  # the schedule given now, not the saved rate
        # A stop requested by a callback (a time budget, say) belongs to that call of fit;
        # a fit that met its own stopping rule stays finished.
        self.state.stop = self._no_longer_improving() or bool(getattr(self.optimizer, "converged", False))
        self.state.stopped_by = self.state.stopped_by if self.state.stop else ""
        finished = self.state.stop or self.state.epoch >= self.max_iter
        warnings.warn(f"checkpoint {self.checkpoint}: " + (
            f"returning the finished fit stored there (epoch {self.state.epoch}); delete the file to fit afresh"
            if finished else f"resuming the fit from epoch {self.state.epoch} of {self.max_iter}"),
            CheckpointResumed, stacklevel=5)

    def _set_scheduled_rate(self, steps_done: int = 0, steps: int = 1, seconds: float = 0.0) -> None:
        """Set the optimiser's rate for the epoch ``state.epoch`` with ``steps_done`` of its ``steps``
        done and ``seconds`` of this call's training time spent (see ``learning_rate_decay``)."""
        if self.learning_rate_decay == "cosine":
            done = (self.state.epoch + steps_done / steps) / self.max_iter
            if self.max_time is not None:
                done = max(done, seconds / self.max_time)
            rate = 0.5 * self.learning_rate * (1.0 + math.cos(math.pi * min(done, 1.0)))
        else:
            rate = self.learning_rate * self.learning_rate_decay ** self.state.epoch
        for group in self.optimizer.param_groups:
            group["lr"] = rate

    # ------------------------------------------------------------------ batches
    def _full_batch(self, n: int) -> bool:
        return not uses_mini_batches(self.batch_size, n)

    def _checkpoint_exists(self) -> bool:
        """Whether to resume; in a data-parallel fit every process must see the same answer."""
        found = bool(self.checkpoint) and self.checkpoint.exists()
        if self.reducer.active:
            seen = int(self.reducer.sum_(torch.tensor([int(found)], device=self._device)))
            if seen not in (0, self.reducer.world_size):
                raise RuntimeError(f"checkpoint {self.checkpoint} exists for {seen} of {self.reducer.world_size} "
                                   "processes; put it on a file system every process sees")
        return found

    def _writes_checkpoint(self) -> bool:
        return bool(self.checkpoint) and self.reducer.rank == 0

    def _batches(self, n: int):
        if self._full_batch(n):
            yield torch.arange(n)
            return
        # int32 (the same permutation as int64): 4 bytes a row, the fit's only O(N) memory with the labels
        order = torch.randperm(n, generator=self.generator, dtype=torch.int32 if n < 2**31 else torch.int64)
        for start in range(0, n, self.batch_size):
            yield order[start:start + self.batch_size].sort().values.long()

    def _rows(self, X, idx: torch.Tensor) -> torch.Tensor:
        """Rows ``idx`` of ``X`` (a tensor already on the model's device, or an array or memory-map)."""
        if isinstance(X, torch.Tensor):
            return X[idx.to(X.device)]
        return torch.as_tensor(np.asarray(X[idx.numpy()]), dtype=self._dtype, device=self._device)

    # ------------------------------------------------------------------ the loop
    def fit(self, X, y) -> TrainingState:
        """Train; returns the final :class:`TrainingState` (history has one row per epoch)."""
        n = len(y)
        dtype = self._dtype
        if self.checkpoint:
            self._fingerprint = {"data": data_fingerprint(X, y), "settings": self.settings}
        y_t = torch.as_tensor(np.asarray(y), device=self._device)  # compact; see _targets
        if self._full_batch(n) and not self.reducer.active:
            X = torch.as_tensor(np.asarray(X), dtype=dtype, device=self._device)  # batch training: convert once
        if self._checkpoint_exists():
            self._load()
        self._time_at_start = self.state.train_seconds
        steps = 1 if self._full_batch(n) else math.ceil(n / self.batch_size)
        bar = progress(self.max_iter * steps, self.state.epoch * steps, self.verbose)
        first_epoch = self.state.epoch
        if self._fitted_by_build():
            self.state.stop, self.state.stopped_by = True, "max_time"
        try:
            while self.state.epoch < self.max_iter and not self.state.stop:
                self._epoch(X, y_t, n, bar)
            self.parallel.sum_counters()
        finally:
            bar.close()
            self.parallel.release()
        if self._best_state is not None and self.state.best_epoch != self.state.epoch:
            self.method.load_state_dict(self._best_state)     # the validated best, whatever stopped the fit
        if self.state.epoch > first_epoch:
            self._warn_if_still_improving()
            if self._full_batch(n):         # a mini-batch epoch's objective is of a moving state: no bar
                self._warn_if_collapsed()
        return self.state

    def _fitted_by_build(self) -> bool:
        """Whether this fit takes no step: a fresh fit with ``max_time`` of which less than the build
        spent is left, of a method that holds a fit as built (``holds_a_fit``)."""
        return (self.max_time is not None and self.state.epoch == 0 and not self.reducer.active
                and self.max_time - self.spent < self.spent and self.method.holds_a_fit())

    def partial_fit(self, X, y, n_rows: int) -> TrainingState:
        """One optimiser step per ``batch_size`` rows of ``X`` ``[B, D]``, ``y`` ``[B]``, in their
        order (the whole call as one batch without ``batch_size``), each batch's data terms
        scaled as a batch of a data set of ``n_rows`` rows (``partial_fit``: the caller streams the
        data set through). No early stopping, checkpoint or schedule; the optimiser's state carries
        over between calls. The state's ``epoch`` counts the calls, ``objective`` is the call's
        mean batch objective."""
        n = len(y)
        y_t = torch.as_tensor(np.asarray(y), device=self._device)
        size = self.batch_size or n
        total, steps = 0.0, 0
        start = self.clock()
        for first in range(0, n, size):
            idx = torch.arange(first, min(first + size, n), device=self._device)
            self.reducer.global_batch = len(idx)
            total += self._step(self._rows(X, idx.cpu()), self._targets(y_t[idx]), idx, n_rows)
            steps += 1
        st = self.state
        st.epoch += 1
        st.objective = total / steps
        st.train_seconds += self.clock() - start
        st.history.append({"epoch": st.epoch, "objective": st.objective, "train_seconds": st.train_seconds,
                           "rows": n})
        return st

    def _warn_if_still_improving(self) -> None:
        """scikit-learn's ``ConvergenceWarning`` when ``max_iter`` ran out while the last epoch still
        raised the objective by more than ``tol * |best|`` (only with ``tol`` set)."""
        from sklearn.exceptions import ConvergenceWarning
        st = self.state
        if (self.tol is None or self.validation is not None or st.stop or st.epoch < self.max_iter or st.epoch < 2
                or st.epochs_without_improvement > 0 or self.reducer.rank != 0):
            return
        previous = st.history[-2]["objective"]
        warnings.warn(f"the fit reached max_iter={self.max_iter} while the objective still rose by more than "
                      f"tol={self.tol:g} of its size (last epoch: {previous:.6g} -> {st.objective:.6g}); "
                      "raise max_iter for a converged model", ConvergenceWarning, stacklevel=4)

    def _warn_if_collapsed(self) -> None:
        """A warning when batch training without held-out rows ends far below the best objective
        it reached (by more than half of it, and more than one nat): the steps overshot, and the
        model returned is not the best the fit saw (a validated fit returns its best state
        instead)."""
        st = self.state
        if self.validation is not None or len(st.history) < 2 or self.reducer.rank != 0:
            return
        best = max(st.history, key=lambda row: row["objective"])
        if best["objective"] - st.objective > max(1.0, 0.5 * abs(best["objective"])):
            rate = f"learning_rate={self.learning_rate:g}" if self.optimizer is not None else "the steps"
            warnings.warn(f"the fit ended with its training objective at {st.objective:.6g}, far below the "
                          f"{best['objective']:.6g} of epoch {best['epoch']}: the steps overshot and the model "
                          f"returned is worse than the fit's best; refit with a smaller learning_rate ({rate})",
                          UserWarning, stacklevel=4)

    def _check_finite(self, objective: torch.Tensor) -> None:
        """Raise before a non-finite objective or gradient reaches the parameters."""
        bad = "objective" if not torch.isfinite(objective) else next(
            (f"gradient of a parameter of shape {list(p.shape)}" for p in self._params
             if p.grad is not None and not torch.all(torch.isfinite(p.grad))), None)
        if bad:
            raise FloatingPointError(
                f"the training {bad} became non-finite at epoch {self.state.epoch + 1}; the parameters were "
                "left at their last finite values. Try more damping, a smaller learning rate or standardised inputs")

    def _targets(self, y: torch.Tensor) -> torch.Tensor:
        """A batch's targets: class indices as int64, real targets (regression) in the model's dtype."""
        return y.to(self._dtype) if y.is_floating_point() else y.long()

    def _epoch(self, X, y_t, n, bar) -> None:
        start = self._epoch_start = self.clock()
        total, rows = 0.0, 0
        steps = 1 if self._full_batch(n) else math.ceil(n / self.batch_size)
        for done, idx in enumerate(self._batches(n), start=1):
            self.reducer.global_batch = len(idx)
            rows += len(idx)
            idx = local_share(idx, self.reducer)
            idx_d = idx.to(self._device)
            before = self._seconds_spent(start)
            total += self._step(self._rows(X, idx), self._targets(y_t[idx_d]), idx_d, n) * self.reducer.global_batch / n
            bar.update(1)
            seconds = self._seconds_spent(start)
            self._step_seconds = seconds - before
            if self.max_time is not None and seconds + self._step_seconds > self.max_time:
                self.state.stop, self.state.stopped_by = True, "max_time"
                break
            if self.optimizer is not None and self.learning_rate_decay == "cosine":
                self._set_scheduled_rate(done, steps, seconds)
        self.parallel.assemble_classes(self.optimizer)
        st = self.state
        st.epoch += 1
        if self.optimizer is not None:
            self._set_scheduled_rate(0, steps, self._seconds_spent(start))
        st.objective = total if rows == n else total * n / rows       # the mean over the rows processed
        st.train_seconds += self.clock() - start
        st.history.append({"epoch": st.epoch, "objective": st.objective, "train_seconds": st.train_seconds})
        if rows < n:
            st.history[-1]["rows"] = rows
        self._early_stopping(st.objective)
        if getattr(self.optimizer, "converged", False):
            st.stop, st.stopped_by = True, st.stopped_by or "converged"
        bar.set_postfix(**self._progress_values())
        for cb in self.callbacks:
            cb(st)
        if st.stop and not st.stopped_by:
            st.stopped_by = "callback"
        if self._writes_checkpoint() and (st.epoch % self.checkpoint_every == 0 or st.stop
                                          or st.epoch == self.max_iter):
            self._save()

    def _step(self, X, y, idx, n) -> float:
        """Local update and optimiser step on one batch; returns the batch objective (of the state the
        step leaves). An optimiser that evaluates the objective itself (L-BFGS's line search,
        ``NEEDS_CLOSURE``) gets :meth:`_evaluate` as its closure; its last evaluation is at the
        parameters it leaves."""
        if self.optimizer is None or not getattr(self.optimizer, "NEEDS_CLOSURE", False):
            objective = self._evaluate(X, y, idx, n, backward=self.optimizer is not None)
            if self.optimizer is not None:
                with self._bounded_steps():
                    self.optimizer.step()
            return objective.item()
        last: dict = {}

        def closure():
            began = self.clock()
            last["objective"] = self._evaluate(X, y, idx, n, backward=True)
            self._evaluation_seconds = self.clock() - began
            return -last["objective"] / (self.n_points or n)

        with self._bounded_steps():
            self.optimizer.step(closure, out_of_time=self._out_of_time)
        if not last:            # a converged optimiser (a resumed fit) evaluates nothing: the state is kept
            with torch.no_grad():
                last["objective"] = self._evaluate(X, y, idx, n, backward=False)
        return last["objective"].item()

    @contextlib.contextmanager
    def _bounded_steps(self):
        """Around an optimiser step: each parameter of ``_bounded`` moves by at most its bound per
        element (whatever the optimiser and its rate)."""
        before = [p.detach().clone() for p, _ in self._bounded]
        yield
        with torch.no_grad():
            for (p, bound), start in zip(self._bounded, before):
                p.copy_(start + (p - start).clamp(-bound, bound))

    def _evaluate(self, X, y, idx, n, backward: bool) -> torch.Tensor:
        """The batch objective of the method's local update, its gradient where ``backward``.

        The method returns its objective's terms (:class:`~alphagp.objective.ObjectiveTerms`); the
        objective is shared + N / |B| * (data + coupled) for the global batch B, with ``shared``
        counted once across the processes of a row split and ``coupled`` once across those of a
        class split (in the value; each process's gradient takes it in full, module
        :mod:`alphagp.objective`)."""
        with time_limit(self._time_left()):          # an inner loop of the update (exact EP's sweeps) reads it
            terms = self.method.local_update(X, y, idx)
        scale = n / self.reducer.batch_size(len(idx))
        shared = self.reducer.share(terms.shared)
        objective = shared + (terms.data + terms.coupled) * scale
        if backward:
            self.optimizer.zero_grad(set_to_none=True)
            (-objective / (self.n_points or n)).backward()
        if self.reducer.class_blocks > 1:
            objective = shared + (terms.data + terms.coupled / self.reducer.class_blocks) * scale
        if self.reducer.active:
            objective = self.parallel.sum_gradients(self._params, objective)
        self._check_finite(objective)
        return objective

    def _out_of_time(self) -> bool:
        """Inside an optimiser's step (L-BFGS's line search): whether ``max_time`` has passed or would
        pass in another evaluation as long as the last, on this process's clock (a data-parallel fit
        reads it between steps only, where every process agrees)."""
        return (self.max_time is not None and not self.reducer.active and self._epoch_start is not None
                and self._seconds_spent(self._epoch_start) + self._evaluation_seconds >= self.max_time)

    def _time_left(self) -> float | None:
        """The seconds of ``max_time`` left in this step (``None``: no budget, or a data-parallel fit,
        whose processes stop between steps only)."""
        if self.max_time is None or self.reducer.active or self._epoch_start is None:
            return None
        return self.max_time - self._seconds_spent(self._epoch_start)

    def _seconds_spent(self, epoch_start: float) -> float:
        """Training seconds this call of fit has spent (the epoch began at ``epoch_start`` on the
        clock); 0 when neither ``max_time`` nor the schedule needs it. Every process of a
        data-parallel fit gets the same answer (the slowest process's), so all stop at the
        same step with the same rate."""
        if self.max_time is None:
            return 0.0
        seconds = self.state.train_seconds - self._time_at_start + self.clock() - epoch_start + self.spent
        if self.reducer.active:
            seconds = float(self.reducer.max_(torch.tensor([seconds], dtype=torch.float64, device=self._device)))
        return seconds

    def _progress_values(self) -> dict[str, str | int]:
        """What the progress line shows after an epoch: the epoch, the objective, the held-out NLL
        (the latest and the best) when there is a validation split, and the seconds used of
        ``max_time``."""
        st = self.state
        values: dict[str, str | int] = {"epoch": st.epoch, "objective": f"{st.objective:.4g}"}
        if st.validation_scores:
            values["held_out_nll"] = f"{st.validation_scores[-1]:.4g}"
            values["best"] = f"{st.best_validation:.4g}"
        if self.max_time is not None:
            values["seconds"] = f"{st.train_seconds - self._time_at_start + self.spent:.0f}/{self.max_time:g}"
        return values

    def _validate(self) -> None:
        """Score the current state on held-out data; keep it when it is the best so far."""
        st = self.state
        score = float(self.validation())
        if not math.isfinite(score):
            raise FloatingPointError(f"the validation score became non-finite ({score}) at epoch {st.epoch}")
        st.validation_scores.append(score)
        st.history[-1]["validation"] = score
        previous = st.best_validation
        if score < previous:
            st.best_validation, st.best_epoch = score, st.epoch
            self._best_state = {k: v.detach().clone() for k, v in self.method.state_dict().items()}
        margin = (self.tol or 0.0) * abs(previous) if math.isfinite(previous) else 0.0
        st.epochs_without_improvement = 0 if score < previous - margin else st.epochs_without_improvement + 1

    def _early_stopping(self, objective: float) -> None:
        st = self.state
        if self.validation is not None:
            self._validate()
            if st.epochs_without_improvement >= self.n_iter_no_change:
                st.stop, st.stopped_by = True, st.stopped_by or "validation"
            return
        improved = (not math.isfinite(st.best_objective)  # the first epoch always counts as progress
                    or objective > st.best_objective + (self.tol or 0.0) * abs(st.best_objective))
        if improved:
            st.best_objective, st.epochs_without_improvement = objective, 0
        else:
            st.epochs_without_improvement += 1
        if self._no_longer_improving():
            st.stop, st.stopped_by = True, st.stopped_by or "objective"

    def _no_longer_improving(self) -> bool:
        """The early-stopping rule: ``n_iter_no_change`` epochs without improvement (of the validation
        score, or of the objective with ``tol`` set)."""
        return ((self.tol is not None or self.validation is not None)
                and self.state.epochs_without_improvement >= self.n_iter_no_change)
