"""Heaviside multi-class likelihood with the product-of-Phi approximation (scalable EP, eq. 1, 6).

p(y | f) = prod_{k != y} Theta(f^y - f^k) is approximated by prod_{k != y} phi^k with

    phi^k = Phi((h^y - h^k) / sqrt(s^y + s^k))                                     (eq. 6, 33)

where h^c = v^c' u^c is the conditional mean of f^c given the inducing values and s^c its
FITC conditional variance (eq. 4-5, additive noise included). Each factor depends on the
inducing values only through the scalar difference d = h^y - h^k, so the power-EP tilted
distribution phi^alpha * cavity needs a 1-D integral over d only. The exact likelihood (for
predictions, eq. 65-68) is the robust-max likelihood with epsilon = 0.
"""

from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import torch

from ..constraints import Interval
from ..numerics import gauss_hermite, inverse_mills, log_ndtr
from .robust_max import RobustMaxLikelihood


class HeavisideLikelihood(RobustMaxLikelihood):
    """The Heaviside (arg-max) likelihood: the robust-max likelihood with ``epsilon = 0``, plus the
    tilted moments of one pairwise factor of its product-of-Phi approximation (EP and SEP's sites).

    Parameters
    ----------
    n_quadrature
        Gauss-Hermite points for alpha != 1 pair-factor moments and for predictions.
    """

    PARAMETERS: ClassVar[dict] = {"n_quadrature": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, n_quadrature: int = 48):
        super().__init__(0.0, n_quadrature)

    def pair_factor_tilted(self, mean_d: torch.Tensor, var_d: torch.Tensor, s: torch.Tensor, alpha: float):
        """log Z of one pairwise factor and its first two derivatives w.r.t. the cavity mean of d.

        Z = int Phi(d / sqrt(s))^alpha N(d | mean_d, var_d) dd. For alpha = 1 it is the
        closed form Phi(mean_d / sqrt(s + var_d)) (eq. 34, 39-42); otherwise Gauss-Hermite
        quadrature in log space (power-EP paper, eq. A.22). ``s = 0`` is the exact Heaviside
        factor Theta(d) (GFITC).

        All the same shape:

        Parameters
        ----------
        mean_d, var_d
            cavity mean and variance of d = h^y - h^k.
        s
            s^y + s^k, the FITC conditional variance of f^y - f^k given u.
        alpha
            the power of the factor, in (0, 1].

        Returns
        -------
        (log_Z, dlogZ_dmean, d2logZ_dmean2), each the shape of ``mean_d``.
        """
        if alpha == 1.0:
            denom = torch.sqrt(s + var_d)
            z = mean_d / denom
            beta = inverse_mills(z)
            return log_ndtr(z), beta / denom, -beta * (z + beta) / (s + var_d)
        x, w = gauss_hermite(self.n_quadrature, dtype=mean_d.dtype, device=mean_d.device)
        sd = torch.sqrt(var_d)[..., None]
        d = mean_d[..., None] + sd * x                              # [..., Q]
        logw = alpha * log_ndtr(d / torch.sqrt(s)[..., None]) + torch.log(w)
        log_Z = torch.logsumexp(logw, dim=-1)
        p = torch.exp(logw - log_Z[..., None])                      # tilted weights over nodes
        e1 = (p * d).sum(-1)
        var = (p * (d - e1[..., None]) ** 2).sum(-1)
        g1 = (e1 - mean_d) / var_d
        g2 = (var - var_d) / (var_d * var_d)
        return log_Z, g1, g2
