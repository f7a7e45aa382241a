"""Deep GPs by approximate power EP (methods/dgp.py): the energy against independent references.

The references below are written densely and separately from the method: q(u) = N(mu, Sigma) from
the whitened parameters (mu = L m, Sigma = L S S' L'), the paper's natural-parameter form of the
energy from the factor Lambda = Sigma^-1 - K^-1, eta = Sigma^-1 mu with explicit inverses, KL divergences from torch.distributions, the layer marginals from
kernel.cross. Random draws are common random numbers: the reference replays the generator's draws
in the method's order (one [S, n, H] normal array per hidden layer).
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from torch.distributions import MultivariateNormal, kl_divergence

from alphagp.kernels import ARDKernel, inverse_softplus
from alphagp.likelihoods import GaussianLikelihood, ProbitLikelihood, RobustMaxLikelihood
from alphagp.methods.dgp import DeepGP, DGPLayer


@pytest.fixture(autouse=True)
def float64_default():
    """The tests' tensors in float64 (the library's default), restored afterwards."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def random_layer(H, M, D, gen, noise=0.05, last=False, factor_scale=0.3, positive="softplus") -> DGPLayer:
    """A layer with random hyper-parameters, inducing inputs and q (a non-trivial q)."""
    kernel = ARDKernel(H, D, lengthscale=0.8 + 0.6 * torch.rand(H, D, generator=gen),
                       amplitude=0.6 + 0.8 * torch.rand(H, generator=gen), noise=noise, positive=positive)
    W = torch.zeros(D, H) if last else torch.eye(D, H)
    layer = DGPLayer(torch.randn(H, M, D, generator=gen), kernel, W)
    with torch.no_grad():
        layer.whitened_scale_raw.copy_(torch.tril(factor_scale * torch.randn(H, M, M, generator=gen)) - 0.5 * torch.eye(M))
        layer.whitened_mean.copy_(torch.randn(H, M, generator=gen))
    return layer


def set_q(layer: DGPLayer, mu, Sigma, K) -> None:
    """Store q(u) = N(mu, Sigma) in ``layer``'s whitened parameters (for the prior K = L L')."""
    L = torch.linalg.cholesky(K)
    S = torch.linalg.cholesky(torch.linalg.solve_triangular(L, torch.linalg.solve_triangular(L, Sigma, upper=False).mT,
                                                            upper=False))
    with torch.no_grad():
        layer.whitened_mean.copy_(torch.linalg.solve_triangular(L, mu[..., None], upper=False)[..., 0])
        layer.whitened_scale_raw.copy_(torch.tril(S, -1) + torch.diag_embed(torch.log(torch.diagonal(S, 0, -2, -1))))


def random_model(dims, M, N, likelihood="gaussian", alpha=0.5, S=4, seed=0, noise=0.05) -> DeepGP:
    """``dims`` = [D, H_1, ..., H_L]."""
    gen = torch.Generator().manual_seed(seed)
    layers = [random_layer(H, M, D, gen, noise=0.1 if i == len(dims) - 2 else noise, last=i == len(dims) - 2)
              for i, (D, H) in enumerate(itertools.pairwise(dims))]
    return DeepGP(layers, likelihood, N, alpha=alpha, n_samples=S)


# ---------------------------------------------------------------------- dense references
def dense_q(layer: DGPLayer, detach=True):
    """mu [H, M], Sigma [H, M, M], the prior K [H, M, M] (with the method's jitter) of q(u) = N(L m, L S S' L')."""
    cut = (lambda t: t.detach()) if detach else (lambda t: t)
    Z = cut(layer.inducing_points)
    K = layer.kernel.cross(Z, Z) + 1e-6 * layer.kernel.amplitude[:, None, None] * torch.eye(Z.shape[1])
    K = cut(K)
    L = torch.linalg.cholesky(K)
    raw = cut(layer.whitened_scale_raw)
    S = torch.tril(raw, -1) + torch.diag_embed(torch.exp(torch.diagonal(raw, 0, -2, -1)))
    LS = L @ S
    return (L @ cut(layer.whitened_mean)[..., None])[..., 0], LS @ LS.mT, K


def dense_factor(mu, Sigma, K):
    """The u-space factor of q = N(mu, Sigma) over the prior N(0, K): Lambda = Sigma^-1 - K^-1, eta = Sigma^-1 mu."""
    P = torch.linalg.inv(Sigma)
    return 0.5 * (P + P.mT) - torch.linalg.inv(K), (P @ mu[..., None])[..., 0]


