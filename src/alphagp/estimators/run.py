"""How a fit runs: the one skeleton of both estimator families, a function of values.

:func:`run` takes a plan (:mod:`.fit_plan`), the validated rows and a :class:`Family` (what the
family builds, how it scores held-out rows, what it does after training) and returns a
:class:`FitResult`; it writes nothing on an estimator (:func:`.fitted.record_fit` does, once, at
the end of ``fit``). In order: early stopping's rows held out, the features standardised, the
model built (the family's ``build``), the start shared between processes, the rows' weights set,
the trainer run (its checkpoint settings a value computed before the fit, the held-out score a
function of the model being trained), the family's ``finish``. Predictions go through a
:class:`Predictor`, the same value mid-fit and after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from ..data.held_out import early_stopping_rows
from ..data.streaming import RowSubset, StandardizedRows, column_mean_std
from ..distributed import broadcast_state, ensure_process_group
from ..numerics import CholeskyError
from ..threads import torch_threads
from ..training import Trainer
from .fit_plan import DTYPES, default_learning_rate


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


@dataclass(frozen=True)
class Predictor:
    """What a prediction needs, mid-fit (the held-out score) or after it: the ``model``, the
    features' standardisation (``mean``, ``scale`` ``[D]``), its ``dtype`` and ``device``, and
    the threads (``n_jobs``) the consumer's work on a chunk runs under."""

    model: Any
    mean: np.ndarray
    scale: np.ndarray
    dtype: torch.dtype
    device: torch.device
    n_jobs: int | None

    def chunks(self, X, max_rows: int):
        """``(rows, tensor)`` for consecutive chunks of at most ``max_rows`` of the validated,
        unstandardised rows ``X`` (a lazy row view or memory-map is read one chunk at a time),
        standardised onto the model's dtype and device; the consumer's work on a chunk runs under
        ``n_jobs`` threads and without autograd."""
        Xs = StandardizedRows(X, self.mean, self.scale)
        for start in range(0, len(Xs), max_rows):
            rows = slice(start, min(start + max_rows, len(Xs)))
            with torch_threads(self.n_jobs), torch.no_grad():
                yield rows, torch.as_tensor(Xs[rows], dtype=self.dtype, device=self.device)


@dataclass(frozen=True)
class Family:
    """What an estimator family adds to the skeleton, each function taking the fit's ``context``
    last (the family's own record of what it needs beside the plan: the number of classes, the
    user's inducing inputs, ...).

    ``build(plan, X, Xs, y, weight, rng, context) -> (model, made)``: the model of the plan for the
    fitted rows ``X`` ``[N, D]`` (``Xs`` standardised, with its ``mean`` and ``scale``; ``y`` the
    targets, ``weight`` theirs or ``None``) drawn from ``rng``, and what the build made beside it
    (``{"kernel_start": ...}``: fitted attributes). ``score(predictor, X_val, y_val, weight, context)
    -> float``: the held-out score early stopping minimises (the rows unstandardised, a lazy view).
    ``finish(predictor, validation, context) -> dict``: the fitted attributes the family makes of
    the rows early stopping held out (``validation``), after training (the classifier's calibration
    rows); called only where rows were held out. ``seed(model, seed)``: hands the fit's seed to a
    model that draws with it. ``record(est, plan, made)``: writes the family's fitted values on the
    estimator, each by name (the plan's decisions it shows, and ``made``: what the build, the finish
    and a model file made; :func:`.fitted.record_fit` writes the rest).

    The model file's hooks (:mod:`.model_file` reads them here): ``file_content(est, **options) ->
    dict``, the family's part of a file (``options``: its ``save``'s); ``model_from_file(content,
    dtype) -> (model, state)``, the model a file's content describes, and its state to load;
    ``file_values(content, model) -> (plan, made, kept)``, the plan, the fitted values and what
    :func:`.fitted.record_file` takes besides; ``model_features(model) -> int``, the features the
    model's inputs have; ``model_problems(model, plan, classes, params) -> list[str]``, what in a
    loaded estimator (its model, plan, classes or ``None``, and parameters) contradicts its file's
    header, in words."""

    build: Callable
    score: Callable
    record: Callable
    file_content: Callable
    model_from_file: Callable
    file_values: Callable
    model_features: Callable
    model_problems: Callable
    finish: Callable = lambda *_: {}
    seed: Callable = lambda _model, _seed: None


