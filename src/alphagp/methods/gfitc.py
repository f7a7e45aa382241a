"""GFITC baseline: EP on the exact Heaviside likelihood factors with the FITC prior
(Naish-Guzman & Holden 2008 on the multi-class model of Kim & Ghahramani 2006; section 3 of the
scalable-EP paper, thesis section 5.3).

The factors Theta(f_i^{y_i} - f_i^k), one per point i and class k != y_i, act on the latent values
f_i, whose prior is FITC: f_i^c = h_i^c + e_i^c with h_i^c = psi_i^c' w (whitened inducing values
w ~ N(0, I)) and independent e_i^c ~ N(0, s_i^c) (the FITC correction plus the additive noise).
EP approximates factor (i, k) by Gaussian sites on f_i^{y_i} and on f_i^k (precision, natural
mean), so q factorises over classes like every other method here. Unlike the scalable method
(:mod:`.ep`), the sites act on f_i itself, so the C - 1 factors of a point share its noise and the
likelihood is used exactly (no product-of-Phi approximation); the price is that log p(y) is no
longer a sum over points, so GFITC is batch only.

Per class, a point's sites (total precision pi, natural mean nu on f_i^c) integrate with the
noise into a site on h_i^c with precision pi / (1 + s pi) and natural mean nu / (1 + s pi); q(w^c)
then has precision I + Psi diag(pi / (1 + s pi)) Psi'. q's marginal of f_i^c has mean
(m_h + s nu) / (1 + s pi) and variance v_h / (1 + s pi)^2 + s / (1 + s pi), where (m_h, v_h) is
q's marginal of h_i^c.

EP runs to convergence (parallel damped updates of all factors, at most ``ep_iterations``
sweeps, warm-started from the previous sites) before every evaluation of the objective, the EP
estimate of log p(y):

    log Z_EP = sum_c [g(q(w^c)) - g(N(0, I))]
               + sum_{i,c} [-1/2 log(1 + s pi) + 1/2 nu^2 s / (1 + s pi)] + sum_{i,k} log C_ik,

with log C_ik = log Z_ik + g(cavity) - g(q) on the pair (f_i^{y_i}, f_i^k). Its gradient at an EP
fixed point is the gradient with all site parameters held fixed (the tests check it against
finite differences of the re-converged estimate).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import torch

from ..constraints import Interval
from ..gaussians import whitened_log_normaliser_from_cholesky
from ..kernels import Kernel
from ..likelihoods import HeavisideLikelihood
from ..numerics import stable_cholesky, triangular_inverse
from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, Capabilities, SparseGPMethod, StoredQ, per_point_totals
from .ep_step import (
    Cavity,
    damped_sites,
    heaviside_pair_sites,
    pair_components,
    pair_factor_mask,
    register_factor_sites,
    remove_sites,
    validated,
)


class GFITC(StoredQ, SparseGPMethod):
    """EP with the exact Heaviside factors and the FITC prior; batch training only.

    Parameters
    ----------
    inducing_points
        ``[C, M, D]``; kernel: a :class:`~alphagp.kernels.Kernel`; n_data: N.
    likelihood
        a :class:`HeavisideLikelihood` (its pair factors at s = 0 are the exact factors).
    alpha
        must be 1 (EP).
    damping
        rho of the parallel EP updates.
    site_storage
        keep the sites ``[N, C, 2]`` (needed to continue training).
    ep_iterations, ep_tol
        at most this many EP sweeps per evaluation; stop earlier when no
        site parameter moves by more than ``ep_tol`` (relative).
    """

    TRAINING_STATE = ("factor_c1", "factor_c2")
    #: files and checkpoints written before the sites had one name (issue 47) call them so
    RENAMED_STATE: ClassVar[dict[str, str]] = {"site_tau": "factor_c1", "site_nu": "factor_c2"}
    OWN_PARAMETERS: ClassVar[dict] = {"ep_iterations": [Interval(Integral, 1, None, closed="left")],
                                      "ep_tol": [Interval(Real, 0, None, closed="neither")]}
    #: batch only: the FITC marginal likelihood is not a sum over points
    #: (its gradient holds the site constants fixed: checked against the re-converged estimate in test_gfitc.py)
    CAPABILITIES = Capabilities(damping=True, mini_batches=False, exact_gradient=False)
    REFUSES: ClassVar[dict[str, str]] = {
        "epsilon": "GFITC uses the exact Heaviside likelihood, which has no labelling-error probability epsilon"}

    def __init__(self, inducing_points: torch.Tensor, kernel: Kernel, likelihood: HeavisideLikelihood,
                 n_data: int, alpha: float = 1.0, damping: float = 0.5, site_storage: bool = True,
                 ep_iterations: int = 100, ep_tol: float = 1e-3):
        if not 0.0 < damping <= 1.0:
            raise ValueError(f"damping must lie in (0, 1], got {damping}")
        super().__init__(inducing_points, kernel, likelihood)
        C, M = self.n_classes, inducing_points.shape[1]
        dtype = inducing_points.dtype
        self.n_data, self.damping, self.alpha = int(n_data), float(damping), float(alpha)     # 1: fixed by the registry
        self.ep_iterations, self.ep_tol = int(ep_iterations), float(ep_tol)
        self.site_storage = bool(site_storage)
        if self.site_storage:  # factor (i, k)'s precision and natural mean: [..., 0] on f_i^{y_i}, [..., 1] on f_i^k
            register_factor_sites(self, n_data, C, (2,), dtype)
        self._register_stored_q(C, M, dtype)
        self.register_buffer("ep_sweeps", torch.zeros((), dtype=torch.long))

    # ------------------------------------------------------------------ the EP algebra
    def _posterior(self, Psi, s, y):
        """q at the current sites: whitened (B, b, chol), f-marginals ``[N, C]``, per-point terms."""
        pi, nu = per_point_totals(self.factor_c1, self.factor_c2, y, self.n_classes)   # on f_i^c, [N, C]
        S = s.T
        denom = 1.0 + S * pi
        Bm = torch.eye(Psi.shape[1], dtype=Psi.dtype, device=Psi.device) + (Psi * (pi / denom).T[:, None, :]) @ Psi.mT
        b = (Psi @ (nu / denom).T[..., None])[..., 0]
        LB = stable_cholesky(Bm)
        LB_inv = triangular_inverse(LB)
        A = LB_inv @ Psi
        c = (LB_inv @ b[..., None])[..., 0]
        mean_h, var_h = (c[:, None, :] @ A)[:, 0].T, A.square().sum(1).T          # [N, C]
        mean_f = (mean_h + S * nu) / denom
        var_f = (var_h / denom + S) / denom
        g_q = whitened_log_normaliser_from_cholesky(LB, c)                  # [C]
        per_point = -0.5 * torch.log(denom) + 0.5 * nu * nu * S / denom
        return {"Bm": Bm, "b": b, "mean_f": mean_f, "var_f": var_f.clamp_min(MIN_VARIANCE), "g_q": g_q,
                "per_point": per_point}

    def _cavity(self, post, y) -> Cavity:
        """The :class:`~.ep_step.Cavity` of every factor (i, k) on (f_i^{y_i}, f_i^k), ``[N, C, 2]``:
        q's f-marginals with each factor's sites taken out (no FITC variance: the sites act on f)."""
        tau, nu = 1.0 / post["var_f"], post["mean_f"] / post["var_f"]
        return remove_sites(pair_components(tau, y), pair_components(nu, y), self.factor_c1, self.factor_c2, 1.0,
                            torch.zeros_like(self.factor_c1))

    def _tilted(self, cavity: Cavity):
        """log Z of Theta(f^y - f^k) under the cavity and its derivatives in the cavity mean of d."""
        return self.likelihood.pair_factor_tilted(*cavity.pair_difference(), 1.0)

    @torch.no_grad()
    def _ep_sweep(self, Psi, s, y) -> float:
        """One parallel damped EP update of every factor (:mod:`.ep_step`); returns the largest
        relative site change."""
        cavity = self._cavity(self._posterior(Psi, s, y), y)
        _, g1, g2 = self._tilted(cavity)
        new_tau, new_nu, ok = heaviside_pair_sites(cavity, g1, g2)
        keep, _ = validated(self, cavity, new_tau, ok, pair_factor_mask(y, self.n_classes), global_batch=False)
        tau, nu = damped_sites(self, new_tau, new_nu, keep)
        change = max(((tau - self.factor_c1).abs() / (1.0 + self.factor_c1.abs())).max().item(),
                     ((nu - self.factor_c2).abs() / (1.0 + self.factor_c2.abs())).max().item())
        self.factor_c1.copy_(tau)
        self.factor_c2.copy_(nu)
        return change

    def _log_z_ep(self, Psi, s, y):
        """log Z_EP with all site parameters fixed: differentiable in Psi and s."""
        post = self._posterior(Psi, s, y)
        with torch.no_grad():
            cavity = self._cavity(post, y)
            log_c = torch.where(pair_factor_mask(y, self.n_classes), self._tilted(cavity)[0] + cavity.g_diff,
                                0.0).sum()
        return post["g_q"].sum() + post["per_point"].sum() + log_c, post

    # ------------------------------------------------------------------ method interface
    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """EP to convergence at the current kernel, then log Z_EP (differentiable, sites fixed)."""
        if not self.site_storage:
            raise RuntimeError("this GFITC model was loaded without its sites; it can predict but not train")
        if idx.numel() != self.n_data:
            raise ValueError("GFITC is batch only: its EP estimate of log p(y) is not a sum over data points, "
                             "so it cannot use mini-batches (use batch_size=None, or method='ep'/'sep')")
        L, Psi, s = self._whitened_kernel(X)
        with torch.no_grad():
            for _ in range(self.ep_iterations):
                self.ep_sweeps += 1
                if self._ep_sweep(Psi.detach(), s.detach(), y) < self.ep_tol:
                    break
        log_z, post = self._log_z_ep(Psi, s, y)
        self._store_q(L.detach(), post["Bm"].detach(), post["b"].detach())
        return ObjectiveTerms.batch_only(log_z)

    def _objective(self, _L, Psi, s, y, _idx):
        return ObjectiveTerms.batch_only(self._log_z_ep(Psi, s, y)[0])
