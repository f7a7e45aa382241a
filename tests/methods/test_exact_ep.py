"""Exact EP (pair factors on a full GP, :mod:`alphagp.pair_ep`, :mod:`alphagp.methods.exact_ep`)
against independent computations: sequential EP in f-space with dense NumPy algebra (another
parametrisation and another schedule reach the same fixed point), central differences of the
converged evidence, the row repeated for an integer weight, Monte Carlo draws of the joint
predictive."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.integrate import quad
from scipy.special import log_ndtr
from scipy.stats import norm

from alphagp import GPClassifier, pair_ep
from alphagp.kernel_terms import RBF
from alphagp.kernels import ARDKernel
from alphagp.likelihoods.heaviside import HeavisideLikelihood
from alphagp.methods import build_method
from alphagp.methods.exact_ep import largest_probability

TILTED = HeavisideLikelihood().pair_factor_tilted


def _problem(n=9, C=3, d=2, seed=0):
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, d))
    y = (np.arange(n) % C)
    g.shuffle(y)
    return X, y


def _se(A, B, amplitude, lengthscale):
    diff = (A[:, None, :] - B[None, :, :]) / lengthscale
    return amplitude * np.exp(-0.5 * (diff**2).sum(-1))


def _tilted_phi(mc, vc, s, alpha):
    """log Z, mean and variance of N(mc, vc) x Phi(d / sqrt(s))^alpha: closed form at alpha = 1,
    adaptive quadrature otherwise."""
    if alpha == 1.0:
        z = mc / np.sqrt(vc + s)
        r = np.exp(norm.logpdf(z) - log_ndtr(z))
        return log_ndtr(z), mc + vc * r / np.sqrt(vc + s), vc - vc * vc * r * (z + r) / (vc + s)
    sd = np.sqrt(vc)
    f = lambda d, k: d**k * norm.pdf(d, mc, sd) * norm.cdf(d / np.sqrt(s)) ** alpha
    lo, hi = mc - 12 * sd, mc + 12 * sd
    z0, z1, z2 = (quad(f, lo, hi, args=(k,), epsabs=0, epsrel=1e-11, limit=200)[0] for k in range(3))
    mean = z1 / z0
    return np.log(z0), mean, z2 / z0 - mean * mean


def _dense_sequential_ep(X, y, C, amplitude, lengthscale, noise, weight=None, alpha=1.0, sweeps=400):
    """Sequential power EP in f-space (all N C noise-free latent values, classes independent a
    priori), one site on a_p' g per pair factor Phi(a_p' g / sqrt(2 noise)) (a_p = e(row, winner) -
    e(row, loser)), q recomputed by dense inversion after every site. Returns the marginals of
    a_p' g ``[P]``, log Z, q's covariance and mean and the kernel matrix."""
    n = len(y)
    K = _se(X, X, amplitude, lengthscale)
    prior = np.kron(np.eye(C), K)                                      # g ordered (class, row)
    A = np.array([np.eye(C * n)[y[i] * n + i] - np.eye(C * n)[k * n + i] for i in range(n) for k in range(C)
                  if k != y[i]])
    P = len(A)
    w = np.ones(P) if weight is None else np.repeat(weight, C - 1)
    s = 2 * noise
    tau, nu = np.zeros(P), np.zeros(P)

    def q():                        # (prior^-1 + A' W A)^-1 without inverting the prior (repeated rows)
        half = np.sqrt(w * tau)[:, None] * A
        middle = np.eye(P) + half @ prior @ half.T
        Sigma = prior - prior @ half.T @ np.linalg.solve(middle, half @ prior)
        return Sigma, Sigma @ A.T @ (w * nu)

    Sigma, mu = q()
    for _ in range(sweeps):
        change = 0.0
        for p in range(P):
            s2, m = A[p] @ Sigma @ A[p], A[p] @ mu
            tc, nc = 1 / s2 - alpha * tau[p], m / s2 - alpha * nu[p]
            _, mh, vh = _tilted_phi(nc / tc, 1 / tc, s, alpha)
            new_tau, new_nu = (1 / vh - tc) / alpha, (mh / vh - nc) / alpha
            change = max(change, abs(new_tau - tau[p]), abs(new_nu - nu[p]))
            tau[p], nu[p] = new_tau, new_nu
            Sigma, mu = q()
        if change < 1e-12:
            break
    var, mean = np.einsum("pi,ij,pj->p", A, Sigma, A), A @ mu
    tc, nc = 1 / var - alpha * tau, mean / var - alpha * nu
    psi = lambda t, h: 0.5 * h * h / t - 0.5 * np.log(t)
    log_zs = np.array([_tilted_phi(h / t, 1 / t, s, alpha)[0] for t, h in zip(tc, nc)])
    log_z_terms = log_zs + psi(tc, nc) - psi(tc + alpha * tau, nc + alpha * nu)
    h = A.T @ (w * nu)
    half = np.sqrt(w * tau)[:, None] * A
    gaussian = 0.5 * h @ Sigma @ h - 0.5 * np.linalg.slogdet(np.eye(P) + half @ prior @ half.T)[1]
    return mean, var, gaussian + (w * log_z_terms).sum() / alpha, Sigma, mu, K


def _rbf(X, log_amplitude, log_lengthscale):
    """``[1, N, N]``: the search's kernel, the RBF term with one lengthscale."""
    return RBF("one").matrix(torch.cat([log_amplitude.reshape(1), log_lengthscale.reshape(1)]), X, X)[None]


