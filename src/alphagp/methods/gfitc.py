"""GFITC baseline: EP on the exact Heaviside likelihood factors with the FITC prior
(Naish-Guzman & Holden 2008; Kim & Ghahramani 2006's multi-class model; section 3 of the
scalable-EP paper, thesis section 5.3).

Factors Theta(f_i^{y_i} - f_i^k), one per point i and class k != y_i, act on the latent values
f_i, whose prior is FITC: f_i^c = h_i^c + noise with h_i^c = psi_i^c' w (whitened inducing values
w ~ N(0, I)) and independent noise of variance s_i^c (the FITC correction plus the additive
noise). EP approximates each factor by a Gaussian site exp(-tau d^2 / 2 + nu d) in
d = f_i^{y_i} - f_i^k. Unlike the scalable method, the sites act on f_i itself, so all C - 1
factors of a point share the noise and the likelihood is not approximated (no product of Phi).

Per point, the sites give a C x C precision T_i and natural vector b_i on f_i. Integrating f_i
out, q over the whitened inducing values of all classes jointly is Gaussian with precision
P = I + sum_i Psi_i Lambda_i Psi_i' and natural mean eta = sum_i Psi_i beta_i, where
Lambda_i = T_i (I + S_i T_i)^{-1}, beta_i = (I + T_i S_i)^{-1} b_i and S_i = diag(s_i). The sites
couple the classes, so P is (C M) x (C M): a step costs O((C M)^3 + N C^2 M^2), and GFITC is
meant for small data sets (batch only; the paper's point is that it cannot use mini-batches).

EP runs to convergence (parallel damped updates, at most ``ep_iterations`` sweeps) before every
evaluation of the objective, the EP estimate of log p(y):

    log Z_EP = g(P, eta) - g(I, 0) + sum_i [ -1/2 log|I + S_i T_i| + 1/2 b_i' (S_i^-1 + T_i)^-1 b_i ]
               + sum_{i,k} log C_ik,

whose gradient at convergence is the gradient with all site parameters (tau, nu, C) held fixed.

The predictive uses each class's marginal of f(x*) (1-D quadrature as for the other methods);
the cross-class covariances that the sites induce in q are left out of that integral.
"""

from __future__ import annotations

import torch

from ..kernels import ARDKernel
from ..likelihoods import HeavisideLikelihood
from ..numerics import (
    gaussian_log_normaliser,
    inverse_mills,
    log_det_from_cholesky,
    log_ndtr,
    stable_cholesky,
    triangular_inverse,
)
from .base import MIN_VARIANCE, SparseGPMethod


