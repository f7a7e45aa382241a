"""The held-out schemes a selection scores its candidates by (``method="auto"``, issue 79 item 4), as
small records: which rows a candidate fits and which score it, how a fit is scored, whether the
candidates may race and whether the winner's scored fit is a final fit already.

* :class:`KFold` (below :data:`CV_ROWS` training rows): stratified k-fold cross-validation
  (scikit-learn's ``StratifiedKFold``, repeated :data:`TINY_REPEATS` times below :data:`TINY_ROWS`
  rows); with integer weights (a count-weighted table) the rows' copies are split, so a row of
  weight 3 can be fitted with 2 copies and scored on 1. A candidate fits each fold's training rows
  and is scored by the weighted NLL of its predictions of the fold's held-out rows.
* :class:`OneSplit` (from :data:`CV_ROWS` rows on): one stratified validation share of the rows,
  the one every candidate's validated early stopping holds out (the same draw): a candidate fits
  every row, holds the share out itself, and is scored by the NLL of the state it returns (the
  best one on those rows); that fit is the candidate's final fit already.
* :class:`NoHeldOut`: no stratified share exists (a class with a single row); nothing is scored.

The model's own leave-one-out (the closed form's, exact EP's cavities) is not a scheme here: with
the kernel start fitted on every row it leaks (issue 79, ``benchmarks/loo_leak.py``); it chooses a
candidate's settings inside each fold (:attr:`~.model_selection.Candidate.loo_grid`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.held_out import class_counts, held_out_problem, held_out_rows
from ..metrics import negative_log_likelihood
from .classifier_family import class_probabilities

#: below this many training rows the candidates are compared by k-fold cross-validation
CV_ROWS = 2_000
#: below this many training rows the stratified folds are drawn :data:`TINY_REPEATS` times (folds of a
#: dozen rows cannot rank candidates alone: issue 73's 58-row table)
TINY_ROWS, TINY_REPEATS = 100, 3
#: integer weights summing to at most this many are copies of their rows, split across the folds
MAX_COPIES = 100_000


@dataclass(frozen=True)
class Fold:
    """One held-out split of a selection: the rows a candidate fits (``train``) and their weights,
    the rows it is scored on (``test``) and theirs (``None``: unweighted rows)."""

    train: np.ndarray
    test: np.ndarray
    train_weight: np.ndarray | None = None
    test_weight: np.ndarray | None = None


@dataclass(frozen=True)
class HeldOutScheme:
    """What every held-out scheme is (the selection reads nothing else of it): its ``folds``, its
    ``name`` (``selection_scheme_``, ``cv_results_``'s and the progress lines'), what the command
    line says of its scores (``said``), whether candidates may race on it (``races``:
    :func:`~.model_selection.behind`, where the held-out folds are large enough) and whether a scored
    fit of the winner is its final fit (``keeps_fit``). A candidate fits a fold's training rows with
    its parameters as given, and a closed form refitted in one step on every row takes them as
    given too; a scheme that differs says so. Here: no fold, nothing scored (:class:`NoHeldOut`)."""

    folds: tuple[Fold, ...] = ()
    name = "none"
    said = "not scored (a class of one row)"
    races = False
    keeps_fit = False

    def fit_rows(self, fold: Fold, weight):  # noqa: ARG002 -- the scheme interface
        """The rows (and their weights) a candidate fits on ``fold``: its training rows."""
        return fold.train, fold.train_weight

    def fit_params(self, params: dict) -> dict:
        """A candidate's parameters on this scheme: as given."""
        return params

    def refit_params(self, params: dict, given: dict) -> dict:  # noqa: ARG002 -- the scheme interface
        """The winner's ``params`` for a closed form's one-step fit on every row (none held out), the
        estimator's parameters ``given``: as they are."""
        return params


@dataclass(frozen=True)
class KFold(HeldOutScheme):
    """Stratified k-fold cross-validation (module docstring): its ``folds``; candidates race, and the
    winner's scored fit saw a fold's rows only, so the final fit is a fit of its own."""

    name = "cv"
    said = "cross-validated"
    races = True

    def score(self, result, fold: Fold, X, y_idx: np.ndarray, n_classes: int, n_jobs) -> float:
        """The weighted NLL of ``result``'s predictions of ``fold``'s held-out rows."""
        proba = class_probabilities(result.predictor(n_jobs), X[fold.test], n_classes)
        return negative_log_likelihood(proba, y_idx[fold.test], fold.test_weight)

    def scored_on(self, n_scores: int) -> str:
        """What a candidate's held-out NLL was measured on, for the progress lines."""
        return f"{n_scores} of {len(self.folds)} folds"