def dense_marginals(layer: DGPLayer, F: torch.Tensor, mu, Sigma, K, detach=True):
    """Means and noise-free variances [..., H] of the layer's units at inputs F [..., D] under N(mu, Sigma)."""
    cut = (lambda t: t.detach()) if detach else (lambda t: t)
    X = F.reshape(-1, F.shape[-1])
    Kfu = cut(layer.kernel.cross(X, cut(layer.inducing_points)))                   # [H, R, M]
    A = Kfu @ torch.linalg.inv(K)
    mean = (A @ mu[..., None])[..., 0] + (X @ layer.mean_weights).T
    var = (cut(layer.kernel.amplitude)[:, None] - (A * Kfu).sum(-1) + ((A @ Sigma) * A).sum(-1))
    return mean.T.reshape(*F.shape[:-1], -1), var.T.reshape(*F.shape[:-1], -1)


def dense_elbo(model: DeepGP, X, y, S, seed):
    """Sparse-VI ELBO of a deep GP (deep-GP paper eq. 21; Salimbeni & Deisenroth 2017) with
    Gaussian likelihood: E_q[log p(y | f_L)] by the same propagated samples, minus the KLs."""
    gen = torch.Generator().manual_seed(seed)
    F, kl = X, 0.0
    for depth, layer in enumerate(model.layers):
        mu, Sigma, K = dense_q(layer)
        kl += kl_divergence(MultivariateNormal(mu, Sigma), MultivariateNormal(torch.zeros_like(mu), K)).sum()
        mean, var = dense_marginals(layer, F, mu, Sigma, K)
        if depth == len(model.layers) - 1:
            break
        eps = torch.randn((S, X.shape[0], layer.shape[0]), generator=gen)
        F = mean + torch.sqrt(var + layer.kernel.noise.detach()) * eps
    s2 = model.layers[-1].kernel.noise.detach()[0]
    mean, var = mean[..., 0], var[..., 0]
    expected = -0.5 * torch.log(2 * math.pi * s2) - ((y - mean) ** 2 + var) / (2 * s2)   # [S, n] or [n]
    return (expected.mean(0) if expected.dim() == 2 else expected).sum() - kl


def natural_form_energy(model: DeepGP, X, y, seed):
    """log Z_q (eq. 15-17) of a Gaussian-likelihood deep GP in the paper's natural-parameter form: each
    unit's u-space factor (Lambda, eta) from q, the cavity (K^-1 + c Lambda, c eta) with c = 1 - alpha / N,
    g(P, eta) = eta' P^-1 eta / 2 - log|P| / 2 by explicit inverses, the samples propagated as the method
    draws them, and log E[N(y | f, s2)^alpha] in closed form. Nothing is detached, so autograd gives the
    gradient with respect to every parameter (q's through the factor it implies)."""
    gen = torch.Generator().manual_seed(seed)
    N, alpha = model.n_data, model.alpha
    c = 1 - alpha / N

    def g(P, eta):
        Sigma = torch.linalg.inv(P)
        return 0.5 * (eta[..., None, :] @ Sigma @ eta[..., None])[..., 0, 0] + 0.5 * torch.logdet(Sigma)

    F, global_terms = X, 0.0
    for depth, layer in enumerate(model.layers):
        mu, Sigma, K = dense_q(layer, detach=False)
        Lam, eta = dense_factor(mu, Sigma, K)
        K_inv = torch.linalg.inv(K)
        g_q, g_c = g(K_inv + Lam, eta), g(K_inv + c * Lam, c * eta)
        global_terms = global_terms + (g_q - g(K_inv, torch.zeros_like(eta)) + N / alpha * (g_c - g_q)).sum()
        Sigma_c = torch.linalg.inv(K_inv + c * Lam)
        mean, var = dense_marginals(layer, F, (Sigma_c @ (c * eta)[..., None])[..., 0], Sigma_c, K, detach=False)
        if depth == len(model.layers) - 1:
            break
        eps = torch.randn((model.n_samples, X.shape[0], layer.shape[0]), generator=gen)
        F = mean + torch.sqrt(var + layer.kernel.noise) * eps
    s2 = model.layers[-1].kernel.noise[0]
    m, v = mean[..., 0], var[..., 0]                                                # [S, n]
    log_t = (0.5 * (1 - alpha) * torch.log(2 * math.pi * s2) - 0.5 * math.log(alpha)
             - 0.5 * torch.log(2 * math.pi * (v + s2 / alpha)) - (y - m) ** 2 / (2 * (v + s2 / alpha)))
    log_z = torch.logsumexp(log_t, 0) - math.log(log_t.shape[0])
    return global_terms + N / X.shape[0] * log_z.sum() / alpha


