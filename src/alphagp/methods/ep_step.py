"""EP's site step, written once for every EP method (EP, SEP, REP/PEP, GFITC).

Each factor of a batch touches K scalar projections of the latent functions (a Heaviside pair
factor Phi(f^{y_i} - f^k): its winner's and its loser's, K = 2; a power-EP factor p(y_i | f_i):
one per class, K = C). The step is:

1. the **cavity** (:class:`Cavity`): q's marginals of those projections with alpha times the
   factor's sites taken out (:func:`remove_sites`; EP paper eq. 29-32, alpha paper A.7-A.9), or,
   for a tied factor, the tied sum scaled (SEP builds its :class:`Cavity` itself);
2. the **tilted moments** through the likelihood (the method's own), and from them the new sites,
   (tilted - cavity) / alpha in natural parameters: :func:`heaviside_pair_sites` (eq. 48-55,
   A.17-A.20) or :func:`power_ep_sites` (A.14-A.21);
3. the **validated, counted update** (:func:`validated`: :func:`accepted` with the method's
   counters, ``SparseGPMethod._count_refusals``): a new site is used only if the
   factor's cavity is proper and the site is valid (finite natural parameters, non-negative
   precision, positive moment-matching denominators: 1 + v g2 for the Heaviside factor,
   1 - sigma G for power EP); the others keep their old sites and are counted as
   ``n_improper_cavities`` and ``n_skipped_updates``;
4. the **damped** update of the used sites, rho new + (1 - rho) old (:func:`damped`, and
   :func:`damped_sites` for the per-point storage of :func:`register_factor_sites`; EP paper
   Appendix E; alpha paper A.5), into the method's storage (per point, or the tied factor).

:class:`EPStep` runs these four in ``local_update`` and evaluates the energy at the new sites;
a method that uses the step supplies only its factor layout and its tilted moments (and a tied
factor its own cavity and storage): :class:`~alphagp.methods.ep.EP`,
:class:`~alphagp.methods.ep.SEP` and :class:`~alphagp.methods.pep.PowerEP`. GFITC, whose batch EP
sweeps act on f rather than on the projections h, uses the same functions (:func:`validated`,
:func:`damped_sites`) directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from ..gaussians import gaussian_log_normaliser
from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, SiteMethod, whitened_sites


@dataclass(frozen=True)
class Cavity:
    """The cavity of a batch's factors: Gaussian marginals of the K projections each touches.

    Attributes
    ----------
    mean, var
        ``[..., K]`` cavity means and variances (``...`` indexes the factors).
    improper
        ``[...]`` True where taking the sites out left no proper Gaussian (the variance was clamped).
    fitc_var
        ``[..., K]`` the FITC conditional variances s of the latent values given the projections
        (the likelihood sees f = h + e, e ~ N(0, s)); zeros where the factor acts on f itself (GFITC).
    g_diff
        ``[...]`` sum over the K components of g(cavity) - g(q) (log-normalisers), or ``None``
        when the step did not need it.
    """

    mean: torch.Tensor
    var: torch.Tensor
    improper: torch.Tensor
    fitc_var: torch.Tensor
    g_diff: torch.Tensor | None = None

    def pair_difference(self):
        """For K = 2 (winner, loser): mean and variance of the projection difference h^y - h^k and
        the summed FITC variance of f^y - f^k, ``[...]`` each."""
        return (self.mean[..., 0] - self.mean[..., 1], self.var[..., 0] + self.var[..., 1],
                self.fitc_var[..., 0] + self.fitc_var[..., 1])


def remove_sites(tau, nu, factor_precision, factor_natural, alpha: float, fitc_var, with_g: bool = True) -> Cavity:
    """The cavity left by taking alpha times each factor's sites out of q's marginals.

    Parameters
    ----------
    tau, nu
        ``[..., K]`` q's marginal precisions and natural means of the factors' projections.
    factor_precision, factor_natural
        ``[..., K]`` the factors' current sites (per-point storage ``factor_c1``, ``factor_c2``;
        not the running sums ``site_precision``, ``site_natural``).
    alpha
        the power (1: EP).
    fitc_var
        ``[..., K]``, carried into the :class:`Cavity`.
    with_g
        also compute ``g_diff`` (the energy needs it; the site update does not).
    """
    tau_c = tau - alpha * factor_precision
    nu_c = nu - alpha * factor_natural
    improper = (tau_c <= 0).any(-1)
    tau_c = tau_c.clamp_min(MIN_VARIANCE)
    g_diff = ((gaussian_log_normaliser(tau_c, nu_c) - gaussian_log_normaliser(tau, nu)).sum(-1)
              if with_g else None)
    return Cavity(nu_c / tau_c, 1.0 / tau_c, improper, fitc_var, g_diff)


def pair_components(values: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The layout of the pairwise Heaviside factors: per-class values ``[B, C]`` as factor (i, k)'s
    winner value (class y_i, component 0) and loser value (class k, component 1), ``[B, C, 2]``."""
    return torch.stack((values.gather(1, y[:, None]).expand_as(values), values), -1)


