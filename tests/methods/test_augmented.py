"""The augmented logistic-softmax model: local and global updates against the ELBO they optimise,
the ELBO against a Monte Carlo estimate of its definition, CAVI's monotonicity, the Gibbs sampler
against an independent importance sampler, and class subsampling."""

import itertools
import math

import numpy as np
import pytest
import torch
from polyagamma import random_polyagamma
from scipy.optimize import minimize

from alphagp.kernels import ARDKernel
from alphagp.likelihoods import LogisticSoftmaxLikelihood
from alphagp.methods import build_method
from alphagp.methods.polya_gamma import LocalVariables, augmented_point_terms, local_updates, tanh_half_over_twice

C = 3


def _marginals(rng, B=7, K=C):
    mean = torch.as_tensor(rng.normal(0.0, 2.0, (B, K)))
    second = mean.square() + torch.as_tensor(rng.uniform(0.1, 2.0, (B, K)))
    y = torch.as_tensor(rng.integers(0, K, B))
    return mean, second, torch.nn.functional.one_hot(y, K).double()


@pytest.mark.parametrize("K", [C, 2])
def test_local_updates_are_a_stationary_point_of_the_augmented_elbo(rng, K):
    """Eq. 12-14 (eq. 17 for a subset of K classes) zero the ELBO's gradient in alpha, gamma and b."""
    mean, second, onehot = _marginals(rng, K=K)
    local = local_updates(mean, second, onehot, C)
    alpha, gamma, b = (t.clone().requires_grad_(True) for t in (local.alpha, local.gamma, local.b))
    theta = (onehot + gamma) * tanh_half_over_twice(b)
    elbo = augmented_point_terms(mean, second, onehot, LocalVariables(alpha, gamma, b, theta), C).sum()
    for grad in torch.autograd.grad(elbo, (alpha, gamma, b)):
        assert grad.abs().max() < 1e-8


def test_augmented_elbo_equals_a_monte_carlo_estimate_of_its_definition():
    """For f known, draw lambda ~ Ga(alpha, C), n ~ Po(gamma), omega ~ PG(y + n, b) and average
    log p(y, n, omega | f, lambda) + log p(n | lambda) - log q(lambda) - log q(n) - log q(omega | n)
    (the Polya-Gamma densities enter only through their ratio, exp(-b^2 omega / 2) cosh(b / 2)^(y + n))."""
    g = np.random.default_rng(3)
    f = np.array([0.7, -1.2, 2.0])
    onehot = np.array([0.0, 1.0, 0.0])
    ft = torch.as_tensor(f)[None]
    local = local_updates(ft, ft.square(), torch.as_tensor(onehot)[None], C)
    closed = float(augmented_point_terms(ft, ft.square(), torch.as_tensor(onehot)[None], local, C))
    alpha, gamma, b = float(local.alpha), local.gamma[0].numpy(), local.b[0].numpy()
    S = 200_000
    lam = g.gamma(alpha, 1.0 / C, S)
    n = g.poisson(gamma, (S, C))
    shape = onehot + n
    omega = np.zeros((S, C))
    omega[shape > 0] = random_polyagamma(shape[shape > 0], np.broadcast_to(b, (S, C))[shape > 0], random_state=g)
    from scipy.special import gammaln
    log_lik = (-(shape) * math.log(2) + (onehot - n) * f / 2 - f * f * omega / 2).sum(1)
    log_poisson_prior = (n * np.log(lam)[:, None] - lam[:, None] - gammaln(n + 1)).sum(1)
    log_q_lambda = alpha * math.log(C) + (alpha - 1) * np.log(lam) - C * lam - gammaln(alpha)
    log_q_n = (n * np.log(gamma) - gamma - gammaln(n + 1)).sum(1)
    log_pg_ratio = (-shape * np.log(np.cosh(b / 2)) + b * b * omega / 2).sum(1)   # log PG(.|h, 0) - log PG(.|h, b)
    values = log_lik + log_poisson_prior - log_q_lambda - log_q_n + log_pg_ratio
    se = values.std() / math.sqrt(S)
    assert abs(values.mean() - closed) < 4 * se, (values.mean(), closed, se)
    # and it lower-bounds log p(y | f)
    assert closed < float(torch.log_softmax(torch.nn.functional.logsigmoid(ft), -1)[0, 1])