def energy(model, X, y, seed=0, alpha=None):
    if alpha is not None:
        model.alpha = alpha
    with torch.no_grad():
        return float(model.energy(X, y, torch.Generator().manual_seed(seed)))


@pytest.fixture
def regression_data():
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(12, 2, generator=gen)
    return X, torch.sin(2 * X[:, 0]) + 0.1 * torch.randn(12, generator=gen)


# ---------------------------------------------------------------------- 1. alpha -> 0
@pytest.mark.parametrize("dims", [[2, 1], [2, 2, 1]], ids=["L=1", "L=2"])
def test_energy_tends_to_the_vi_elbo_with_a_gap_proportional_to_alpha(regression_data, dims):
    X, y = regression_data
    model = random_model(dims, M=5, N=len(y), S=6)
    elbo = float(dense_elbo(model, X, y, S=6, seed=3))
    gaps = {a: energy(model, X, y, seed=3, alpha=a) - elbo for a in (1e-4, 1e-5, 1e-6)}
    slopes = {a: g / a for a, g in gaps.items()}
    assert abs(gaps[1e-6]) < 1e-4 * abs(elbo)
    # gap / alpha settles to a constant: the gap is proportional to alpha
    assert slopes[1e-5] == pytest.approx(slopes[1e-6], rel=0.02)
    assert slopes[1e-4] == pytest.approx(slopes[1e-6], rel=0.05)


# ---------------------------------------------------------------------- 2. N = 1, alpha = 1
def test_one_point_at_alpha_one_gives_the_exact_marginal_likelihood_for_any_q():
    model = random_model([3, 1], M=4, N=1, alpha=1.0, seed=5)
    x, y = torch.randn(1, 3), torch.tensor([0.7])
    layer = model.layers[0]
    variance = layer.kernel.amplitude.detach()[0] + layer.kernel.noise.detach()[0]
    exact = stats.norm.logpdf(0.7, 0.0, math.sqrt(float(variance)))
    assert energy(model, x, y) == pytest.approx(exact, abs=1e-10)


