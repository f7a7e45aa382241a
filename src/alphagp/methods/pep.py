"""Power EP with one factor per data point and the robust-max likelihood (alpha paper section 3.1,
Appendix A; REP of the thesis, section 5.2.1, is its alpha = 1 case).

The factor of point i is the exact likelihood of its label, p(y_i | f_i) (eq. 2), with f_i given
the inducing values by the sparse conditional p(f_i | u) (alpha paper section 2.2, end; thesis
eq. 5.20). Its Gaussian approximation is a product over classes of rank-one terms
(eq. A.1-A.3): precision ``C1_{i,c} v_i^c v_i^c'`` and natural mean ``C2_{i,c} v_i^c`` on u^c. So,
as in :mod:`.ep`, all EP algebra happens on the scalars h_i^c = v_i^c' u^c:

EP's step (:mod:`.ep_step`) with one factor per point and one component per class:

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

from ..kernels import Kernel
from ..likelihoods import Likelihood
from .ep_step import Cavity, EPStep, power_ep_sites, register_factor_sites


class PowerEP(EPStep):
    """PEP / REP: power EP with per-point factors on the robust-max likelihood.

    Parameters
    ----------
    inducing_points, kernel
        as :class:`~alphagp.methods.ep.EP` takes them: ``[C, M, D]`` initial inducing inputs, and
        the kernel of the C latent functions.
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

    def __init__(self, inducing_points: torch.Tensor, kernel: Kernel, likelihood: Likelihood, n_data: int,
                 alpha: float = 1.0, damping: float = 0.5, site_storage: bool = True):
        self.site_storage = bool(site_storage)
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha, damping, per_point=self.site_storage)
        if self.site_storage:
            register_factor_sites(self, n_data, self.n_classes, (), inducing_points.dtype)

    def _components(self, values: torch.Tensor, _y: torch.Tensor) -> torch.Tensor:
        """A point's factor has one component per class: ``[B, C]`` as it is."""
        return values

    def _point_totals(self, c1: torch.Tensor, c2: torch.Tensor, _y: torch.Tensor):
        return c1, c2

    def _new_sites(self, cavity: Cavity, y: torch.Tensor):
        """log Z_i = log E[p(y_i | f_i)^alpha] under f_i^c ~ N(cavity mean, cavity variance + s_i^c)
        by quadrature, and its derivatives (A.10-A.13), give the new sites (A.14-A.21)."""
        _, g_m, g_v = self.likelihood.tilted_derivatives(cavity.mean, cavity.var + cavity.fitc_var, y, self.alpha)
        return power_ep_sites(cavity, g_m, g_v, self.alpha)

    def _log_tilted(self, cavity: Cavity, y: torch.Tensor) -> torch.Tensor:
        return self.likelihood.log_expected_power(cavity.mean, cavity.var + cavity.fitc_var, y, self.alpha)