def test_polya_gamma_draws_have_the_known_moments():
    """PG(h, z): mean h tanh(z/2) / (2z), variance h (sinh z - z) / (4 z^3 cosh(z/2)^2)."""
    g = np.random.default_rng(0)
    for h, z in [(1.0, 0.5), (3.0, 2.0), (7.0, 6.0)]:
        draws = random_polyagamma(h, z, size=100_000, random_state=g)
        mean = h * np.tanh(z / 2) / (2 * z)
        var = h * (np.sinh(z) - z) / (4 * z ** 3 * np.cosh(z / 2) ** 2)
        assert abs(draws.mean() - mean) < 4 * math.sqrt(var / len(draws))
        assert abs(draws.var() / var - 1) < 0.05


def _model(rng, name="augmented", N=12, M=4, D=2, **params):
    X = torch.as_tensor(rng.normal(size=(N, D)))
    y = torch.as_tensor(rng.integers(0, C, N))
    y[:C] = torch.arange(C)
    kernel = ARDKernel(C, D, lengthscale=1.3, amplitude=1.5, noise=0.05)
    Z = X[torch.as_tensor(rng.choice(N, M, replace=False))]
    model = build_method(name, Z.expand(C, M, D).clone(), kernel, n_data=N, **params)
    return model, X, y


def _random_q(model, rng):
    """Give q a random proper factor (positive semi-definite precision, random natural mean)."""
    M = model.site_natural.shape[-1]
    A = torch.as_tensor(rng.normal(size=(C, M, M)))
    model.site_precision.copy_(A @ A.mT)
    model.site_natural.copy_(torch.as_tensor(rng.normal(size=(C, M))))


def test_global_update_is_the_optimum_of_the_elbo_in_q_with_the_local_factors_fixed(rng):
    model, X, y = _model(rng)
    _random_q(model, rng)
    idx = torch.arange(len(y))
    with torch.no_grad():
        L, Psi, s = model._whitened_kernel(X)
        mean, var = model._latent_marginals(L, Psi)
        onehot = torch.nn.functional.one_hot(y, C).double()
        local = local_updates(mean.T, (mean.square() + var + s).T, onehot, C)
        model._global_step(L, Psi, onehot, local, idx, None)            # full batch: rho = 1
        Bm, b = model._q(L, None)
        closed_mean = torch.linalg.solve(Bm, b[..., None])[..., 0]
        closed_cov = torch.linalg.inv(Bm)
    M = Psi.shape[1]
    tril = torch.tril_indices(M, M)

    def negative_elbo(params):
        p = torch.as_tensor(params, dtype=torch.float64).requires_grad_(True)
        mu = p[:C * M].reshape(C, M)
        R = torch.zeros(C, M, M, dtype=torch.float64)
        R[:, tril[0], tril[1]] = p[C * M:].reshape(C, -1)
        m = (mu[:, None, :] @ Psi)[:, 0]
        v = (R.mT @ Psi).square().sum(1)
        data = augmented_point_terms(m.T, (m.square() + v + s).T, onehot, local, C).sum()
        kl = 0.5 * (R.square().sum((-1, -2)) + mu.square().sum(-1) - M
                    - torch.log(torch.diagonal(R, dim1=-2, dim2=-1).square()).sum(-1)).sum()
        value = -(data - kl)
        value.backward()
        value = value.detach()
        return value.item(), p.grad.numpy().copy()

    start = np.concatenate([np.zeros(C * M), np.tile(np.eye(M)[tril[0], tril[1]], C)])
    result = minimize(negative_elbo, start, jac=True, method="L-BFGS-B",
                      options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 10_000})
    mu = torch.as_tensor(result.x[:C * M]).reshape(C, M)
    R = torch.zeros(C, M, M, dtype=torch.float64)
    R[:, tril[0], tril[1]] = torch.as_tensor(result.x[C * M:]).reshape(C, -1)
    assert torch.allclose(mu, closed_mean, atol=1e-4)
    assert torch.allclose(R @ R.mT, closed_cov, atol=1e-4)
    # the closed form is at least as good as the optimiser's answer, and stationary
    R_closed = torch.linalg.cholesky(closed_cov)
    value, grad = negative_elbo(np.concatenate([closed_mean.reshape(-1).numpy(),
                                                R_closed[:, tril[0], tril[1]].reshape(-1).numpy()]))
    assert value <= result.fun + 1e-10 and np.abs(grad).max() < 1e-8