def pair_factor_mask(y: torch.Tensor, n_classes: int) -> torch.Tensor:
    """``[B, C]`` True where (i, k) is a pairwise factor, i.e. k != y_i."""
    return torch.ones(len(y), n_classes, dtype=torch.bool, device=y.device).scatter_(1, y[:, None], False)


def valid_sites(precision: torch.Tensor, natural: torch.Tensor, denominators) -> torch.Tensor:
    """``[...]`` whether each factor's new site is valid, for ``precision`` and ``natural``
    ``[..., K]`` (K components a factor) and moment-matching ``denominators`` ``[...]`` each."""
    ok = torch.isfinite(precision).all(-1) & torch.isfinite(natural).all(-1) & (precision >= 0).all(-1)
    for denominator in denominators:
        ok = ok & (denominator > 0)
    return ok


def heaviside_pair_sites(cavity: Cavity, g1, g2, alpha: float = 1.0):
    """New sites of the pairwise Heaviside factors Phi(f_y - f_c) (EP paper eq. 48-55; power EP
    A.17-A.20 divide by alpha), from a K = 2 ``cavity`` (winner, loser) and the first and second
    derivatives ``g1``, ``g2`` ``[...]`` of the log tilted normaliser in the difference.

    Returns precision and natural parameter ``[..., 2]`` and their validity ``[...]`` (per factor).
    """
    m_w, m_l = cavity.mean.unbind(-1)
    v_w, v_l = cavity.var.unbind(-1)
    denom_w = 1.0 + v_w * g2
    denom_l = 1.0 + v_l * g2
    precision = torch.stack((-g2 / denom_w, -g2 / denom_l), -1) / alpha
    natural = torch.stack(((g1 - m_w * g2) / denom_w, (-g1 - m_l * g2) / denom_l), -1) / alpha
    return precision, natural, valid_sites(precision, natural, (denom_w, denom_l))


def power_ep_sites(cavity: Cavity, g_m, g_v, alpha: float = 1.0):
    """New rank-one sites of power EP on a deterministic likelihood (alpha paper A.14-A.21), per
    component: from the cavity mean ``mu`` and variance ``sigma`` and the derivatives ``g_m``,
    ``g_v`` ``[..., K]`` of log Z in the cavity's mean and variance: with G = g_m^2 - 2 g_v,
    alpha C1 = G / (1 - sigma G) and alpha C2 = g_m + alpha C1 (mu + sigma g_m).

    Returns precision C1 and natural parameter C2 ``[..., K]`` and their validity ``[..., K]``
    (per component: each is a site of its own).
    """
    mu, sigma = cavity.mean, cavity.var
    G = g_m * g_m - 2.0 * g_v
    denom = 1.0 - sigma * G
    precision = G / denom / alpha
    natural = (g_m + alpha * precision * (mu + sigma * g_m)) / alpha
    return precision, natural, valid_sites(precision[..., None], natural[..., None], (denom,))


def accepted(cavity: Cavity, ok: torch.Tensor, is_factor: torch.Tensor | None = None):
    """Which new sites are used: those of a factor with a proper cavity whose new site is valid.

    Parameters
    ----------
    cavity
        the factors' :class:`Cavity` (``improper`` ``[F...]``).
    ok
        validity of the new sites, ``[F...]`` (per factor) or ``[F..., K]`` (per component).
    is_factor
        ``[F...]`` which entries are factors at all (Heaviside pairs: k != y_i); ``None``: all.

    Returns
    -------
    keep : bool tensor shaped like ``ok``
    n_improper : the factors left alone because their cavity was improper
    n_skipped : the sites (factors, or components) left alone because the new site was invalid
    """
    factor = torch.ones_like(cavity.improper) if is_factor is None else is_factor
    proper = factor & ~cavity.improper
    proper = proper.reshape(proper.shape + (1,) * (ok.dim() - proper.dim()))
    return proper & ok, (factor & cavity.improper).sum(), (proper & ~ok).sum()