def _pair_ep(X, y, C, amplitude, lengthscale, noise, weight=None, alpha=1.0):
    layout = pair_ep.pair_layout(torch.as_tensor(y), C)
    Xt = torch.as_tensor(X)
    G = pair_ep.pair_covariance(_rbf(Xt, torch.tensor(np.log(amplitude)), torch.tensor([np.log(lengthscale)])),
                                layout)
    s = pair_ep.pair_noise(torch.tensor([noise], dtype=torch.float64), layout)
    w = None if weight is None else torch.as_tensor(weight, dtype=torch.float64)[layout.row]
    ep = pair_ep.expectation_propagation(G, s, TILTED, None, w, alpha, tol=1e-12, max_sweeps=5000)
    return ep, s, w


@pytest.mark.parametrize("C, alpha", [(2, 1.0), (3, 1.0), (3, 0.5), (4, 1.0)])
def test_parallel_ep_in_the_differences_reaches_sequential_ep_in_f_space(C, alpha):
    X, y = _problem(n=8, C=C)
    mean, var, log_z, *_ = _dense_sequential_ep(X, y, C, 2.0, 1.3, 0.5, alpha=alpha)
    ep, s, w = _pair_ep(X, y, C, 2.0, 1.3, 0.5, alpha=alpha)
    assert ep.converged
    np.testing.assert_allclose(ep.posterior.mean.numpy(), mean, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(ep.posterior.var.numpy(), var, rtol=1e-7)
    np.testing.assert_allclose(pair_ep.log_evidence(ep.posterior, ep.sites, s, TILTED, w, alpha), log_z, rtol=1e-8)


def test_an_integer_weight_is_the_row_repeated():
    X, y = _problem(n=7, C=3, seed=1)
    weight = np.array([1, 3, 1, 2, 1, 1, 1], dtype=float)
    _mean, _var, log_z, *_ = _dense_sequential_ep(np.repeat(X, weight.astype(int), 0), np.repeat(y, weight.astype(int)),
                                                3, 1.5, 1.0, 0.5)
    ep, s, w = _pair_ep(X, y, 3, 1.5, 1.0, 0.5, weight=weight)
    np.testing.assert_allclose(pair_ep.log_evidence(ep.posterior, ep.sites, s, TILTED, w), log_z, rtol=1e-9)


@pytest.mark.parametrize("C, alpha", [(2, 1.0), (3, 1.0), (3, 0.5)])
def test_the_evidence_gradient_at_the_fixed_point_is_the_total_derivative(C, alpha):
    """dlogZ/dtheta with the sites held (eq. 5.27; the noise through the factors' normalisers)
    against central differences of the evidence with EP rerun to its fixed point at each
    perturbed kernel (Richardson-extrapolated)."""
    X, y = _problem(n=10, C=C, seed=2)
    weight = np.linspace(0.5, 2.0, len(y))
    theta = torch.tensor([np.log(3.0), np.log(0.9), np.log(0.4)], dtype=torch.float64, requires_grad=True)
    layout = pair_ep.pair_layout(torch.as_tensor(y), C)
    w = torch.as_tensor(weight)[layout.row]

    def evidence(t, with_gradient=False):
        G = pair_ep.pair_covariance(_rbf(torch.as_tensor(X), t[0], t[1:2]), layout)
        s = pair_ep.pair_noise(t[2:].exp(), layout)
        ep = pair_ep.expectation_propagation(G, s, TILTED, None, w, alpha, tol=1e-13, max_sweeps=20000)
        value = pair_ep.log_evidence(ep.posterior, ep.sites, s, TILTED, w, alpha)
        if not with_gradient:
            return value
        surrogate = (pair_ep.evidence_sensitivity(G.detach(), ep.posterior) * G).sum() + pair_ep.noise_term(
            ep.posterior, ep.sites, s, TILTED, w, alpha)
        return value, torch.autograd.grad(surrogate, t)[0].numpy()

    _, grad = evidence(theta, with_gradient=True)
    for direction in (np.eye(3)[0], np.eye(3)[1], np.eye(3)[2], np.array([0.6, -0.48, 0.64])):
        central = []
        for h in (1e-3, 5e-4):
            step = torch.as_tensor(h * direction)
            central.append((evidence(theta.detach() + step) - evidence(theta.detach() - step)) / (2 * h))
        numeric = (4 * central[1] - central[0]) / 3
        np.testing.assert_allclose(grad @ direction, numeric, rtol=1e-6, atol=1e-8)


def test_the_kernel_search_ends_at_a_maximum_of_the_evidence():
    X, y = _problem(n=30, C=3, d=2, seed=3)
    X[:, 0] += 2.0 * y                                   # something to learn
    fit = pair_ep.search_kernel(torch.as_tensor(X), torch.as_tensor(y), 3)
    layout = pair_ep.pair_layout(torch.as_tensor(y), 3)

    s = pair_ep.pair_noise(torch.tensor([fit.noise], dtype=torch.float64), layout)

    def evidence(log_amplitude, log_lengthscale):
        G = pair_ep.pair_covariance(_rbf(torch.as_tensor(X), torch.tensor(log_amplitude),
                                         torch.tensor([log_lengthscale])), layout)
        ep = pair_ep.expectation_propagation(G, s, TILTED, tol=1e-10)
        return pair_ep.log_evidence(ep.posterior, ep.sites, s, TILTED, None)

    best = evidence(np.log(fit.amplitude), np.log(fit.lengthscale[0]))
    assert best > evidence(0.0, np.log(np.sqrt(2))) + 1.0              # better than the start
    for da, dl in ((0.1, 0), (-0.1, 0), (0, 0.1), (0, -0.1)):
        assert best >= evidence(np.log(fit.amplitude) + da, np.log(fit.lengthscale[0]) + dl) - 1e-6


def _fitted_method(X, y, C, amplitude=2.0, lengthscale=1.3, noise=0.5):
    kernel = ARDKernel(C, X.shape[1], shared=True, amplitude=amplitude, lengthscale=lengthscale, noise=noise)
    model = build_method("exact_ep", torch.as_tensor(X)[None], kernel, n_data=len(y), n_classes=C)
    idx = torch.arange(len(y))
    with torch.no_grad():
        for _ in range(3):
            model.local_update(torch.as_tensor(X), torch.as_tensor(y), idx)
    return model


@pytest.mark.parametrize("C", [2, 3])
def test_the_joint_predictive_is_the_dense_posterior_of_f(C):
    X, y = _problem(n=8, C=C, seed=4)
    *_, Sigma, mu, K = _dense_sequential_ep(X, y, C, 2.0, 1.3, 0.5)
    model = _fitted_method(X, y, C)
    Xt = np.random.default_rng(5).standard_normal((4, 2))
    mean, cov = model.predict_joint(torch.as_tensor(Xt))
    n = len(y)
    Kx = _se(Xt, X, 2.0, 1.3)                                          # [4, n] (no noise across rows)
    K_inv = np.linalg.inv(K)                                           # distinct rows here
    for c in range(C):
        block = slice(c * n, (c + 1) * n)
        np.testing.assert_allclose(mean[:, c].numpy(), Kx @ K_inv @ mu[block], rtol=1e-5, atol=1e-7)
        for k in range(C):
            other = slice(k * n, (k + 1) * n)
            dense = Kx @ K_inv @ Sigma[block, other] @ K_inv @ Kx.T
            if c == k:                                   # the prior's, and the noise of the arg-max's f
                dense = dense + (2.0 + 0.5) * np.eye(4) - Kx @ K_inv @ Kx.T
            np.testing.assert_allclose(cov[:, c, k].numpy(), np.diag(dense), rtol=1e-5, atol=1e-7)


def test_two_classes_predict_the_probit_of_the_difference():
    X, y = _problem(n=10, C=2, seed=6)
    model = _fitted_method(X, y, 2)
    Xt = torch.as_tensor(np.random.default_rng(7).standard_normal((5, 2)))
    mean, cov = model.predict_joint(Xt)
    d_mean, d_var = mean[:, 1] - mean[:, 0], cov[:, 0, 0] + cov[:, 1, 1] - 2 * cov[:, 0, 1]
    np.testing.assert_allclose(model.predict_proba(Xt)[:, 1].numpy(), norm.cdf((d_mean / d_var.sqrt()).numpy()),
                               rtol=1e-10)


def test_the_largest_class_probabilities_against_monte_carlo():
    g = torch.Generator().manual_seed(0)
    n, C = 4, 4
    mean = torch.randn(n, C, generator=g, dtype=torch.float64)
    half = torch.randn(n, C, C, generator=g, dtype=torch.float64)
    cov = half @ half.mT + 0.1 * torch.eye(C, dtype=torch.float64)
    proba = largest_probability(mean, cov)
    draws = 200_000
    f = mean[:, None] + (torch.linalg.cholesky(cov)[:, None] @ torch.randn(n, draws, C, 1, generator=g,
                                                                           dtype=torch.float64))[..., 0]
    counts = torch.nn.functional.one_hot(f.argmax(-1), C).double().mean(1)
    se = (counts * (1 - counts) / draws).sqrt()
    assert torch.all((proba - counts).abs() <= 4 * se + 2e-3)


def test_exact_ep_learns_a_binary_problem_better_than_the_class_frequencies():
    g = np.random.default_rng(8)
    X = g.standard_normal((120, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * g.standard_normal(120) > 0.5).astype(int)
    Xt = g.standard_normal((200, 3))
    yt = (Xt[:, 0] + 0.5 * Xt[:, 1] ** 2 + 0.3 * g.standard_normal(200) > 0.5).astype(int)
    clf = GPClassifier(method="exact_ep", random_state=0).fit(X, y)
    assert clf.fit_plan_.exact and clf.kernel_start_.surrogate == "exact_ep" and clf.n_iter_ == 1
    p = clf.predict_proba(Xt)[np.arange(len(yt)), yt]
    frequency = np.mean(y == 1)
    base = np.where(yt == 1, frequency, 1 - frequency)
    assert -np.mean(np.log(p)) < -np.mean(np.log(base)) - 0.2


def _leave_one_out_problem(n_classes: int, n: int = 40):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 2))
    score = X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.standard_normal(n)
    return X, (np.digitize(score, [-0.5, 0.5]) if n_classes == 3 else (score > 0).astype(int)), rng


