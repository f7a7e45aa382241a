"""EP, SEP and power EP against the exact posterior of the Heaviside model (Gibbs sampling).

A 3-class problem drawn from the GP prior (40 training points in 2-D, noise 0.05), the true
hyper-parameters held fixed and the inducing points on the training inputs, so the sparse
model is the full one. The remaining differences are the EP approximation itself and the
paper's product-of-Phi form of the likelihood factors (eq. 33). Measured at seed 0 (mean and
largest absolute difference of the 30 x 3 test probabilities from the average of two chains):
EP 0.017 / 0.071, SEP 0.036 / 0.140, power EP alpha = 0.5 0.011 / 0.036; the two chains differ
from each other by at most 0.034 (Monte Carlo error). The bounds below leave room for that.
"""

import numpy as np
import pytest

from alphagp import GPClassifier
from alphagp.testing import gibbs_reference as gibbs

NOISE, LENGTHSCALE, AMPLITUDE = 0.05, 1.0, 1.0


@pytest.fixture(scope="module")
def problem():
    p = gibbs.draw_problem(0, NOISE, lengthscale=LENGTHSCALE, amplitude=AMPLITUDE)
    chains = [gibbs.chain_probabilities(p, gibbs.sample_posterior, 1500, seed=s) for s in (1, 2)]
    return p.X_train, p.y_train, p.X_test, chains


def test_two_gibbs_chains_agree(problem):
    *_, chains = problem
    assert np.abs(chains[0] - chains[1]).max() < 0.06
    np.testing.assert_allclose(chains[0].sum(1), 1.0, atol=1e-3)


@pytest.mark.parametrize("params, max_bound, mean_bound", [
    (dict(method="ep"), 0.10, 0.03),
    (dict(method="sep"), 0.20, 0.05),
    (dict(method="ep", alpha=0.5), 0.08, 0.02),
])
def test_predictive_probabilities_agree_with_the_exact_posterior(problem, params, max_bound, mean_bound):
    X, y, X_test, chains = problem
    exact = (chains[0] + chains[1]) / 2
    clf = GPClassifier(inducing_points=X, kernel_params=dict(lengthscale=LENGTHSCALE, amplitude=AMPLITUDE,
                                                             noise=NOISE),
                       optimize_hyperparameters=False, optimize_inducing=False, standardize=False,
                       max_iter=200, **params).fit(X, y)
    diff = np.abs(clf.predict_proba(X_test) - exact)
    assert diff.max() < max_bound
    assert diff.mean() < mean_bound
