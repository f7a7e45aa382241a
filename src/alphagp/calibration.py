"""Calibration of predicted probabilities: reliability curves, expected calibration error, and the
data of the reliability diagram (Guo et al. 2017; Naeini et al. 2015; the logistic-softmax
paper's Figure 3), for any classifier with ``predict_proba`` and ``classes_``; the diagram itself
is :func:`alphagp.plotting.plot_reliability`.

Top-label calibration: each point's confidence is its largest predicted probability, and points
are grouped in equal-width confidence bins; a calibrated model's accuracy in every bin equals its
mean confidence there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .labels import encode_known_labels


@dataclass
class ReliabilityCurve:
    """Per confidence bin ``[n_bins]``: ``counts``, mean ``confidence`` and ``accuracy`` (NaN where
    empty), with ``bin_edges`` ``[n_bins + 1]`` on [0, 1] and the number of classes (the lowest
    possible confidence is 1 / ``n_classes``; ``None`` if unknown)."""

    bin_edges: np.ndarray
    counts: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    n_classes: int | None = None

    @property
    def ece(self) -> float:
        """Expected calibration error, ``sum_b |B_b| / N * |accuracy_b - confidence_b|``."""
        used = self.counts > 0
        gaps = np.abs(self.accuracy[used] - self.confidence[used])
        return float((self.counts[used] * gaps).sum() / self.counts.sum())


def reliability_curve(proba: np.ndarray, y: np.ndarray, n_bins: int = 15,
                      weight: np.ndarray | None = None) -> ReliabilityCurve:
    """The top-label reliability curve of probabilities ``proba`` ``[N, C]`` for class indices ``y``
    ``[N]``; with row weights ``weight`` ``[N]`` the bins' counts are their rows' total weight (a row
    of weight w counts as w rows)."""
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y)
    if proba.ndim != 2 or len(proba) != len(y) or len(y) == 0:
        raise ValueError(f"need proba [N, C] and y [N] with N > 0, got {proba.shape} and {y.shape}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be positive, got {n_bins}")
    confidence = proba.max(axis=1)
    correct = np.argmax(proba, axis=1) == y
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    w = None if weight is None else np.asarray(weight, dtype=np.float64)
    counts = np.bincount(bins, weights=w, minlength=n_bins)
    if w is None:
        counts = counts.astype(np.int64)
    ones = np.ones_like(confidence) if w is None else w
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(bins, weights=ones * confidence, minlength=n_bins) / counts
        accuracy = np.bincount(bins, weights=ones * correct, minlength=n_bins) / counts
    return ReliabilityCurve(np.linspace(0.0, 1.0, n_bins + 1), counts, mean_conf, accuracy, proba.shape[1])


def predicted_probabilities(estimator, X, y) -> tuple[np.ndarray, np.ndarray]:
    """``(proba [N, C], class indices [N])`` of a fitted classifier (any with ``predict_proba`` and
    ``classes_``, such as :class:`~alphagp.GPClassifier` or scikit-learn's) on labelled data."""
    classes = np.asarray(estimator.classes_)
    y = np.asarray(y)
    unseen = np.setdiff1d(np.unique(y), classes)
    if unseen.size:
        raise ValueError(f"labels {unseen.tolist()} are not among the classifier's classes {classes.tolist()}")
    return np.asarray(estimator.predict_proba(X)), encode_known_labels(y, classes)
