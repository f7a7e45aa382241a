"""Expectation propagation on a full GP with the Heaviside likelihood's pair factors: the numerics
of exact EP (:mod:`alphagp.methods.exact_ep`) and of its kernel search.

**The model** (scalable EP, eq. 1-6, without inducing points). C latent functions
f^c = g^c + e^c, g^c ~ GP(0, k_c) and noise e^c ~ N(0, n_c); the label is the arg-max,
p(y_i | f_i) = prod_{k != y_i} Theta(f_i^{y_i} - f_i^k), which the paper approximates (eq. 6) by
the product over k of Phi((g_i^{y_i} - g_i^k) / sqrt(n_{y_i} + n_k)), the noise integrated out of
each factor alone. Every factor depends on g only through one difference d_p = g_{r_p}^{w_p} -
g_{r_p}^{l_p} (row r_p, winner w_p = y_{r_p}, loser l_p), so with P = N (C - 1) factors
(:class:`PairLayout`) the posterior of d = A g is EP on P scalars with the Gaussian prior
d ~ N(0, G), G = A K A' (:func:`pair_covariance`),

    G_pq = sum_c E_pc E_qc k_c(x_{r_p}, x_{r_q}),   E_p = e_{w_p} - e_{l_p},

and factor p is Phi(d_p / sqrt(s_p)), s_p = n_{w_p} + n_{l_p} (:func:`pair_noise`). Two classes
are Rasmussen & Williams' probit classification (P = N, the kernel k_0 + k_1 on d = +-(g^1 - g^0),
the probit's scale sqrt(n_0 + n_1)); a row repeated is its factors squared, so an integer weight
is the row repeated.

**Parallel damped power EP** (:func:`expectation_propagation`; Rasmussen & Williams Alg. 3.5 with
all sites updated at once, Minka's power EP for alpha < 1). Site p, exp(-tau_p d^2 / 2 + nu_p d),
enters q w_p times (the row's weight), so q has precision G^-1 + diag(w tau) and natural mean
w nu. A sweep computes q's marginals (mu_p, v_p) from one Cholesky factor of
B = I + S^1/2 G S^1/2 (S = diag(w tau)), takes alpha of one site out (the cavity), matches the
moments of cavity x factor^alpha (the Heaviside likelihood's :meth:`pair_factor_tilted`: closed
form at alpha = 1, Gauss-Hermite below) and damps the new sites ((tilted / cavity)^(1 / alpha)) in:
from no damping, by 0.7 whenever a sweep moves the marginals more than the sweep before.

**The log evidence** (:func:`log_evidence`) at the sites (Rasmussen & Williams eq. 3.65 with
weights and power; Minka 2004, power EP's energy):

    log Z = 1/2 b' Sigma b - sum log diag chol(B)
            + sum_p (w_p / alpha) [log Z_p + Psi(cavity_p) - Psi(cavity_p + alpha site_p)],

b = w nu, Sigma = (G^-1 + S)^-1, Z_p the tilted normaliser at the cavity, Psi(tau, nu)
= nu^2 / (2 tau) - 1/2 log tau. At the fixed point the sites' terms are stationary in q's
marginals (moment matching), so the gradient in the kernel is that of the first line with the
sites held (Rasmussen & Williams eq. 5.27): dlogZ/dG = 1/2 (a a' - R), a = b - R G b,
R = S^1/2 B^-1 S^1/2 (:func:`evidence_sensitivity`); in the noise, that of the log Z_p at the held
cavities (:func:`noise_term`). No gradient passes through the sweeps.

**The kernel search** (:func:`search_kernel`): scipy's L-BFGS-B on minus the log evidence per
factor over the log amplitude and log lengthscales (one shared by every feature, then one per
feature from there), the noise held (the factors' sharpness is the ratio of amplitude to noise),
every evaluation's EP started from the previous one's sites.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from .likelihoods.heaviside import HeavisideLikelihood
from .numerics import stable_cholesky, time_left, time_limit

#: parallel EP's damping of the new sites (Rasmussen & Williams' sequential updates need none;
#: all sites at once overshoot without it) and its stopping rule: the largest change of a
#: marginal's mean or standard deviation, relative to the standard deviation
DAMPING = 1.0
DAMPING_DECAY, MIN_DAMPING = 0.7, 0.1
TOLERANCE = 1e-6
#: the stopping rule's floor, in units of the dtype's rounding (float32: 1.2e-4): a sweep's rounding
#: moves float32 marginals by a few 1e-6 of their spread, so a tolerance below it ran every sweep of
#: MAX_SWEEPS (issue 80's fuzz: 198 rows of 8 classes in float32, 1,000 sweeps, 312 s)
ROUNDING_TOLERANCE = 1000
#: the kernel search's stopping rule (its gradient needs the fixed point to fewer digits)
SEARCH_TOLERANCE = 1e-4
#: sweeps of one evaluation of the search at most (the next evaluation goes on from its sites)
SEARCH_MAX_SWEEPS = 50
MAX_SWEEPS = 1000
#: the noise n_c of every latent function when the search holds it: two classes then have the
#: probit Phi(d), Rasmussen & Williams' likelihood
NOISE = 0.5
#: bounds of the search's positive parameters (standardised features)
LENGTHSCALE_BOUNDS = (1e-2, 1e3)
AMPLITUDE_BOUNDS = (1e-3, 1e4)


@dataclass(frozen=True)
class PairLayout:
    """The pair factors of rows with class indices ``y`` ``[N]`` in ``range(n_classes)``: factor p
    is ``(row[p], winner[p], loser[p])``, the rows in order and each row's C - 1 losers in
    increasing class order; ``E`` ``[P, C]`` is e_winner - e_loser."""

    row: torch.Tensor
    winner: torch.Tensor
    loser: torch.Tensor
    E: torch.Tensor
    n_classes: int

    @property
    def size(self) -> int:
        return int(self.row.numel())


def pair_layout(y: torch.Tensor, n_classes: int, dtype=torch.float64) -> PairLayout:
    """:class:`PairLayout` of class indices ``y`` ``[N]``: P = N (C - 1) factors."""
    N, C = y.numel(), n_classes
    classes = torch.arange(C, device=y.device).expand(N, C)
    keep = classes != y[:, None]
    row = torch.arange(N, device=y.device)[:, None].expand(N, C)[keep]
    loser = classes[keep]
    winner = y[row]
    E = (torch.nn.functional.one_hot(winner, C) - torch.nn.functional.one_hot(loser, C)).to(dtype)
    return PairLayout(row, winner, loser, E, C)


def pair_covariance(K: torch.Tensor, layout: PairLayout) -> torch.Tensor:
    """G = A K A' ``[P, P]`` (module docstring) from the kernel matrices ``K`` ``[G, N, N]`` (G = 1:
    one kernel for every class, else C), without noise; differentiable."""
    r, E = layout.row, layout.E
    if K.shape[0] == 1:
        return (E @ E.T) * K[0][r][:, r]
    total = torch.zeros(layout.size, layout.size, dtype=K.dtype, device=K.device)
    for c in range(layout.n_classes):
        idx = (E[:, c] != 0).nonzero()[:, 0]                # the factors that touch class c
        e = E[idx, c]
        total = total.index_put((idx[:, None], idx[None, :]), (e[:, None] * e[None, :]) * K[c][r[idx]][:, r[idx]],
                                accumulate=True)
    return total


def pair_noise(noise: torch.Tensor, layout: PairLayout) -> torch.Tensor:
    """s_p = n_{w_p} + n_{l_p} ``[P]`` from the latent functions' noises ``noise`` ``[G]``."""
    return (noise[layout.winner] + noise[layout.loser]) if noise.numel() > 1 else (2 * noise).expand(layout.size)