@dataclass(frozen=True)
class HeldOutRows:
    """The validation rows of early stopping (``X`` a lazy view of the training rows, ``y`` their
    targets, ``weight`` theirs or ``None``); calling it scores the model in training on them."""

    X: RowSubset
    y: np.ndarray
    weight: np.ndarray | None
    score: Callable = field(repr=False)

    def __call__(self) -> float:
        return self.score(self.X, self.y, self.weight)


@dataclass(frozen=True)
class Settings:
    """How a fit is run, beside its plan: the estimator's checkpoint file (or ``None``), the
    settings a checkpoint records and a resumed fit must match (plain data, the weights' digest
    added by :func:`run`), callbacks, progress, threads and the data-parallel mode. ``in_training``:
    with callbacks, what makes the fit so far they predict with (``state.fit_so_far``; the
    estimators: a copy of themselves holding it) of a :class:`FitResult` with an empty history,
    whose model is the one in training."""

    checkpoint: Any = None
    checkpoint_settings: dict = field(default_factory=dict)
    callbacks: Any = None
    verbose: bool | str = False
    n_jobs: int | None = None
    distributed: Any = False
    in_training: Callable | None = None


@dataclass(frozen=True)
class FitResult:
    """What a fit made: its ``plan``, the standardisation (``mean``, ``scale`` ``[D]``), the
    ``model``, the training record (``history``, ``n_iter``, ``validation_scores`` and
    ``best_iteration``, ``None`` without held-out rows) and ``made``, the other fitted values by
    attribute name without the underscore (``classes``, ``kernel_start``, ``diagnostics``, ...).
    A stream's call (:func:`run` with a :class:`Stream`) has its call's history entry alone and
    the stream's state after it (``stream``)."""

    plan: Any
    mean: np.ndarray
    scale: np.ndarray
    model: Any
    history: list
    n_iter: int
    validation_scores: list | None = None
    best_iteration: int | None = None
    made: dict = field(default_factory=dict)
    stream: Stream | None = None

    def predictor(self, n_jobs: int | None = None) -> Predictor:
        """The result's :class:`Predictor` on the plan's dtype and device."""
        return Predictor(self.model, self.mean, self.scale, DTYPES[self.plan.dtype], torch.device(self.plan.device),
                         n_jobs)


@dataclass(frozen=True)
class Stream:
    """A stream's state between its calls (``partial_fit``), a value its estimator carries (and its
    model file): the fit so far (``fitted``: ``None`` before the first call), the rows and the total
    weight its calls have brought (``seen``) and its optimiser's state (``optimizer``: ``None``
    before the first step, and for a closed form, which takes none)."""

    fitted: FitResult | None = None
    seen: tuple[int, float] = (0, 0.0)
    optimizer: dict | None = None


#: the EP counters a model's diagnostics may hold, shown as attributes of their own
COUNTERS = ("n_skipped_updates", "n_improper_cavities")


def diagnostics_of(model) -> dict:
    """The fitted values of ``model``'s diagnostics: ``diagnostics`` and the EP counters of
    :data:`COUNTERS` where it has them."""
    diagnostics = model.diagnostics()
    return {"diagnostics": diagnostics, **{name: diagnostics[name] for name in COUNTERS if name in diagnostics}}


def standardisation(X, standardize: bool = True, weight: np.ndarray | None = None) -> StandardizedRows:
    """The standardised rows of ``X`` ``[N, D]``, read lazily (a memory-map stays on disk), with
    their ``mean`` and ``scale`` ``[D]``: the columns' (weighted by ``weight`` ``[N]`` where given,
    as scikit-learn's ``StandardScaler`` with ``sample_weight``; a column without spread keeps
    scale 1), or 0 and 1 with ``standardize=False``."""
    d = X.shape[1]
    mean, scale = column_mean_std(X, weight=weight) if standardize else (np.zeros(d), np.ones(d))
    return StandardizedRows(X, mean, np.where(scale > 0, scale, 1.0))


