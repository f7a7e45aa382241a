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
2. EP's step (:mod:`.ep_step`): cavities in h-space (eq. 28-32, A.7-A.9), tilted moments
   through the likelihood (eq. 34-46, A.10-A.15), new sites C1, C2 divided by alpha (eq. 48-55,
   A.17-A.20), damped in parallel (Appendix E). A factor whose cavity is improper is not
   updated (``n_improper_cavities``); nor is one whose new site would get negative precision or
   a non-finite value (``n_skipped_updates``).
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

from ..gaussians import tied_cavity_log_normaliser_gap
from ..kernels import Kernel
from ..likelihoods import HeavisideLikelihood
from .base import MIN_VARIANCE, Capabilities, per_point_totals, whitened_sites
from .ep_step import (
    Cavity,
    EPStep,
    QOnBatch,
    heaviside_pair_sites,
    pair_components,
    pair_factor_mask,
    register_factor_sites,
)
from .projection import projected_marginals, whitened_log_normaliser


class ScalableEP(EPStep):
    """What EP (:class:`EP`) and SEP (:class:`SEP`) with power ``alpha`` share for multi-class GPC:
    the pairwise factors' layout and tilted moments; the subclasses keep q's sites (per point, or
    one tied factor).

    A factor (i, k), k != y_i, touches two projections: h_i^{y_i} (the winner, component 0) and
    h_i^k (the loser, component 1); its sites are ``[B, C, 2]`` and the entry k = y_i is no factor.

    The parameters of both subclasses:

    Parameters
    ----------
    inducing_points
        ``[C, M, D]`` initial inducing inputs.
    kernel
        a :class:`~alphagp.kernels.Kernel` for the C latent functions.
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

    def _components(self, values: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return pair_components(values, y)

    def _point_totals(self, c1: torch.Tensor, c2: torch.Tensor, y: torch.Tensor):
        return per_point_totals(c1, c2, y, self.n_classes)

    def _factor_mask(self, y: torch.Tensor) -> torch.Tensor:
        return pair_factor_mask(y, self.n_classes)

    def _tilted(self, cavity: Cavity):
        """log Z_{i,k} and its first two derivatives in the cavity mean of h^y - h^k, ``[B, C]`` each."""
        return self.likelihood.pair_factor_tilted(*cavity.pair_difference(), self.alpha)

    def _new_sites(self, cavity: Cavity, _y: torch.Tensor):
        _, g1, g2 = self._tilted(cavity)
        return heaviside_pair_sites(cavity, g1, g2, self.alpha)

    def _log_tilted(self, cavity: Cavity, _y: torch.Tensor) -> torch.Tensor:
        return self._tilted(cavity)[0]

    @property
    def _n_factors(self) -> float:
        """The likelihood factors q approximates: (C - 1) per point, sum_i w_i points with weights."""
        return self.n_weighted * (self.n_classes - 1)


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

    def __init__(self, inducing_points: torch.Tensor, kernel: Kernel, likelihood: HeavisideLikelihood,
                 n_data: int, alpha: float = 1.0, damping: float = 0.5, site_storage: bool = True):
        self.site_storage = bool(site_storage)
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha, damping, per_point=self.site_storage)
        if self.site_storage:
            register_factor_sites(self, self.n_data, self.n_classes, (2,), inducing_points.dtype)


class SEP(ScalableEP):
    """Stochastic EP: one tied factor per class, memory O(C M^2) independent of N (section 2.3.1).

    Its parameters are :class:`ScalableEP`'s.
    """

    #: the tied factor's update is a sum over the batch, and per class
    CAPABILITIES = Capabilities(damping=True, data_parallel=True, class_parallel=True, sample_weight=True,
                                streaming=True)

    def __init__(self, inducing_points: torch.Tensor, kernel: Kernel, likelihood: HeavisideLikelihood,
                 n_data: int, alpha: float = 1.0, damping: float = 0.5):
        self.site_storage = True                                   # nothing per point to leave out
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha, damping, per_point=False)

    def _cavity(self, L, Psi, s, y, _idx, q_batch: QOnBatch | None = None, with_g: bool = True):
        """The tied sum scaled (B - I and b scale); only the cavity's marginals are needed, q enters
        through g(q) (the rows' indices are not needed: nothing is stored per point). In a class split, L, Psi, s and q are
        this process's classes', and the marginals of all classes are gathered. ``q_batch``: SEP's
        (B, b) updated in place after a site update."""
        Bm, b = whitened_sites(L, self._own(self.site_precision), self._own(self.site_natural),
                               None if q_batch is None else q_batch.whitened)
        shrink = 1.0 - self.alpha / self._n_factors  # cavity: the tied sum scaled, so B - I and b scale
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        m_cav, v_cav, _ = projected_marginals(torch.add(eye, Bm - eye, alpha=shrink), shrink * b, Psi)
        m_cav, v_cav, s = self._all_classes(torch.stack((m_cav, v_cav, s), 1)).unbind(1)   # [C, B] each
        improper = (v_cav <= 0).T                                   # [B, C], per class
        m_cav, v_cav = m_cav.T, v_cav.clamp_min(MIN_VARIANCE).T
        g_q = g_diff = None
        if with_g:
            g_q = whitened_log_normaliser(Bm, b)
            gap = tied_cavity_log_normaliser_gap(Bm, b, self.alpha / self._n_factors)  # no cancellation
            g_diff = gap.sum() * torch.ones_like(m_cav)
        cavity = Cavity(self._components(m_cav, y), self._components(v_cav, y),
                        improper | improper.gather(1, y[:, None]), self._components(s.T, y), g_diff)
        return cavity, QOnBatch(g_q, None, (Bm, b))

    @torch.no_grad()
    def _store_sites(self, L, Psi, y, idx, q_batch, precision, natural, keep, n_kept):
        """Replace the share rho n_kept / n of the tied factor by the batch's used new sites (section
        2.3.1); returns the new (B, b) = (I + (1 - f)(B_old - I) + rho G, (1 - f) b_old + rho g), with
        G, g the batch's new sites in whitened coordinates (no new L' Lambda L product)."""
        rho = self.damping
        prec, nat = self._point_totals(torch.where(keep, precision, 0.0), torch.where(keep, natural, 0.0), y)
        prec, nat = self._weighted(prec, idx), self._weighted(nat, idx)
        own = self._own_classes                                      # this process's classes
        gram, vec = self._scaled_gram(Psi, prec[:, own]), self._weighted_sum(Psi, nat[:, own])   # whitened, at this L
        self.reducer.sum_rows_(gram)
        self.reducer.sum_rows_(vec)
        batch_prec, batch_nat = self._to_u_space(L, gram, vec)
        frac = rho * n_kept / self._n_factors  # the share of the tied factor replaced
        self._own(self.site_precision).mul_(1.0 - frac).add_(rho * batch_prec)
        self._own(self.site_natural).mul_(1.0 - frac).add_(rho * batch_nat)
        Bm_old, b_old = q_batch.whitened
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        Bm = torch.add(eye, Bm_old - eye, alpha=1.0 - frac).add_(gram, alpha=rho)
        return QOnBatch(None, None, (Bm, b_old.mul(1.0 - frac).add_(vec, alpha=rho)))