@dataclass
class Sites:
    """Site parameters of one copy of each factor, ``tau`` ``[P]`` (>= 0) and ``nu`` ``[P]``."""

    tau: torch.Tensor
    nu: torch.Tensor

    @classmethod
    def zeros(cls, size: int, dtype=torch.float64, device=None) -> Sites:
        return cls(torch.zeros(size, dtype=dtype, device=device), torch.zeros(size, dtype=dtype, device=device))


@dataclass
class Posterior:
    """q at the sites: the factor ``L`` of B = I + S^1/2 G S^1/2, ``sqrt_s`` = S^1/2 ``[P]``, the
    marginals ``mean`` and ``var`` ``[P]`` and ``b`` = w nu."""

    L: torch.Tensor
    sqrt_s: torch.Tensor
    mean: torch.Tensor
    var: torch.Tensor
    b: torch.Tensor


def posterior(G: torch.Tensor, sites: Sites, weight: torch.Tensor | None) -> Posterior:
    """q's factor and marginals (:class:`Posterior`) for prior covariance ``G`` ``[P, P]``."""
    w_tau = sites.tau if weight is None else weight * sites.tau
    b = sites.nu if weight is None else weight * sites.nu
    sqrt_s = w_tau.clamp_min(0.0).sqrt()
    if not bool(torch.any(sqrt_s > 0)):                 # no site has precision: q is the prior (B = I)
        eye = torch.eye(G.shape[0], dtype=G.dtype, device=G.device)
        return Posterior(eye, sqrt_s, G @ b, torch.diagonal(G).clamp_min(1e-300), b)
    B = sqrt_s[:, None] * G * sqrt_s[None, :]
    B.diagonal().add_(1.0)
    L = stable_cholesky(B)
    V = torch.linalg.solve_triangular(L, sqrt_s[:, None] * G, upper=False)
    var = torch.diagonal(G) - V.square().sum(0)
    mean = G @ b - V.T @ (V @ b)
    return Posterior(L, sqrt_s, mean, var.clamp_min(1e-300), b)


