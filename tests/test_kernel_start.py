"""The kernel start (:mod:`alphagp.kernel_start`): its marginal likelihood and gradient against
scikit-learn's ``GaussianProcessRegressor``, its optimum against scikit-learn's, and L-BFGS-B's
optimum from two starts."""

import numpy as np
import pytest
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from alphagp.kernel_start import STARTS, centred_one_hot, fit_kernel_start, log_marginal_likelihood
from alphagp.kernel_terms import RBF as RBFTerm
from alphagp.kernel_terms import Linear


def _problem(n=60, d=3, classes=3, seed=0):
    """Rows where feature 0 decides the class, feature 1 matters a little and feature 2 not at all."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = 2.0 * X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


@pytest.mark.parametrize("shared", [True, False])
def test_marginal_likelihood_and_gradient_match_scikit_learn(shared):
    X, y = _problem()
    Y = centred_one_hot(y, 3)
    rng = np.random.default_rng(1)
    groups = 1 if shared else 3
    theta = np.column_stack([np.log(rng.uniform(0.2, 2, groups)), np.log(rng.uniform(0.5, 3, (groups, 3))),
                             np.log(rng.uniform(0.05, 0.5, groups))])
    t = torch.tensor(theta, requires_grad=True)
    ours = log_marginal_likelihood(t, torch.tensor(X), torch.tensor(Y))
    (grad,) = torch.autograd.grad(ours, t)
    total, total_grad = 0.0, np.zeros_like(theta)
    for g in range(groups):
        a, ls, s = np.exp(theta[g, 0]), np.exp(theta[g, 1:-1]), np.exp(theta[g, -1])
        kernel = ConstantKernel(a) * RBF(ls) + WhiteKernel(s)       # free: theta = log a, log l, log s
        gpr = GaussianProcessRegressor(kernel, optimizer=None).fit(X, Y if shared else Y[:, g])
        value, gradient = gpr.log_marginal_likelihood(kernel.theta, eval_gradient=True)
        total += value
        total_grad[g] = gradient
    assert float(ours.detach()) == pytest.approx(total, rel=1e-9)
    np.testing.assert_allclose(grad.numpy(), total_grad, rtol=1e-7, atol=1e-9)


def test_weights_divide_the_noise_variance():
    """A row of weight w has noise variance s / w: the weighted marginal likelihood is the density of
    N(0, a K + s W^-1) of each column (scipy's, computed densely)."""
    from scipy.stats import multivariate_normal
    X, y = _problem(n=30)
    Y = centred_one_hot(y, 3)
    w = np.random.default_rng(2).uniform(0.2, 5.0, 30)
    a, ls, s = 0.7, np.array([1.2, 0.8, 2.0]), 0.1
    theta = torch.tensor(np.log([a, *ls, s]))[None]
    ours = log_marginal_likelihood(theta, torch.tensor(X), torch.tensor(Y), torch.tensor(w))
    K = a * np.exp(-0.5 * (((X[:, None] - X[None]) / ls) ** 2).sum(-1)) + np.diag(s / w)
    dense = sum(multivariate_normal(np.zeros(30), K).logpdf(Y[:, c]) for c in range(3))
    assert float(ours.detach()) == pytest.approx(dense, rel=1e-10)


def test_optimum_matches_scikit_learn():
    """The same optimum as scikit-learn's own L-BFGS-B fit of the same model from the same start."""
    X, y = _problem(n=80)
    start = fit_kernel_start(X, y, 3, shared=True)
    Y = centred_one_hot(y, 3)
    variance = Y.var(0).mean()
    kernel = (ConstantKernel(variance, (1e-4, 1e3)) * RBF([np.sqrt(3)] * 3, (1e-2, 1e3))
              + WhiteKernel(0.1 * variance, (1e-6, 1e2)))
    gpr = GaussianProcessRegressor(kernel, n_restarts_optimizer=0).fit(X, Y)
    theirs = np.exp(gpr.kernel_.theta)
    assert start.converged
    np.testing.assert_allclose(start.lengthscale[0], theirs[1:4], rtol=2e-2)
    np.testing.assert_allclose(start.amplitude[0], theirs[0], rtol=2e-2)
    np.testing.assert_allclose(start.noise[0], theirs[4], rtol=2e-2)
    assert start.log_marginal_likelihood * 80 == pytest.approx(gpr.log_marginal_likelihood_value_, rel=1e-5)


def test_two_starts_reach_the_same_lengthscales():
    X, y = _problem(n=120)
    near = fit_kernel_start(X, y, 3, initial_lengthscale=0.5)
    far = fit_kernel_start(X, y, 3, initial_lengthscale=5.0)
    np.testing.assert_allclose(near.lengthscale, far.lengthscale, rtol=1e-2)
    # and the lengthscales order the features by how much they decide the class
    ls = near.lengthscale[0]
    assert ls[0] < ls[1] < ls[2]


def test_per_class_kernels_and_the_row_limit():
    X, y = _problem(n=300)
    start = fit_kernel_start(X, y, 3, shared=False, max_rows=100, rng=np.random.default_rng(0))
    assert start.rows == 100
    assert start.lengthscale.shape == (3, 3) and start.amplitude.shape == (3,)
    assert np.all(np.isfinite(start.lengthscale)) and np.all(start.lengthscale > 0)
    params = start.kernel_params()
    assert set(params) == {"lengthscale"} and np.shape(params["lengthscale"]) == (3, 3)


def test_a_time_limit_stops_the_search_after_its_first_iteration():
    X, y = _problem(n=120)
    whole = fit_kernel_start(X, y, 3)
    cut = fit_kernel_start(X, y, 3, max_seconds=0.0)
    assert whole.converged and not cut.converged and cut.evaluations < whole.evaluations
    assert np.all(np.isfinite(cut.lengthscale))


@pytest.mark.parametrize("name", sorted(STARTS))
def test_every_registered_start_fits_and_gives_the_classifier_its_kernel(name):
    """Issue 75: a start is its search and one registry line; every one fits a small problem with its
    own settings, gives the classifier the kernel parameters it names, round-trips as plain data,
    is a choice of ``kernel_init`` on the command line and starts a fit."""
    from alphagp import GPClassifier
    from alphagp.cli import build_parser
    from alphagp.kernel_start import KernelStart, describe_start
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = (X[:, 0] + 0.3 * rng.standard_normal(60) > 0).astype(int) + (X[:, 1] > 1)
    spec = STARTS[name]
    start = fit_kernel_start(X, y, 3, surrogate=name, **spec.settings({}, None))
    params = start.kernel_params()
    assert sorted(params) == sorted(spec.carries) and "lengthscale" in params
    assert all(np.all(np.isfinite(v)) and np.all(np.asarray(v) > 0) for v in params.values())
    assert KernelStart.from_plain(start.to_plain()).kernel_params() == params
    assert spec.summary in describe_start(start)
    command = ["fit", "--data", "d.csv", "--model", "m.agp", "--kernel-init", name]
    assert build_parser(command).parse_args(command).kernel_init == name
    for method in ("dirichlet", "exact_ep", "sep"):     # issue 80: the exact-EP start gave a Dirichlet GP its sites
        fitted = GPClassifier(method=method, kernel_init=name, max_iter=3, random_state=0).fit(X, y)
        assert fitted.kernel_start_.surrogate == name and np.all(np.isfinite(fitted.predict_proba(X)))


def test_the_linear_dirichlet_surrogate_is_the_closed_form_with_the_kernels_linear_term_and_its_gradient():
    """Issue 79: the RBF-and-linear start's objective is the Dirichlet GP's log evidence with the
    kernel :class:`~alphagp.kernels.ARDKernel` makes with ``linear`` (the closed form of
    :mod:`alphagp.conjugate` at that kernel), and its gradient in every log parameter, the linear
    variance's included, matches central differences."""
    from alphagp.conjugate import batched_exact_log_evidence, class_order, transformed_labels
    from alphagp.kernel_start import DIRICHLET_JITTER, dirichlet_log_marginal_likelihood
    from alphagp.kernels import ARDKernel
    X, y = _problem(40)
    order, _ = class_order(torch.as_tensor(y), 3)
    Xt, yt = torch.as_tensor(X)[order], torch.as_tensor(y)[order]
    theta = torch.tensor([[0.3, -0.2, 0.1, 0.5, -1.0]], dtype=torch.float64, requires_grad=True)
    term = RBFTerm("ard") + Linear()
    value = dirichlet_log_marginal_likelihood(theta, Xt, yt, 3, alpha_eps=0.1, noise_scale=1.0, term=term)
    kernel = ARDKernel(3, 3, shared=True, lengthscale=theta[0, 1:4].exp().detach(), amplitude=float(theta[0, 0].exp()),
                       linear=float(theta[0, 4].exp()), noise=1e-12)
    K = kernel.cross(Xt, Xt, expand=False)[0] + float(theta[0, 0].exp()) * DIRICHLET_JITTER * torch.eye(40)
    labels = transformed_labels(0.1)
    own = torch.nn.functional.one_hot(yt, 3).T.bool()
    T = torch.where(own, torch.tensor(labels["t_own"]), torch.tensor(labels["t_other"])).double()
    noise = torch.where(own, torch.tensor(labels["s_own"]), torch.tensor(labels["s_other"])).double()
    assert float(value) == pytest.approx(float(batched_exact_log_evidence(K.detach(), noise, T)), rel=1e-7)
    assert torch.autograd.gradcheck(lambda t: dirichlet_log_marginal_likelihood(t, Xt, yt, 3, alpha_eps=0.1, term=term),
                                    (theta,), eps=1e-6, atol=1e-6)