# ---------------------------------------------------------------------- 3. collapse
def test_a_vanishing_hidden_layer_with_identity_mean_collapses_to_one_layer(regression_data):
    X, y = regression_data
    deep = random_model([2, 2, 1], M=5, N=len(y), S=3, seed=2)
    hidden = deep.layers[0]
    with torch.no_grad():
        hidden.kernel.raw_amplitude.fill_(float(inverse_softplus(torch.tensor(1e-12))))
        hidden.kernel.raw_noise.fill_(float(inverse_softplus(torch.tensor(1e-14))))
        hidden.whitened_scale_raw.zero_()                                     # q = prior
        hidden.whitened_mean.zero_()
    shallow = DeepGP([deep.layers[1]], "gaussian", len(y), alpha=0.5)
    for alpha in (0.5, 1.0):
        assert energy(deep, X, y, alpha=alpha) == pytest.approx(energy(shallow, X, y, alpha=alpha), rel=1e-7)
    X_new = torch.randn(7, 2)
    for a, b in zip(deep.predict_output(X_new, 3), shallow.predict_output(X_new, 1)):
        # the hidden outputs still move by sqrt(MIN_VARIANCE) = 1e-5 (the variance floor)
        torch.testing.assert_close(a, b.expand_as(a), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------- 4. Titsias
def test_optimal_q_at_small_alpha_is_titsias_q_and_the_energy_is_the_exact_evidence():
    gen = torch.Generator().manual_seed(4)
    X = torch.randn(8, 1, generator=gen)
    y = torch.cos(2 * X[:, 0]) + 0.2 * torch.randn(8, generator=gen)
    kernel = ARDKernel(1, 1, lengthscale=0.4, amplitude=1.3, noise=0.05)
    layer = DGPLayer(X[None].clone(), kernel, torch.zeros(1, 1))
    model = DeepGP([layer], "gaussian", 8, alpha=1e-6)
    kernel.requires_grad_(False)
    layer.inducing_points.requires_grad_(False)
    # Titsias: q*(u) proportional to p(u) N(y | A u, s2 I), A = K_fu K_uu^-1 (K_uu jittered), i.e. the
    # factor Lambda* = A'A / s2, eta* = A'y / s2
    _, _, K = dense_q(layer)
    A = (kernel.cross(X, X)[0] @ torch.linalg.inv(K[0])).detach()
    s2 = kernel.noise.detach()[0]
    Sigma_star = torch.linalg.inv(torch.linalg.inv(K[0]) + A.T @ A / s2)
    set_q(layer, (Sigma_star @ A.T @ y / s2)[None], Sigma_star[None], K)
    star = layer.whitened_scale_raw.detach().clone(), layer.whitened_mean.detach().clone()

    def value_and_gradient():
        layer.zero_grad()
        value = model.energy(X, y, torch.Generator().manual_seed(0))
        value.backward()
        return value.item(), torch.cat([layer.whitened_scale_raw.grad.flatten(), layer.whitened_mean.grad.flatten()])

    with torch.no_grad():
        layer.whitened_scale_raw.copy_(torch.tril(0.3 * torch.randn(1, 8, 8, generator=gen)))
        layer.whitened_mean.zero_()
    start_value, start_gradient = value_and_gradient()
    opt = torch.optim.LBFGS([layer.whitened_scale_raw, layer.whitened_mean], lr=1.0, max_iter=3000,
                            tolerance_grad=1e-10, tolerance_change=1e-14, history_size=50, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = -model.energy(X, y, torch.Generator().manual_seed(0))
        loss.backward()
        return loss

    opt.step(closure)
    found_value = energy(model, X, y)
    with torch.no_grad():
        layer.whitened_scale_raw.copy_(star[0])
        layer.whitened_mean.copy_(star[1])
    star_value, star_gradient = value_and_gradient()
    # q* is a stationary point and a maximum: nearby q and the optimiser's end point are lower
    assert star_gradient.abs().max() < 1e-5 * start_gradient.abs().max()
    for _ in range(10):
        with torch.no_grad():
            layer.whitened_scale_raw.copy_(star[0] + torch.tril(1e-2 * torch.randn(1, 8, 8, generator=gen)))
            layer.whitened_mean.copy_(star[1] + 1e-2 * torch.randn(1, 8, generator=gen))
        assert energy(model, X, y) < star_value
    assert star_value - 1e-2 < found_value < star_value + 1e-9 and start_value < star_value - 1
    # its energy is the exact evidence log p(y) (Z = X makes the sparse GP exact)
    exact = MultivariateNormal(torch.zeros(8), kernel.cross(X, X)[0].detach() + s2 * torch.eye(8)).log_prob(y)
    assert star_value == pytest.approx(float(exact), abs=1e-3)


# ---------------------------------------------------------------------- 5. Monte Carlo
def _exact_z(model, x, y, alpha, n_nodes=200):
    """Z_i of a 2-layer model with one hidden unit on 1-D inputs by Gauss-Hermite over the hidden output."""
    c = 1 - alpha / model.n_data
    hidden, top = model.layers

    def cavity(layer):
        mu, Sigma, K = dense_q(layer)
        Lam, eta = dense_factor(mu, Sigma, K)
        Sigma_c = torch.linalg.inv(torch.linalg.inv(K) + c * Lam)
        return (Sigma_c @ (c * eta)[..., None])[..., 0], Sigma_c, K

    m1, v1 = dense_marginals(hidden, x[:, None], *cavity(hidden))
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
    f1 = m1[:, 0, None] + torch.sqrt(v1[:, 0, None] + hidden.kernel.noise.detach()) * torch.as_tensor(nodes)
    m2, v2 = dense_marginals(top, f1[..., None], *cavity(top))                  # [n, nodes, 1]
    s2 = top.kernel.noise.detach()[0]
    integrand = [integrate.quad(lambda f, m=float(m), v=float(v), yy=float(yy): stats.norm.pdf(yy, f, math.sqrt(s2)) ** alpha
                                * stats.norm.pdf(f, m, math.sqrt(v)), -np.inf, np.inf)[0]
                 for row_m, row_v, yy in zip(m2[..., 0], v2[..., 0], y) for m, v in zip(row_m, row_v)]
    values = torch.tensor(integrand).reshape(len(y), n_nodes)
    return (values * torch.as_tensor(weights / weights.sum())).sum(1)


def test_monte_carlo_z_is_unbiased_and_the_bias_of_its_log_falls_like_one_over_s():
    model = random_model([1, 1, 1], M=4, N=10, alpha=0.5, seed=7, noise=0.3)
    x, y = torch.tensor([-0.5, 0.3, 1.1]), torch.tensor([1.5, -1.0, 0.4])
    n_draws = 400_000
    mean, var, _ = model.propagate(x[:, None], n_draws, 1 - 0.5 / 10, torch.Generator().manual_seed(0))
    z = torch.exp(model.sample_log_normalisers(mean, var, y, 0.5)).detach()
    exact = _exact_z(model, x, y, 0.5, n_nodes=40)
    se = z.std(0) / math.sqrt(n_draws)
    assert torch.all((z.mean(0) - exact).abs() < 4 * se), (z.mean(0), exact, se)
    bias = {S: (torch.log(z.reshape(-1, S, 3).mean(1)).mean(0) - torch.log(exact)).sum() for S in (16, 64)}
    assert bias[16] < 0 and bias[64] < 0                              # Jensen: log of an unbiased mean
    assert 3.0 < float(bias[16] / bias[64]) < 5.0                      # ~ -Var / (2 S Z^2): ratio 4


# ---------------------------------------------------------------------- 6. gradients
@pytest.mark.parametrize("dims,likelihood", [([2, 2, 1], "gaussian"), ([2, 2, 3], "robust_max")])
def test_energy_gradient_matches_finite_differences(dims, likelihood):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(4, 2, generator=gen)
    y = torch.randn(4, generator=gen) if likelihood == "gaussian" else torch.tensor([0, 2, 1, 2])
    model = random_model(dims, M=3, N=9, likelihood=likelihood, alpha=0.5, S=3, seed=1)
    names, values = zip(*[(n, p.detach().clone().requires_grad_(True)) for n, p in model.named_parameters()])
    assert any("whitened_scale_raw" in n for n in names) and any("raw_noise" in n for n in names)

    def f(*tensors):
        return torch.func.functional_call(model, dict(zip(names, tensors)), (X, y, torch.Generator().manual_seed(2)))

    assert torch.autograd.gradcheck(f, values, eps=1e-6, atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------------- 7. other checks
def test_cavity_is_positive_definite_for_random_parameters():
    gen = torch.Generator().manual_seed(3)
    for _ in range(20):
        layer = random_layer(3, 6, 2, gen, factor_scale=1.0)
        mu, Sigma, K = dense_q(layer)
        Lam, _ = dense_factor(mu, Sigma, K)
        for c in (0.0, 0.5, 1 - 1e-6):
            precision = torch.linalg.inv(K) + c * Lam
            assert torch.all(torch.linalg.eigvalsh(precision) > 0)
        mean, var, _, _ = layer(torch.randn(5, 2, generator=gen), 0.5)
        assert torch.all(var > 0) and torch.all(torch.isfinite(mean))


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_whitened_q_gives_the_natural_parameter_forms_energy_and_gradient(regression_data, alpha):
    """q stored whitened (m, S) is the paper's q (the factor Lambda, eta): the same energy, and the same
    gradient with respect to every parameter (q's through the factor it implies)."""
    X, y = regression_data
    model = random_model([2, 2, 1], M=5, N=30, alpha=alpha, S=4, seed=6)
    params = list(model.parameters())
    ours = model.energy(X, y, torch.Generator().manual_seed(8))
    reference = natural_form_energy(model, X, y, seed=8)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-9)
    for a, b in zip(torch.autograd.grad(ours, params), torch.autograd.grad(reference, params)):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-8)


def test_a_factor_form_state_from_an_older_file_loads_as_the_same_q(regression_data):
    """Deep-GP files before format 3 stored q's factor (R with a log diagonal, eta); loading one gives
    the whitened q that has that factor."""
    X, y = regression_data
    model = random_model([2, 2, 1], M=5, N=len(y), seed=11)
    gen = torch.Generator().manual_seed(12)
    state = model.state_dict()
    for k, layer in enumerate(model.layers):
        H = layer.shape[0]
        raw, eta = torch.tril(0.5 * torch.randn(H, 5, 5, generator=gen)), torch.randn(H, 5, generator=gen)
        R = torch.tril(raw, -1) + torch.diag_embed(torch.exp(torch.diagonal(raw, 0, -2, -1)))
        K = dense_q(layer)[2]
        Sigma = torch.linalg.inv(torch.linalg.inv(K) + R @ R.mT)
        set_q(layer, (Sigma @ eta[..., None])[..., 0], Sigma, K)                # the q of that factor
        del state[f"layers.{k}.whitened_mean"], state[f"layers.{k}.whitened_scale_raw"]
        state[f"layers.{k}.factor_raw"], state[f"layers.{k}.factor_natural"] = raw, eta
    loaded = DeepGP.from_config(model.config())
    loaded.load_state_dict(state)
    for a, b in zip(loaded.layers, model.layers):
        for x, z in zip(dense_q(a), dense_q(b)):
            torch.testing.assert_close(x, z, rtol=1e-7, atol=1e-9)
    assert energy(loaded, X, y) == pytest.approx(energy(model, X, y), rel=1e-9)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 1.0])
