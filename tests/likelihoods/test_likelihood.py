import numpy as np
import pytest
import torch
from scipy.stats import norm

from alphagp.likelihoods import HeavisideLikelihood


def _mc_tilted(mean_d, var_d, s, alpha, n=2_000_000, seed=0):
    d = np.random.default_rng(seed).normal(mean_d, np.sqrt(var_d), n)
    w = norm.cdf(d / np.sqrt(s)) ** alpha
    Z = w.mean()
    m = (w * d).mean() / Z
    v = (w * (d - m) ** 2).mean() / Z
    return Z, m, v


@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.1])
def test_tilted_moments_match_monte_carlo(alpha):
    lik = HeavisideLikelihood()
    mean_d, var_d, s = 0.4, 1.7, 0.3
    t = lambda x: torch.tensor([x], dtype=torch.float64)
    log_z, g1, g2 = (x.item() for x in lik.pair_factor_tilted(t(mean_d), t(var_d), t(s), alpha))
    Z, m, v = _mc_tilted(mean_d, var_d, s, alpha)
    # moments from derivatives: E[d] = mu + var g1, Var[d] = var + var^2 g2
    assert np.exp(log_z) == pytest.approx(Z, rel=3e-3)
    assert mean_d + var_d * g1 == pytest.approx(m, abs=5e-3)
    assert var_d + var_d**2 * g2 == pytest.approx(v, rel=5e-3)


def test_quadrature_and_closed_form_agree_at_alpha_one():
    lik = HeavisideLikelihood(n_quadrature=64)
    g = torch.Generator().manual_seed(0)
    mean_d = torch.randn(20, generator=g, dtype=torch.float64) * 2
    var_d = torch.rand(20, generator=g, dtype=torch.float64) + 0.1
    s = torch.rand(20, generator=g, dtype=torch.float64) + 0.2
    closed = lik.pair_factor_tilted(mean_d, var_d, s, 1.0)
    quad = lik.pair_factor_tilted(mean_d, var_d, s, 1.0 - 1e-12)
    for a, b in zip(closed, quad):
        assert torch.allclose(a, b, atol=1e-6)


def test_predictive_sums_to_one_and_matches_monte_carlo(rng):
    lik = HeavisideLikelihood()
    mean = torch.tensor(rng.normal(0, 1.5, (5, 4)))
    var = torch.tensor(rng.uniform(0.1, 2.0, (5, 4)))
    log_p = lik.class_log_probs(mean, var)
    assert torch.allclose(log_p.exp().sum(1), torch.ones(5, dtype=torch.float64), atol=1e-6)
    f = rng.normal(mean.numpy()[None], np.sqrt(var.numpy())[None], (400_000, 5, 4))
    mc = np.stack([(f.argmax(-1) == c).mean(0) for c in range(4)], 1)
    assert np.allclose(lik.predict_proba(mean, var).numpy(), mc, atol=4e-3)


# ---------------------------------------------------------------- robust-max likelihood
def _mc_robust(mean, var, y, epsilon, alpha, n=1_000_000, seed=1):
    """Monte Carlo Z = E[p^alpha], E[log p], tilted means and variances of f, for one point."""
    f = np.random.default_rng(seed).normal(mean, np.sqrt(var), (n, len(mean)))
    C = len(mean)
    p = np.where(f.argmax(1) == y, 1 - epsilon + epsilon / C, epsilon / C)
    w = p**alpha
    Z = w.mean()
    m = (w[:, None] * f).mean(0) / Z
    v = (w[:, None] * (f - m) ** 2).mean(0) / Z
    return Z, np.log(p).mean(), m, v


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_robust_max_tilted_moments_and_expected_log_lik_match_monte_carlo(alpha):
    from alphagp.likelihoods import RobustMaxLikelihood
    eps = 0.05
    lik = RobustMaxLikelihood(eps)
    mean = np.array([0.3, -0.2, 0.6, 0.0])
    var = np.array([0.8, 1.5, 0.4, 1.1])
    y = 0
    t = lambda a: torch.tensor(a[None], dtype=torch.float64)
    log_z, g_m, g_v = lik.tilted_derivatives(t(mean), t(var), torch.tensor([y]), alpha)
    Z, ell, m, v = _mc_robust(mean, var, y, eps, alpha)
    assert np.exp(log_z.item()) == pytest.approx(Z, rel=2e-3)
    g_m, g_v = g_m.numpy()[0], g_v.numpy()[0]
    np.testing.assert_allclose(mean + var * g_m, m, atol=6e-3)                    # A.14
    np.testing.assert_allclose(var - var**2 * (g_m**2 - 2 * g_v), v, atol=6e-3)   # A.15
    assert lik.expected_log_lik(t(mean), t(var), torch.tensor([y])).item() == pytest.approx(ell, abs=3e-3)