def damped(new: torch.Tensor, old: torch.Tensor, keep: torch.Tensor, rho: float) -> torch.Tensor:
    """``rho new + (1 - rho) old`` where ``keep``, ``old`` elsewhere (shapes broadcast)."""
    return torch.where(keep, rho * new + (1 - rho) * old, old)


def register_factor_sites(method, n_data: int, n_classes: int, components: tuple[int, ...], dtype) -> None:
    """The per-point storage of the factors' sites, declared once for every method that keeps it
    (EP, power EP, GFITC): buffers ``factor_c1`` (the sites' precisions) and ``factor_c2`` (their
    natural means), ``[N, C, *components]``, zero before a factor's first update."""
    for name in ("factor_c1", "factor_c2"):
        method.register_buffer(name, torch.zeros(n_data, n_classes, *components, dtype=dtype))


def validated(method, cavity: Cavity, precision: torch.Tensor, ok: torch.Tensor, is_factor=None, weigh=None,
              global_batch: bool = True):
    """The validated and counted part of the one EP update that :class:`EPStep` (and its tied
    factor) and GFITC share: which new sites (``precision`` ``[F..., K]``, validity ``ok``) are used
    (:func:`accepted`), with the refusals added to the method's counters (summed over the global
    batch's processes where ``global_batch``). Returns ``(keep, n_kept)``: ``keep`` broadcast to
    the sites' shape, and the global count of used factors, each weighted by ``weigh(keep)``, where
    ``weigh`` is given (SEP's tied factor needs it; else ``None``)."""
    keep, n_improper, n_skipped = accepted(cavity, ok, is_factor)
    kept = None if weigh is None else weigh(keep.to(precision.dtype)).sum()
    n_kept = method._count_refusals(n_improper, n_skipped, kept, global_batch=global_batch)
    return keep.reshape(keep.shape + (1,) * (precision.dim() - keep.dim())), n_kept


def damped_sites(method, precision: torch.Tensor, natural: torch.Tensor, keep: torch.Tensor, rows=slice(None)):
    """The damped part of that update for per-point sites: ``rows`` of the stored ``factor_c1``
    and ``factor_c2`` with the used new sites damped in by ``method.damping``; returned, not
    stored (the caller stores them)."""
    rho = method.damping
    return damped(precision, method.factor_c1[rows], keep, rho), damped(natural, method.factor_c2[rows], keep, rho)


class QOnBatch(NamedTuple):
    """What a step's cavity computation knows of q that the energy after the update can reuse.

    ``g_q`` ``[C]`` (g(q) - g(prior), whitened; ``None`` when not computed), ``rest`` (per-point
    sites: the running u-space sum without the batch's sites, ``([C, M, M], [C, M])``; ``None``
    for a tied factor) and ``whitened`` (the whitened natural parameters (B, b) ``[C, M, M]``,
    ``[C, M]`` the cavities started from).
    """

    g_q: torch.Tensor | None
    rest: tuple | None
    whitened: tuple