@dataclass(frozen=True)
class OneSplit(HeldOutScheme):
    """One stratified validation share (module docstring): its one :class:`Fold`; the winner's scored
    fit, early-stopped on the share, is kept as the final fit."""

    name = "split"
    said = "on a held-out split"
    keeps_fit = True

    def fit_rows(self, fold: Fold, weight):  # noqa: ARG002 -- the scheme interface
        """Every row: the candidate's early stopping holds the split's share out itself."""
        return slice(None), weight

    def fit_params(self, params: dict) -> dict:
        """The candidate's fit stops early on the split's share."""
        return {**params, "early_stopping": True}

    def refit_params(self, params: dict, given: dict) -> dict:
        """A one-step fit on every row has no share to stop on: the estimator's ``early_stopping``."""
        return {**params, "early_stopping": given["early_stopping"]}

    def score(self, result, fold: Fold, X, y_idx: np.ndarray, n_classes: int, n_jobs) -> float:  # noqa: ARG002 -- the scheme interface
        """The held-out NLL of the state the fit returned (its best on the share)."""
        return float(result.validation_scores[result.best_iteration - 1])

    def scored_on(self, n_scores: int) -> str:  # noqa: ARG002 -- the scheme interface
        return "one split"


@dataclass(frozen=True)
class NoHeldOut(HeldOutScheme):
    """No stratified held-out share exists: no candidate can be scored."""


#: the schemes by name (``selection_scheme_`` read back: :func:`said_of`)
SCHEMES = {scheme.name: scheme for scheme in (KFold, OneSplit, NoHeldOut)}


def said_of(name: str) -> str:
    """How the held-out scores of the scheme ``name`` (a ``selection_scheme_``) were measured, in words."""
    return SCHEMES[name].said


def _copies(weight: np.ndarray | None) -> np.ndarray | None:
    """The rows' weights as counts of copies where they are whole numbers, some above one, and at
    most :data:`MAX_COPIES` in all (a count-weighted table: its folds then split the copies, not the
    rows); ``None`` otherwise."""
    if weight is None:
        return None
    w = np.asarray(weight, dtype=np.float64)
    if not np.all(w == np.round(w)) or w.max() <= 1 or w.sum() > MAX_COPIES:
        return None
    return w.astype(np.int64)


def _splitter(k: int, n_rows: int, seed: int):
    """Stratified k-fold, repeated :data:`TINY_REPEATS` times below :data:`TINY_ROWS` rows."""
    from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold
    if n_rows < TINY_ROWS:
        return RepeatedStratifiedKFold(n_splits=k, n_repeats=TINY_REPEATS, random_state=seed)
    return StratifiedKFold(k, shuffle=True, random_state=seed)


def scheme_for(y_idx: np.ndarray, cv: int, fraction: float, seed: int, weight: np.ndarray | None = None):
    """The held-out scheme of rows with class indices ``y_idx`` ``[N]`` (weights ``weight`` ``[N]`` or
    ``None``): :class:`KFold` of ``cv`` folds (at most the smallest class's rows) below
    :data:`CV_ROWS` rows, :class:`OneSplit` of a stratified ``fraction`` from there on (drawn by
    ``seed``, as the candidates' early stopping draws it), :class:`NoHeldOut` where no stratified
    share exists."""
    n_rows = len(y_idx)
    copies = _copies(weight) if n_rows < CV_ROWS else None
    owner = np.arange(n_rows) if copies is None else np.repeat(np.arange(n_rows), copies)
    labels = y_idx[owner]
    counts = class_counts(labels)
    if int(counts[counts > 0].min()) < 2:
        return NoHeldOut()
    w = None if weight is None else np.asarray(weight, dtype=np.float64)
    if n_rows >= CV_ROWS:
        if held_out_problem(y_idx, fraction, stratify=True) is not None:
            return NoHeldOut()
        fit_rows, held = held_out_rows(y_idx, fraction, True, seed)
        return OneSplit((Fold(fit_rows, held, None if w is None else w[fit_rows], None if w is None else w[held]),))
    k = min(cv, int(counts[counts > 0].min()))
    folds = []
    for train, test in _splitter(k, len(owner), seed).split(np.zeros(len(owner)), labels):
        if copies is None:
            folds.append(Fold(train, test, None if w is None else w[train], None if w is None else w[test]))
            continue
        fit_count = np.bincount(owner[train], minlength=n_rows).astype(np.float64)
        test_count = np.bincount(owner[test], minlength=n_rows).astype(np.float64)
        fit_rows, test_rows = np.flatnonzero(fit_count), np.flatnonzero(test_count)
        folds.append(Fold(fit_rows, test_rows, fit_count[fit_rows], test_count[test_rows]))
    return KFold(tuple(folds))
