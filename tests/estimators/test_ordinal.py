"""Ordered classes: the ordinal likelihood against numerical integration and the probit, EP
against the exact posterior, and GPOrdinalClassifier's grades, outputs and files."""

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from alphagp import GPClassifier, GPOrdinalClassifier
from alphagp.likelihoods import OrdinalLikelihood, ProbitLikelihood

CUTS = [-0.7, 0.2, 1.1]


def _grid_moments(lik, m, v, y, alpha):
    """Z, mean and variance of p(y | f)^alpha N(f | m, v) by the trapezoid rule on a fine grid."""
    f = np.linspace(m - 12 * np.sqrt(v), m + 12 * np.sqrt(v), 200_001)
    b = np.concatenate(([-np.inf], lik.cut_points().detach().numpy(), [np.inf]))
    p = norm.cdf(b[y + 1] - f) - norm.cdf(b[y] - f)
    w = p ** alpha * norm.pdf(f, m, np.sqrt(v))
    z = np.trapezoid(w, f)
    mean = np.trapezoid(w * f, f) / z
    return z, mean, np.trapezoid(w * (f - mean) ** 2, f) / z


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_tilted_moments_match_numerical_integration(alpha):
    lik = OrdinalLikelihood(n_classes=4, cut_points=CUTS, n_quadrature=80)
    mean = torch.tensor([[0.3], [-1.5], [2.2], [0.9]], dtype=torch.float64)
    var = torch.tensor([[0.4], [1.3], [0.8], [2.0]], dtype=torch.float64)
    y = torch.tensor([0, 1, 3, 2])
    log_z, g_m, g_v = lik.tilted_derivatives(mean, var, y, alpha)
    tilted_mean = mean + var * g_m
    tilted_var = var - var ** 2 * (g_m ** 2 - 2 * g_v)
    for i in range(4):
        z, m, s = _grid_moments(lik, mean[i, 0].item(), var[i, 0].item(), y[i].item(), alpha)
        assert abs(np.exp(log_z[i].item()) - z) < 1e-7 * max(1.0, z)
        assert abs(tilted_mean[i, 0].item() - m) < 1e-6
        assert abs(tilted_var[i, 0].item() - s) < 1e-6


def test_two_grades_are_the_probit_classifier():
    """With one cut point at 0, p(y = 1 | f) = 1 - Phi(-f) = Phi(f): the probit likelihood."""
    ordinal, probit = OrdinalLikelihood(n_classes=2, cut_points=[0.0]), ProbitLikelihood()
    g = torch.Generator().manual_seed(0)
    mean = 2 * torch.randn(6, 1, generator=g, dtype=torch.float64)
    var = 0.1 + torch.rand(6, 1, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 1, 0, 1, 1, 0])
    for alpha in (1.0, 0.5):
        torch.testing.assert_close(ordinal.log_expected_power(mean, var, y, alpha),
                                   probit.log_expected_power(mean, var, y, alpha), rtol=0, atol=1e-12)
    torch.testing.assert_close(ordinal.expected_log_lik(mean, var, y), probit.expected_log_lik(mean, var, y),
                               rtol=0, atol=1e-12)
    torch.testing.assert_close(ordinal.predict_proba(mean, var), probit.predict_proba(mean, var), rtol=0, atol=1e-12)


def test_probabilities_far_in_the_tails_stay_positive_and_finite():
    lik = OrdinalLikelihood(n_classes=4, cut_points=CUTS)
    mean = torch.tensor([[-20.0], [20.0], [0.0]], dtype=torch.float64)      # 1 - Phi(21) would be 0
    proba = lik.predict_proba(mean, torch.full_like(mean, 0.01))
    assert torch.all(proba > 0) and torch.all(torch.isfinite(torch.log(proba)))
    torch.testing.assert_close(proba.sum(1), torch.ones(3, dtype=torch.float64))
    log_z = lik.log_expected_power(mean, torch.full_like(mean, 0.01), torch.tensor([3, 0, 1]), 1.0)
    assert torch.all(torch.isfinite(log_z)) and torch.all(log_z[:2] < -100)


