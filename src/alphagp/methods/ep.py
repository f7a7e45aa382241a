"""Scalable (power) expectation propagation for multi-class GP classification.

Implements the method of ``scalable-multiclass-gpc-ep.txt`` (EP and stochastic EP) with the
power alpha of ``alpha-divergence-multiclass-gpc.txt`` (Appendix A; alpha = 1 is EP).

Model. C latent functions, each with M inducing points ``Z[c]`` and inducing values
``u^c ~ N(0, K_c)``. One factor phi_{i,k} per data point i and class k != y_i
(eq. 6, 33). The factor depends on u only through the scalar projections
``h_i^c = v_i^c' u^c`` with ``v_i^c = K_c^{-1} k_c(Z_c, x_i)``, so its Gaussian
approximation is rank one in u-space (eq. 8, 20-23): precision ``C1 v v'`` and natural mean
``C2 v`` on class y_i and on class k. All cavities, tilted moments and site updates therefore
happen on scalars ("h-space"); u-space is only touched to rebuild q.

Storage (buffers, so ``state_dict`` holds the whole approximation):

* ``site_precision``, ``site_natural`` ``[C, M, M]``, ``[C, M]``: the sum of all sites' natural
  parameters in u-space. For SEP (:class:`SEP`) this is the tied factor raised to the number
  of factors n = N (C - 1), and nothing else is stored: memory O(C M^2), independent of N
  (section 2.3.1).
* EP only: ``factor_c1``, ``factor_c2`` ``[N, C, 2]`` (C1, C2 of factor (i, k) on the winning
  class y_i in ``[..., 0]`` and on class k in ``[..., 1]``) and ``factor_v`` ``[N, C, M]``, the
  v_i^c each point's sites were last stored with, so a mini-batch can take its own old
  contribution out of the running sum exactly.

A step on a batch B (all data in batch training) costs O(C (M^3 + |B| M^2)):

1. q restricted to the batch: the running sum minus the batch's stored contribution, plus the
   batch's sites re-expressed along the current v_i (in batch mode this is eq. 25-27).
2. Cavities in h-space (eq. 28-32, A.7-A.9), tilted moments through the likelihood
   (eq. 34-46, A.10-A.15), new sites C1, C2 divided by alpha (eq. 48-55, A.17-A.20),
   damped in parallel (Appendix E). A factor whose cavity is improper is not updated
   (``n_improper_cavities``); nor is one whose new site would get negative precision or a
   non-finite value (``n_skipped_updates``).
3. log Z_q (eq. 9, 57-61; A.23-A.27) at the updated sites, held fixed, scaled by N/|B| on
   mini-batches (eq. 12), from the same kernel quantities as step 2; ``local_update`` returns
   it and its gradient w.r.t. kernel hyper-parameters and inducing points (eq. 10, 62-64)
   comes from autodiff, except through q's projected marginals, whose backward is closed
   form (:mod:`.projection`).

Computations use whitened coordinates w = L^{-1} u (K = L L'): q(w) = N(B^{-1} b, B^{-1})
with B = I + L' Lambda L and b = L' eta.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from ..gaussians import gaussian_log_normaliser, tied_cavity_log_normaliser_gap
from ..kernels import ARDKernel
from ..likelihoods import HeavisideLikelihood
from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, Capabilities, SiteMethod, per_point_totals, whitened_sites
from .projection import projected_marginals, whitened_log_normaliser
from .site_updates import damped, heaviside_pair_sites


class ScalableEP(SiteMethod):
    """What EP (:class:`EP`) and SEP (:class:`SEP`) with power ``alpha`` share for multi-class GPC:
    the tilted moments, the objective and the damped site update; the subclasses keep q's sites
    (per point, or one tied factor) and compute the cavities from them.

    The parameters of both subclasses:

    Parameters
    ----------
    inducing_points
        ``[C, M, D]`` initial inducing inputs.
    kernel
        an :class:`ARDKernel` for the C latent functions.
    n_data
        N, the number of training points (sizes the EP site storage and the
        mini-batch scaling).
    alpha
        power of power EP in (0, 1]; 1 is EP.
    damping
        rho in (0, 1]; new site = rho * update + (1 - rho) * old (Appendix E).
    likelihood
        a :class:`HeavisideLikelihood`, whose pairwise factors are the sites.
    """

    REFUSES: ClassVar[dict[str, str]] = {
        "epsilon": "EP and SEP use the Heaviside likelihood of the scalable-EP paper, which has no labelling-error "
                   "probability epsilon; the robust-max likelihood is method='rep' or 'pep'"}

    # ------------------------------------------------------------------ cavities and tilted
    def _cavities(self, L, Psi, s, y, idx, whitened=None, with_g=True):
        """Cavity means/variances of (h^{y_i}, h^k) for every factor, and g(cavity) - g(q).

        Returns dict with ``[B, C]`` tensors ``m_w, v_w`` (winning class side), ``m_l, v_l``
        (class k side), ``s`` (the FITC variances ``s`` ``[C, B]`` as ``[B, C]``), ``g_diff`` (the log-normaliser difference of each factor's cavity and
        q), ``improper`` (True where a cavity had non-positive precision; its variance is
        clamped to a tiny positive value), ``g_q`` ``[C]`` (g(q) - g(prior), whitened),
        ``whitened`` (the whitened natural parameters (B, b) ``[C, M, M]``, ``[C, M]`` of the
        u-space sum the cavities start from) and (EP) ``rest``, the running u-space sum without
        the batch's old sites.

        ``whitened``: that (B, b) when already known at this L (the objective after an update:
        SEP's B updated in place, EP's rest unchanged by the update); ``with_g=False`` skips SEP's
        g terms (the site update needs only the marginals).
        """
        raise NotImplementedError

    def _tilted(self, cav, y):
        """log Z_{i,k} and derivatives for every factor, ``[B, C]`` each."""
        s_b = cav["s"]                                               # [B, C]
        s_d = s_b.gather(1, y[:, None]) + s_b
        return self.likelihood.pair_factor_tilted(cav["m_w"] - cav["m_l"], cav["v_w"] + cav["v_l"], s_d, self.alpha)

    @staticmethod
    def _factor_mask(y: torch.Tensor, n_classes: int) -> torch.Tensor:
        """``[B, C]`` True where (i, k) is a likelihood factor, i.e. k != y_i."""
        return torch.ones(len(y), n_classes, dtype=torch.bool, device=y.device).scatter_(1, y[:, None], False)

    def _objective(self, L, Psi, s, y, idx, whitened=None) -> ObjectiveTerms:
        """log Z_q's terms on the batch (eq. 9, 12, A.23).

        g(q) - g(prior) plus, over the batch's factors, (log Z_ik + g(cavity) - g(q)) / alpha,
        at the current sites; differentiable w.r.t. the kernel quantities (L, Psi, s).
        ``whitened``: see :meth:`_cavities`. The log Z_ik, which couple the classes, are the
        ``coupled`` terms.
        """
        cav = self._cavities(L, Psi, s, y, idx, whitened)
        log_z, _, _ = self._tilted(cav, y)
        is_factor = self._factor_mask(y, self.n_classes)
        coupled = self._weighted(torch.where(is_factor, log_z, 0.0), idx).sum()
        data = self._weighted(torch.where(is_factor, cav["g_diff"], 0.0), idx).sum()
        return ObjectiveTerms(cav["g_q"].sum(), data / self.alpha, coupled / self.alpha)

    # ------------------------------------------------------------------ method interface
    @property
    def _n_factors(self) -> float:
        """The likelihood factors q approximates: (C - 1) per point, sum_i w_i points with weights."""
        return self.n_weighted * (self.n_classes - 1)

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """Parallel damped (power) EP update of all factors of the batch (Appendix D-E).

        Returns the objective's terms of the batch at the updated sites, reusing this update's
        kernel quantities, so the hyper-parameters and the sites are updated together
        ("inner" updates, section 2.3) with one kernel evaluation per step.
        """
        self._require_training_state()
        L, Psi, s = self._whitened_kernel(X)
        with torch.no_grad():
            cav = self._cavities(L.detach(), Psi.detach(), s.detach(), y, idx, with_g=False)
            _, g1, g2 = self._tilted(cav, y)
            whitened = self._update_sites(L.detach(), Psi.detach(), y, idx, cav, g1, g2)
        return self._objective(L, Psi, s, y, idx, whitened)

    @torch.no_grad()
    def _update_sites(self, L, Psi, y, idx, cav, g1, g2):
        """New sites = (tilted marginal - cavity) / alpha in natural parameters (eq. 48-55, A.17-A.20).

        Damped in parallel (Appendix E). A factor whose cavity is improper (non-positive
        precision) is not updated and counted in ``n_improper_cavities``; one whose new site
        would get negative precision or a non-finite value is not updated and counted in
        ``n_skipped_updates``.

        Returns what the objective at the new sites can reuse (``whitened`` of
        :meth:`_cavities`): SEP's new (B, b) = (I + (1 - f)(B_old - I) + rho G, (1 - f) b_old + rho g)
        with G, g the batch's new sites in whitened coordinates (no new L' Lambda L product);
        EP's rest of the running sum and its (B, b), which the update leaves as they are.
        """
        new_c1, new_c2, ok = heaviside_pair_sites(cav["m_w"], cav["v_w"], cav["m_l"], cav["v_l"], g1, g2, self.alpha)
        is_factor = self._factor_mask(y, self.n_classes)
        proper = is_factor & ~cav["improper"]
        keep = (proper & ok)[..., None]
        kept = self._weighted(keep[..., 0].to(new_c1.dtype), idx).sum()        # factors, each counted w_i times
        n_kept = self._count_refusals((is_factor & cav["improper"]).sum(), (proper & ~ok).sum(), kept)
        return self._apply_sites(L, Psi, y, idx, cav, new_c1, new_c2, keep, n_kept)

    def _apply_sites(self, L, Psi, y, idx, cav, new_c1, new_c2, keep, n_kept: float):
        """Damp the batch's valid new sites ``[B, C, 2]`` into q's sites (``keep`` ``[B, C, 1]``,
        ``n_kept`` of them in the global batch, each counted w_i times with sample weights);
        returns ``whitened`` for the objective."""
        raise NotImplementedError


class EP(ScalableEP):
    """Scalable EP: one rank-one factor per (point, class), memory O(N C M).

    Parameters
    ----------
    site_storage
        Allocate the per-point site arrays (``[N, C, ...]``, training state); ``False`` builds a
        model that can predict but not train (a model file saved without training state). The
        other parameters are :class:`ScalableEP`'s.
    """

    #: Buffers needed to continue training but not to predict (the per-point sites: O(N C M)).
    TRAINING_STATE = ("factor_c1", "factor_c2", "factor_v", "factor_v_current")

    def __init__(self, inducing_points: torch.Tensor, kernel: ARDKernel, likelihood: HeavisideLikelihood,
                 n_data: int, alpha: float = 1.0, damping: float = 0.5, site_storage: bool = True):
        self.site_storage = bool(site_storage)
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha, damping, per_point=self.site_storage)
        if self.site_storage:
            n_data, C = self.n_data, self.n_classes
            self.register_buffer("factor_c1", torch.zeros(n_data, C, 2, dtype=inducing_points.dtype))
            self.register_buffer("factor_c2", torch.zeros(n_data, C, 2, dtype=inducing_points.dtype))

    def _point_sites(self, y: torch.Tensor, idx: torch.Tensor):
        """Stored total site precision and natural mean per point and class, ``[B, C]`` each, as
        they enter q: a point of weight w_i contributes its sites w_i times."""
        prec, nat = per_point_totals(self.factor_c1[idx], self.factor_c2[idx], y, self.n_classes)
        return self._weighted(prec, idx), self._weighted(nat, idx)

    def _cavities(self, L, Psi, s, y, idx, whitened=None, with_g=True):  # noqa: ARG002 (SEP's option)
        """q restricted to the batch: the running sum minus the batch's stored contribution, plus
        the batch's sites re-expressed along the current v_i (eq. 25-27 in batch mode); see
        :meth:`ScalableEP._cavities`."""
        prec, nat = self._point_sites(y, idx)                        # [B, C]
        rest = self._rest_of_sum(prec, nat, idx) if whitened is None else whitened[0]
        Bm, b = whitened_sites(L, *rest, None if whitened is None else whitened[1])
        mean, var, g_q = self._batch_marginals(Bm, b, Psi, prec, nat)
        mean, var = mean.T, var.clamp_min(MIN_VARIANCE).T           # [B, C]
        tau, nu = 1.0 / var, mean / var
        c1, c2 = self.factor_c1[idx], self.factor_c2[idx]
        a = self.alpha
        tau_w = tau.gather(1, y[:, None]) - a * c1[..., 0]
        tau_l = tau - a * c1[..., 1]
        improper = (tau_w <= 0) | (tau_l <= 0)                       # removing the site leaves no Gaussian
        tau_w, tau_l = tau_w.clamp_min(MIN_VARIANCE), tau_l.clamp_min(MIN_VARIANCE)
        nu_w = nu.gather(1, y[:, None]) - a * c2[..., 0]
        nu_l = nu - a * c2[..., 1]
        g_q_w = gaussian_log_normaliser(tau.gather(1, y[:, None]), nu.gather(1, y[:, None]))
        g_diff = (gaussian_log_normaliser(tau_w, nu_w) - g_q_w
                  + gaussian_log_normaliser(tau_l, nu_l) - gaussian_log_normaliser(tau, nu))
        return {"g_q": g_q, "rest": rest, "whitened": (Bm, b), "g_diff": g_diff, "improper": improper, "s": s.T,
                "m_w": nu_w / tau_w, "v_w": 1.0 / tau_w, "m_l": nu_l / tau_l, "v_l": 1.0 / tau_l}

    def _apply_sites(self, L, Psi, y, idx, cav, new_c1, new_c2, keep, n_kept):  # noqa: ARG002 (SEP's count)
        rho = self.damping
        old_c1, old_c2 = self.factor_c1[idx], self.factor_c2[idx]
        self.factor_c1[idx] = damped(new_c1, old_c1, keep, rho)
        self.factor_c2[idx] = damped(new_c2, old_c2, keep, rho)
        self._store_batch_sites(L, Psi, idx, cav["rest"], *self._point_sites(y, idx))
        return cav["rest"], cav["whitened"]


class SEP(ScalableEP):
    """Stochastic EP: one tied factor per class, memory O(C M^2) independent of N (section 2.3.1).

    Its parameters are :class:`ScalableEP`'s.
    """

    #: the tied factor's update is a sum over the batch, and per class
    CAPABILITIES = Capabilities(damping=True, data_parallel=True, class_parallel=True, sample_weight=True,
                                streaming=True)

    def __init__(self, inducing_points: torch.Tensor, kernel: ARDKernel, likelihood: HeavisideLikelihood,
                 n_data: int, alpha: float = 1.0, damping: float = 0.5):
        self.site_storage = True                                   # nothing per point to leave out
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha, damping, per_point=False)

    def _cavities(self, L, Psi, s, y, idx, whitened=None, with_g=True):  # noqa: ARG002 (EP's rows)
        """The tied sum scaled (B - I and b scale); only the cavity's marginals are needed, q enters
        through g(q); see :meth:`ScalableEP._cavities`. In a class split, L, Psi, s and q are this
        process's classes', and the marginals of all classes are gathered."""
        Bm, b = whitened_sites(L, self._own(self.site_precision), self._own(self.site_natural), whitened)
        shrink = 1.0 - self.alpha / self._n_factors  # cavity: the tied sum scaled, so B - I and b scale
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        m_cav, v_cav, _ = projected_marginals(torch.add(eye, Bm - eye, alpha=shrink), shrink * b, Psi)
        m_cav, v_cav, s = self._all_classes(torch.stack((m_cav, v_cav, s), 1)).unbind(1)   # [C, B] each
        improper = (v_cav <= 0).T                                   # [B, C], per class
        m_cav, v_cav = m_cav.T, v_cav.clamp_min(MIN_VARIANCE).T
        m_w, v_w = m_cav.gather(1, y[:, None]), v_cav.gather(1, y[:, None])
        cav = {"rest": None, "whitened": (Bm, b), "m_w": m_w.expand_as(m_cav), "v_w": v_w.expand_as(m_cav),
               "m_l": m_cav, "v_l": v_cav, "improper": improper | improper.gather(1, y[:, None]), "s": s.T}
        if with_g:
            g_diff = tied_cavity_log_normaliser_gap(Bm, b, self.alpha / self._n_factors)  # no cancellation
            cav.update(g_q=whitened_log_normaliser(Bm, b), g_diff=g_diff.sum() * torch.ones_like(m_cav))
        return cav

    def _apply_sites(self, L, Psi, y, idx, cav, new_c1, new_c2, keep, n_kept):
        rho = self.damping
        prec, nat = per_point_totals(torch.where(keep, new_c1, 0.0), torch.where(keep, new_c2, 0.0), y,
                                     self.n_classes)
        prec, nat = self._weighted(prec, idx), self._weighted(nat, idx)
        own = self._own_classes                                      # this process's classes
        gram, vec = self._scaled_gram(Psi, prec[:, own]), self._weighted_sum(Psi, nat[:, own])   # whitened, at this L
        self.reducer.sum_rows_(gram)
        self.reducer.sum_rows_(vec)
        batch_prec, batch_nat = self._to_u_space(L, gram, vec)
        frac = rho * n_kept / self._n_factors  # the share of the tied factor replaced
        self._own(self.site_precision).mul_(1.0 - frac).add_(rho * batch_prec)
        self._own(self.site_natural).mul_(1.0 - frac).add_(rho * batch_nat)
        Bm_old, b_old = cav["whitened"]
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        Bm = torch.add(eye, Bm_old - eye, alpha=1.0 - frac).add_(gram, alpha=rho)
        return Bm, b_old.mul(1.0 - frac).add_(vec, alpha=rho)