def test_tilted_normalisers_agree_with_quadrature(alpha):
    m, v, s2, y = 0.4, 0.7, 0.2, -0.3
    t = torch.tensor
    gauss = GaussianLikelihood(s2).log_expected_power(t([[m]]), t([[v]]), t([y]), alpha)
    quad = integrate.quad(lambda f: stats.norm.pdf(y, f, math.sqrt(s2)) ** alpha * stats.norm.pdf(f, m, math.sqrt(v)),
                          -np.inf, np.inf)[0]
    assert float(gauss) == pytest.approx(math.log(quad), abs=1e-9)
    for label, sign in ((0, -1.0), (1, 1.0)):
        probit = ProbitLikelihood().log_expected_power(t([[m]]), t([[v + s2]]), t([label]), alpha)
        quad = integrate.quad(lambda f, sign=sign: stats.norm.cdf(sign * f) ** alpha * stats.norm.pdf(f, m, math.sqrt(v + s2)),
                              -np.inf, np.inf)[0]
        assert float(probit) == pytest.approx(math.log(quad), abs=1e-8)
    # robust-max (the deep-GP convention): E[p(y | f)^alpha] by Monte Carlo
    lik = RobustMaxLikelihood(0.1, errors_to="other")
    mean, var, noise = t([[[0.3, -0.2, 0.5]]]), t([[[0.6, 1.1, 0.4]]]), t([0.1, 0.1, 0.1])
    log_z = lik.log_expected_power(mean[0], var[0] + noise, t([1]), alpha)
    f = mean[0, 0] + torch.sqrt(var[0, 0] + noise) * torch.randn(1_000_000, 3, generator=torch.Generator().manual_seed(0))
    p = torch.where(f.argmax(1) == 1, 0.9, 0.1 / 2) ** alpha
    assert float(torch.exp(log_z)) == pytest.approx(float(p.mean()), abs=4 * float(p.std()) / 1000)


