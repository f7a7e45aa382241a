"""The Gibbs sampler against an independent sampler and against exact moments by quadrature."""

import numpy as np
import pytest
import torch
from scipy.stats import norm

from alphagp import GPClassifier
from alphagp.data import load_bundled
from alphagp.diagnostics import effective_sample_size
from alphagp.kernels import ARDKernel
from alphagp.methods import build_method
from alphagp.testing import gibbs_reference as gref


def _sampler(Z, noise, n_data, epsilon, **params):
    C = Z.shape[0]
    kernel = ARDKernel(C, Z.shape[2], lengthscale=1.0, amplitude=1.0, noise=noise)
    return build_method("gibbs", torch.as_tensor(Z), kernel, n_data=n_data, epsilon=epsilon, **params)


def _batch_means(values, n_batches=20):
    """Mean and Monte Carlo standard error (batch means) of draws along axis 0."""
    batches = np.array_split(values, n_batches)
    means = np.stack([b.mean(0) for b in batches])
    return values.mean(0), means.std(0, ddof=1) / np.sqrt(n_batches)


def test_predictions_agree_with_an_independent_sampler_within_monte_carlo_error():
    """Inducing points on the data (M = N): the sparse model is the full one, which
    ``gibbs_reference`` samples with its own code, seed and initial state."""
    noise = 0.3
    problem = gref.draw_problem(seed=4, noise=noise, n_train=14, n_test=8)
    C = problem.K.shape[0]
    model = _sampler(np.stack([problem.X_train] * C), noise, len(problem.y_train), 0.0,
                     n_samples=4000, burn_in=500, thin=2, seed=0)
    model.after_fit(problem.X_train, problem.y_train)
    X_test = torch.as_tensor(problem.X_test)
    with torch.no_grad():
        _, Psi, s = model._whitened_kernel(X_test)
    per_draw = []
    for batch in np.array_split(np.arange(model.n_samples), 20):
        h = torch.einsum("scm,cmn->snc", model.samples[batch], Psi)
        p = model.likelihood.predict_proba(h.reshape(-1, C), s.T.expand_as(h).reshape(-1, C))
        per_draw.append(p.reshape(h.shape).mean(0).numpy())
    per_draw = np.stack(per_draw)
    ours, ours_se = per_draw.mean(0), per_draw.std(0, ddof=1) / np.sqrt(len(per_draw))
    np.testing.assert_allclose(model.predict_proba(X_test).numpy(), ours, atol=1e-12)
    draws = gref.sample_posterior(problem.K, problem.noise, problem.y_train, 4000, 500, 2, seed=11)
    batches = np.array_split(draws, 20)
    theirs_b = np.stack([gref.predictive_probabilities(b, problem.K, problem.K_star, problem.k_star_diag,
                                                       problem.noise, grid_size=201) for b in batches])
    theirs, theirs_se = theirs_b.mean(0), theirs_b.std(0, ddof=1) / np.sqrt(len(batches))
    bound = 4.5 * np.sqrt(ours_se**2 + theirs_se**2) + 2e-3
    assert np.all(np.abs(ours - theirs) < bound), np.abs(ours - theirs) / bound


