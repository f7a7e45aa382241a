"""The fitted attributes, set in one place: what a fit, a stream's call, a selection and a model
file leave on an estimator (scikit-learn's trailing-underscore attributes).

Every stage returns what it made (the plan, the standardisation, the model and its kernel start,
the training state, the held-out rows' scores, the selection) and the functions here write it on
the estimator; nothing else in :mod:`alphagp.estimators` assigns a fitted attribute, but for
scikit-learn's own (``n_features_in_``, ``feature_names_in_``, which its input validation sets,
and the table encoding fitted with them, :mod:`.inputs`). A reader looking for where ``alpha_``
or ``history_`` comes from finds it here.
"""

from __future__ import annotations

import numpy as np

from ..conformal import conformity_scores

#: a selection's attributes (a refit keeps none of an earlier one)
SELECTION = ("cv_results_", "candidate_", "selection_scheme_")
#: the calibration rows' attributes of prediction sets (a new fit or a stream's call drops them)
CONFORMITY = ("conformity_scores_", "conformity_classes_")


def forget(est, names) -> None:
    """Drop the attributes ``names`` from ``est`` where it has them."""
    for name in names:
        est.__dict__.pop(name, None)


def record_classes(est, classes: np.ndarray) -> None:
    est.classes_ = classes


def record_plan(est, plan) -> None:
    """``fit_plan_`` and the plan's decisions that the estimator shows as attributes
    (``PLAN_ATTRIBUTES``: ``method_``, ``alpha_``, ...)."""
    est.fit_plan_ = plan
    for name in type(est).PLAN_ATTRIBUTES:
        setattr(est, f"{name}_", getattr(plan, name))


def record_target_scale(est, mean: float, scale: float) -> None:
    """``y_mean_`` and ``y_scale_``: a regressor's standardisation of its targets."""
    est.y_mean_, est.y_scale_ = float(mean), float(scale)


def record_standardisation(est, mean: np.ndarray, scale: np.ndarray) -> None:
    """``mean_`` and ``scale_`` ``[D]`` of the features."""
    est.mean_, est.scale_ = mean, scale


def record_model(est, model, **built) -> None:
    """``model_`` and what its build made beside it (``kernel_start_`` for a classifier)."""
    est.model_ = model
    for name, value in built.items():
        setattr(est, f"{name}_", value)


def record_training(est, history: list, n_iter: int, validation_scores=None, best_iteration=None) -> None:
    """The training record: ``history_``, ``n_iter_``, ``validation_scores_`` and ``best_iteration_``
    (``None`` without held-out rows)."""
    est.history_, est.n_iter_ = history, int(n_iter)
    est.validation_scores_ = None if validation_scores is None else list(validation_scores)
    est.best_iteration_ = best_iteration


def record_trainer_state(est, state, validation) -> None:
    """:func:`record_training` from the trainer's final state (``validation``: the held-out rows, or
    ``None``)."""
    held = validation is not None
    record_training(est, state.history, state.epoch, state.validation_scores if held else None,
                    state.best_epoch if held else None)


def record_stream_call(est, entry: dict, seen: tuple[int, float]) -> None:
    """A stream's call: its history entry appended, ``n_iter_`` counting the calls, the stream's
    rows and weight so far, and the calibration rows of an earlier fit dropped."""
    history = getattr(est, "history_", [])
    est.history_ = [*history, {**entry, "epoch": len(history) + 1}]
    est.n_iter_ = len(est.history_)
    est._stream_seen = seen
    forget(est, CONFORMITY)


def record_diagnostics(est) -> None:
    """``diagnostics_`` of the model, and the EP counters as attributes where it has them."""
    est.diagnostics_ = est.model_.diagnostics()
    for name in ("n_skipped_updates", "n_improper_cavities"):
        if name in est.diagnostics_:
            setattr(est, f"{name}_", est.diagnostics_[name])


def record_conformity(est, scores: np.ndarray | None = None, classes: np.ndarray | None = None) -> None:
    """The calibration rows of :meth:`~alphagp.GPClassifier.predict_set`: their conformity scores
    and class indices (``None``: none, the attributes dropped). Scores outside [0, 1], or classes
    that do not fit them and ``classes_``, are a ``ValueError`` (a damaged file)."""
    forget(est, CONFORMITY)
    if scores is None:
        return
    if not np.all(np.isfinite(scores)) or np.any(np.abs(scores - 0.5) > 0.5):
        raise ValueError("the conformity scores are not numbers in [0, 1]")
    est.conformity_scores_ = scores
    if classes is not None:                             # files before the Mondrian sets have none
        if classes.shape != scores.shape or not np.all((classes >= 0) & (classes < len(est.classes_))):
            raise ValueError("the calibration rows' classes do not fit their scores and the model's classes")
        est.conformity_classes_ = classes


def record_held_out_conformity(est, validation) -> None:
    """The conformity scores of the rows the fit held out (``validation``), which give prediction
    sets without more data; none without held-out rows."""
    if validation is None:
        record_conformity(est)
        return
    y = np.asarray(validation.y, dtype=np.int64)
    record_conformity(est, conformity_scores(est._proba(validation.X), y), y)


def record_selection(est, candidate: str, scheme: str, cv_results: dict) -> None:
    """A selection's record: ``candidate_``, ``selection_scheme_`` and ``cv_results_``."""
    est.candidate_, est.selection_scheme_, est.cv_results_ = candidate, scheme, dict(cv_results)


def record_fit_of(est, fitted, keep=()) -> None:
    """Take over the fitted attributes of ``fitted`` (the selection's fit of the winner, a clone),
    but those in ``keep`` (``est``'s own: its input columns)."""
    for name, value in vars(fitted).items():
        if name.endswith("_") and not name.startswith("_") and name not in keep:
            setattr(est, name, value)


def record_input(est, n_features: int, feature_names) -> None:
    """A model file's input columns (``n_features_in_``, ``feature_names_in_``), as scikit-learn's
    validation records them at ``fit``."""
    est.n_features_in_ = int(n_features)
    if feature_names is not None:
        est.feature_names_in_ = np.array(feature_names, dtype=object)
