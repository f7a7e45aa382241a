"""A method built on EP's step (:class:`alphagp.methods.ep_step.EPStep`) in one module: only its
storage and its tilted moments (issue 47's demonstration; registered by a test, not by the library).

The factors are the scalable-EP paper's pairwise ones, Phi((f^{y_i} - f^k) / ...) for k != y_i, at
alpha = 1, as :class:`alphagp.methods.ep.EP`; the tilted moments are derived here independently:
log Z = log Phi(m_d / sqrt(v_d + s_d)) (EP paper eq. 34) and its derivatives in m_d by autodiff,
where :class:`~alphagp.likelihoods.HeavisideLikelihood` uses the closed forms (eq. 39-42).
"""

from __future__ import annotations

import torch

from alphagp.methods.base import per_point_totals
from alphagp.methods.ep_step import Cavity, EPStep, heaviside_pair_sites, pair_components, pair_factor_mask


class PairEPAutodiff(EPStep):
    """Per-point pairwise Heaviside factors with autodiff tilted moments (alpha = 1)."""

    TRAINING_STATE = ("factor_c1", "factor_c2", "factor_v", "factor_v_current")

    # ------------------------------------------------------------------ storage
    def __init__(self, inducing_points, kernel, likelihood, n_data: int, alpha: float = 1.0, damping: float = 0.5,
                 site_storage: bool = True):
        self.site_storage = bool(site_storage)
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha, damping, per_point=self.site_storage)
        if self.site_storage:                            # factor (i, k): [..., 0] on class y_i, [..., 1] on k
            shape = (self.n_data, self.n_classes, 2)
            self.register_buffer("factor_c1", torch.zeros(shape, dtype=inducing_points.dtype))
            self.register_buffer("factor_c2", torch.zeros(shape, dtype=inducing_points.dtype))

    def _components(self, values, y):
        return pair_components(values, y)

    def _point_totals(self, c1, c2, y):
        return per_point_totals(c1, c2, y, self.n_classes)

    def _factor_mask(self, y):
        return pair_factor_mask(y, self.n_classes)

    # ------------------------------------------------------------------ tilted moments
    @staticmethod
    def _log_z(mean_d, var_d, s_d):
        return torch.special.log_ndtr(mean_d / torch.sqrt(var_d + s_d))

    def _log_tilted(self, cavity: Cavity, _y):
        return self._log_z(*cavity.pair_difference())

    def _new_sites(self, cavity: Cavity, _y):
        mean_d, var_d, s_d = cavity.pair_difference()
        with torch.enable_grad():
            m = mean_d.detach().requires_grad_(True)
            (g1,) = torch.autograd.grad(self._log_z(m, var_d, s_d).sum(), m, create_graph=True)
            (g2,) = torch.autograd.grad(g1.sum(), m)
        return heaviside_pair_sites(cavity, g1.detach(), g2, 1.0)
