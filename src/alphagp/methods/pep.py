"""Power EP with one factor per data point and the robust-max likelihood (alpha paper section 3.1,
Appendix A; REP of the thesis, section 5.2.1, is its alpha = 1 case).

The factor of point i is the exact likelihood of its label, p(y_i | f_i) (eq. 2), with f_i given
the inducing values by the sparse conditional p(f_i | u) (alpha paper section 2.2, end; thesis
eq. 5.20). Its Gaussian approximation is a product over classes of rank-one terms
(eq. A.1-A.3): precision ``C1_{i,c} v_i^c v_i^c'`` and natural mean ``C2_{i,c} v_i^c`` on u^c. So,
as in :mod:`.ep`, all EP algebra happens on the scalars h_i^c = v_i^c' u^c:

1. q restricted to the batch (running sum minus the batch's stored sites plus the batch's sites
   along the current v_i; eq. A.5-A.6 in batch mode) and its marginals of h_i^c;
2. cavities removing alpha times each site (eq. A.7-A.9);
3. log Z_i = log E[p(y_i | f_i)^alpha] under f_i^c ~ N(cavity mean of h_i^c, cavity variance +
   s_i^c), by 1-D quadrature, and its derivatives in the means and variances (A.10-A.13);
4. new sites from the tilted moments divided by alpha (A.14-A.21), damped (A.5):
   with G = (dlogZ/dm)^2 - 2 dlogZ/dV and cavity (mu, sigma) of h_i^c,
   alpha C1 = G / (1 - sigma G) and alpha C2 = dlogZ/dm + alpha C1 (mu + sigma dlogZ/dm).

The energy (eq. 8, A.23-A.27) is
log Z_q = g(q) - g(prior) + 1/alpha sum_i [log Z_i + sum_c (g(cavity_i^c) - g(q^c))],
with the g terms 1-D log-normalisers of the marginals of h (the determinant lemma), scaled by
N/|B| on mini-batches; its gradient (A.28-A.30) comes from autodiff with the sites held fixed.

A site component whose update would get negative precision (log Z not concave in that mean:
possible with epsilon > 0 for points far on the wrong side) or a non-finite value is not
updated and counted in ``n_skipped_updates``; a point whose cavity is improper keeps its sites
and is counted in ``n_improper_cavities``.
"""

from __future__ import annotations

import torch

from ..gaussians import gaussian_log_normaliser
from ..kernels import ARDKernel
from ..likelihoods import Likelihood
from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, SiteMethod, whitened_sites
from .site_updates import damped, power_ep_sites


class PowerEP(SiteMethod):
    """PEP / REP: power EP with per-point factors on the robust-max likelihood.

    Parameters
    ----------
    inducing_points
        ``[C, M, D]`` initial inducing inputs.
    kernel
        an :class:`ARDKernel` for the C latent functions.
    likelihood
        any deterministic :class:`~alphagp.likelihoods.base.Likelihood` (the registry
        gives the robust-max one): the site updates use its ``tilted_derivatives``.
    n_data
        N (sizes the site storage and the mini-batch scaling).
    alpha
        power in (0, 1]; 1 is EP (REP).
    damping
        rho in (0, 1].
    site_storage
        allocate the per-point sites ``[N, C]`` and directions ``[N, C, M]``
        (``False``: a model that predicts but cannot train).
    """

    TRAINING_STATE = ("factor_c1", "factor_c2", "factor_v", "factor_v_current")

    def __init__(self, inducing_points: torch.Tensor, kernel: ARDKernel, likelihood: Likelihood, n_data: int,
                 alpha: float = 1.0, damping: float = 0.5, site_storage: bool = True):
        self.site_storage = bool(site_storage)
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha, damping, per_point=self.site_storage)
        if self.site_storage:
            self.register_buffer("factor_c1", torch.zeros(n_data, self.n_classes, dtype=inducing_points.dtype))
            self.register_buffer("factor_c2", torch.zeros(n_data, self.n_classes, dtype=inducing_points.dtype))

    def _cavities(self, L, Psi, idx):
        """Cavity means and variances of h_i^c ``[B, C]``, and the g terms of the energy.

        Returns dict with ``mean``, ``var`` ``[B, C]``, ``g_diff`` ``[B]`` (sum over classes of
        g(cavity) - g(q) of the 1-D marginals), ``improper`` ``[B]``, ``g_q`` ``[C]`` (g(q) -
        g(prior)) and ``rest`` (the running sum without the batch's sites).
        """
        prec, nat = self.factor_c1[idx], self.factor_c2[idx]              # [B, C], one copy of each point
        in_q = self._weighted(prec, idx), self._weighted(nat, idx)         # what q holds: w_i copies
        rest = self._rest_of_sum(*in_q, idx)
        mean, var, g_q = self._batch_marginals(*whitened_sites(L, *rest), Psi, *in_q)
        var = var.clamp_min(MIN_VARIANCE).T                                # [B, C]
        tau, nu = 1.0 / var, mean.T / var
        tau_c = tau - self.alpha * prec
        nu_c = nu - self.alpha * nat
        improper = (tau_c <= 0).any(1)
        tau_c = tau_c.clamp_min(MIN_VARIANCE)
        g_diff = (gaussian_log_normaliser(tau_c, nu_c) - gaussian_log_normaliser(tau, nu)).sum(1)
        return {"mean": nu_c / tau_c, "var": 1.0 / tau_c, "g_diff": g_diff, "improper": improper,
                "g_q": g_q, "rest": rest}

    def _objective(self, L, Psi, s, y, idx) -> ObjectiveTerms:
        """log Z_q's terms (eq. 8 / A.23) on the batch; sites held fixed."""
        cav = self._cavities(L, Psi, idx)
        log_z = self.likelihood.log_expected_power(cav["mean"], cav["var"] + s.T, y, self.alpha)
        data = self._weighted(log_z + cav["g_diff"], idx).sum()
        return ObjectiveTerms(cav["g_q"].sum(), data / self.alpha)

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """Parallel damped power-EP update of the batch's factors; returns the energy at the new sites."""
        self._require_training_state()
        L, Psi, s = self._whitened_kernel(X)
        with torch.no_grad():
            L0, Psi0 = L.detach(), Psi.detach()
            cav = self._cavities(L0, Psi0, idx)
            _, g_m, g_v = self.likelihood.tilted_derivatives(cav["mean"], cav["var"] + s.detach().T, y, self.alpha)
            self._update_sites(L0, Psi0, idx, cav, g_m, g_v)
        return self._objective(L, Psi, s, y, idx)

    @torch.no_grad()
    def _update_sites(self, L, Psi, idx, cav, g_m, g_v) -> None:
        """Moment matching in h-space (A.14-A.21), damped; invalid components keep their old sites."""
        rho = self.damping
        new_c1, new_c2, ok = power_ep_sites(cav["mean"], cav["var"], g_m, g_v, self.alpha)
        proper = ~cav["improper"][:, None].expand_as(ok)
        keep = proper & ok
        self._count_refusals(cav["improper"].sum(), (proper & ~ok).sum())
        old_c1, old_c2 = self.factor_c1[idx], self.factor_c2[idx]
        c1 = damped(new_c1, old_c1, keep, rho)
        c2 = damped(new_c2, old_c2, keep, rho)
        self.factor_c1[idx], self.factor_c2[idx] = c1, c2
        self._store_batch_sites(L, Psi, idx, cav["rest"], self._weighted(c1, idx), self._weighted(c2, idx))
