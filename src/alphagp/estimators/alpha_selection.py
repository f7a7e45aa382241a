"""``alpha="auto"``: the alpha of a grid with the best mean held-out log-likelihood in stratified
K-fold cross-validation on the training data."""

from __future__ import annotations

import numpy as np

from ..metrics import negative_log_likelihood

#: candidates of ``alpha="auto"`` when ``alpha_grid`` is not given
DEFAULT_ALPHA_GRID = (0.001, 0.25, 0.5, 0.75, 1.0)


def select_alpha(estimator, X, y, weight=None) -> tuple[float, dict]:
    """The value of ``estimator.alpha_grid`` with the best mean held-out log-likelihood in
    stratified ``estimator.cv``-fold cross-validation, and the mean score of every value; with
    ``weight`` ``[N]`` (sample times class weights), each fold is fitted and scored with its rows'.

    ``estimator`` is cloned for every (alpha, fold), with that alpha, no checkpoint and no
    progress. A class with fewer rows than folds is a ``ValueError`` that says so.
    """
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold
    grid = [float(a) for a in (DEFAULT_ALPHA_GRID if estimator.alpha_grid is None else estimator.alpha_grid)]
    if not grid or not all(0.0 < a <= 1.0 for a in grid):
        raise ValueError(f"alpha_grid must hold values in (0, 1], got {grid}")
    cv = estimator.cv
    labels, counts = np.unique(y, return_counts=True)
    if counts.min() < cv:
        raise ValueError(f"alpha='auto' cross-validates with cv={cv} stratified folds, so every class needs at "
                         f"least {cv} rows, but class {labels[counts.argmin()].tolist()!r} has {counts.min()}; "
                         f"lower cv (at least 2), or give alpha a value")
    folds = list(StratifiedKFold(cv, shuffle=True, random_state=estimator.random_state).split(X, y))
    scores = {}
    for a in grid:
        fold_scores = []
        for train, test in folds:
            # X is the fit's validated features (a table already encoded) and weight holds any class weights
            model = clone(estimator).set_params(alpha=a, checkpoint=None, verbose=False, categorical_features=None)
            if weight is None:
                model.fit(X[train], y[train])
                fold_scores.append(-model.evaluate(X[test], y[test])["nll"])
            else:
                model.set_params(class_weight=None).fit(X[train], y[train], sample_weight=weight[train])
                proba = model.predict_proba(X[test])
                fold_scores.append(-negative_log_likelihood(proba, model._encode(y[test]), weight[test]))
        scores[a] = float(np.mean(fold_scores))
        if estimator.verbose:
            print(f"alpha={a:g}: mean held-out log-likelihood {scores[a]:.4f} ({cv} folds)", flush=True)
    return max(scores, key=scores.get), scores
