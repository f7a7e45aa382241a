"""The closed forms of :mod:`alphagp.conjugate` against independent references: dense factors by
autodiff, scikit-learn's ``GaussianProcessRegressor`` (its own Cholesky, its own gradient),
finite differences, and the exact marginal likelihood for Titsias' bound with the rows as
inducing inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from alphagp.conjugate import (
    ExactPosterior,
    SparseStatistics,
    batched_exact_log_evidence,
    class_order,
    exact_log_evidence,
    transformed_labels,
)
from alphagp.kernel_start import dirichlet_log_marginal_likelihood, fit_kernel_start


def _kernel(X, lengthscale, amplitude=1.0):
    Z = X / lengthscale
    sq = (Z * Z).sum(-1)
    return amplitude * torch.exp(-0.5 * (sq[:, None] + sq[None, :] - 2 * Z @ Z.T).clamp_min(0))


def _problem(n, C, D=3, seed=0, counts=None):
    """Rows sorted by class with random two-level noise per row (low in the own column)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (n,), generator=g) if counts is None else torch.repeat_interleave(
        torch.arange(C), torch.as_tensor(counts))
    order, counts = class_order(y, C)
    X, y = X[order], y[order]
    high = 2.0 + 3.0 * torch.rand(n, generator=g, dtype=torch.float64)
    low = 0.2 + 0.5 * torch.rand(n, generator=g, dtype=torch.float64)
    T = torch.randn(C, n, generator=g, dtype=torch.float64)
    own = torch.nn.functional.one_hot(y, C).T.bool()
    return X, y, counts, high, low, T, own


@pytest.mark.parametrize("n, C, counts", [(40, 3, None), (30, 2, None), (25, 4, [1, 0, 14, 10]), (12, 5, None)])
def test_the_woodbury_evidence_and_its_gradient_equal_dense_factors(n, C, counts):
    X, _, counts, high, low, T, own = _problem(n, C, counts=counts)
    ls = torch.full((X.shape[1],), 1.3, dtype=torch.float64, requires_grad=True)
    high.requires_grad_(True), low.requires_grad_(True), T.requires_grad_(True)
    inputs = [ls, high, low, T]
    ours = exact_log_evidence(_kernel(X, ls), high, low, T, counts)
    dense = batched_exact_log_evidence(_kernel(X, ls), torch.where(own, low, high), T)
    assert abs(float(ours - dense)) <= 1e-10 * abs(float(dense))
    for a, b in zip(torch.autograd.grad(ours, inputs), torch.autograd.grad(dense, inputs)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-10)


def test_the_closed_form_backward_passes_gradcheck():
    X, _, counts, high, low, T, _ = _problem(9, 3, seed=3)
    K = _kernel(X, torch.full((3,), 1.1, dtype=torch.float64)).requires_grad_(True)
    high.requires_grad_(True), low.requires_grad_(True), T.requires_grad_(True)
    # K enters symmetrically: check it through a symmetric parametrisation of its perturbations
    assert torch.autograd.gradcheck(lambda K, h, lo, t: exact_log_evidence(0.5 * (K + K.T), h, lo, t, counts),
                                    (K, high, low, T))


def test_the_evidence_equals_scikit_learns_per_column_at_the_profiled_means():
    """Each column is scikit-learn's GP regression of its targets minus the profiled mean with the
    column's noise as ``alpha``; the sum of their log marginal likelihoods is ours."""
    X, _, counts, high, low, T, own = _problem(35, 3, seed=1)
    amplitude, lengthscale = 1.7, 0.9
    K = _kernel(X, torch.full((3,), lengthscale, dtype=torch.float64), amplitude)
    ours = float(exact_log_evidence(K, high, low, T, counts))
    means = ExactPosterior(K, T, counts, torch.where(own, low, high)).mean
    total = 0.0
    for c in range(3):
        gpr = GaussianProcessRegressor(ConstantKernel(amplitude, "fixed") * RBF(lengthscale, "fixed"),
                                       alpha=torch.where(own[c], low, high).numpy(), optimizer=None)
        gpr.fit(X.numpy(), (T[c] - means[c]).numpy())
        total += gpr.log_marginal_likelihood_value_
    assert abs(ours - total) <= 1e-9 * abs(total)


def test_the_profiled_means_maximise_the_evidence():
    X, _, counts, high, low, T, own = _problem(30, 3, seed=2)
    K = _kernel(X, torch.full((3,), 1.0, dtype=torch.float64))
    means = ExactPosterior(K, T, counts, torch.where(own, low, high)).mean
    noise = torch.where(own, low, high)
    best = float(batched_exact_log_evidence(K, noise, T, mean=means))
    assert abs(best - float(exact_log_evidence(K, high, low, T, counts))) <= 1e-9 * abs(best)
    for shift in (1e-3, -1e-3):
        for c in range(3):
            moved = means.clone()
            moved[c] += shift
            assert float(batched_exact_log_evidence(K, noise, T, mean=moved)) < best