def _exact_predictive(X, y, X_test, cuts, lengthscale, amplitude, noise, draws=400_000, seed=0):
    """p(y* = k | data) by importance sampling from the GP prior of (f_train, f_test) (kernel noise
    on the diagonal), weighted by the ordinal likelihood of the training grades."""
    A = np.concatenate([X, X_test])
    K = amplitude * np.exp(-0.5 * (A[:, None, 0] - A[None, :, 0]) ** 2 / lengthscale ** 2) + noise * np.eye(len(A))
    f = np.random.default_rng(seed).standard_normal((draws, len(A))) @ np.linalg.cholesky(K).T
    b = np.concatenate(([-np.inf], cuts, [np.inf]))
    log_w = np.log(norm.cdf(b[y + 1] - f[:, :len(y)]) - norm.cdf(b[y] - f[:, :len(y)])).sum(1)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    f_test = f[:, len(y):, None]                                          # [S, n*, 1]
    p = norm.cdf(b[1:] - f_test) - norm.cdf(b[:-1] - f_test)             # [S, n*, K]
    return np.einsum("s,snk->nk", w, p), 1.0 / np.sum(w ** 2)


@pytest.mark.parametrize("method, bound", [("ordinal_ep", 0.008), ("ordinal_pep", 0.01)])
def test_ep_agrees_with_the_exact_posterior(method, bound):
    """Hyper-parameters and cut points held at their true values and the inducing points on the
    training inputs, so the sparse model is the full one; what remains is EP's approximation.
    Measured: largest difference of the 8 x 3 test probabilities 0.0028 (EP) and 0.0048 (power EP
    at 0.5; sparse VI 0.0070), with the importance sampler's effective sample size about 21,000 and
    two samplers of other seeds 0.0027 apart."""
    g = np.random.default_rng(1)
    X = np.sort(g.uniform(-2, 2, 10))[:, None]
    X_test = np.linspace(-2.5, 2.5, 8)[:, None]
    y = np.array([0, 0, 1, 0, 1, 2, 1, 2, 2, 2])
    cuts = OrdinalLikelihood(n_classes=3).cut_points().detach().numpy()          # the estimator's start
    exact, ess = _exact_predictive(X, y, X_test, cuts, 1.0, 1.0, 0.05)
    assert ess > 1000
    clf = GPOrdinalClassifier(method=method, n_inducing=len(y), inducing_points=X, optimize_inducing=False,
                              kernel_params={"lengthscale": 1.0, "amplitude": 1.0, "noise": 0.05},
                              optimize_hyperparameters=False, standardize=False, early_stopping=False,
                              batch_size=None, max_iter=150, random_state=0)
    clf.fit(X, y)
    np.testing.assert_allclose(clf.cut_points_, cuts)                                 # the start, held
    assert np.abs(clf.predict_proba(X_test) - exact).max() < bound


def _ordinal_problem(n=240, seed=0):
    """Grades 0..3 of a smooth latent function of two features, with most rows in the middle grades."""
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, 2))
    f = 1.5 * np.sin(X[:, 0]) + 0.8 * X[:, 1] + 0.4 * g.standard_normal(n)
    return X, np.digitize(f, [-1.5, 0.0, 1.6])


def test_cut_points_are_learnt_and_stay_ordered():
    X, y = _ordinal_problem()
    start = OrdinalLikelihood(n_classes=4).cut_points().detach().numpy()
    for method in ("ordinal_ep", "ordinal_vi"):
        clf = GPOrdinalClassifier(method=method, n_inducing=15, max_iter=80, learning_rate=0.5 if method == "ordinal_vi"
                                  else None, random_state=0).fit(X, y)
        cuts = clf.cut_points_
        assert np.all(np.diff(cuts) > 0), cuts
        assert np.abs(cuts - start).max() > 0.05, "the cut points did not move from their start"


def test_an_ordered_categorical_gives_the_order_and_it_survives_the_model_file(tmp_path):
    X, y = _ordinal_problem(120)
    names = np.array(["poor", "fair", "good", "great"])                  # alphabetical: fair, good, great, poor
    labels = pd.Series(pd.Categorical(names[y], categories=list(names), ordered=True))
    clf = GPOrdinalClassifier(n_inducing=10, max_iter=30, random_state=0).fit(X, labels)
    assert clf.classes_.tolist() == list(names)
    by_index = GPOrdinalClassifier(n_inducing=10, max_iter=30, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), by_index.predict_proba(X), rtol=0, atol=1e-12)
    given = GPOrdinalClassifier(grades=list(names), n_inducing=10, max_iter=30, random_state=0).fit(X, names[y])
    np.testing.assert_allclose(given.predict_proba(X), clf.predict_proba(X), rtol=0, atol=1e-12)
    clf.save(tmp_path / "grades.safetensors")
    loaded = GPOrdinalClassifier.load(tmp_path / "grades.safetensors")
    assert loaded.classes_.tolist() == list(names)
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X), rtol=0, atol=1e-12)
    assert set(loaded.predict(X)) <= set(names)