def _cavity(q: Posterior, sites: Sites, alpha: float):
    """The cavity's precision and natural mean ``[P]`` of each factor (alpha of one copy out)."""
    return 1.0 / q.var - alpha * sites.tau, q.mean / q.var - alpha * sites.nu


def _tilted(tilted, tau_cav: torch.Tensor, nu_cav: torch.Tensor, noise: torch.Tensor, alpha: float):
    """log Z, mean and variance of cavity x Phi(d / sqrt(noise))^alpha (a proper cavity), from the
    likelihood's ``tilted`` (log Z and its first two derivatives in the cavity mean)."""
    v = 1.0 / tau_cav
    m = nu_cav * v
    log_z, g1, g2 = tilted(m, v, noise, alpha)
    return log_z, m + v * g1, v + v * v * g2


@dataclass
class EPResult:
    """What :func:`expectation_propagation` ends with: the ``sites``, q at them (``posterior``),
    the ``sweeps`` run, whether the marginals ``converged`` and the factors whose cavity was
    improper at the last sweep (``n_improper``, left at their sites)."""

    sites: Sites
    posterior: Posterior
    sweeps: int
    converged: bool
    n_improper: int


def expectation_propagation(G: torch.Tensor, noise: torch.Tensor, tilted, sites: Sites | None = None,
                            weight: torch.Tensor | None = None, alpha: float = 1.0, damping: float = DAMPING,
                            tol: float = TOLERANCE, max_sweeps: int = MAX_SWEEPS) -> EPResult:
    """Parallel damped power EP (module docstring) for prior covariance ``G`` ``[P, P]`` and factors
    Phi(d_p / sqrt(noise_p)) (``noise`` ``[P]``; ``tilted``: the likelihood's
    :meth:`~alphagp.likelihoods.HeavisideLikelihood.pair_factor_tilted`), from ``sites``
    (default: none, q the prior) with factor weights ``weight`` ``[P]`` (or ``None``), until no
    marginal's mean or standard deviation moves by more than ``tol`` of the standard deviation in
    a sweep (at least :data:`ROUNDING_TOLERANCE` times the dtype's rounding), or ``max_sweeps``, or where the deadline of an enclosing
    :func:`~alphagp.numerics.time_limit` (a fit's ``max_time``) has passed or would pass before
    another sweep as long as the last one ended (one sweep at least). New site precisions are kept non-negative (the factors are
    log-concave, so they are, but for rounding); a factor whose cavity is improper (possible with
    weights below 1) keeps its site. Runs without gradients."""
    with torch.no_grad():
        G, noise = G.detach(), noise.detach()
        P = G.shape[0]
        tol = max(tol, ROUNDING_TOLERANCE * torch.finfo(G.dtype).eps)
        sites = Sites.zeros(P, G.dtype, G.device) if sites is None else Sites(sites.tau.clone(), sites.nu.clone())
        q = posterior(G, sites, weight)
        converged, n_improper, sweep, last_change = False, 0, 0, math.inf
        for sweep in range(1, max_sweeps + 1):
            started = time.perf_counter()
            tau_cav, nu_cav = _cavity(q, sites, alpha)
            proper = tau_cav > 0
            safe_tau = torch.where(proper, tau_cav, torch.ones_like(tau_cav))
            _, m_hat, v_hat = _tilted(tilted, safe_tau, torch.where(proper, nu_cav, torch.zeros_like(nu_cav)), noise,
                                      alpha)
            tau_new = ((1.0 / v_hat - safe_tau) / alpha).clamp_min(0.0)
            nu_new = (m_hat / v_hat - nu_cav) / alpha
            ok = proper & torch.isfinite(tau_new) & torch.isfinite(nu_new)
            n_improper = int((~proper).sum())
            sites.tau = torch.where(ok, (1 - damping) * sites.tau + damping * tau_new, sites.tau)
            sites.nu = torch.where(ok, (1 - damping) * sites.nu + damping * nu_new, sites.nu)
            previous = q
            q = posterior(G, sites, weight)
            sd = previous.var.sqrt()
            change = float((torch.maximum((q.mean - previous.mean).abs(), (q.var.sqrt() - sd).abs()) / sd).max())
            if change <= tol:
                converged = True
                break
            if time_left() < time.perf_counter() - started:    # the fit's max_time: this sweep's sites kept
                break
            if change > last_change:            # not contracting: damp harder
                damping = max(damping * DAMPING_DECAY, MIN_DAMPING)
            last_change = change
    return EPResult(sites, q, sweep, converged, n_improper)