def test_the_dirichlet_start_ends_where_scikit_learns_gradient_vanishes():
    """At the start's optimum (interior of the bounds), the gradient of the profiled evidence in
    log amplitude and log lengthscales, computed by scikit-learn's ``eval_gradient`` per column at
    the profiled means (the envelope theorem), is zero."""
    g = np.random.default_rng(0)
    X = g.standard_normal((60, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 0] > 1).astype(int)
    start = fit_kernel_start(X, y, 3, surrogate="dirichlet", alpha_eps=0.01, tolerance=1e-12, max_iterations=500)
    order = np.argsort(y, kind="stable")
    Xo, yo = torch.as_tensor(X[order]), torch.as_tensor(y[order])
    labels = transformed_labels(0.01)
    own = torch.nn.functional.one_hot(yo, 3).T.bool()
    T = torch.where(own, torch.tensor(labels["t_own"]), torch.tensor(labels["t_other"])).double()
    amplitude, lengthscale = float(start.amplitude[0]), start.lengthscale[0]
    jitter = 1e-6 * amplitude                     # the start's kernel noise, the rows' own noise beside it
    K = amplitude * _kernel(Xo, torch.as_tensor(lengthscale)) + jitter * torch.eye(60, dtype=torch.float64)
    high, low = torch.full((60,), labels["s_other"]), torch.full((60,), labels["s_own"])
    means = ExactPosterior(K, T, torch.bincount(yo, minlength=3).tolist(),
                           torch.where(own, low, high).double()).mean
    gradient = np.zeros(1 + X.shape[1])
    for c in range(3):
        gpr = GaussianProcessRegressor(ConstantKernel(amplitude) * RBF(lengthscale), optimizer=None,
                                       alpha=(torch.where(own[c], low, high).double() + jitter).numpy())
        gpr.fit(Xo.numpy(), (T[c] - means[c]).numpy())
        _, grad = gpr.log_marginal_likelihood(gpr.kernel_.theta, eval_gradient=True)
        gradient += grad
    value = float(dirichlet_log_marginal_likelihood(
        torch.tensor([[math.log(amplitude), *np.log(lengthscale)]]), Xo, yo, 3, 0.01))
    assert np.max(np.abs(gradient)) <= 1e-4 * abs(value)


def test_the_transformed_labels_are_the_log_normal_with_the_gammas_mean_and_variance():
    """Gamma(a, 1) has mean and variance a; the log-normal exp(N(t, s)) has mean exp(t + s/2) and
    variance (exp(s) - 1) exp(2 t + s) (the paper's moment matching, eq. 6-7)."""
    for eps in (0.1, 0.01, 1e-4):
        labels = transformed_labels(eps)
        for name, a in (("own", 1 + eps), ("other", eps)):
            t, s = labels[f"t_{name}"], labels[f"s_{name}"]
            assert math.isclose(math.exp(t + s / 2), a, rel_tol=1e-12)
            assert math.isclose((math.exp(s) - 1) * math.exp(2 * t + s), a, rel_tol=1e-12)
        assert labels["s_own"] < labels["s_other"]


def _sparse_statistics(X, Z, lengthscale, T, high, low, y, blocks=1):
    Kuu = _kernel(Z, lengthscale) + 1e-10 * torch.eye(len(Z), dtype=torch.float64)
    L_inv = torch.linalg.inv(torch.linalg.cholesky(Kuu))
    total = None
    for rows in np.array_split(np.arange(len(X)), blocks):
        rows = torch.as_tensor(rows)
        A = (L_inv @ _kernel(torch.cat([Z, X[rows]]), lengthscale)[:len(Z), len(Z):])[None]
        residual = (1.0 - A.square().sum(1)).clamp_min(0.0)
        own = torch.nn.functional.one_hot(y[rows], T.shape[0]).T.bool()
        part = SparseStatistics.of_rows(A, residual, T[:, rows], torch.where(own, low[rows], high[rows]), y[rows])
        total = part if total is None else total + part
    return total


def test_titsias_bound_with_the_rows_as_inducing_inputs_is_the_exact_evidence():
    X, y, counts, high, low, T, _ = _problem(30, 3, seed=4)
    ls = torch.full((3,), 1.2, dtype=torch.float64)
    exact = float(exact_log_evidence(_kernel(X, ls) + 1e-10 * torch.eye(30, dtype=torch.float64), high, low, T,
                                     counts))
    bound = float(_sparse_statistics(X, X, ls, T, high, low, y).log_evidence())
    assert abs(bound - exact) <= 1e-6 * abs(exact)


def test_titsias_bound_lies_below_the_evidence_and_sums_over_blocks():
    X, y, counts, high, low, T, _ = _problem(50, 3, seed=5)
    ls = torch.full((3,), 1.0, dtype=torch.float64)
    exact = float(exact_log_evidence(_kernel(X, ls), high, low, T, counts))
    whole = _sparse_statistics(X, X[::5], ls, T, high, low, y)
    in_blocks = _sparse_statistics(X, X[::5], ls, T, high, low, y, blocks=4)
    assert float(whole.log_evidence()) < exact
    for name, value in whole.tensors().items():
        np.testing.assert_allclose(in_blocks.tensors()[name].numpy(), value.numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=name)


