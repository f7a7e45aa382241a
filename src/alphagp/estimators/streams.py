"""GPClassifier's streams (``partial_fit``): the first call plans a stream and builds the model
from its rows; every call then takes one Adam step per batch of its rows, the data terms scaled
to the stream's N (``n_rows``), and keeps the optimiser's state on the estimator (and in its
model file), so that a saved and loaded model streams on."""

from __future__ import annotations

import numpy as np

from ..data.streaming import StandardizedRows
from ..methods import method_spec
from ..threads import torch_threads
from ..training import Trainer
from . import model_selection, sparse_model
from .base import explain_numerical_failure
from .fit_plan import default_learning_rate, plan_fit

#: what a new stream forgets of an earlier fit
_FORGOTTEN = ("cv_results_", "candidate_", "selection_scheme_", "conformity_scores_", "_stream_optimizer")


def start(est, X, y, classes, n_rows) -> None:
    """The first call on ``est``: its classes (``classes``, every label the stream will bring), a
    plan of the stream (``method="auto"``: the portfolio's first candidate that streams, SEP),
    the standardisation and the model from the validated rows ``X`` ``[B, D]`` with labels ``y``
    ``[B]``; ``n_rows`` (default: these rows) is the stream's N."""
    est.classes_ = np.unique(np.asarray(classes))
    if len(est.classes_) < 2:
        raise ValueError(f"GPClassifier needs at least 2 classes; classes= gives {est.classes_.tolist()}")
    if est.alpha == "auto":
        raise ValueError("alpha='auto' cross-validates on all training rows, which a stream does not give; "
                         "give partial_fit a value of alpha (or None, the method's default)")
    if n_rows is None:
        n_rows = len(y)
    if not isinstance(n_rows, (int, np.integer)) or isinstance(n_rows, bool) or n_rows < len(y):
        raise ValueError(f"n_rows must be an integer at least the first call's {len(y)} rows, got {n_rows!r}")
    y_idx = est._encode(y)
    params = est.get_params()
    if est.method == "auto":
        candidate = next(c for c in model_selection.PORTFOLIO
                         if method_spec(c.params["method"]).cls.CAPABILITIES.streaming)
        explicit = model_selection.explicit_parameters(est)
        params.update({k: v for k, v in candidate.params.items() if k not in explicit})
    sparse_model.check_parameters(est, X.shape[1], len(est.classes_))
    plan = plan_fit(params, y_idx, device=str(est._device()), alpha=est.alpha, stream=True, n_rows=int(n_rows))
    sparse_model.check_model_size(plan, int(n_rows), X.shape[1], len(est.classes_))
    est._apply_plan(plan)
    for name in _FORGOTTEN:
        est.__dict__.pop(name, None)
    with torch_threads(est.n_jobs), explain_numerical_failure(plan.dtype, plan.standardize):
        Xs = est._standardize(X, plan.standardize)
        est.model_ = est._build_model(plan, X, Xs, y_idx, None, np.random.default_rng(plan.random_state))
    est.validation_scores_, est.best_iteration_ = None, None


def step(est, X, y) -> None:
    """One call's steps on the validated rows ``X`` ``[B, D]`` with labels ``y`` ``[B]``: Adam on
    batches of the plan's size (the whole call as one batch without one), from the plan's rate
    where the plan stepped with Adam (else Adam's default), continuing the optimiser's state."""
    if not method_spec(est.method_).cls.CAPABILITIES.streaming:
        raise ValueError(f"the fitted method {est.method_!r} cannot continue on a stream; partial_fit takes "
                         "sep, vi, apep, arpep, rpapep or augmented")
    plan = est.fit_plan_
    y_idx = est._encode(y)
    points = est.model_.n_data
    rate = plan.learning_rate if plan.optimizer == "adam" else default_learning_rate("adam")
    trainer = Trainer(est.model_, batch_size=plan.batch_size, optimizer="adam", learning_rate=rate, n_points=points)
    if getattr(est, "_stream_optimizer", None) is not None:
        trainer.optimizer.load_state_dict(est._stream_optimizer)
    with torch_threads(est.n_jobs):
        state = trainer.partial_fit(StandardizedRows(X, est.mean_, est.scale_), y_idx, points)
    est._stream_optimizer = trainer.optimizer.state_dict()
    est.__dict__.pop("conformity_scores_", None)      # calibrated on the model before this call
    history = getattr(est, "history_", [])
    est.history_ = [*history, {**state.history[-1], "epoch": len(history) + 1}]
    est.n_iter_ = len(est.history_)
    est._set_diagnostics()