def test_robust_max_predictive_matches_monte_carlo(rng):
    from alphagp.likelihoods import RobustMaxLikelihood
    eps = 0.1
    mean = torch.tensor(rng.normal(0, 1.5, (4, 3)))
    var = torch.tensor(rng.uniform(0.1, 2.0, (4, 3)))
    f = rng.normal(mean.numpy()[None], np.sqrt(var.numpy())[None], (400_000, 4, 3))
    largest = np.stack([(f.argmax(-1) == c).mean(0) for c in range(3)], 1)
    expected = (1 - eps) * largest + eps / 3
    np.testing.assert_allclose(RobustMaxLikelihood(eps).predict_proba(mean, var).numpy(), expected, atol=4e-3)


def test_robust_max_stays_finite_and_accurate_for_means_40_sd_apart():
    from alphagp.likelihoods import RobustMaxLikelihood
    lik = RobustMaxLikelihood(1e-3)
    mean = torch.tensor([[0.0, 40.0, -40.0], [0.0, 6.0, -40.0]], dtype=torch.float64)
    var = torch.ones(2, 3, dtype=torch.float64)
    log_p = lik.class_log_probs(mean, var)
    assert torch.all(torch.isfinite(log_p))
    # the two losers of the first row sit on the epsilon / C floor
    assert log_p[0, 0].item() == pytest.approx(np.log(1e-3 / 3), rel=1e-6)
    for y in range(3):
        for alpha in (1.0, 0.5):
            log_z, g_m, g_v = lik.tilted_derivatives(mean, var, torch.full((2,), y), alpha)
            assert torch.all(torch.isfinite(log_z)) and torch.all(torch.isfinite(g_m)) and torch.all(torch.isfinite(g_v))
    # without the floor (epsilon = 0), log P stays finite and matches the two-class closed form
    # log Phi(d / sqrt(2)) where the third class is out of reach (Phi(46/1) = 1 to double precision)
    exact = RobustMaxLikelihood(0.0).class_log_probs(mean, var)
    assert torch.all(torch.isfinite(exact))
    assert exact[1, 0].item() == pytest.approx(norm.logcdf(-6.0 / np.sqrt(2.0)), rel=1e-3)


@pytest.mark.parametrize("alpha", [1.0, 1e-3])
def test_robust_max_value_and_gradients_where_the_label_is_certain(alpha):
    """Sixty standard deviations out, E[p^alpha] is a^alpha and the gradients stay finite
    (log1mexp at 0 itself is tested in test_numerics.py)."""
    from alphagp.likelihoods import RobustMaxLikelihood
    mean = torch.tensor([[0.0, -60.0, -60.0], [0.0, -3.0, 1.0]], dtype=torch.float64, requires_grad=True)
    var = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    log_z = RobustMaxLikelihood(1e-3).log_expected_power(mean, var, torch.tensor([0, 0]), alpha)
    g_m, g_v = torch.autograd.grad(log_z.sum(), (mean, var))
    assert torch.all(torch.isfinite(g_m)) and torch.all(torch.isfinite(g_v))
    assert log_z[0].item() == pytest.approx(alpha * np.log(1 - 1e-3 + 1e-3 / 3), abs=1e-12)