def test_cavi_never_decreases_the_elbo_on_a_full_batch(rng):
    model, X, y = _model(rng, N=20)
    idx = torch.arange(len(y))
    with torch.no_grad():
        values = [float(model.objective(X, y, idx))]
        for _ in range(15):
            model.local_update(X, y, idx)
            values.append(float(model.objective(X, y, idx)))
    steps = np.diff(values)
    assert values[-1] > values[0] + 1.0                          # it does move
    assert np.all(steps > -1e-9 * abs(values[-1])), steps


def test_elbo_gradient_in_the_hyperparameters_matches_finite_differences(rng):
    """The local factors are re-optimised at every evaluation but enter the gradient as constants:
    at their optimum their own derivative vanishes, so autograd must match finite differences."""
    model, X, y = _model(rng)
    _random_q(model, rng)
    idx = torch.arange(len(y))
    params = [model.kernel.raw_lengthscale, model.kernel.raw_amplitude, model.kernel.raw_noise,
              model.inducing_points]
    grads = torch.autograd.grad(model.objective(X, y, idx), params)
    h = 1e-6
    for p, grad in zip(params, grads):
        flat = p.data.view(-1)
        for j in range(0, flat.numel(), max(1, flat.numel() // 5)):
            values = []
            for step in (h, -h):
                flat[j] += step
                with torch.no_grad():
                    values.append(float(model.objective(X, y, idx)))
                flat[j] -= step
            fd = (values[0] - values[1]) / (2 * h)
            assert abs(fd - float(grad.reshape(-1)[j])) < 1e-5 * max(1.0, abs(fd)), (p.shape, j, fd)


def test_class_subsampling_averages_to_the_full_elbo_terms(rng):
    """With the local factors fixed, the mean over all subsets of K classes of the subset's scaled
    terms equals the terms of all C classes (eq. 17's C / K scaling is unbiased)."""
    mean, second, onehot = _marginals(rng)
    local = local_updates(mean, second, onehot, C)
    full = augmented_point_terms(mean, second, onehot, local, C)
    for K in (1, 2):
        subsets = [list(s) for s in itertools.combinations(range(C), K)]
        average = torch.stack([augmented_point_terms(
            mean[:, s], second[:, s], onehot[:, s],
            LocalVariables(local.alpha, local.gamma[:, s], local.b[:, s], local.theta[:, s]), C)
            for s in subsets]).mean(0)
        assert torch.allclose(average, full, atol=1e-12)
        # eq. 17's alpha from a subset is unbiased for alpha = 1 + sum_c gamma_c
        alphas = torch.stack([1 + C / K * local.gamma[:, s].sum(1) for s in subsets])
        assert torch.allclose(alphas.mean(0), local.alpha, atol=1e-12)


def test_class_subsampling_touches_only_the_drawn_classes_and_their_kernel_rows(rng):
    model, X, y = _model(rng, class_batch_size=2)
    idx = torch.arange(6)
    classes = model._class_subset()
    L_all, Psi_all, s_all = model._whitened_kernel(X[idx])
    L, Psi, s = model._whitened_kernel(X[idx], classes)
    assert torch.allclose(L, L_all[classes]) and torch.allclose(Psi, Psi_all[classes]) and torch.allclose(s, s_all[classes])
    before = model.site_natural.clone()
    with torch.no_grad():
        model.local_update(X[idx], y[idx], idx)
    changed = (model.site_natural != before).any(1)
    assert changed.nonzero().flatten().tolist() == classes.tolist()


def test_gibbs_predictions_agree_with_an_independent_importance_sampler():
    """Six training points, inducing points on them (the full GP): self-normalised importance
    sampling from the joint GP prior of training and test latents, weighted by the likelihood,
    is an independent estimate of the exact posterior predictive. (Sampling the Poisson counts
    with sigma(f) instead of sigma(-f), as eq. 7's conditional is printed, moves the answer by 0.045.)"""
    g = np.random.default_rng(5)
    N, D, amplitude, noise = 6, 1, 4.0, 0.2
    X = np.linspace(-2.5, 2.5, N)[:, None]
    y = np.array([0, 0, 1, 1, 2, 2])
    X_test = np.array([[-2.0], [0.0], [2.0]])
    kernel = ARDKernel(C, D, lengthscale=1.0, amplitude=amplitude, noise=noise)
    model = build_method("augmented_gibbs", torch.as_tensor(X).expand(C, N, D).clone(), kernel, n_data=N,
                         n_samples=6000, burn_in=500, thin=2, seed=1)
    model.after_fit(X, y)
    gibbs = model.predict_proba(torch.as_tensor(X_test)).numpy()

    from sklearn.gaussian_process.kernels import RBF
    A = np.vstack([X, X_test])
    K = amplitude * RBF(1.0)(A) + noise * np.eye(len(A))           # the noise is part of each latent's prior
    chol = np.linalg.cholesky(K)
    S = 400_000
    F = np.einsum("ij,sjc->sic", chol, g.standard_normal((S, len(A), C)))
    link = torch.log_softmax(torch.nn.functional.logsigmoid(torch.as_tensor(F)), -1).numpy()
    log_w = link[:, np.arange(N), y].sum(1)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    reference = np.einsum("s,sic->ic", w, np.exp(link[:, N:]))
    assert np.abs(gibbs - reference).max() < 0.015, (gibbs, reference)


def test_logistic_softmax_monte_carlo_expectations_match_quadrature():
    """C = 2: E[log p] by Monte Carlo within 4 standard errors of a 2-D Gauss-Hermite rule; the
    quasi-Monte Carlo predictive within 2e-3 of it."""
    mean = torch.tensor([[0.5, -0.3], [2.0, 1.0]], dtype=torch.float64)
    var = torch.tensor([[1.0, 0.5], [0.3, 2.0]], dtype=torch.float64)
    y = torch.tensor([0, 1])
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    lik = LogisticSoftmaxLikelihood(n_mc_samples=20_000, n_predictive_samples=4096)
    f = np.array([[0.3, -2.0, 1.0]])
    sig = 1 / (1 + np.exp(-f))
    assert np.allclose(np.exp(lik.log_link(torch.as_tensor(f)).numpy()), sig / sig.sum(), atol=1e-14)   # eq. 5
    for i in range(2):
        f1 = mean[i, 0].item() + math.sqrt(var[i, 0]) * nodes[:, None]
        f2 = mean[i, 1].item() + math.sqrt(var[i, 1]) * nodes[None, :]
        F = torch.as_tensor(np.stack(np.broadcast_arrays(f1, f2), -1))
        log_p = lik.log_link(F).numpy()
        W = weights[:, None] * weights[None, :]
        expected = (W * log_p[..., y[i]]).sum()
        proba = (W[..., None] * np.exp(log_p)).sum((0, 1))
        draws = lik.log_prob(mean[i] + var[i].sqrt() * torch.randn(20_000, 1, 2, generator=torch.Generator().manual_seed(i),
                                                                    dtype=torch.float64), y[i:i + 1])
        estimate = lik.expected_log_lik(mean[i:i + 1], var[i:i + 1], y[i:i + 1],
                                        generator=torch.Generator().manual_seed(9))
        assert abs(float(estimate) - expected) < 4 * float(draws.std()) / math.sqrt(20_000)
        assert np.abs(lik.predict_proba(mean[i:i + 1], var[i:i + 1]).numpy()[0] - proba).max() < 2e-3


@pytest.mark.parametrize("method, params", [
    ("augmented", dict(batch_size=40)),
    ("augmented", dict(batch_size=40, method_params={"class_batch_size": 2})),
    ("vi_logistic_softmax", dict(batch_size=40)),
])
def test_interrupted_fits_resume_to_the_uninterrupted_result_and_files_round_trip(thyroid, tmp_path, method, params):
    """The step counter (the natural-gradient schedule, class subsets, Monte Carlo draws) is part
    of the checkpoint; a saved model predicts as the fitted one."""
    from alphagp import GPClassifier
    from alphagp.training import CheckpointResumed

    from conftest import Interrupt, interrupt_at
    X, y = thyroid
    settings = dict(method=method, n_inducing=8, max_iter=6, random_state=0, **params)
    full = GPClassifier(**settings).fit(X, y)
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Interrupt):
        GPClassifier(checkpoint=str(path), **settings).fit(X, y, callbacks=[interrupt_at(3)])
    with pytest.warns(CheckpointResumed):
        resumed = GPClassifier(checkpoint=str(path), **settings).fit(X, y)
    assert np.allclose(resumed.predict_proba(X), full.predict_proba(X), atol=1e-12)
    full.save(tmp_path / "model.agp")
    loaded = GPClassifier.load(tmp_path / "model.agp")
    assert np.array_equal(loaded.predict_proba(X), full.predict_proba(X))
    assert full.score(X, y) > np.bincount(y).max() / len(y)        # better than the majority class


def test_augmented_rejects_arguments_it_does_not_have(thyroid):
    from alphagp import GPClassifier
    X, y = thyroid
    with pytest.raises(ValueError, match="has no alpha"):
        GPClassifier(method="augmented", alpha=0.5, max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="class_batch_size"):
        GPClassifier(method="augmented", max_iter=1, method_params={"class_batch_size": 5}).fit(X, y)
    with pytest.raises(ValueError, match="epsilon belongs to the robust-max"):
        GPClassifier(method="vi_softmax", epsilon=0.01, max_iter=1).fit(X, y)


def _wine_fit(amplitude, monkeypatch=None):
    """Figure 5's setting (fixed kernel, inducing inputs = training inputs) on Wine at ``amplitude``;
    with ``monkeypatch``, q starts at the prior whatever its bound (the start before the fix)."""
    from sklearn.model_selection import train_test_split

    from alphagp import GPClassifier
    from alphagp.data import DataNotFoundError, load_benchmark
    from alphagp.methods.augmented import AugmentedVI
    try:
        X, y = load_benchmark("wine")
    except DataNotFoundError as err:
        pytest.skip(f"benchmark data absent: {err}")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=1 / 3, random_state=0, stratify=y)
    C, d = 3, X.shape[1]
    kernel = {"amplitude": np.full(C, amplitude), "lengthscale": np.full((C, d), np.sqrt(d)), "noise": np.full(C, 1e-3)}
    if monkeypatch is not None:
        monkeypatch.setattr(AugmentedVI, "_choose_start", lambda self, X, y, idx: None)
    clf = GPClassifier(method="augmented", kernel_params=kernel, optimize_hyperparameters=False, inducing_points=X_tr,
                       optimize_inducing=False, max_iter=100, random_state=0).fit(X_tr, y_tr)
    if monkeypatch is not None:
        monkeypatch.undo()
    return clf.history_[-1]["objective"], clf.evaluate(X_te, y_te)["nll"]


def test_augmented_vi_starts_where_the_bound_is_higher(monkeypatch):
    """At amplitude 50 the prior start ends in a worse fixed point of the joint CAVI than N(0, I)
    (the authors' start); at amplitude 3 both reach the same one."""
    elbo, nll = _wine_fit(50.0)
    elbo_prior, nll_prior = _wine_fit(50.0, monkeypatch)
    assert elbo > elbo_prior + 1.0 and nll < 0.5 * nll_prior
    elbo, nll = _wine_fit(3.0)
    elbo_prior, nll_prior = _wine_fit(3.0, monkeypatch)
    assert abs(elbo - elbo_prior) < 0.05 and abs(nll - nll_prior) < 1e-3
