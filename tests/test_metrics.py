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


def test_reliability_curve_bins_a_hand_computed_case():
    from alphagp.calibration import reliability_curve
    proba = np.array([[0.95, 0.05], [0.95, 0.05], [0.6, 0.4], [0.4, 0.6]])
    y = np.array([0, 0, 0, 0])
    curve = reliability_curve(proba, y, n_bins=10)
    assert curve.counts.tolist() == [0, 0, 0, 0, 0, 0, 2, 0, 0, 2]
    assert curve.accuracy[6] == 0.5 and curve.accuracy[9] == 1.0
    assert curve.confidence[6] == pytest.approx(0.6) and curve.confidence[9] == pytest.approx(0.95)
    assert np.isnan(curve.accuracy[0])


def test_calibration_works_on_a_scikit_learn_classifier_with_string_labels(rng):
    from sklearn.linear_model import LogisticRegression

    from alphagp.calibration import predicted_probabilities, reliability_curve
    from alphagp.plotting import plot_reliability
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=200) > 0, "yes", "no")
    clf = LogisticRegression().fit(X, y)
    proba, y_idx = predicted_probabilities(clf, X, y)
    assert np.array_equal(np.asarray(clf.classes_)[y_idx], y)
    curve = reliability_curve(proba, y_idx)
    assert curve.ece == pytest.approx(expected_calibration_error(proba, y_idx))
    assert curve.counts.sum() == 200
    figure = plot_reliability({"logistic regression": curve, "again": curve})
    assert len(figure.axes) == 4
    with pytest.raises(ValueError, match="not among the classifier's classes"):
        predicted_probabilities(clf, X, np.full(200, "maybe"))