class GFITC(SparseGPMethod):
    """EP with the exact Heaviside factors and the FITC prior; batch training only.

    Args:
        inducing_points: ``[C, M, D]``; kernel: :class:`ARDKernel`; n_data: N.
        alpha: must be 1 (EP); epsilon: must be ``None`` (exact Heaviside likelihood).
        damping: rho of the parallel EP updates.
        site_storage: keep the sites ``[N, C]`` (needed to continue training).
        ep_iterations, ep_tol: at most this many EP sweeps per evaluation; stop when no site
            parameter moves by more than ``ep_tol`` (relative).
    """

    TRAINING_STATE = ("site_tau", "site_nu")
    BATCH_OPTIMIZER = "lbfgs"     # as in the paper (section 4)
    USES_DAMPING = True
    SUPPORTS_MINI_BATCHES = False

    def __init__(self, inducing_points: torch.Tensor, kernel: ARDKernel, n_data: int, alpha: float = 1.0,
                 damping: float = 0.5, epsilon: float | None = None, site_storage: bool = True,
                 ep_iterations: int = 200, ep_tol: float = 1e-6):
        if alpha != 1.0:
            raise ValueError(f"GFITC runs EP (alpha = 1), got alpha={alpha}")
        if epsilon is not None:
            raise ValueError("GFITC uses the exact Heaviside likelihood, which has no labelling-error "
                             "probability epsilon")
        if not 0.0 < damping <= 1.0:
            raise ValueError(f"damping must lie in (0, 1], got {damping}")
        super().__init__(inducing_points, kernel, HeavisideLikelihood())
        C, M, _ = inducing_points.shape
        dtype = inducing_points.dtype
        self.n_data, self.damping, self.alpha = int(n_data), float(damping), 1.0
        self.ep_iterations, self.ep_tol = int(ep_iterations), float(ep_tol)
        self.site_storage = bool(site_storage)
        if self.site_storage:
            self.register_buffer("site_tau", torch.zeros(n_data, C, dtype=dtype))
            self.register_buffer("site_nu", torch.zeros(n_data, C, dtype=dtype))
        # q's natural parameters in u-space, for prediction at any kernel: [C M, C M] and [C M]
        self.register_buffer("u_precision", torch.zeros(C * M, C * M, dtype=dtype))
        self.register_buffer("u_natural", torch.zeros(C * M, dtype=dtype))
        self.register_buffer("ep_sweeps", torch.zeros((), dtype=torch.long))

    def config(self) -> dict:
        return {"n_data": self.n_data, "damping": self.damping}

    # ------------------------------------------------------------------ the EP algebra
    def _point_sites(self, y):
        """T_i ``[N, C, C]`` and b_i ``[N, C]`` from the sites on d_ik = f^{y_i} - f^k."""
        C = self.n_classes
        eye = torch.eye(C, dtype=self.site_tau.dtype, device=y.device)
        a = eye[y][:, None, :] - eye[None]                                   # [N, k, C]: e_y - e_k
        T = torch.einsum("nk,nki,nkj->nij", self.site_tau, a, a)
        b = torch.einsum("nk,nki->ni", self.site_nu, a)
        return T, b, a

    def _posterior(self, Psi, s, y):
        """q's quantities at the current sites: everything the updates and the objective need."""
        C, M, _ = Psi.shape
        T, b, a = self._point_sites(y)
        eye_c = torch.eye(C, dtype=Psi.dtype, device=Psi.device)
        S = s.T                                                              # [N, C]
        Mi = eye_c + S[:, :, None] * T                                       # I + S T
        Mi_inv = torch.linalg.inv(Mi)
        Lam = T @ Mi_inv
        Lam = 0.5 * (Lam + Lam.transpose(-1, -2))
        beta = (Mi_inv.transpose(-1, -2) @ b[..., None])[..., 0]             # (I + T S)^{-1} b
        P = torch.einsum("amn,nab,bkn->ambk", Psi, Lam, Psi).reshape(C * M, C * M)
        P = P + torch.eye(C * M, dtype=Psi.dtype, device=Psi.device)
        eta = torch.einsum("amn,na->am", Psi, beta).reshape(C * M)
        LP = stable_cholesky(P)
        LP_inv = triangular_inverse(LP)
        G = torch.stack([LP_inv[:, c * M:(c + 1) * M] @ Psi[c] for c in range(C)], 1)   # [CM, C, N]
        c_vec = LP_inv @ eta
        mean_h = torch.einsum("k,kcn->nc", c_vec, G)                         # Psi' P^{-1} eta
        cov_h = torch.einsum("kan,kbn->nab", G, G)                           # [N, C, C]
        Sigma_f = Mi_inv * S[:, None, :]                                     # (I + S T)^{-1} S
        Sigma_f = 0.5 * (Sigma_f + Sigma_f.transpose(-1, -2))
        mean_f = (Mi_inv @ (mean_h + S * b)[..., None])[..., 0]
        cov_f = Mi_inv @ cov_h @ Mi_inv.transpose(-1, -2) + Sigma_f
        return {"P": P, "eta": eta, "LP": LP, "c": c_vec, "T": T, "b": b, "a": a, "Mi": Mi,
                "Sigma_f": Sigma_f, "mean_f": mean_f, "cov_f": cov_f}

    def _factor_marginals(self, post):
        """Marginal mean and variance ``[N, C]`` of d_ik = a_k' f_i under q."""
        a = post["a"]
        mean = torch.einsum("nki,ni->nk", a, post["mean_f"])
        var = torch.einsum("nki,nij,nkj->nk", a, post["cov_f"], a)
        return mean, var.clamp_min(MIN_VARIANCE)

    def _cavity(self, post, y):
        mean, var = self._factor_marginals(post)
        tau_q, nu_q = 1.0 / var, mean / var
        tau_c, nu_c = tau_q - self.site_tau, nu_q - self.site_nu
        is_factor = torch.ones_like(tau_c, dtype=torch.bool).scatter_(1, y[:, None], False)
        return tau_q, nu_q, tau_c, nu_c, is_factor

    @torch.no_grad()
    def _ep_sweep(self, Psi, s, y) -> float:
        """One parallel damped EP update of every factor; returns the largest relative site change."""
        post = self._posterior(Psi, s, y)
        _, _, tau_c, nu_c, is_factor = self._cavity(post, y)
        improper = is_factor & (tau_c <= 0)
        tau_c = tau_c.clamp_min(MIN_VARIANCE)
        m, v = nu_c / tau_c, 1.0 / tau_c
        z = m / torch.sqrt(v)
        r = inverse_mills(z)
        m_t = m + torch.sqrt(v) * r
        v_t = v * (1.0 - r * (z + r))
        tau_new = 1.0 / v_t - tau_c
        nu_new = m_t / v_t - nu_c
        ok = torch.isfinite(tau_new) & torch.isfinite(nu_new) & (tau_new >= 0) & (v_t > 0)
        keep = is_factor & ~improper & ok
        self.n_improper_cavities += int(improper.sum())
        self.n_skipped_updates += int((is_factor & ~improper & ~ok).sum())
        rho = self.damping
        tau = torch.where(keep, rho * tau_new + (1 - rho) * self.site_tau, self.site_tau)
        nu = torch.where(keep, rho * nu_new + (1 - rho) * self.site_nu, self.site_nu)
        change = max(((tau - self.site_tau).abs() / (1.0 + self.site_tau.abs())).max().item(),
                     ((nu - self.site_nu).abs() / (1.0 + self.site_nu.abs())).max().item())
        self.site_tau.copy_(tau)
        self.site_nu.copy_(nu)
        return change

    def _log_z_ep(self, Psi, s, y):
        """log Z_EP with the sites fixed (differentiable in Psi and s) and its site constants."""
        post = self._posterior(Psi, s, y)
        g_q = 0.5 * ((post["c"] ** 2).sum() - log_det_from_cholesky(post["LP"]))
        per_point = (-0.5 * torch.logdet(post["Mi"])
                     + 0.5 * (post["b"][:, None, :] @ post["Sigma_f"] @ post["b"][..., None])[:, 0, 0])
        with torch.no_grad():   # log C_ik = log Z_ik + g(cavity) - g(q's marginal of d), held fixed
            tau_q, nu_q, tau_c, nu_c, is_factor = self._cavity(post, y)
            tau_c = tau_c.clamp_min(MIN_VARIANCE)
            log_c = (log_ndtr(nu_c / tau_c * torch.sqrt(tau_c)) + gaussian_log_normaliser(tau_c, nu_c)
                     - gaussian_log_normaliser(tau_q, nu_q))
            log_c = torch.where(is_factor, log_c, 0.0).sum()
        return g_q + per_point.sum() + log_c, post

    # ------------------------------------------------------------------ method interface
    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """EP to convergence at the current kernel, then log Z_EP (differentiable, sites fixed)."""
        if not self.site_storage:
            raise RuntimeError("this GFITC model was loaded without its sites; it can predict but not train")
        if idx.numel() != self.n_data:
            raise ValueError("GFITC is batch only: its EP estimate of log p(y) is not a sum over data points, "
                             "so it cannot use mini-batches (use batch_size=None, or method='ep'/'sep')")
        L, Psi, s = self._features(X)
        with torch.no_grad():
            for _ in range(self.ep_iterations):
                self.ep_sweeps += 1
                if self._ep_sweep(Psi.detach(), s.detach(), y) < self.ep_tol:
                    break
        log_z, post = self._log_z_ep(Psi, s, y)
        self._store_u_space(L.detach(), post["P"].detach(), post["eta"].detach())
        return log_z

    def _objective(self, L, Psi, s, y, idx):
        return self._log_z_ep(Psi, s, y)[0]

    @torch.no_grad()
    def _store_u_space(self, L, P, eta) -> None:
        """Keep q's natural parameters in u-space: whitened (P - I, eta) mapped through blockdiag(L)^{-1}."""
        C, M = self.n_classes, L.shape[-1]
        Linv = torch.block_diag(*triangular_inverse(L))                    # [CM, CM]
        eye = torch.eye(C * M, dtype=P.dtype, device=P.device)
        self.u_precision.copy_(Linv.T @ (P - eye) @ Linv)
        self.u_natural.copy_(Linv.T @ eta)

    def _latent_marginals(self, L, Psi):
        C, M = self.n_classes, L.shape[-1]
        Lb = torch.block_diag(*L)
        P = torch.eye(C * M, dtype=L.dtype, device=L.device) + Lb.T @ self.u_precision @ Lb
        eta = Lb.T @ self.u_natural
        LP_inv = triangular_inverse(stable_cholesky(P))
        G = torch.stack([LP_inv[:, c * M:(c + 1) * M] @ Psi[c] for c in range(C)], 1)   # [CM, C, B]
        c_vec = LP_inv @ eta
        return torch.einsum("k,kcn->cn", c_vec, G), G.square().sum(0)
