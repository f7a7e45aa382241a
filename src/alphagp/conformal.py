"""Prediction sets with a coverage guarantee: split-conformal classification (Vovk et al. 2005;
the "least ambiguous set-valued classifier" score of Sadinle, Lei & Wasserman 2019, MAPIE's
``"lac"``).

A fitted classifier's probabilities give each calibration row the conformity score
s_i = 1 - p(y_i | x_i). For n calibration rows exchangeable with the test rows, the set

    C(x) = {k : 1 - p(k | x) <= q},   q = the ceil((n + 1) level)-th smallest s_i,

holds the true label with probability at least ``level`` (marginally, over calibration and test
rows; at most ``level + 1 / (n + 1)`` when the scores have no ties). Where ceil((n + 1) level) > n
there are too few calibration rows for the level and every set holds every class.

A set can be empty: where the level is below the model's accuracy, the threshold q can sit below
1 - max_k p(k | x) for an ambiguous row, and no class is likely enough (issue 74: 87 of 1,250 sets
at 0.8). That is the guarantee's smallest set, not a failure; ``non_empty=True`` puts the most
probable class in such a set instead (MAPIE's ``include_last_label`` does the like for its
adaptive sets), which keeps the coverage guarantee (it can only rise).

:meth:`alphagp.GPClassifier.conformalize` stores the scores of rows the fit did not see;
:meth:`alphagp.GPClassifier.predict_set` forms the sets.

Class-conditional (Mondrian) sets (Vovk et al. 2005, ch. 4; ``conditional="class"``) take a
threshold per class from that class's calibration rows alone: class k enters the set where
1 - p(k | x) <= q_k, q_k the ceil((n_k + 1) level)-th smallest score of the n_k calibration rows
of class k. Then the true label is in the set with probability at least ``level`` for the rows
of every class, not only on average over the classes, at the cost of larger sets for the classes
the model finds hard (and every set holds a class with too few calibration rows for the level). MAPIE's ``SplitConformalClassifier``
takes a ``GPClassifier`` as it takes any scikit-learn classifier (BENCHMARKS.md compares the two).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np


def conformity_scores(proba: np.ndarray, y_idx: np.ndarray) -> np.ndarray:
    """s_i = 1 - p(y_i | x_i) ``[N]`` for probabilities ``proba`` ``[N, C]`` and class indices ``y_idx`` ``[N]``."""
    return 1.0 - proba[np.arange(len(y_idx)), y_idx]


def threshold(scores: np.ndarray, level: float) -> float:
    """The ceil((n + 1) ``level``)-th smallest of the n ``scores`` (``inf`` where that exceeds n)."""
    if isinstance(level, bool) or not isinstance(level, Real) or not 0.0 < level < 1.0:
        raise ValueError(f"confidence_level must be a number in (0, 1), got {level!r}")
    n = len(scores)
    rank = math.ceil((n + 1) * level)
    return math.inf if rank > n else float(np.partition(np.asarray(scores, dtype=np.float64), rank - 1)[rank - 1])


def calibration(estimator, conditional: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    """A fitted classifier's calibration for its ``predict_set``: the scores ``conformity_scores_``
    ``[n]`` and, with ``conditional="class"``, the rows' classes ``conformity_classes_`` (else
    ``None``); a one-line ``ValueError`` where they are missing or ``conditional`` is neither."""
    if conditional not in (None, "class"):
        raise ValueError(f"conditional must be None (marginal coverage) or 'class' (per class), got {conditional!r}")
    scores = getattr(estimator, "conformity_scores_", None)
    if scores is None:
        raise ValueError("predict_set needs calibration rows: call conformalize(X_cal, y_cal) with rows the fit "
                         "did not see (or fit with early_stopping=True, whose held-out rows serve)")
    classes = getattr(estimator, "conformity_classes_", None) if conditional else None
    if conditional and classes is None:
        raise ValueError("conditional='class' needs the calibration rows' classes, which this model does not "
                         "hold (written before they were kept): call conformalize(X_cal, y_cal) again")
    return scores, classes


def prediction_sets(proba: np.ndarray, scores: np.ndarray, level: float, classes: np.ndarray | None = None,
                    non_empty: bool = False) -> np.ndarray:
    """``[N, C]`` booleans: class k is in row i's set when 1 - ``proba[i, k]`` is at most the
    calibration ``scores``' threshold for ``level``; with the calibration rows' class indices
    ``classes`` ``[n]``, the threshold of class k's rows alone (Mondrian sets, module docstring).
    ``non_empty``: an empty set (no class clears the threshold, a row the model finds ambiguous
    where the level is below its accuracy) holds the most probable class instead; the coverage can
    only rise, and the sets are no longer the smallest with the guarantee."""
    if classes is None:
        sets = 1.0 - proba <= threshold(scores, level)
    else:
        q = np.array([threshold(scores[classes == k], level) for k in range(proba.shape[1])])
        sets = 1.0 - proba <= q[None, :]
    if non_empty:
        empty = ~sets.any(1)
        sets[empty, np.argmax(proba[empty], 1)] = True
    return sets
