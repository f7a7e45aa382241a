"""Property-based tests of the estimator's edges (hypothesis): random small problems of every
shape and scale give finite, normalised probabilities or one of the documented errors."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alphagp import GPClassifier
from alphagp.methods import METHODS
from alphagp.numerics import CholeskyError
from alphagp.testing import methods_with

#: the registered methods that take mini-batches (batch-only ones refuse them)
MINI_BATCHES = set(methods_with("mini_batches"))


@st.composite
def problems(draw):
    """(X, y) with N 5-60 rows, D 1-6 columns of scales 1e-3..1e4, C 2-4 classes (each present,
    imbalance up to one row), duplicated rows and constant columns now and then."""
    n = draw(st.integers(5, 60))
    d = draw(st.integers(1, 6))
    C = draw(st.integers(2, min(4, n)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-3, 4, d) + rng.normal(0, 10, d)
    if draw(st.booleans()):
        X[:, rng.integers(d)] = rng.normal()                      # a constant column
    if draw(st.booleans()):
        k = rng.integers(1, n)
        X[-k:] = X[:k]                                            # duplicated rows
    weights = rng.dirichlet(np.full(C, draw(st.sampled_from([0.3, 1.0, 10.0]))))
    y = rng.choice(C, n, p=weights)
    y[:C] = np.arange(C)                                          # every class present
    return X, y


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=problems(), method=st.sampled_from(sorted(METHODS)), dtype=st.sampled_from(["float64", "float32"]),
       n_inducing=st.integers(1, 25), mini_batch=st.booleans())
def test_random_small_problems_give_normalised_probabilities(data, method, dtype, n_inducing, mini_batch):
    X, y = data
    sparse = METHODS[method].cls.CAPABILITIES.sparse                # exact methods refuse an M
    clf = GPClassifier(method=method, dtype=dtype, n_inducing=n_inducing if sparse else "auto", max_iter=4,
                       random_state=0,
                       batch_size=max(2, len(y) // 3) if mini_batch and method in MINI_BATCHES else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                           # M > N clips with a warning
        try:
            clf.fit(X, y)
        except (CholeskyError, FloatingPointError) as err:        # documented, and only in float32
            assert dtype == "float32" and "Likely cause: float32" in str(err)
            return
    proba = clf.predict_proba(X)
    assert proba.shape == (len(y), len(np.unique(y)))
    assert np.all(np.isfinite(proba)) and np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-4 if dtype == "float32" else 1e-10)
    assert set(clf.predict(X)) <= set(np.unique(y))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@settings(max_examples=10, deadline=None)
@given(row=st.integers(0, 9), col=st.integers(0, 2))
def test_a_non_finite_value_anywhere_is_a_clear_error(bad, row, col):
    X = np.random.default_rng(0).standard_normal((10, 3))
    X[row, col] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        GPClassifier(method="ep", n_inducing=3, max_iter=2).fit(X, np.arange(10) % 2)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=problems(), n_layers=st.integers(1, 3), target_scale=st.sampled_from([1e-4, 1.0, 1e5]),
       n_inducing=st.integers(1, 8), mini_batch=st.booleans())
def test_deep_gps_on_random_small_problems_give_finite_predictions(data, n_layers, target_scale, n_inducing,
                                                                   mini_batch):
    """The deep GPs on the same random problems (regression targets of any scale, one to three
    layers): finite means, positive finite standard deviations and log densities, normalised
    class probabilities."""
    from alphagp import DeepGPClassifier, DeepGPRegressor
    X, y = data
    settings_ = dict(n_layers=n_layers, n_inducing=n_inducing, n_samples=2, n_predict_samples=5, max_iter=2,
                     batch_size=max(2, len(y) // 3) if mini_batch else None, random_state=0)
    target = target_scale * (X[:, 0] - X[:, 0].mean() + np.random.default_rng(1).standard_normal(len(y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                           # M > N clips with a warning
        regressor = DeepGPRegressor(**settings_).fit(X, target)
        classifier = DeepGPClassifier(**settings_).fit(X, y)
    mean, std = regressor.predict(X, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)
    assert np.all(np.isfinite(regressor.predict_log_density(X, target)))
    proba = classifier.predict_proba(X)
    assert proba.shape == (len(y), len(np.unique(y))) and np.all(np.isfinite(proba)) and np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-10)
