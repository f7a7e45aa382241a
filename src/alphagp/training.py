"""One training loop for every method: batches, optimiser, local updates, callbacks, checkpoints.

Each epoch visits the data once, in mini-batches drawn without replacement from a seeded
permutation (or as one batch in batch training). Per batch the loop calls
``method.local_update`` (closed-form refinement, e.g. EP site updates), which returns the
batch's differentiable objective from the same pass (or ``None``, and then
``method.objective`` is called), and takes one optimiser step on ``-objective / N``. Inputs
may be in-memory arrays or NumPy memory-maps; only the rows of the current batch are read.

A checkpoint written at the end of an epoch holds the method, the optimiser, the random
generator, the history and the early-stopping state, so a fit interrupted at any point and
started again with the same checkpoint path ends with the same result as an uninterrupted one.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from .optim import SignAdaptiveSGD


@dataclass
class TrainingState:
    """What callbacks see after each epoch."""

    epoch: int = 0
    objective: float = float("nan")
    train_seconds: float = 0.0
    history: list[dict] = field(default_factory=list)
    best_objective: float = -math.inf
    epochs_without_improvement: int = 0
    stop: bool = False


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """``"adam"`` (mini-batches, the papers' choice) or ``"sign-adaptive"`` (batch training)."""
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "sign-adaptive":
        return SignAdaptiveSGD(params, lr=lr)
    raise ValueError(f"unknown optimizer {name!r}; use 'adam' or 'sign-adaptive'")


class Trainer:
    """Fits a method (see DESIGN.md's method interface) to ``X`` ``[N, D]``, ``y`` ``[N]``.

    Args:
        method: module with ``local_update`` (returning the batch objective or ``None``),
            ``objective`` (and parameters to learn).
        max_iter: number of epochs (in batch training, one epoch is one iteration).
        batch_size: rows per mini-batch; ``None`` for batch training.
        optimizer: ``"adam"`` or ``"sign-adaptive"``; ignored when nothing is trainable.
        learning_rate: initial learning rate.
        learning_rate_decay: Adam's rate is ``learning_rate * learning_rate_decay**epoch``
            (exponential decay per epoch; 1 keeps it constant). The sign-adaptive rule sets its
            own rates, so it accepts only 1. A resumed fit follows the schedule given to this
            trainer, not the one saved in the checkpoint, so a run can be continued at a new rate.
        tol, n_iter_no_change: stop when the epoch's mean objective has not improved by more
            than ``tol * |best|`` for ``n_iter_no_change`` epochs; ``tol=None`` never stops early.
        callbacks: called as ``cb(state)`` after each epoch; time spent in them is not counted
            in ``state.train_seconds``. A callback may set ``state.stop = True``.
        checkpoint: path of a checkpoint file, written every ``checkpoint_every`` epochs and
            read back (resuming) when it exists at the start of ``fit``. A fit stopped by a
            callback (a time budget) continues when ``fit`` is called again; one that met
            the early-stopping rule or ``max_iter`` stays finished.
        verbose: show a progress bar.
        seed: seed of the batch order.
    """

    def __init__(self, method, max_iter: int = 250, batch_size: int | None = None,
                 optimizer: str = "sign-adaptive", learning_rate: float = 1e-2,
                 learning_rate_decay: float = 1.0, tol: float | None = None, n_iter_no_change: int = 10,
                 callbacks: list[Callable[[TrainingState], None]] | None = None,
                 checkpoint: str | os.PathLike | None = None, checkpoint_every: int = 1,
                 verbose: bool = False, seed: int = 0):
        if not 0.0 < learning_rate_decay <= 1.0:
            raise ValueError(f"learning_rate_decay must lie in (0, 1], got {learning_rate_decay}")
        if learning_rate_decay != 1.0 and optimizer != "adam":
            raise ValueError("learning_rate_decay applies to Adam (mini-batch training); the "
                             "sign-adaptive rule of batch training adapts its own rates")
        self.method = method
        self.learning_rate, self.learning_rate_decay = learning_rate, learning_rate_decay
        self.max_iter = int(max_iter)
        self.batch_size = batch_size
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.callbacks = list(callbacks or [])
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.checkpoint_every = max(1, int(checkpoint_every))
        self.verbose = verbose
        self.generator = torch.Generator().manual_seed(int(seed))
        self._dtype = next(method.buffers()).dtype  # inputs are cast to the model's float type
        params = [p for p in method.parameters() if p.requires_grad]
        self.optimizer = make_optimizer(optimizer, params, learning_rate) if params else None
        self.state = TrainingState()

    # ------------------------------------------------------------------ checkpoints
    def _save(self) -> None:
        tmp = self.checkpoint.with_name(self.checkpoint.name + ".tmp")
        torch.save({"method": self.method.state_dict(),
                    "optimizer": self.optimizer.state_dict() if self.optimizer else None,
                    "generator": self.generator.get_state(),
                    "state": self.state.__dict__}, tmp)
        os.replace(tmp, self.checkpoint)

    def _load(self) -> None:
        ckpt = torch.load(self.checkpoint, weights_only=False)
        self.method.load_state_dict(ckpt["method"])
        self.generator.set_state(ckpt["generator"])
        self.state = TrainingState(**ckpt["state"])
        if self.optimizer and ckpt["optimizer"]:
            self.optimizer.load_state_dict(ckpt["optimizer"])  # restores the saved rate too
            self._set_scheduled_rate()
        # A stop requested by a callback (a time budget, say) belongs to that call of fit;
        # a fit that met its own stopping rule stays finished.
        self.state.stop = self._no_longer_improving()

    def _set_scheduled_rate(self) -> None:
        """Set the optimiser's rate to ``learning_rate * learning_rate_decay**epoch``."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate * self.learning_rate_decay ** self.state.epoch

    # ------------------------------------------------------------------ batches
    def _full_batch(self, n: int) -> bool:
        return self.batch_size is None or self.batch_size >= n

    def _batches(self, n: int):
        if self._full_batch(n):
            yield torch.arange(n)
            return
        order = torch.randperm(n, generator=self.generator)
        for start in range(0, n, self.batch_size):
            yield order[start:start + self.batch_size].sort().values

    @staticmethod
    def _rows(X, idx: torch.Tensor, dtype) -> torch.Tensor:
        if isinstance(X, torch.Tensor):
            return X[idx]
        return torch.as_tensor(np.asarray(X[idx.numpy()]), dtype=dtype)

    # ------------------------------------------------------------------ the loop
    def fit(self, X, y) -> TrainingState:
        """Train; returns the final :class:`TrainingState` (history has one row per epoch)."""
        n = len(y)
        dtype = self._dtype
        y_t = torch.as_tensor(np.asarray(y), dtype=torch.long)
        if self._full_batch(n):
            X = torch.as_tensor(np.asarray(X), dtype=dtype)  # batch training: convert once
        if self.checkpoint and self.checkpoint.exists():
            self._load()
        steps = 1 if self._full_batch(n) else math.ceil(n / self.batch_size)
        bar = tqdm(total=self.max_iter * steps, initial=self.state.epoch * steps,
                   disable=not self.verbose, desc="training", unit="step", leave=False)
        try:
            while self.state.epoch < self.max_iter and not self.state.stop:
                self._epoch(X, y_t, n, bar)
        finally:
            bar.close()
        return self.state

    def _epoch(self, X, y_t, n, bar) -> None:
        start = time.perf_counter()
        total = 0.0
        for idx in self._batches(n):
            Xb, yb = self._rows(X, idx, self._dtype), y_t[idx]
            objective = self.method.local_update(Xb, yb, idx)
            if objective is None:  # a method without a local step
                objective = self.method.objective(Xb, yb, idx)
            if self.optimizer is not None:
                self.optimizer.zero_grad(set_to_none=True)
                (-objective / n).backward()
                self.optimizer.step()
            if not torch.isfinite(objective):
                raise FloatingPointError(
                    f"the training objective became {objective.item()} at epoch {self.state.epoch + 1}; "
                    "try more damping, a smaller learning rate or standardised inputs")
            total += objective.item() * len(idx) / n
            bar.update(1)
        st = self.state
        st.epoch += 1
        if self.optimizer is not None:
            self._set_scheduled_rate()
        st.objective = total
        st.train_seconds += time.perf_counter() - start
        st.history.append({"epoch": st.epoch, "objective": total, "train_seconds": st.train_seconds})
        bar.set_postfix(epoch=st.epoch, log_Zq=f"{total:.4g}")
        self._early_stopping(total)
        for cb in self.callbacks:
            cb(st)
        if self.checkpoint and (st.epoch % self.checkpoint_every == 0 or st.stop
                                or st.epoch == self.max_iter):
            self._save()

    def _early_stopping(self, objective: float) -> None:
        st = self.state
        if objective > st.best_objective + (self.tol or 0.0) * abs(st.best_objective):
            st.best_objective, st.epochs_without_improvement = objective, 0
        else:
            st.epochs_without_improvement += 1
        if self._no_longer_improving():
            st.stop = True

    def _no_longer_improving(self) -> bool:
        """The early-stopping rule: ``n_iter_no_change`` epochs without improvement (``tol`` set)."""
        return self.tol is not None and self.state.epochs_without_improvement >= self.n_iter_no_change


class MetricsRecorder:
    """Callback recording test metrics against training time every ``every`` epochs.

    Args:
        predict_proba: function mapping ``X_test`` to ``[N, C]`` probabilities.
        X_test, y_test: held-out data (``y_test`` as integer class indices).
        every: evaluation period in epochs.
    The rows accumulate in ``self.rows`` and are also added to the training history.
    """

    def __init__(self, predict_proba, X_test, y_test, every: int = 1):
        from .metrics import all_metrics
        self._metrics = all_metrics
        self.predict_proba, self.X_test, self.y_test, self.every = predict_proba, X_test, y_test, every
        self.rows: list[dict] = []

    def __call__(self, state: TrainingState) -> None:
        if state.epoch % self.every:
            return
        row = {"epoch": state.epoch, "train_seconds": state.train_seconds,
               **self._metrics(self.predict_proba(self.X_test), self.y_test)}
        self.rows.append(row)
        state.history[-1].update({f"test_{k}": v for k, v in row.items() if k not in ("epoch", "train_seconds")})
