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
    log_z, g1, g2 = (x.item() for x in lik.tilted(t(mean_d), t(var_d), t(s), alpha))
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
    closed = lik.tilted(mean_d, var_d, s, 1.0)
    quad = lik.tilted(mean_d, var_d, s, 1.0 - 1e-12)
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