def test_the_exact_posterior_is_scikit_learns_per_column():
    X, _, counts, high, low, T, own = _problem(30, 3, seed=6)
    ls = 0.8
    K = _kernel(X, torch.full((3,), ls, dtype=torch.float64))
    posterior = ExactPosterior(K, T, counts, torch.where(own, low, high))
    X_new = torch.randn(7, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    Kxs = _kernel(torch.cat([X, X_new]), torch.full((3,), ls, dtype=torch.float64))[:30, 30:]
    mean, var = posterior.marginals(Kxs, torch.ones(3, 7, dtype=torch.float64))
    for c in range(3):
        gpr = GaussianProcessRegressor(ConstantKernel(1.0, "fixed") * RBF(ls, "fixed"), optimizer=None,
                                       alpha=torch.where(own[c], low, high).numpy())
        gpr.fit(X.numpy(), (T[c] - posterior.mean[c]).numpy())
        m, sd = gpr.predict(X_new.numpy(), return_std=True)
        np.testing.assert_allclose(mean[c].numpy(), m + float(posterior.mean[c]), rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(var[c].numpy(), sd ** 2, rtol=1e-8, atol=1e-10)


def test_where_a_class_block_is_not_positive_definite_one_factor_per_column_takes_over(monkeypatch):
    """Issue 74: G_c = D^-1 - A^-1 loses positive definiteness to rounding on legal data (170 rows of
    one feature, 6 classes, noise_scale 0.008). With the Woodbury factors failing, the evidence and
    the posterior come from one factor of K + S_c per column, equal to the Woodbury ones where
    those exist; a Dirichlet GP fit on that table fits."""
    from alphagp import GPClassifier, conjugate
    from alphagp.numerics import CholeskyError
    X, _, counts, high, low, T, own = _problem(30, 3, seed=6)
    K = _kernel(X, torch.full((3,), 0.8, dtype=torch.float64))
    noise = torch.where(own, low, high)
    X_new = torch.randn(7, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    Kxs = _kernel(torch.cat([X, X_new]), torch.full((3,), 0.8, dtype=torch.float64))[:30, 30:]
    woodbury = exact_log_evidence(K, high, low, T, counts)
    marginals = ExactPosterior(K, T, counts, noise).marginals(Kxs, torch.ones(3, 7, dtype=torch.float64))

    def failing(*args):
        raise CholeskyError("not positive definite")

    monkeypatch.setattr(conjugate, "_woodbury", failing)
    assert abs(float(exact_log_evidence(K, high, low, T, counts) - woodbury)) <= 1e-10 * abs(float(woodbury))
    for a, b in zip(ExactPosterior(K, T, counts, noise).marginals(Kxs, torch.ones(3, 7, dtype=torch.float64)),
                    marginals):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)
    monkeypatch.undo()
    rng = np.random.default_rng(0)
    X1, y1 = rng.standard_normal((170, 1)), rng.integers(0, 6, 170)
    proba = GPClassifier(method="dirichlet", method_params={"noise_scale": 0.008}, random_state=0).fit(X1, y1) \
        .predict_proba(X1)
    assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(1), 1.0)


@pytest.mark.parametrize("n, C, counts, per_column", [(30, 3, None, False), (20, 2, None, False),
                                                      (18, 4, [1, 0, 9, 8], False), (16, 3, None, True)])
def test_leave_one_out_equals_refits_without_each_row(n, C, counts, per_column):
    """Issue 79 item 3: the closed-form leave-one-out latent means and variances of every row equal
    a posterior conditioned on the other rows (kernel and noise fixed, the means profiled on them),
    for one kernel (the Woodbury blocks) and one factor per column."""
    X, y, counts, high, low, T, own = _problem(n, C, counts=counts)
    noise = torch.where(own, low, high)
    K = _kernel(X, torch.full((X.shape[1],), 1.1, dtype=torch.float64))
    posterior = ExactPosterior(K.expand(C, n, n) if per_column else K, T, counts, noise)
    mean, var = posterior.leave_one_out()
    for i in range(n):
        rest = torch.cat([torch.arange(i), torch.arange(i + 1, n)])
        refit_counts = torch.bincount(y[rest], minlength=C).tolist()
        K_rest = K[rest][:, rest]
        refit = ExactPosterior(K_rest.expand(C, n - 1, n - 1) if per_column else K_rest, T[:, rest], refit_counts,
                               noise[:, rest])
        k = K[rest][:, i:i + 1]
        m_i, v_i = refit.marginals(k.expand(C, n - 1, 1) if per_column else k, K[i, i].expand(C, 1))
        np.testing.assert_allclose(mean[:, i].numpy(), m_i[:, 0].numpy(), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(var[:, i].numpy(), v_i[:, 0].numpy(), rtol=1e-8, atol=1e-10)