def _log_partition(tau: torch.Tensor, nu: torch.Tensor) -> torch.Tensor:
    """Psi(tau, nu) = nu^2 / (2 tau) - 1/2 log tau of a 1-D Gaussian in natural parameters."""
    return 0.5 * nu.square() / tau - 0.5 * torch.log(tau)


def _proper_cavity(q: Posterior, sites: Sites, alpha: float):
    """The cavities, a factor with an improper one taking q's marginal instead."""
    tau_cav, nu_cav = _cavity(q, sites, alpha)
    proper = tau_cav > 0
    return torch.where(proper, tau_cav, 1.0 / q.var), torch.where(proper, nu_cav, q.mean / q.var)


def log_evidence(q: Posterior, sites: Sites, noise: torch.Tensor, tilted, weight: torch.Tensor | None,
                 alpha: float = 1.0) -> float:
    """EP's (power EP's) approximation of log p(y) at ``sites`` with q = ``q`` and factor noises
    ``noise`` ``[P]`` (module docstring). Factors with an improper cavity count the term of a
    cavity at q's marginal."""
    with torch.no_grad():
        gaussian = 0.5 * (q.b @ q.mean) - torch.log(torch.diagonal(q.L)).sum()
        tau_cav, nu_cav = _proper_cavity(q, sites, alpha)
        log_z, _, _ = _tilted(tilted, tau_cav, nu_cav, noise.detach(), alpha)
        terms = log_z + _log_partition(tau_cav, nu_cav) - _log_partition(tau_cav + alpha * sites.tau,
                                                                         nu_cav + alpha * sites.nu)
        w = torch.ones_like(terms) if weight is None else weight
        return float(gaussian + (w * terms).sum() / alpha)