class EPStep(SiteMethod):
    """The EP step of this module's docstring on a mini-batch (or all rows), and the energy.

    A subclass supplies its factor layout and tilted moments:

    * ``_components(values, y)``: per-class values ``[B, C]`` as the factors' components
      ``[F..., K]`` (the layout of the per-point buffers ``factor_c1``, ``factor_c2``);
    * ``_point_totals(c1, c2, y)``: the factors' sites ``[F..., K]`` as per-class totals ``[B, C]``;
    * ``_factor_mask(y)``: ``[F...]`` which entries are factors, or ``None`` for all;
    * ``_new_sites(cavity, y)``: the tilted moments' new sites (precision, natural, validity);
    * ``_log_tilted(cavity, y)``: log Z of each factor ``[F...]``;

    and, for a tied factor instead of per-point sites, ``_cavity`` and ``_store_sites``.
    """

    # ------------------------------------------------------------------ the layout (subclasses)
    def _components(self, values: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _point_totals(self, c1: torch.Tensor, c2: torch.Tensor, y: torch.Tensor):
        raise NotImplementedError

    def _factor_mask(self, _y: torch.Tensor) -> torch.Tensor | None:
        """Every entry is a factor unless a layout says otherwise."""
        return None

    def _new_sites(self, cavity: Cavity, y: torch.Tensor):
        raise NotImplementedError

    def _log_tilted(self, cavity: Cavity, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # ------------------------------------------------------------------ per-point sites
    def _point_sites(self, y: torch.Tensor, idx: torch.Tensor):
        """The batch's stored sites as q holds them: per-class totals ``[B, C]``, a point of weight
        w_i counted w_i times."""
        prec, nat = self._point_totals(self.factor_c1[idx], self.factor_c2[idx], y)
        return self._weighted(prec, idx), self._weighted(nat, idx)

    def _cavity(self, L, Psi, s, y, idx, q_batch: QOnBatch | None = None, with_g: bool = True):
        """The batch's :class:`Cavity` and :class:`QOnBatch`, from per-point sites: q restricted to the
        batch (the running sum minus the batch's stored sites plus those sites along the current
        v_i; EP paper eq. 25-27, alpha paper A.5-A.6 in batch mode), its marginals of h_i^c, and
        alpha times each factor's sites taken out (:func:`remove_sites`). ``q_batch``: the rest of
        the sum and its (B, b) when already known at this L (the energy right after an update)."""
        prec, nat = self._point_sites(y, idx)                              # [B, C]
        rest = self._rest_of_sum(prec, nat, idx) if q_batch is None else q_batch.rest
        Bm, b = whitened_sites(L, *rest, None if q_batch is None else q_batch.whitened)
        mean, var, g_q = self._batch_marginals(Bm, b, Psi, prec, nat)
        var = var.clamp_min(MIN_VARIANCE).T                                 # [B, C]
        tau, nu = 1.0 / var, mean.T / var
        cavity = remove_sites(self._components(tau, y), self._components(nu, y), self.factor_c1[idx],
                              self.factor_c2[idx], self.alpha, self._components(s.T, y), with_g)
        return cavity, QOnBatch(g_q, rest, (Bm, b))

    @torch.no_grad()
    def _store_sites(self, L, Psi, y, idx, q_batch: QOnBatch, precision, natural, keep, _n_kept):
        """Damp the batch's used new sites (``keep``) into the per-point buffers (:func:`damped_sites`)
        and rebuild the running sum; returns what the energy at the new sites can reuse (the rest of
        the sum and its (B, b) are unchanged by the update). The count of used sites in the global
        batch is what a tied factor needs (SEP), not per-point sites."""
        self.factor_c1[idx], self.factor_c2[idx] = damped_sites(self, precision, natural, keep, idx)
        self._store_batch_sites(L, Psi, idx, q_batch.rest, *self._point_sites(y, idx))
        return q_batch

    # ------------------------------------------------------------------ the step and the energy
    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """One parallel damped (power) EP step on the batch's factors (EP paper Appendix D-E,
        alpha paper A.5): cavities, tilted moments and new sites, the validated and counted update,
        damped into storage. Returns the energy's terms at the updated sites, reusing this step's
        kernel quantities, so the hyper-parameters and the sites are updated together ("inner"
        updates, EP paper section 2.3) with one kernel evaluation per step."""
        self._require_training_state()
        L, Psi, s = self._whitened_kernel(X)
        with torch.no_grad():
            L0, Psi0 = L.detach(), Psi.detach()
            cavity, q_batch = self._cavity(L0, Psi0, s.detach(), y, idx, with_g=False)
            precision, natural, ok = self._new_sites(cavity, y)
            keep, n_kept = validated(self, cavity, precision, ok, self._factor_mask(y), lambda k: self._weighted(k, idx))
            q_batch = self._store_sites(L0, Psi0, y, idx, q_batch, precision, natural, keep, n_kept)
        return self._objective(L, Psi, s, y, idx, q_batch)

    def _objective(self, L, Psi, s, y, idx, q_batch: QOnBatch | None = None) -> ObjectiveTerms:
        """log Z_q's terms on the batch (EP paper eq. 9, 12; alpha paper eq. 8, A.23): g(q) - g(prior)
        plus, over the batch's factors, (log Z + g(cavity) - g(q)) / alpha, at the current sites and
        differentiable in the kernel quantities (L, Psi, s). The log Z, which couple the classes,
        are the ``coupled`` terms (:mod:`alphagp.objective`)."""
        cavity, q_batch = self._cavity(L, Psi, s, y, idx, q_batch)
        log_z, g_diff = self._log_tilted(cavity, y), cavity.g_diff
        mask = self._factor_mask(y)
        if mask is not None:
            log_z, g_diff = torch.where(mask, log_z, 0.0), torch.where(mask, g_diff, 0.0)
        data, coupled = self._weighted(g_diff, idx).sum(), self._weighted(log_z, idx).sum()
        return ObjectiveTerms(q_batch.g_q.sum(), data / self.alpha, coupled / self.alpha)