def test_stationary_moments_match_two_dimensional_quadrature():
    """Two classes with one inducing point each: w is 2-D, and its exact posterior
    N(w | 0, I) prod_i [(1 - eps) Phi((h_i^y - h_i^k) / sqrt(s_i^y + s_i^k)) + eps / 2] is integrated
    on a grid (eight points; a large epsilon so the label-error step matters)."""
    eps = 0.3
    g = np.random.default_rng(0)
    X = g.uniform(-1, 1, (8, 2))
    y = (X[:, 0] > 0).astype(int)
    Z = np.array([[[-0.5, 0.0]], [[0.5, 0.0]]])
    model = _sampler(Z, 0.5, len(y), eps, n_samples=20000, burn_in=1000, thin=1, seed=3)
    model.after_fit(X, y)
    w = model.samples[:, :, 0].numpy()                                          # [S, 2]
    with torch.no_grad():
        _, Psi, s = model._whitened_kernel(torch.as_tensor(X))
    psi, s = Psi[:, 0, :].numpy(), s.numpy()                                     # [C, N]
    grid = np.linspace(-7, 7, 701)
    W1, W2 = np.meshgrid(grid, grid, indexing="ij")
    dens = norm.pdf(W1) * norm.pdf(W2)
    for i in range(len(y)):
        h = (psi[0, i] * W1, psi[1, i] * W2)
        d = (h[y[i]] - h[1 - y[i]]) / np.sqrt(s[0, i] + s[1, i])
        dens = dens * ((1 - eps) * norm.cdf(d) + eps / 2)
    dens /= dens.sum()
    exact = {"E[w1]": (W1 * dens).sum(), "E[w2]": (W2 * dens).sum(), "E[w1^2]": (W1**2 * dens).sum(),
             "E[w2^2]": (W2**2 * dens).sum(), "E[w1 w2]": (W1 * W2 * dens).sum()}
    stats = {"E[w1]": w[:, 0], "E[w2]": w[:, 1], "E[w1^2]": w[:, 0] ** 2, "E[w2^2]": w[:, 1] ** 2,
             "E[w1 w2]": w[:, 0] * w[:, 1]}
    for name, values in stats.items():
        mean, se = _batch_means(values, 40)
        assert abs(mean - exact[name]) < 4.5 * se, (name, mean, exact[name], se)


def test_effective_sample_size_of_an_ar1_chain():
    """AR(1) with coefficient phi has ESS = S (1 - phi) / (1 + phi); independent draws have ESS ~ S."""
    rng = np.random.default_rng(0)
    S, phi = 200_000, 0.8
    x = np.zeros(S)
    e = rng.standard_normal(S)
    for t in range(1, S):
        x[t] = phi * x[t - 1] + e[t]
    ess = effective_sample_size(np.stack([x, e], 1))
    assert ess[0] == pytest.approx(S * (1 - phi) / (1 + phi), rel=0.05)
    assert ess[1] == pytest.approx(S, rel=0.05)


def test_gibbs_through_the_estimator_reports_diagnostics_and_round_trips(tmp_path):
    X, y = load_bundled("new_thyroid")
    clf = GPClassifier(method="gibbs", n_inducing=8, max_iter=20, random_state=0,
                       method_params={"n_samples": 200, "burn_in": 100, "thin": 2}).fit(X[::2], y[::2])
    d = clf.diagnostics_
    assert d["n_samples"] == 200 and 1 <= d["ess_min"] <= d["ess_median"] <= 200 * 1.5
    metrics = clf.evaluate(X[1::2], y[1::2])
    assert metrics["error"] < 0.1 and metrics["nll"] < 0.35, metrics
    clf.save(tmp_path / "m")
    again = GPClassifier.load(tmp_path / "m")
    np.testing.assert_allclose(again.predict_proba(X), clf.predict_proba(X), atol=1e-12)
    assert again.diagnostics_ == pytest.approx(d)


def test_truncated_normal_draws_stay_finite_and_inside_far_tail_intervals():
    from alphagp.methods.gibbs import _truncated_normal
    g = torch.Generator().manual_seed(0)
    n = 10_000
    mean = torch.zeros(n, dtype=torch.float64)
    sd = torch.full((n,), 0.04, dtype=torch.float64)
    lower = torch.full((n,), 0.81, dtype=torch.float64)                 # 20 standard deviations out
    draws = _truncated_normal(mean, sd, lower, torch.full_like(lower, torch.inf), g)
    assert torch.all(torch.isfinite(draws)) and torch.all(draws >= 0.81)
    # the exponential tail: the excess over the bound has mean ~ sd^2 / bound
    assert (draws - 0.81).mean().item() == pytest.approx(0.04**2 / 0.81, rel=0.05)