def noise_term(q: Posterior, sites: Sites, noise: torch.Tensor, tilted, weight: torch.Tensor | None,
               alpha: float = 1.0) -> torch.Tensor:
    """sum_p (w_p / alpha) log Z_p at the held cavities, differentiable in ``noise`` ``[P]``: at the
    fixed point its gradient is the log evidence's in the noise (module docstring)."""
    tau_cav, nu_cav = _proper_cavity(q, sites, alpha)
    v = (1.0 / tau_cav).detach()
    log_z = tilted((nu_cav * v).detach(), v, noise, alpha)[0]
    return (log_z if weight is None else weight * log_z).sum() / alpha


def evidence_sensitivity(G: torch.Tensor, q: Posterior) -> torch.Tensor:
    """dlogZ/dG ``[P, P]`` at the fixed point, the sites held: 1/2 (a a' - R) (module docstring).
    Contracted with dG/dtheta it is the log evidence's gradient in any kernel parameter theta."""
    with torch.no_grad():
        a = predictive_weights(G, q)
        R = q.sqrt_s[:, None] * torch.cholesky_inverse(q.L) * q.sqrt_s[None, :]
        return 0.5 * (a[:, None] * a[None, :] - R)


def predictive_weights(G: torch.Tensor, q: Posterior) -> torch.Tensor:
    """a = (G + S^-1)^-1 mu_tilde = b - R G b ``[P]``: the posterior mean of any latent value is
    k' a, k its prior covariances with the differences d."""
    return q.b - q.sqrt_s * torch.cholesky_solve((q.sqrt_s * (G @ q.b))[:, None], q.L)[:, 0]


# ---------------------------------------------------------------------- the kernel search
class _OutOfTime(Exception):
    """Raised by the search's objective instead of an evaluation that would end past its deadline."""


@dataclass(frozen=True)
class KernelFit:
    """What :func:`search_kernel` found: the ``term`` searched (:mod:`alphagp.kernel_terms`; the RBF
    with one lengthscale, or one per feature after the ARD stage) and its ``theta`` (logs), with its
    ``amplitude`` (the term's scale) and the first RBF part's ``lengthscale`` ``[D]`` (empty without
    one), the held ``noise``, the log evidence, the evaluations, whether L-BFGS-B ``converged``,
    the ``seconds`` and the sites at the optimum (``sites``, for a warm start)."""

    amplitude: float
    lengthscale: np.ndarray
    noise: float
    log_evidence: float
    evaluations: int
    converged: bool
    seconds: float
    sites: Sites
    term: object = None
    theta: np.ndarray | None = None


