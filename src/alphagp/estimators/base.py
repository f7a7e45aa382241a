"""What both estimator families share (:class:`~alphagp.GPClassifier` and the deep-GP
estimators): the fit skeleton (held-out rows, the standardisation of the features, memory-maps
staying on disk; the build hook; the start shared across processes; the trainer's wiring from the
plan), the device, and predictions in chunks. The inputs (:mod:`.inputs`) and model files
(:mod:`.model_file`) are mixins of the base; the fitted attributes are set in :mod:`.fitted`."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator

from ..constraints import Interval, StrOptions
from ..data.streaming import RowSubset, StandardizedRows, column_mean_std
from ..distributed import broadcast_state, ensure_process_group
from ..numerics import CholeskyError
from ..threads import torch_threads
from ..training import Trainer, TrainingState
from . import fitted
from .fit_plan import DTYPES, TrainingPlan, fit_rows
from .inputs import EstimatorInputs
from .model_file import EstimatorFiles


@contextlib.contextmanager
def explain_numerical_failure(dtype: str, standardize: bool):
    """Adds the likely cause to a failed factorisation or a non-finite objective when it is
    float32 (about 7 significant digits), above all with unstandardised features."""
    try:
        yield
    except (CholeskyError, FloatingPointError) as err:
        if dtype != "float32":
            raise
        cause = ("float32 with unstandardised features: kernel matrices of features far from unit "
                 "scale lose their positive definiteness in 7 digits. Use standardize=True, or dtype='float64'"
                 if not standardize else "float32: try dtype='float64'")
        raise type(err)(f"{err} Likely cause: {cause}.") from err


#: scikit-learn's estimator checks that the alphagp estimators fail by design, with the reason
#: (``check_estimator(est, expected_failed_checks=EXPECTED_FAILED_CHECKS)``)
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data":
        "an integer weight is the row repeated given the same start (tests/estimators/test_sample_weight.py), but the "
        "start depends on the rows: inducing inputs drawn from them, and the held-out splits",
}


@dataclass(frozen=True)
class HeldOutRows:
    """The validation rows of early stopping (``X`` a lazy view of the training rows, ``y`` their
    targets, ``weight`` theirs or ``None``); calling it scores ``estimator``'s model on them."""

    estimator: GPEstimatorBase
    X: RowSubset
    y: np.ndarray
    weight: np.ndarray | None

    def __call__(self) -> float:
        return self.estimator._held_out_score(self.X, self.y, self.weight)