def _trained(estimator_cls, X, y, **kw):
    return estimator_cls(n_layers=2, n_hidden=2, n_inducing=8, n_samples=5, n_predict_samples=50, batch_size=20,
                         max_iter=3, learning_rate=0.01, random_state=0, **kw).fit(X, y)


def test_predictive_density_integrates_to_one_and_matches_samples():
    from alphagp import DeepGPRegressor
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (60, 1))
    y = 3 * np.sin(2 * X[:, 0]) + 0.5 * rng.standard_normal(60) + 10
    reg = _trained(DeepGPRegressor, X, y)
    x_new = np.array([[-1.0], [0.5]])
    grid = np.linspace(-30, 50, 8001)
    for x in x_new:
        density = np.exp(reg.predict_log_density(np.repeat(x[None], len(grid), 0), grid))
        assert np.trapezoid(density, grid) == pytest.approx(1.0, abs=1e-4)
    mean, std = reg.predict(x_new, return_std=True)
    draws = reg.sample_y(x_new, 200_000, random_state=1)
    np.testing.assert_allclose(draws.mean(1), mean, atol=4 * std.max() / math.sqrt(200_000))
    np.testing.assert_allclose(draws.std(1), std, rtol=0.01)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_class_probabilities_sum_to_one_and_match_samples(n_classes):
    from alphagp import DeepGPClassifier
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    y = np.digitize(X[:, 0] + 0.3 * rng.standard_normal(60), [-0.5, 0.5][: n_classes - 1])
    clf = _trained(DeepGPClassifier, X, y)
    x_new = np.array([[0.2, -0.1], [1.5, 0.3]])
    proba = clf.predict_proba(x_new)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-9)
    # labels drawn from the model: a propagated sample, f from the last layer, then y | f
    mean, var = clf._output_samples(x_new)
    noise = clf.model_.output_noise
    gen = torch.Generator().manual_seed(5)
    n = 100_000
    which = torch.randint(mean.shape[0], (n,), generator=gen)
    f = mean[which] + torch.sqrt(var[which] + noise) * torch.randn(n, *mean.shape[1:], generator=gen)
    if n_classes == 2:
        labels = (torch.rand(n, 2, generator=gen) < torch.special.ndtr(f[..., 0])).long()
    else:
        wrong = torch.rand(n, 2, generator=gen) < 1e-3
        other = (f.argmax(-1) + torch.randint(1, 3, (n, 2), generator=gen)) % 3
        labels = torch.where(wrong, other, f.argmax(-1))
    freq = torch.nn.functional.one_hot(labels, n_classes).double().mean(0).numpy()
    np.testing.assert_allclose(freq, proba, atol=4 * 0.5 / math.sqrt(n))


