"""An exact posterior sampler for the multi-class Heaviside model, independent of alphagp.

Model (scalable-EP paper, eq. 6): per class c, latent values g_c ~ N(0, K_c) at the training
inputs, f_ic = g_ic + e_ic with e_ic ~ N(0, noise_c), and y_i = argmax_c f_ic. Data
augmentation Gibbs sampling alternates two exact conditionals:

* g_c | f_c: the Gaussian posterior of GP regression (a block draw per class);
* f_ic | g_i, f_i,-c: N(g_ic, noise_c) truncated to keep y_i the argmax (above the other
  classes' values for c = y_i, below f_i,y_i otherwise), drawn by the inverse CDF for all i at once.

:func:`sample_product_of_phi_posterior` samples the posterior under the paper's factorised
form of the likelihood instead (eq. 33: each factor integrates the latent noise on its own,
prod_k Phi((g_iy - g_ik) / sqrt(noise_y + noise_k))), the posterior EP targets: a latent
z_ik ~ N(g_iy - g_ik, noise_y + noise_k) truncated to z_ik > 0 per factor, and g | z jointly
Gaussian over all classes.

Predictions average, over the kept g, P(f*_c is the largest) with f*_c | g_c Gaussian; that
probability is a 1-D integral done on a fine grid.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import norm

from .dense_reference import se_kernel


class Problem(NamedTuple):
    """A classification problem drawn from the model, with the prior covariances the samplers need."""

    X_train: np.ndarray      # [N, 2]
    y_train: np.ndarray      # [N]
    X_test: np.ndarray       # [N*, 2]
    K: np.ndarray            # [C, N, N] training covariances
    K_star: np.ndarray       # [C, N, N*] training/test covariances
    k_star_diag: np.ndarray  # [C, N*] test prior variances, noise not included
    noise: np.ndarray        # [C]


def draw_problem(seed, noise, n_train=40, n_test=30, n_classes=3, lengthscale=1.0, amplitude=1.0) -> Problem:
    """Inputs uniform in [-2, 2]^2, latent values from the GP prior (SE kernel, the same for every
    class) plus noise, labels by argmax."""
    g = np.random.default_rng(seed)
    X = g.uniform(-2, 2, (n_train + n_test, 2))
    K_all = se_kernel(X, X, np.full(2, lengthscale), amplitude)
    F = (np.linalg.cholesky(K_all + 1e-9 * np.eye(len(X))) @ g.standard_normal((len(X), n_classes))
         + np.sqrt(noise) * g.standard_normal((len(X), n_classes)))
    y = F.argmax(1)
    return Problem(X[:n_train], y[:n_train], X[n_train:], np.stack([K_all[:n_train, :n_train]] * n_classes),
                   np.stack([K_all[:n_train, n_train:]] * n_classes), np.full((n_classes, n_test), amplitude),
                   np.full(n_classes, noise))


def chain_probabilities(problem: Problem, sampler, n_samples: int, seed: int, burn_in=500, thin=5):
    """``[N*, C]`` predictive probabilities from one chain of ``sampler`` on ``problem``."""
    draws = sampler(problem.K, problem.noise, problem.y_train, n_samples, burn_in, thin, seed=seed)
    return predictive_probabilities(draws, problem.K, problem.K_star, problem.k_star_diag, problem.noise,
                                    grid_size=201)


def _truncated_normal(mean, sd, lower, upper, rng):
    """Vectorised inverse-CDF draws of N(mean, sd^2) restricted to [lower, upper]."""
    a, b = (lower - mean) / sd, (upper - mean) / sd
    flip = a > 0                         # work in the lower tail, where ndtr keeps its precision
    lo, hi = np.where(flip, -b, a), np.where(flip, -a, b)
    p_lo, p_hi = ndtr(lo), ndtr(hi)
    z = ndtri(p_lo + rng.uniform(size=np.shape(mean)) * (p_hi - p_lo))
    z = np.clip(np.where(flip, -z, z), a, b)
    return mean + sd * z


def sample_posterior(K, noise, y, n_samples, burn_in, thin, seed=0):
    """Kept draws of g ``[S, C, N]`` given labels ``y`` ``[N]``, prior covariances ``K`` ``[C, N, N]``."""
    rng = np.random.default_rng(seed)
    C, N, _ = K.shape
    rows = np.arange(N)
    # g_c | f_c ~ N(A_c f_c, S_c), with A_c = K_c (K_c + noise_c I)^-1 and S_c = K_c - A_c K_c
    A = np.stack([np.linalg.solve(K[c] + noise[c] * np.eye(N), K[c]).T for c in range(C)])
    chol = np.stack([np.linalg.cholesky(K[c] - A[c] @ K[c] + 1e-9 * np.eye(N)) for c in range(C)])
    f = np.where(np.arange(C)[None, :] == y[:, None], 1.0, -1.0)     # [N, C], consistent with y
    g = np.zeros((C, N))
    kept = []
    for sweep in range(burn_in + n_samples * thin):
        for c in range(C):
            g[c] = A[c] @ f[:, c] + chol[c] @ rng.standard_normal(N)
        for c in range(C):
            is_label = y == c
            others = np.where(np.arange(C)[None, :] == c, -np.inf, f).max(1)
            lower = np.where(is_label, others, -np.inf)
            upper = np.where(is_label, np.inf, f[rows, y])
            f[:, c] = _truncated_normal(g[c], np.sqrt(noise[c]), lower, upper, rng)
        if sweep >= burn_in and (sweep - burn_in) % thin == 0:
            kept.append(g.copy())
    return np.stack(kept)


def sample_product_of_phi_posterior(K, noise, y, n_samples, burn_in, thin, seed=0):
    """Kept draws of g ``[S, C, N]`` under the factorised likelihood prod_k Phi((g_y - g_k) / s)."""
    rng = np.random.default_rng(seed)
    C, N, _ = K.shape
    factors = [(i, k) for i in range(N) for k in range(C) if k != y[i]]
    rows = np.arange(len(factors))
    # z_f = a_f' vec(g) + e_f with a_f = e_(y_i, i) - e_(k, i) and e_f ~ N(0, s_f)
    A = np.zeros((len(factors), C * N))
    A[rows, [y[i] * N + i for i, _ in factors]] = 1.0
    A[rows, [k * N + i for i, k in factors]] = -1.0
    s = np.array([noise[y[i]] + noise[k] for i, k in factors])
    precision = np.zeros((C * N, C * N))
    for c in range(C):
        precision[c * N:(c + 1) * N, c * N:(c + 1) * N] = np.linalg.inv(K[c] + 1e-9 * np.eye(N))
    precision += A.T @ (A / s[:, None])
    chol = np.linalg.cholesky(precision)
    g = np.zeros(C * N)
    kept = []
    for sweep in range(burn_in + n_samples * thin):
        z = _truncated_normal(A @ g, np.sqrt(s), np.zeros_like(s), np.full_like(s, np.inf), rng)
        mean = np.linalg.solve(chol.T, np.linalg.solve(chol, A.T @ (z / s)))
        g = mean + np.linalg.solve(chol.T, rng.standard_normal(C * N))
        if sweep >= burn_in and (sweep - burn_in) % thin == 0:
            kept.append(g.reshape(C, N).copy())
    return np.stack(kept)


def predictive_probabilities(samples, K, K_star, k_star_diag, noise, grid_size=801):
    """``[N*, C]`` posterior predictive class probabilities from kept draws ``[S, C, N]``.

    ``K_star`` ``[C, N, N*]`` holds the training/test covariances, ``k_star_diag`` ``[C, N*]``
    the test prior variances (noise not included).
    """
    C = K.shape[0]
    W = np.stack([np.linalg.solve(K[c] + 1e-9 * np.eye(len(K[c])), K_star[c]) for c in range(C)])   # [C, N, N*]
    var = k_star_diag - np.einsum("cnm,cnm->cm", K_star, W) + noise[:, None]            # [C, N*]
    mean = np.einsum("scn,cnm->scm", samples, W)                                         # [S, C, N*]
    sd = np.sqrt(var)
    out = np.zeros((mean.shape[2], C))
    for c in range(C):
        t = mean[:, c, :, None] + sd[c, None, :, None] * np.linspace(-10, 10, grid_size)  # [S, N*, G]
        density = norm.pdf(t, mean[:, c, :, None], sd[c, None, :, None])
        others = np.ones_like(t)
        for k in range(C):
            if k != c:
                others *= ndtr((t - mean[:, k, :, None]) / sd[k, None, :, None])
        out[:, c] = np.trapezoid(density * others, t, axis=-1).mean(0)
    return out