def _share_start(model, seed: int, device: torch.device) -> int:
    """A data-parallel fit's start: the first process's model state and seed (returned) for all."""
    ensure_process_group(device)
    broadcast_state(model)
    seed_t = torch.tensor([seed], device=device)
    torch.distributed.broadcast(seed_t, 0)
    return int(seed_t)


def weight_digest(weight: np.ndarray | None, dtype: torch.dtype) -> dict:
    """The checkpoint's record of the rows' weights ``[N]`` (as the model holds them): their SHA-256,
    or nothing without weights."""
    if weight is None:
        return {}
    return {"sample_weight_sha256": hashlib.sha256(torch.as_tensor(weight, dtype=dtype).numpy().tobytes()).hexdigest()}


def run(plan, X, y, weight: np.ndarray | None, family: Family, context, settings: Settings, *,
        stratify: bool, stream: Stream | None = None) -> FitResult:
    """Fit ``plan`` on the validated features ``X`` ``[N, D]`` with targets ``y`` ``[N]`` (class
    indices, or real values) and the rows' ``weight`` ``[N]`` (or ``None``): hold out early
    stopping's rows (stratified by class where ``stratify``), standardise and build
    (:func:`_built`: ``family.build`` with the family's ``context``), share the start between
    processes, train with the rows' weights (:func:`_weighted`), the model's own finish
    (``after_fit``), the family's of the held-out rows (``family.finish``), the model's diagnostics.
    A ``stream``'s call (:func:`_stream_call`) goes through the same stages with the stream's state.
    Returns the :class:`FitResult`; nothing is written on an estimator."""
    if stream is not None:
        return _stream_call(plan, X, y, weight, family, context, settings, stream)
    rows, held = early_stopping_rows(y, plan.early_stopping, plan.validation_fraction, stratify, plan.random_state)
    if held is not None:
        X_fit, y_fit = RowSubset(X, rows), y[rows]
        w_fit, w_val = (None, None) if weight is None else (weight[rows], weight[held])
    else:
        X_fit, y_fit, w_fit = X, y, weight
    dtype, device = DTYPES[plan.dtype], torch.device(plan.device)
    started = time.perf_counter()
    with torch_threads(settings.n_jobs), explain_numerical_failure(plan.dtype, plan.standardize):
        Xs, model, made, rng = _built(plan, X_fit, y_fit, w_fit, family, context)
        seed = int(rng.integers(2**31 - 1))
        if settings.distributed:                  # the first process's random start and batch order for all
            seed = _share_start(model, seed, device)
        family.seed(model, seed)
        fit_so_far = None if settings.in_training is None else settings.in_training(
            FitResult(plan, Xs.mean, Xs.scale, model, [], 0, made=made))
        predictor = Predictor(model, Xs.mean, Xs.scale, dtype, device, settings.n_jobs)
        validation = None if held is None else HeldOutRows(
            RowSubset(X, held), y[held], w_val, lambda X_val, y_val, w: family.score(predictor, X_val, y_val, w, context))
        with _weighted(model, w_fit, plan):
            trainer = Trainer(model, max_iter=plan.max_iter, batch_size=plan.batch_size, optimizer=plan.optimizer,
                              learning_rate=plan.learning_rate, learning_rate_decay=plan.learning_rate_decay,
                              tol=plan.tol, n_iter_no_change=plan.n_iter_no_change, callbacks=settings.callbacks,
                              checkpoint=settings.checkpoint,
                              settings={**settings.checkpoint_settings,
                                        **(weight_digest(w_fit, dtype) if settings.checkpoint else {})},
                              verbose=settings.verbose, seed=seed, distributed=settings.distributed,
                              validation=validation, max_time=plan.max_time, n_points=model.n_weighted,
                              spent=0.0 if plan.max_time is None else time.perf_counter() - started,
                              fit_so_far=fit_so_far)
            state = trainer.fit(Xs, y_fit)
        model.after_fit(Xs, y_fit)
        finished = {} if validation is None else family.finish(predictor, validation, context)
    return FitResult(plan, Xs.mean, Xs.scale, model, state.history, int(state.epoch),
                     None if validation is None else list(state.validation_scores),
                     None if validation is None else state.best_epoch, {**made, **finished, **diagnostics_of(model)})