def search_kernel(X: torch.Tensor, y: torch.Tensor, n_classes: int, *, weight: torch.Tensor | None = None,
                  ard: bool = False, alpha: float = 1.0, noise: float = NOISE, initial_lengthscale: float | None = None,
                  initial_amplitude: float = 1.0, max_iterations: int = 200, tolerance: float = 1e-7,
                  max_seconds: float | None = None, term=None) -> KernelFit:
    """Type-II maximum likelihood of the EP evidence (module docstring) for rows ``X`` ``[N, D]``
    (standardised) with class indices ``y`` ``[N]`` and row weights ``weight`` ``[N]`` (or
    ``None``): one shared kernel, the covariance ``term`` (:mod:`alphagp.kernel_terms`; default the
    RBF with one lengthscale for every feature), the noise held at ``noise``; with ``ard`` and the
    default term, one lengthscale per feature from there (the sites and the point found first
    start the second search, so it takes a few more evaluations instead of many from the start).
    The search starts at every variance ``initial_amplitude`` and every lengthscale
    ``initial_lengthscale`` (default sqrt(D)). L-BFGS-B stops at a relative change of ``tolerance``,
    after ``max_iterations``, or before an evaluation that would end past ``max_seconds`` (all
    stages together; or an enclosing :func:`~alphagp.numerics.time_limit`) if it took as long as the
    last one, keeping the best point (the first evaluation always runs)."""
    from scipy.optimize import minimize

    from .kernel_terms import RBF
    started = time.perf_counter()
    dtype = X.dtype
    layout = pair_layout(y, n_classes, dtype)
    w = None if weight is None else weight[layout.row].to(dtype)
    n_factors = float(layout.size if w is None else w.sum())
    d = X.shape[1]
    factor_noise = pair_noise(torch.full((1,), float(noise), dtype=dtype), layout)
    tilted = HeavisideLikelihood().pair_factor_tilted
    state = {"sites": None, "best": (math.inf, None, None, None), "evaluations": 0, "seconds": 0.0}

    def objective(theta: np.ndarray, searched):
        if state["best"][1] is not None and time_left() < state["seconds"]:
            raise _OutOfTime          # another evaluation as long as the last would end past the deadline
        begun = time.perf_counter()
        state["evaluations"] += 1
        params = torch.as_tensor(theta, dtype=dtype).requires_grad_(True)
        G = pair_covariance(searched.matrix(params, X, X)[None], layout)
        ep = expectation_propagation(G, factor_noise, tilted, state["sites"], w, alpha, tol=SEARCH_TOLERANCE,
                                     max_sweeps=SEARCH_MAX_SWEEPS)
        value = log_evidence(ep.posterior, ep.sites, factor_noise, tilted, w, alpha)
        if not math.isfinite(value):
            return math.inf, np.zeros_like(theta)
        state["sites"] = ep.sites
        sensitivity = evidence_sensitivity(G.detach(), ep.posterior)
        (grad,) = torch.autograd.grad((sensitivity * G).sum(), params)
        if -value < state["best"][0]:
            state["best"] = (-value, theta.copy(), ep.sites, searched)
        state["seconds"] = time.perf_counter() - begun
        return -value / n_factors, -grad.numpy() / n_factors

    def search(searched, start: np.ndarray) -> bool:
        """Whether L-BFGS-B converged (``False`` where the time ran out)."""
        bounds = searched.bounds(d, AMPLITUDE_BOUNDS)
        try:
            return bool(minimize(objective, np.clip(start, [b[0] for b in bounds], [b[1] for b in bounds]),
                                 jac=True, args=(searched,), method="L-BFGS-B", bounds=bounds,
                                 options={"maxiter": max_iterations, "ftol": tolerance}).success)
        except _OutOfTime:
            return False

    default = term is None
    term = RBF("one") if default else term
    lengthscale = math.sqrt(d) if initial_lengthscale is None else float(initial_lengthscale)
    with time_limit(max_seconds):            # each evaluation's sweeps stop at the search's deadline too
        converged = search(term, term.initial(d, initial_amplitude, lengthscale))
        if default and ard and d > 1 and state["best"][1] is not None and time_left() > state["seconds"]:
            theta = state["best"][1]
            state["sites"] = state["best"][2]
            converged = search(RBF("ard"), np.concatenate([theta[:1], np.full(d, theta[1])]))
    best, theta, sites, found = state["best"]
    if theta is None:
        raise FloatingPointError("exact EP's evidence was not finite at any kernel the search tried")
    ls = found.lengthscale_values(theta, d)
    return KernelFit(amplitude=float(found.variance(torch.as_tensor(theta), d)),
                     lengthscale=np.zeros(0) if ls is None else ls, noise=float(noise), log_evidence=-best,
                     evaluations=state["evaluations"], converged=converged,
                     seconds=time.perf_counter() - started, sites=sites, term=found, theta=theta)