# ---------------------------------------------------------------------- 8. batch scaling
def test_batch_energies_scaled_by_n_over_b_average_to_the_full_energy(regression_data):
    X, y = regression_data
    model = random_model([2, 1], M=5, N=len(y), alpha=0.7, seed=9)
    full = energy(model, X, y)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    batches = [perm[i:i + 4] for i in range(0, len(y), 4)]
    assert np.mean([energy(model, X[b], y[b]) for b in batches]) == pytest.approx(full, rel=1e-12)


# ---------------------------------------------------------------------- float32
def test_float32_energy_and_gradient_agree_with_float64(regression_data):
    """A float32 copy of a model sees the same draws (made in float64, then cast) and computes the same
    energy and gradient up to single precision."""
    X, y = regression_data
    model = random_model([2, 2, 1], M=5, N=len(y), alpha=0.5, seed=4)
    single = copy.deepcopy(model).float()
    results = []
    for m, dtype in ((model, torch.float64), (single, torch.float32)):
        value = m.energy(X.to(dtype), y.to(dtype), torch.Generator().manual_seed(5))
        grads = torch.autograd.grad(value, list(m.parameters()))
        results.append((value.item(), torch.cat([g.double().flatten() for g in grads])))
    (e64, g64), (e32, g32) = results
    assert e32 == pytest.approx(e64, rel=1e-5)
    assert float(torch.linalg.norm(g32 - g64) / torch.linalg.norm(g64)) < 1e-4


# ---------------------------------------------------------------------- polynomial kernel (MNIST's first layer)
def test_polynomial_kernel_matches_its_formula_and_its_deep_gp_gradient_is_right():
    from alphagp.kernels import PolynomialKernel
    gen = torch.Generator().manual_seed(0)
    kernel = PolynomialKernel(2, 3, degree=9, lengthscale=1.5 + torch.rand(2, 3, generator=gen), amplitude=0.7)
    A, B = torch.randn(4, 3, generator=gen), torch.randn(5, 3, generator=gen)
    ls = kernel.lengthscale.detach()

    def formula(P, Q):
        return torch.stack([0.7 * ((P / ls[c]) @ (Q / ls[c]).T + 1) ** 9 for c in range(2)])

    torch.testing.assert_close(kernel.cross(A, B).detach(), formula(A, B))
    torch.testing.assert_close(kernel.prior_variance(A).detach(), torch.diagonal(formula(A, A), dim1=-2, dim2=-1))
    layer = DGPLayer(torch.randn(2, 3, 3, generator=gen), kernel, torch.eye(3, 2))
    model = DeepGP([layer, random_layer(1, 3, 2, gen, noise=0.1, last=True)], "gaussian", 9, alpha=0.5, n_samples=3)
    X, y = torch.randn(4, 3, generator=gen), torch.randn(4, generator=gen)
    names, values = zip(*[(n, p.detach().clone().requires_grad_(True)) for n, p in model.named_parameters()])

    def f(*tensors):
        return torch.func.functional_call(model, dict(zip(names, tensors)), (X, y, torch.Generator().manual_seed(2)))

    assert torch.autograd.gradcheck(f, values, eps=1e-6, atol=1e-5, rtol=1e-4)
    rebuilt = DeepGP.from_config(model.config())
    rebuilt.load_state_dict(model.state_dict())
    assert energy(rebuilt, X, y) == energy(model, X, y)