@pytest.mark.parametrize("method, n_classes", [("exact_ep", 2), ("exact_pep", 3)])
def test_the_cavity_leave_one_out_is_within_a_stated_tolerance_of_refits_without_each_row(method, n_classes):
    """EP's leave-one-out from the cavities (Opper & Winther 2000) against exact EP refitted without
    each row at the same kernel: every row's probability of its label within 0.05, the mean NLL within
    5 % and below the refits' (the other rows' sites are held, which a refit moves: measured 2-4 %
    optimistic on these 40 rows, more where weighted rows leave with their whole weight)."""
    X, y, _ = _leave_one_out_problem(n_classes)
    n = len(y)
    model = GPClassifier(method=method, random_state=0).fit(X, y)
    kernel = model.model_.kernel
    fixed = {"lengthscale": kernel.lengthscale.detach().numpy().tolist(),
             "amplitude": kernel.amplitude.detach().numpy().tolist(), "noise": kernel.noise.detach().numpy().tolist()}
    proba, labels, _ = model.model_.leave_one_out()
    loo = proba[torch.arange(n), labels].numpy()
    refits = np.array([GPClassifier(method=method, kernel_init="fixed", kernel_params=fixed, shared_hyperparameters=True,
                                    optimize_hyperparameters=False, random_state=0)
                       .fit(np.delete(X, i, 0), np.delete(y, i)).predict_proba(X[i:i + 1])[0, y[i]] for i in range(n)])
    assert np.abs(loo - refits).max() < 0.05
    assert -np.log(refits).mean() * 0.95 < -np.log(loo).mean() < -np.log(refits).mean()