def test_the_mean_and_median_grade_follow_the_probabilities():
    X, y = _ordinal_problem(120)
    clf = GPOrdinalClassifier(n_inducing=10, max_iter=30, random_state=0).fit(X, y + 3)      # grades 3..6
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(clf.predict_mean(X), proba @ np.arange(3, 7))
    cumulative = np.cumsum(proba, 1)
    median = clf.predict_median(X)
    for row, grade in enumerate(median):
        k = grade - 3
        assert cumulative[row, k] >= 0.5 and (k == 0 or cumulative[row, k - 1] < 0.5)
    mean, std = clf.predict_latent(X)
    assert mean.shape == std.shape == (len(X),) and np.all(std > 0)
    # a higher latent mean never gives a lower median grade
    order = np.argsort(mean)
    assert np.all(np.diff(median[order]) >= 0)


def test_bad_grades_and_methods_are_clear_errors():
    X, y = _ordinal_problem(60)
    with pytest.raises(ValueError, match="not among the grades"):
        GPOrdinalClassifier(grades=[0, 1, 2]).fit(X, y)
    with pytest.raises(ValueError, match="distinct"):
        GPOrdinalClassifier(grades=[0, 1, 1, 2, 3]).fit(X, y)
    with pytest.raises(ValueError, match="method for ordered classes"):
        GPOrdinalClassifier(method="sep").fit(X, y)


def test_gpclassifier_fits_an_ordinal_method_on_sorted_labels():
    X, y = _ordinal_problem(80)
    a = GPClassifier(method="ordinal_ep", n_inducing=8, max_iter=20, random_state=0).fit(X, y)
    b = GPOrdinalClassifier(n_inducing=8, max_iter=20, random_state=0).fit(X, y)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-12)


def test_scikit_learn_check_estimator():
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    from alphagp.estimators.base import EXPECTED_FAILED_CHECKS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures = check_estimator(GPOrdinalClassifier(n_inducing=5, max_iter=5, random_state=0), on_fail=None,
                                   expected_failed_checks=EXPECTED_FAILED_CHECKS)
    assert [(r["check_name"], str(r["exception"])[:200]) for r in failures if r["status"] == "failed"] == []


_NAMES = st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=4), min_size=4, max_size=4, unique=True)


@given(names=_NAMES)
@settings(max_examples=8, deadline=None)
def test_any_labels_in_a_given_order_fit_the_model_of_their_positions(names):
    """Grades named by any distinct text, in any order given by ``grades``: the same fit as grade
    positions 0..3 (the names' alphabetical order plays no part), and predictions among the names."""
    X, y = _ordinal_problem(80)
    by_position = GPOrdinalClassifier(n_inducing=6, max_iter=10, random_state=0).fit(X, y)
    named = GPOrdinalClassifier(grades=names, n_inducing=6, max_iter=10, random_state=0).fit(X, np.array(names)[y])
    assert named.classes_.tolist() == names
    np.testing.assert_allclose(named.predict_proba(X), by_position.predict_proba(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(named.predict(X), np.array(names)[by_position.predict(X)])


def test_a_stream_keeps_the_grades_in_the_order_its_classes_give():
    """partial_fit's classes list the grades in their order (ordinal_vi streams); a later call with
    the same grades in another order is refused, and the streamed model is the fit's first epoch
    on the same batches (the stream contract of tests/estimators/test_partial_fit.py)."""
    X, y = _ordinal_problem(120)
    names = np.array(["poor", "fair", "good", "great"])
    clf = GPOrdinalClassifier(method="ordinal_vi", batch_size=40, random_state=0)
    for start in range(0, 120, 40):
        clf.partial_fit(X[start:start + 40], names[y[start:start + 40]], classes=list(names))
    assert clf.classes_.tolist() == list(names) and clf.n_iter_ == 3
    by_position = GPOrdinalClassifier(method="ordinal_vi", batch_size=40, random_state=0)
    for start in range(0, 120, 40):
        by_position.partial_fit(X[start:start + 40], y[start:start + 40], classes=[0, 1, 2, 3])
    np.testing.assert_allclose(clf.predict_proba(X), by_position.predict_proba(X), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="differ from the classes"):
        clf.partial_fit(X[:10], names[y[:10]], classes=sorted(names))
