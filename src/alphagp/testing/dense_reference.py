"""Independent dense computations for the EP tests: NumPy and SciPy only, no alphagp code.

Everything is in u-space with full matrices: the SE kernel written out, q built from the
stored site sums or from rank-one sites, cavities by subtracting a site's natural parameters,
the EP energy of eq. 9 from Gaussian log-normalisers, predictive probabilities by adaptive
quadrature (not Gauss-Hermite), and the Heaviside factor's tilted moments in closed form.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import quad
from scipy.special import log_ndtr
from scipy.stats import norm

JITTER = 1e-6  # the model's K_uu jitter, a fraction of the amplitude (part of the model's definition)


def se_kernel(A, B, lengthscale, amplitude):
    """a exp(-|A - B|^2_{l} / 2) for ``A`` ``[n, D]``, ``B`` ``[m, D]``, ``lengthscale`` ``[D]``."""
    diff = (A[:, None, :] - B[None, :, :]) / lengthscale
    return amplitude * np.exp(-0.5 * (diff**2).sum(-1))


def kernel_blocks(Z, X, lengthscale, amplitude, noise):
    """Per class c: K_uu with jitter ``[M, M]``, K_uf ``[M, N]``, FITC variance s ``[N]`` (noise included)."""
    blocks = []
    for c in range(len(Z)):
        K = se_kernel(Z[c], Z[c], lengthscale[c], amplitude[c]) + JITTER * amplitude[c] * np.eye(len(Z[c]))
        Kx = se_kernel(Z[c], X, lengthscale[c], amplitude[c])
        s = amplitude[c] + noise[c] - np.einsum("mn,mk,kn->n", Kx, np.linalg.inv(K), Kx)
        blocks.append((K, Kx, s))
    return blocks


def log_normaliser(P, eta):
    """g of a Gaussian with precision ``P`` and natural mean ``eta`` (up to the dimension's constant)."""
    return 0.5 * eta @ np.linalg.solve(P, eta) - 0.5 * np.linalg.slogdet(P)[1]


def latent_marginals(blocks, site_precision, site_natural):
    """Mean and variance ``[C, N]`` of f(x) under q(u) = prior x exp(sites), noise included."""
    means, variances = [], []
    for (K, Kx, s), Lam, eta in zip(blocks, site_precision, site_natural):
        Kinv = np.linalg.inv(K)
        Sigma = np.linalg.inv(Kinv + Lam)
        A = Kinv @ Kx                                     # K^{-1} K_uf
        means.append(A.T @ (Sigma @ eta))
        variances.append(s + np.einsum("mn,mk,kn->n", A, Sigma, A))
    return np.array(means), np.array(variances)


def class_probabilities(mean, var):
    """P(f_c is the largest) for independent Gaussians ``mean, var`` ``[C]`` by adaptive quadrature."""
    sd = np.sqrt(var)
    out = []
    for c in range(len(mean)):
        others = [k for k in range(len(mean)) if k != c]

        def integrand(t, c=c, others=others):
            return norm.pdf(t, mean[c], sd[c]) * np.prod(norm.cdf((t - mean[others]) / sd[others]))

        out.append(quad(integrand, mean[c] - 12 * sd[c], mean[c] + 12 * sd[c], epsabs=1e-12, limit=200)[0])
    return np.array(out)


def tilted_site(m_w, v_w, m_l, v_l, s_d):
    """New h-space sites (precision, natural mean) on the winning and losing class of one factor
    Phi((h_w - h_l) / sqrt(s_d)) with Gaussian cavities (alpha = 1), and log Z of the factor."""
    V = v_w + v_l + s_d
    z = (m_w - m_l) / np.sqrt(V)
    log_z = log_ndtr(z)
    r = np.exp(norm.logpdf(z) - log_z)
    d1, d2 = r / np.sqrt(V), -r * (z + r) / V
    sites = []
    for m, v, sign in ((m_w, v_w, 1.0), (m_l, v_l, -1.0)):
        mean_t, var_t = m + sign * v * d1, v + v * v * d2
        sites.append((1.0 / var_t - 1.0 / v, mean_t / var_t - m / v))
    return sites, log_z


def u_space_q_from_sites(K, site_precision, site_natural):
    """Mean and covariance of q(u) = N(0, K) x exp(-u' Lam u / 2 + eta' u) (one class)."""
    Sigma = np.linalg.inv(np.linalg.inv(K) + site_precision)
    return Sigma @ site_natural, Sigma


def u_space_q_from_whitened(K, mean_w, cov_w):
    """q(u) for q(w) = N(mean_w, cov_w) with w = L^{-1} u, K = L L' (one class)."""
    L = np.linalg.cholesky(K)
    return L @ mean_w, L @ cov_w @ L.T


def kl_to_prior(mean, cov, K):
    """KL[N(mean, cov) || N(0, K)]."""
    M = len(mean)
    Kinv_cov = np.linalg.solve(K, cov)
    return 0.5 * (np.trace(Kinv_cov) + mean @ np.linalg.solve(K, mean) - M
                  + np.linalg.slogdet(K)[1] - np.linalg.slogdet(cov)[1])


def robust_max_elbo(blocks, q_means, q_covs, y, epsilon):
    """VI bound sum_i E_q[log p(y_i | f_i)] - sum_c KL[q(u^c) || p(u^c)] for the robust-max likelihood,
    with P(f^y largest) by adaptive quadrature and q(u^c) given in u-space."""
    C = len(blocks)
    means, variances = [], []
    for (K, Kx, s), m, S in zip(blocks, q_means, q_covs):
        A = np.linalg.solve(K, Kx)
        means.append(A.T @ m)
        variances.append(s + np.einsum("mn,mk,kn->n", A, S, A))
    means, variances = np.array(means), np.array(variances)
    log_a, log_b = np.log(1 - epsilon + epsilon / C), np.log(epsilon / C)
    ell = 0.0
    for i, yi in enumerate(y):
        P = class_probabilities(means[:, i], variances[:, i])[yi]
        ell += P * log_a + (1 - P) * log_b
    kl = sum(kl_to_prior(m, S, K) for (K, _, _), m, S in zip(blocks, q_means, q_covs))
    return ell - kl


def dense_heaviside_ep(priors, y, damping=0.5, iterations=5000, tol=1e-13):
    """EP on the exact factors Theta(f_i^{y_i} - f_i^k) with a dense Gaussian prior over all latent
    values (``priors``: C covariance matrices ``[N, N]``) and, per factor, one Gaussian site on
    f_i^{y_i} and one on f_i^k (so q factorises over classes).

    Parallel damped updates in f-space with full matrices. Returns the posterior means and
    variances ``[C, N]`` and log Z_EP = g(q) - g(prior) + sum_ik log C_ik.
    """
    C, N = len(priors), len(y)
    prior_cov = np.zeros((C * N, C * N))
    for c, K in enumerate(priors):
        prior_cov[c * N:(c + 1) * N, c * N:(c + 1) * N] = K
    prior_prec = np.linalg.inv(prior_cov)
    factors = np.array([(y[i] * N + i, k * N + i) for i in range(N) for k in range(C) if k != y[i]])
    tau, nu = np.zeros(factors.shape), np.zeros(factors.shape)     # [factors, 2]: winner, loser

    def posterior():
        prec, h = prior_prec.copy(), np.zeros(C * N)
        np.add.at(prec, (factors, factors), tau)
        np.add.at(h, factors, nu)
        cov = np.linalg.inv(prec)
        return prec, cov, cov @ h, h

    def cavities(cov, mean):
        v_q, m_q = np.diag(cov)[factors], mean[factors]
        tau_c, nu_c = 1 / v_q - tau, m_q / v_q - nu
        return v_q, m_q, tau_c, nu_c

    for _ in range(iterations):
        _, cov, mean, _ = posterior()
        _, _, tau_c, nu_c = cavities(cov, mean)
        m, v = nu_c / tau_c, 1 / tau_c
        md, vd = m[:, 0] - m[:, 1], v.sum(1)
        z = md / np.sqrt(vd)
        r = np.exp(norm.logpdf(z) - log_ndtr(z))
        sign = np.array([1.0, -1.0])
        m_t = m + sign * v * (r / np.sqrt(vd))[:, None]
        v_t = v - v * v * (r * (z + r) / vd)[:, None]
        new_tau, new_nu = 1 / v_t - tau_c, m_t / v_t - nu_c
        step = max(np.abs(new_tau - tau).max(), np.abs(new_nu - nu).max())
        tau, nu = damping * new_tau + (1 - damping) * tau, damping * new_nu + (1 - damping) * nu
        if step < tol:
            break
    prec, cov, mean, h = posterior()
    v_q, m_q, tau_c, nu_c = cavities(cov, mean)

    def g1(t, n):
        return 0.5 * n * n / t - 0.5 * np.log(t)

    md, vd = nu_c[:, 0] / tau_c[:, 0] - nu_c[:, 1] / tau_c[:, 1], (1 / tau_c).sum(1)
    log_c = log_ndtr(md / np.sqrt(vd)) + (g1(tau_c, nu_c) - g1(1 / v_q, m_q / v_q)).sum(1)
    log_z = (0.5 * h @ cov @ h - 0.5 * np.linalg.slogdet(prec)[1]) - 0.5 * np.linalg.slogdet(prior_cov)[1] + log_c.sum()
    return mean.reshape(C, N), np.diag(cov).reshape(C, N), log_z