# ---------------------------------------------------------------------- initialisation
def test_the_normalized_polynomial_first_layer_keeps_the_propagated_variance_bounded_on_large_inputs():
    """The paper's degree-9 polynomial kernel on inputs of large norm gives prior variances in the
    trillions; its normalised form keeps every first-layer variance at most the amplitude (q at the prior)."""
    from alphagp.methods.dgp import initial_layers
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6))
    X_big = rng.standard_normal((20, 6)) * np.logspace(0, 2, 20)[:, None]
    variances = {}
    for kernel in ("polynomial", "normalized_polynomial"):
        first = initial_layers(X, 3, 2, 4, 10, np.random.default_rng(1), first_kernel=kernel)[0]
        _, var, _, _ = first(torch.as_tensor(X_big), 1.0)
        variances[kernel] = var.detach()
    assert float(variances["polynomial"].max()) > 1e10
    assert float(variances["normalized_polynomial"].max()) <= 1.0 + 1e-9
    assert float(variances["normalized_polynomial"].min()) > 0


def test_random_hidden_means_separate_the_exchangeable_units_of_a_hidden_layer():
    """With D = 1 and H = 3 the hidden units share Z, kernel and q at the prior start (only the draws
    separate them); hidden_mean_scale draws each unit's whitened mean, a prior draw of its mean function
    at scale 1, and leaves the last layer at the prior. Kernel parameters are stored as logs."""
    from alphagp.methods.dgp import initial_layers
    X = np.linspace(-2, 2, 50)[:, None]
    same = initial_layers(X, 1, 3, 3, 10, np.random.default_rng(0))
    apart = initial_layers(X, 1, 3, 3, 10, np.random.default_rng(0), hidden_mean_scale=1.0)
    x = torch.as_tensor(X)
    mean_same, _, _, _ = same[0](x, 1.0)
    mean_apart, _, _, _ = apart[0](x, 1.0)
    assert torch.equal(mean_same[:, 1], mean_same[:, 2])                      # exchangeable
    assert float((mean_apart[:, 1] - mean_apart[:, 2]).abs().max().detach()) > 0.1
    assert torch.equal(apart[-1].whitened_mean, torch.zeros_like(apart[-1].whitened_mean))
    m = torch.cat([layer.whitened_mean.detach().flatten() for layer in apart[:-1]])
    assert abs(float(m.std()) - 1.0) < 0.2 and abs(float(m.mean())) < 0.2
    assert all(layer.kernel.positive == "log" for layer in apart)


def test_clamped_propagated_variances_are_counted_in_training_passes_only(monkeypatch):
    """The floor on a propagated variance is counted, against an independent count of the
    variances below it, with the prior variance made small enough that some fall below; a
    prediction pass (no gradient) does not count."""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(30, 2, generator=gen, dtype=torch.float64)
    kernel = ARDKernel(2, 2, lengthscale=1.0, amplitude=1.0, noise=1e-2)
    layer = DGPLayer(X[:5].expand(2, -1, -1).clone(), kernel, torch.eye(2, dtype=torch.float64))
    model = DeepGP([layer, DGPLayer(X[:5].expand(1, -1, -1).clone(), ARDKernel(1, 2, noise=1e-2),
                                    torch.zeros(2, 1, dtype=torch.float64))], "gaussian", 30)
    Kuu, Kuf = layer._inducing_prior(X)
    Psi = torch.linalg.solve_triangular(torch.linalg.cholesky(Kuu), Kuf, upper=False)
    q_diag = Psi.square().sum(1)                                     # Q_ff's diagonal [H, n]
    layer(X, 1.0)                       # q at the prior: the variance is k_ff itself, nothing clamped
    assert int(layer.n_clamped_variances) == 0
    # q at the prior adds Q_ff back, so the variance is the prior variance: make it negative at
    # the points where Q_ff's diagonal exceeds its median
    prior = q_diag.median() - q_diag
    monkeypatch.setattr(kernel, "prior_variance", lambda _X: prior)
    expected = int((prior < 1e-10).sum())
    assert 0 < expected < prior.numel()
    layer(X, 1.0)
    assert int(layer.n_clamped_variances) == expected
    with torch.no_grad():
        layer(X, 1.0)
    assert int(layer.n_clamped_variances) == expected
    assert model.diagnostics() == {"n_clamped_variances": expected}