def test_the_cavity_is_the_posterior_with_the_rows_sites_removed():
    """A second algorithm: the C x C cavity algebra of ``leave_one_out`` equals the predictive at the
    row with its C - 1 sites set to zero (q refactorised over the pair factors), weighted rows
    leaving with their whole weight."""
    X, y, rng = _leave_one_out_problem(3, 30)
    model = GPClassifier(method="exact_ep", random_state=0).fit(X, y, sample_weight=rng.choice([1.0, 2.5], len(y)))
    m = model.model_
    proba = m.leave_one_out()[0]
    tau, nu, rows = m.site_tau.clone(), m.site_nu.clone(), m.inducing_points[0]
    for i in range(len(y)):
        with torch.no_grad():
            m.site_tau.copy_(tau)
            m.site_nu.copy_(nu)
            m.site_tau[2 * i:2 * i + 2] = 0
            m.site_nu[2 * i:2 * i + 2] = 0
        assert torch.allclose(m.predict_proba(rows[i:i + 1])[0], proba[i], atol=1e-10)


def test_float32_ep_converges_at_its_rounding_floor_near_float64s_fixed_point():
    """Issue 80's fuzz: exact power EP in float32 on 198 rows of 8 classes ran all 1,000 sweeps (312 s):
    its rounding moves the marginals by a few 1e-6 of their spread a sweep, below the float64
    tolerance of 1e-6, so it never stopped. The tolerance has a floor of ROUNDING_TOLERANCE times the
    dtype's rounding: float32 EP converges, within 1e-3 of float64's marginals (relative to their
    spread), and float64's rule is unchanged."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = np.digitize(X @ [1.0, 0.5, -0.3] + 0.5 * rng.standard_normal(60), np.linspace(-1.5, 1.5, 7))
    layout = pair_ep.pair_layout(torch.as_tensor(y), 8)
    G = pair_ep.pair_covariance(_rbf(torch.as_tensor(X), torch.tensor(np.log(4.0)), torch.tensor([0.0])), layout)
    noise = pair_ep.pair_noise(torch.tensor([0.5], dtype=torch.float64), layout)
    double = pair_ep.expectation_propagation(G, noise, TILTED, alpha=0.5)
    single = pair_ep.expectation_propagation(G.float(), noise.float(), TILTED, alpha=0.5)
    assert double.converged and single.converged and single.sweeps < 200
    spread = double.posterior.var.sqrt()
    assert float(((single.posterior.mean.double() - double.posterior.mean).abs() / spread).max()) < 1e-3
    assert pair_ep.ROUNDING_TOLERANCE * torch.finfo(torch.float64).eps < pair_ep.TOLERANCE


def test_a_spent_time_limit_ends_exact_ep_after_one_sweep_keeping_its_sites():
    """Issue 80: a fit's max_time reaches EP's sweeps (numerics.time_limit): past the deadline, EP
    ends at the end of the sweep it is in, with that sweep's sites, unconverged; without a limit the
    same problem takes more sweeps to converge."""
    from alphagp.numerics import time_limit
    X, y, _ = _leave_one_out_problem(3, 30)
    layout = pair_ep.pair_layout(torch.as_tensor(y), 3)
    G = pair_ep.pair_covariance(_rbf(torch.as_tensor(X), torch.tensor(np.log(4.0)), torch.tensor([0.0])), layout)
    noise = pair_ep.pair_noise(torch.tensor([0.5], dtype=torch.float64), layout)
    free = pair_ep.expectation_propagation(G, noise, TILTED)
    with time_limit(0.0):
        limited = pair_ep.expectation_propagation(G, noise, TILTED)
    assert free.converged and free.sweeps > 1
    assert limited.sweeps == 1 and not limited.converged
    one = pair_ep.expectation_propagation(G, noise, TILTED, max_sweeps=1)
    assert torch.equal(limited.sites.tau, one.sites.tau) and torch.equal(limited.sites.nu, one.sites.nu)


def test_the_kernel_search_stops_before_an_evaluation_it_has_no_time_for():
    """Issue 80: exact EP's kernel search checked its deadline only between L-BFGS-B's iterations,
    each of several evaluations; it now runs no evaluation that would end past it if it took as
    long as the last one. With no time the search keeps its first evaluation (one EP sweep: the
    limit reaches the sweeps too), whose sites are one sweep's from the prior at the start."""
    from alphagp.numerics import time_limit
    X, y, _ = _leave_one_out_problem(3, 30)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    whole = pair_ep.search_kernel(Xt, yt, 3)
    cut = pair_ep.search_kernel(Xt, yt, 3, max_seconds=0.0)
    assert whole.converged and whole.evaluations > 1
    assert cut.evaluations == 1 and not cut.converged
    layout = pair_ep.pair_layout(yt, 3)
    G = pair_ep.pair_covariance(_rbf(Xt, torch.tensor(0.0), torch.tensor([0.5 * np.log(X.shape[1])])), layout)
    with time_limit(0.0):
        first = pair_ep.expectation_propagation(G, pair_ep.pair_noise(torch.tensor([pair_ep.NOISE],
                                                                                   dtype=torch.float64), layout),
                                                TILTED, tol=pair_ep.SEARCH_TOLERANCE)
    np.testing.assert_allclose(cut.sites.tau.numpy(), first.sites.tau.numpy(), rtol=1e-10, atol=1e-14)


def test_a_kernel_per_class_fits_and_with_equal_kernels_is_the_shared_kernels_fit():
    """Issue 80, item 5: ``shared_hyperparameters=False`` gives exact EP a kernel per class (it was
    refused with the sparse methods' inducing-point text); with every class's kernel equal, the fit
    is the shared kernel's."""
    X, y, _ = _leave_one_out_problem(3, 30)
    fixed = dict(method="exact_ep", kernel_init="fixed", optimize_hyperparameters=False, random_state=0,
                 kernel_params={"lengthscale": 1.3, "amplitude": 2.0, "noise": 0.4})
    per_class = GPClassifier(shared_hyperparameters=False, **fixed).fit(X, y)
    shared = GPClassifier(shared_hyperparameters=True, **fixed).fit(X, y)
    assert per_class.model_.kernel.groups == 3 and shared.model_.kernel.groups == 1
    assert np.allclose(per_class.predict_proba(X), shared.predict_proba(X), atol=1e-8)
    learnt = GPClassifier(method="exact_ep", shared_hyperparameters=False, kernel_init="fixed", max_iter=5,
                          random_state=0).fit(X, y)
    assert learnt.score(X, y) > 0.6
