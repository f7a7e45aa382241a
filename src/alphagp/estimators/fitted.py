"""The fitted attributes, written in one place: what a fit, a selection, a stream's call, a model
file and a calibration leave on an estimator (scikit-learn's trailing-underscore attributes).

The stages return values (a :class:`~alphagp.estimators.run.FitResult` and a selection's record, a
stream's call, a file's content) and four writers put them on the estimator, each once per call of
the user's: :func:`record_fit` (at the end of ``fit``, and at the start of a stream),
:func:`record_stream_call`, :func:`record_file` (``load``) and :func:`record_calibration`
(``conformalize``). Nothing else in :mod:`alphagp.estimators` assigns a fitted attribute, but for
scikit-learn's own (``n_features_in_``, ``feature_names_in_``, which its input validation sets,
and the table encoding fitted with them, :mod:`.inputs`). A reader looking for where ``alpha_``
or ``history_`` comes from finds it here.
"""

from __future__ import annotations

import numpy as np

#: a selection's attributes (a refit keeps none of an earlier one)
SELECTION = ("cv_results_", "candidate_", "selection_scheme_")
#: the calibration rows' attributes of prediction sets (a new fit or a stream's call drops them)
CONFORMITY = ("conformity_scores_", "conformity_classes_")
#: a stream's state: its optimiser's and its rows and weight so far (a new fit starts none)
STREAM = ("_stream_optimizer", "_stream_seen")


def _forget(est, names) -> None:
    """Drop the attributes ``names`` from ``est`` where it has them."""
    for name in names:
        est.__dict__.pop(name, None)


def record_fit(est, result, selection: tuple[str, str, dict] | None = None) -> None:
    """A fit's attributes from its :class:`~alphagp.estimators.run.FitResult`: ``fit_plan_``, the
    standardisation ``mean_`` and ``scale_`` ``[D]``, ``model_``, the training record
    (``history_``, ``n_iter_``, ``validation_scores_``, ``best_iteration_``), the family's own values
    (its ``record``: the plan's decisions the estimator shows and what the fit made, such as
    ``method_``, ``classes_``, ``kernel_start_``, each assigned by name in the family's module) and
    the model's diagnostics (:func:`record_diagnostics`); a selection's record where it chose the
    fit (``(candidate, scheme, cv_results)``: ``candidate_``, ``selection_scheme_``,
    ``cv_results_``). An earlier fit's selection, calibration rows and stream state are dropped."""
    _forget(est, (*SELECTION, *CONFORMITY, *STREAM))
    est.fit_plan_ = result.plan
    est.mean_, est.scale_, est.model_ = result.mean, result.scale, result.model
    est.history_, est.n_iter_ = result.history, int(result.n_iter)
    est.validation_scores_ = None if result.validation_scores is None else list(result.validation_scores)
    est.best_iteration_ = result.best_iteration
    type(est).FAMILY.record(est, result.plan, result.made)
    record_diagnostics(est, result.made)
    if selection is not None:
        candidate, scheme, cv_results = selection
        est.candidate_, est.selection_scheme_, est.cv_results_ = str(candidate), str(scheme), dict(cv_results)


def record_diagnostics(est, made: dict) -> None:
    """The model's diagnostics where ``made`` has them (:func:`~alphagp.estimators.run.diagnostics_of`):
    ``diagnostics_``, and the EP counters ``n_skipped_updates_`` and ``n_improper_cavities_`` where
    the method counts them."""
    if "diagnostics" in made:
        est.diagnostics_ = made["diagnostics"]
    if "n_skipped_updates" in made:
        est.n_skipped_updates_ = made["n_skipped_updates"]
    if "n_improper_cavities" in made:
        est.n_improper_cavities_ = made["n_improper_cavities"]


def record_stream_call(est, entry: dict, seen: tuple[int, float], diagnostics: dict, optimizer: dict | None) -> None:
    """A stream's call: its history entry appended, ``n_iter_`` counting the calls, the stream's
    rows and weight so far, its optimiser's state (``None``: a closed form's, which has none), the
    model's ``diagnostics`` (:func:`~alphagp.estimators.run.diagnostics_of`), and the calibration
    rows of an earlier fit dropped."""
    history = getattr(est, "history_", [])
    est.history_ = [*history, {**entry, "epoch": len(history) + 1}]
    est.n_iter_ = len(est.history_)
    est._stream_seen, est._stream_optimizer = seen, optimizer
    _forget(est, CONFORMITY)
    record_diagnostics(est, diagnostics)


def record_calibration(est, scores: np.ndarray | None = None, classes: np.ndarray | None = None) -> None:
    """The calibration rows of :meth:`~alphagp.GPClassifier.predict_set`: their conformity scores
    and class indices (``None``: none, the attributes dropped). Scores outside [0, 1], or classes
    that do not fit them and ``classes_``, are a ``ValueError`` (a damaged file)."""
    _forget(est, CONFORMITY)
    if scores is None:
        return
    if not np.all(np.isfinite(scores)) or np.any(np.abs(scores - 0.5) > 0.5):
        raise ValueError("the conformity scores are not numbers in [0, 1]")
    est.conformity_scores_ = scores
    if classes is not None:                             # files before the Mondrian sets have none
        if classes.shape != scores.shape or not np.all((classes >= 0) & (classes < len(est.classes_))):
            raise ValueError("the calibration rows' classes do not fit their scores and the model's classes")
        est.conformity_classes_ = classes


def record_file(est, result, *, n_features: int, feature_names, table_encoding=None, calibration=(None, None),
                selection: dict | None = None, stream: tuple = (None, None)) -> None:
    """A model file's attributes: its fit (:func:`record_fit` of the ``result`` the file holds), its
    input columns (``n_features_in_``, ``feature_names_in_``, as scikit-learn's validation records
    them at ``fit``) and ``table_encoding_`` (or ``None``), its ``calibration`` rows (scores and
    classes, checked by :func:`record_calibration`), its ``selection`` (``{"candidate", "scheme",
    "cv_results"}``, or ``None``) and a stream's state (its optimiser's state and its rows and weight
    so far, or ``None``)."""
    record_fit(est, result, None if not selection else (selection["candidate"], selection["scheme"],
                                                         selection["cv_results"]))
    est.n_features_in_ = int(n_features)
    if feature_names is not None:
        est.feature_names_in_ = np.array(feature_names, dtype=object)
    if table_encoding is not None:
        est.table_encoding_ = table_encoding
    record_calibration(est, *calibration)
    est._stream_optimizer, est._stream_seen = stream