def _built(plan, X, y, weight: np.ndarray | None, family: Family, context):
    """``(Xs, model, made, rng)``: the standardised rows of ``X`` (:func:`standardisation`, weighted by
    ``weight``), the family's model of ``plan`` and what its build made, and the random generator
    of the plan's seed the build drew from (a fit draws its own seed next)."""
    Xs = standardisation(X, plan.standardize, weight)
    rng = np.random.default_rng(plan.random_state)
    model, made = family.build(plan, X, Xs, y, weight, rng, context)
    return Xs, model, made, rng


@contextlib.contextmanager
def _weighted(model, weight: np.ndarray | None, plan, total: float | None = None):
    """Inside, the model holds the rows' ``weight`` ``[N]`` (or none) in the plan's dtype and device,
    their total ``total`` (default: their sum); after, none: the weights belong to a fit or a call,
    not to the model."""
    model.set_sample_weight(None if weight is None else torch.as_tensor(
        weight, dtype=DTYPES[plan.dtype], device=torch.device(plan.device)), total=total)
    try:
        yield
    finally:
        model.set_sample_weight(None)


def _stream_call(plan, X, y, weight: np.ndarray | None, family: Family, context, settings: Settings,
                 stream: Stream) -> FitResult:
    """One call of a stream (``partial_fit``) on rows ``X`` ``[B, D]`` with targets ``y`` ``[B]`` and
    weights ``weight`` ``[B]`` (or ``None``): its first call standardises and builds from its rows
    (:func:`_built`); then a closed form (``Capabilities.closed_form``) takes the rows into its sums
    (``model.absorb``), and any other method takes one Adam step per batch of the plan's size (the
    whole call as one batch without one; :meth:`~alphagp.training.Trainer.partial_fit`), from the
    plan's rate where the plan stepped with Adam (else Adam's default), its optimiser's state
    carried over from the stream's, the data terms scaled to N (``plan.n_data``, or the rows the
    calls have brought where the stream has no ``n_rows``) and the tied factors counting the
    stream's total weight (its mean per row times N where N is given). Returns the
    :class:`FitResult` of the call (its history entry alone; ``made`` the build's on a first call)
    with the stream's state after it."""
    rows, total = stream.seen[0] + len(y), stream.seen[1] + (len(y) if weight is None else float(weight.sum()))
    dtype, device = DTYPES[plan.dtype], torch.device(plan.device)
    with torch_threads(settings.n_jobs), explain_numerical_failure(plan.dtype, plan.standardize):
        if stream.fitted is None:
            Xs, model, made, _ = _built(plan, X, y, None, family, context)
            fitted = FitResult(plan, Xs.mean, Xs.scale, model, [], 0, made=made)
            if not model.capabilities.streaming:
                raise ValueError(f"method {plan.method!r} as planned for this stream's first call cannot take a "
                                 "stream's rows (an exact posterior of its rows): fit on all the rows instead")
        else:
            fitted, made = stream.fitted, {}
        model = fitted.model
        Xs = StandardizedRows(X, fitted.mean, fitted.scale)
        if plan.n_data_grows:
            model.n_data = rows
        if model.capabilities.closed_form:
            model.absorb(torch.as_tensor(Xs[np.arange(len(y))], dtype=dtype, device=device),
                         torch.as_tensor(y, device=device),
                         None if weight is None else torch.as_tensor(weight, dtype=dtype, device=device))
            entry, optimizer = {"rows": len(y), "train_seconds": 0.0}, None
        else:
            points = model.n_data
            if weight is None and total != rows:          # unweighted rows of a stream that has seen weights
                weight = np.ones(len(y))
            rate = plan.learning_rate if plan.optimizer == "adam" else default_learning_rate("adam")
            with _weighted(model, weight, plan, None if weight is None else
                           total if plan.n_data_grows else points * total / rows):
                trainer = Trainer(model, batch_size=plan.batch_size, optimizer="adam", learning_rate=rate,
                                  n_points=model.n_weighted)
                if stream.optimizer is not None:
                    trainer.optimizer.load_state_dict(stream.optimizer)
                entry = trainer.partial_fit(Xs, y, points).history[-1]
            optimizer = trainer.optimizer.state_dict()
    return replace(fitted, history=[entry], n_iter=1, made={**made, **diagnostics_of(model)},
                   stream=Stream(None, (rows, total), optimizer))