class GPEstimatorBase(EstimatorInputs, EstimatorFiles, BaseEstimator):
    """Shared machinery of the estimators. A subclass sets ``MODEL_KIND`` (its model files' kind)
    and ``SCHEDULE_PARAMS`` (the parameters a resumed checkpoint may change: the schedule and how
    a fit is run), ``PARAMS_ADDED`` where it has parameters newer than its checkpoints, and implements the file hooks :meth:`_file_content`, :meth:`_model_from_file`
    and :meth:`_restore`. Its parameters include ``n_inducing``, ``batch_size``, ``max_iter``,
    ``learning_rate_decay``, ``tol``, ``n_iter_no_change``, ``checkpoint`` and ``verbose``."""

    #: the parameter constraints both estimator families share (each extends them with its own)
    SHARED_CONSTRAINTS: ClassVar[dict] = {
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "learning_rate_decay": [Interval(Real, 0, 1, closed="right"), StrOptions({"cosine"})],
        "standardize": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "checkpoint": [str, os.PathLike, None],
        "dtype": [StrOptions(set(DTYPES))],
        "n_jobs": [Integral, None],
        "device": [str, torch.device, None],
        "verbose": ["verbose"],
    }
    MODEL_KIND: ClassVar[str] = ""
    SCHEDULE_PARAMS: ClassVar[tuple[str, ...]] = ("max_iter", "max_time", "learning_rate", "learning_rate_decay",
                                                  "tol", "n_iter_no_change", "checkpoint", "verbose", "n_jobs")
    #: parameters added after checkpoints existed, each with the value that gives the fits of before
    #: it: a checkpoint records such a parameter only at another value, so older checkpoints resume
    PARAMS_ADDED: ClassVar[dict] = {}
    #: the plan's decisions a subclass shows as fitted attributes ``<name>_`` (:func:`.fitted.record_plan`)
    PLAN_ATTRIBUTES: ClassVar[tuple[str, ...]] = ()

    # ------------------------------------------------------------------ checks
    def _device(self) -> torch.device:
        """``device`` as a ``torch.device`` (``None``: the CPU); a clear error if it is not usable."""
        if self.device is None:
            return torch.device("cpu")
        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as err:
            raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda', got {self.device!r}") from err
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} was asked for but this PyTorch build sees no CUDA device "
                             f"(torch {torch.__version__}); use device='cpu'")
        return device

    # ------------------------------------------------------------------ validation set
    def _held_out(self, X, y, plan: TrainingPlan, stratify: bool, weight: np.ndarray | None = None):
        """``(X_fit, y_fit, weight_fit, validation)``: the rows to fit (and their ``weight``, or
        ``None``) and, where ``plan.early_stopping``, a function scoring the model on the other
        ``plan.validation_fraction`` of them (stratified by class for a classifier; the mean NLL
        weighted by their ``weight``), else ``None``. The fitted rows stay a lazy view of ``X`` (a
        memory-map stays on disk)."""
        rows, val_rows = fit_rows(y, plan.early_stopping, plan.validation_fraction, stratify, plan.random_state)
        if val_rows is None:
            return X, y, weight, None
        w_fit, w_val = (None, None) if weight is None else (weight[rows], weight[val_rows])
        return RowSubset(X, rows), y[rows], w_fit, HeldOutRows(self, RowSubset(X, val_rows), y[val_rows], w_val)

    def _held_out_score(self, X_val: RowSubset, y_val: np.ndarray, weight: np.ndarray | None = None) -> float:
        """The score early stopping minimises: the mean negative log-likelihood of the held-out
        rows ``X_val`` (unstandardised, a lazy view of the training rows: 10^6 held-out rows of
        784 features would be 6 GB in memory) and their targets (class indices, or real targets),
        weighted by ``weight`` ``[N_val]`` where given."""
        raise NotImplementedError

    # ------------------------------------------------------------------ fit
    def _standardize(self, X, standardize: bool = True, weight: np.ndarray | None = None) -> StandardizedRows:
        """Set ``mean_`` and ``scale_`` ``[D]`` (a column without spread keeps scale 1;
        ``standardize=False``: 0 and 1; weighted by ``weight`` ``[N]`` where given, as scikit-learn's
        ``StandardScaler`` with ``sample_weight``) and return the standardised rows of ``X``
        ``[N, D]``, read lazily, so a memory-map stays on disk."""
        d = X.shape[1]
        mean, scale = column_mean_std(X, weight=weight) if standardize else (np.zeros(d), np.ones(d))
        fitted.record_standardisation(self, mean, np.where(scale > 0, scale, 1.0))
        return StandardizedRows(X, self.mean_, self.scale_)

    def _share_start(self, model, seed: int) -> int:
        """A data-parallel fit's start: the first process's model state and seed (returned) for all."""
        device = self._device()
        ensure_process_group(device)
        broadcast_state(model)
        seed_t = torch.tensor([seed], device=device)
        torch.distributed.broadcast(seed_t, 0)
        return int(seed_t)

    def _checkpoint_settings(self, model=None) -> dict:
        """The settings a checkpoint records and a resumed fit must match: the parameters but the
        schedule's, as plain data, and a digest of the rows' weights where ``model`` has them."""
        settings = {k: v for k, v in self._plain_params().items() if k not in self.SCHEDULE_PARAMS
                    and not (k in self.PARAMS_ADDED and v == self.PARAMS_ADDED[k])}
        weight = None if model is None else model.sample_weight
        if weight is not None:
            import hashlib
            settings["sample_weight_sha256"] = hashlib.sha256(weight.detach().cpu().numpy().tobytes()).hexdigest()
        return settings

    def _fit_planned(self, plan: TrainingPlan, X, y, weight: np.ndarray | None, callbacks, *, stratify: bool,
                     **build) -> None:
        """The one fit skeleton of both families, after the parameters became ``plan``: hold out
        early stopping's rows, standardise, build the model (:meth:`_build_model`, the family's
        hook, with ``build``'s extra arguments), share the start between processes, train with
        the rows' ``weight`` ``[N]`` (or ``None``) and finish (:meth:`_finish_fit`). ``X`` ``[N, D]``
        the validated features, ``y`` ``[N]`` the model's targets (class indices, or real values)."""
        X_fit, y_fit, w_fit, validation = self._held_out(X, y, plan, stratify, weight)
        with torch_threads(self.n_jobs), explain_numerical_failure(plan.dtype, plan.standardize):
            Xs = self._standardize(X_fit, plan.standardize, w_fit)
            rng = np.random.default_rng(plan.random_state)
            model, built = self._build_model(plan, X_fit, Xs, y_fit, w_fit, rng, **build)
            fitted.record_model(self, model, **built)
            seed = int(rng.integers(2**31 - 1))
            if self.distributed:  # the first process's random start and batch order for all
                seed = self._share_start(self.model_, seed)
            self._seed_model(seed)
            self.model_.set_sample_weight(None if w_fit is None else torch.as_tensor(
                w_fit, dtype=DTYPES[plan.dtype], device=torch.device(plan.device)))
            try:
                self._train(self.model_, Xs, y_fit, plan, callbacks=callbacks, seed=seed, validation=validation)
            finally:
                self.model_.set_sample_weight(None)     # the weights belong to this fit, not to the model
            self._finish_fit(Xs, y_fit, validation)

    def _build_model(self, plan: TrainingPlan, X, Xs, y, weight: np.ndarray | None, rng: np.random.Generator,
                     **build):
        """``(model, built)``: the family's model of ``plan`` for the fitted rows ``X`` ``[N, D]``
        (``Xs`` standardised, ``y`` the targets, ``weight`` theirs or ``None``), drawn from ``rng``,
        and what the build made beside it (``{"kernel_start": ...}``: fitted attributes
        :func:`.fitted.record_model` sets)."""
        raise NotImplementedError

    def _seed_model(self, seed: int) -> None:
        """Hand the fit's seed (drawn after the build, shared between processes) to a model that
        draws with it (the deep GPs' Monte Carlo samples); the trainer's batch order takes it too."""

    def _finish_fit(self, Xs, y, validation) -> None:
        """What the family does after training on the standardised rows ``Xs`` and targets ``y``
        (``validation``: the held-out rows, or ``None``): diagnostics and the like."""

    def _train(self, model, X, y, plan: TrainingPlan, *, callbacks, seed: int, validation=None) -> TrainingState:
        """Train ``model`` on rows ``X`` and targets ``y`` by ``plan`` (its schedule, optimiser, batch
        size and time budget), with early stopping on ``validation``'s score where given (see
        :meth:`_held_out`), the estimator's checkpoint and progress; sets ``history_``,
        ``n_iter_``, ``validation_scores_`` and ``best_iteration_`` (``None`` without a
        validation set)."""
        trainer = Trainer(model, max_iter=plan.max_iter, batch_size=plan.batch_size, optimizer=plan.optimizer,
                          learning_rate=plan.learning_rate, learning_rate_decay=plan.learning_rate_decay, tol=plan.tol,
                          n_iter_no_change=plan.n_iter_no_change, callbacks=callbacks, checkpoint=self.checkpoint,
                          settings=self._checkpoint_settings(model), verbose=bool(self.verbose), seed=seed,
                          distributed=self.distributed, validation=validation, max_time=plan.max_time,
                          n_points=model.n_weighted)
        state = trainer.fit(X, y)
        fitted.record_trainer_state(self, state, validation)
        return state

    # ------------------------------------------------------------------ prediction in chunks
    def _row_chunks(self, X, max_rows: int):
        """``(rows, tensor)`` for consecutive chunks of at most ``max_rows`` of the validated,
        unstandardised rows ``X`` (a lazy row view or memory-map is read one chunk at a time),
        standardised onto the model's dtype and device. The consumer's work on a chunk runs under
        ``n_jobs`` threads and without autograd. Both estimator families predict through it, each
        with the chunk size that bounds its own temporaries."""
        Xs = StandardizedRows(X, self.mean_, self.scale_)
        dtype, device = DTYPES[self.dtype], self._device()
        for start in range(0, len(Xs), max_rows):
            rows = slice(start, min(start + max_rows, len(Xs)))
            with torch_threads(self.n_jobs), torch.no_grad():
                yield rows, torch.as_tensor(Xs[rows], dtype=dtype, device=device)
