"""Calibration of predicted probabilities: reliability curves, expected calibration error, and the
reliability diagram with its confidence histogram (Guo et al. 2017; Naeini et al. 2015; the
logistic-softmax paper's Figure 3), for any classifier with ``predict_proba`` and ``classes_``.

Top-label calibration: each point's confidence is its largest predicted probability, and points
are grouped in equal-width confidence bins; a calibrated model's accuracy in every bin equals its
mean confidence there. Plots need matplotlib (``pip install alphagp[plot]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ReliabilityCurve:
    """Per confidence bin ``[n_bins]``: ``counts``, mean ``confidence`` and ``accuracy`` (NaN where
    empty), with ``bin_edges`` ``[n_bins + 1]`` on [0, 1]."""

    bin_edges: np.ndarray
    counts: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray

    @property
    def ece(self) -> float:
        """Expected calibration error: sum_b |B_b| / N * |accuracy_b - confidence_b|."""
        used = self.counts > 0
        gaps = np.abs(self.accuracy[used] - self.confidence[used])
        return float((self.counts[used] * gaps).sum() / self.counts.sum())


def reliability_curve(proba: np.ndarray, y: np.ndarray, n_bins: int = 15) -> ReliabilityCurve:
    """The top-label reliability curve of probabilities ``proba`` ``[N, C]`` for class indices ``y`` ``[N]``."""
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y)
    if proba.ndim != 2 or len(proba) != len(y) or len(y) == 0:
        raise ValueError(f"need proba [N, C] and y [N] with N > 0, got {proba.shape} and {y.shape}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be positive, got {n_bins}")
    confidence = proba.max(axis=1)
    correct = np.argmax(proba, axis=1) == y
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(bins, weights=confidence, minlength=n_bins) / counts
        accuracy = np.bincount(bins, weights=correct.astype(float), minlength=n_bins) / counts
    return ReliabilityCurve(np.linspace(0.0, 1.0, n_bins + 1), counts, mean_conf, accuracy)


def predicted_probabilities(estimator, X, y) -> tuple[np.ndarray, np.ndarray]:
    """``(proba [N, C], class indices [N])`` of a fitted classifier (any with ``predict_proba`` and
    ``classes_``, such as :class:`~alphagp.GPClassifier` or scikit-learn's) on labelled data."""
    classes = np.asarray(estimator.classes_)
    y = np.asarray(y)
    unseen = np.setdiff1d(np.unique(y), classes)
    if unseen.size:
        raise ValueError(f"labels {unseen.tolist()} are not among the classifier's classes {classes.tolist()}")
    return np.asarray(estimator.predict_proba(X)), np.searchsorted(classes, y)


def plot_reliability(curves: dict[str, ReliabilityCurve] | ReliabilityCurve, path=None, title: str | None = None):
    """Reliability diagrams (top) and confidence histograms (bottom), one column per curve.

    Args:
        curves: one :class:`ReliabilityCurve` or ``{label: curve}``.
        path: if given, the figure is written there (PNG, PDF, ... by extension).
    Returns:
        the matplotlib ``Figure``.
    """
    try:
        import matplotlib
        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install 'alphagp[plot]'") from err
    if isinstance(curves, ReliabilityCurve):
        curves = {"": curves}
    fig, axes = plt.subplots(2, len(curves), figsize=(3.2 * len(curves), 6), squeeze=False, sharex=True)
    for column, (label, curve) in enumerate(curves.items()):
        top, bottom = axes[0, column], axes[1, column]
        width = np.diff(curve.bin_edges)
        centres = curve.bin_edges[:-1] + width / 2
        filled = curve.counts > 0
        top.bar(centres[filled], curve.accuracy[filled], width=width[filled], edgecolor="black", label="accuracy")
        top.plot([0, 1], [0, 1], "k--", linewidth=1, label="calibrated")
        top.set_ylim(0, 1)
        top.set_title(f"{label}\nECE {curve.ece:.3f}" if label else f"ECE {curve.ece:.3f}")
        top.set_ylabel("accuracy" if column == 0 else "")
        bottom.bar(centres, curve.counts / curve.counts.sum(), width=width, edgecolor="black")
        bottom.set_xlabel("confidence")
        bottom.set_ylabel("fraction of points" if column == 0 else "")
        bottom.set_xlim(0, 1)
    axes[0, 0].legend(loc="upper left")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
