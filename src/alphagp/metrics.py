"""Classification metrics on predicted probabilities ``proba`` ``[N, C]`` and integer labels ``[N]``,
each a mean over the rows weighted by ``weight`` ``[N]`` where given (a row of weight w counts as w
rows)."""

from __future__ import annotations

import numpy as np

_EPS = 1e-300


def error_rate(proba: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> float:
    """Fraction of points whose most probable class is not the label."""
    return float(np.average(np.argmax(proba, axis=1) != y, weights=weight))


def negative_log_likelihood(proba: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> float:
    """Mean negative log predictive probability of the true label (nats), weighted by ``weight``
    ``[N]`` where given."""
    return float(-np.average(np.log(np.maximum(proba[np.arange(len(y)), y], _EPS)), weights=weight))


def brier_score(proba: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> float:
    """Mean over points of sum_c (p_c - [y = c])^2 (multi-class Brier score, in [0, 2])."""
    onehot = np.zeros_like(proba)
    onehot[np.arange(len(y)), y] = 1.0
    return float(np.average(np.sum((proba - onehot) ** 2, axis=1), weights=weight))


def expected_calibration_error(proba: np.ndarray, y: np.ndarray, n_bins: int = 15,
                               weight: np.ndarray | None = None) -> float:
    """Top-label ECE: sum_b |B_b|/N * |accuracy(B_b) - confidence(B_b)| over equal-width bins
    (:func:`alphagp.calibration.reliability_curve`; |B_b| the bin's weight)."""
    from .calibration import reliability_curve
    return reliability_curve(proba, y, n_bins, weight).ece


def all_metrics(proba: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> dict[str, float]:
    """error, nll, ece and brier in one dict."""
    return {"error": error_rate(proba, y, weight), "nll": negative_log_likelihood(proba, y, weight),
            "ece": expected_calibration_error(proba, y, weight=weight), "brier": brier_score(proba, y, weight)}
