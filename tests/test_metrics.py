import numpy as np
import pytest
from sklearn.metrics import log_loss, zero_one_loss

from alphagp.metrics import all_metrics, brier_score, error_rate, expected_calibration_error, negative_log_likelihood


def test_metrics_agree_with_scikit_learn(rng):
    proba = rng.dirichlet(np.ones(4), size=50)
    y = rng.integers(0, 4, 50)
    assert error_rate(proba, y) == pytest.approx(zero_one_loss(y, proba.argmax(1)))
    assert negative_log_likelihood(proba, y) == pytest.approx(log_loss(y, proba, labels=range(4)))
    onehot = np.eye(4)[y]
    assert brier_score(proba, y) == pytest.approx(((proba - onehot) ** 2).sum(1).mean())
    assert set(all_metrics(proba, y)) == {"error", "nll", "ece", "brier"}


def test_ece_of_a_hand_computed_case():
    # two bins: confidence 0.95 (both right) and 0.6 (one of two right)
    proba = np.array([[0.95, 0.05], [0.95, 0.05], [0.6, 0.4], [0.4, 0.6]])
    y = np.array([0, 0, 0, 0])
    expected = 0.5 * abs(1.0 - 0.95) + 0.5 * abs(0.5 - 0.6)
    assert expected_calibration_error(proba, y) == pytest.approx(expected)
