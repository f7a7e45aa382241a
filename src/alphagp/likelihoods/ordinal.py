"""Probit ordinal likelihood: K ordered grades from one latent function (Chu & Ghahramani,
"Gaussian processes for ordinal regression", JMLR 2005, eq. 4).

    p(y = k | f) = Phi(b_k - f) - Phi(b_{k-1} - f),   k = 0, ..., K - 1,

with cut points b_{-1} = -inf < b_0 < ... < b_{K-2} < b_{K-1} = +inf. The noise of the paper's
Phi((b_k - f) / sigma) is 1 here: the kernel's amplitude sets the latent scale, so a free sigma
would only rescale f and b together. The K - 1 finite cut points are learnt with the kernel
hyper-parameters, as ``first_cut`` and the logarithms of the gaps between consecutive cut points
(``log_gaps``), so they stay ordered whatever the optimiser does.

Under f ~ N(m, v) the expectations the methods need are one-dimensional:

* log E[p(y | f)] = log(Phi(z_k) - Phi(z_{k-1})) with z_k = (b_k - m) / sqrt(1 + v): the EP
  normaliser in closed form (the JMLR paper's eq. 18), its derivatives by autodiff;
* log E[p(y | f)^alpha] for alpha < 1 (power EP) and E[log p(y | f)] (VI) by Gauss-Hermite
  quadrature in log space;
* E[p(y = k | f)] for every grade: the closed form above.

The difference of two normal CDFs is taken on the side of the tail where it keeps its digits
(:func:`log_diff_ndtr`).
"""

from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import numpy as np
import torch
from scipy.special import ndtri
from torch import nn

from ..constraints import Interval
from ..numerics import gauss_hermite, log1mexp, log_ndtr
from .base import CategoricalLikelihood


def log_diff_ndtr(low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """log(Phi(high) - Phi(low)) for ``low < high``, elementwise; ``low`` may be -inf (then it is
    log Phi(high)) and ``high`` +inf (log Phi(-low)). Between two finite bounds it is taken in the
    upper tail as log(Phi(-low) - Phi(-high)), so no difference of two values near 1 is formed.
    Each branch sees finite stand-ins where it is not taken, so no NaN reaches the gradient."""
    no_low, no_high = torch.isinf(low), torch.isinf(high)
    lo = torch.where(no_low, torch.where(no_high, -1.0, high - 1.0), low)        # finite stand-ins
    hi = torch.where(no_high, lo + 1.0, high)
    upper = lo > 0
    a, b = torch.where(upper, -hi, lo), torch.where(upper, -lo, hi)
    log_b = log_ndtr(b)
    between = log_b + log1mexp(torch.clamp(log_ndtr(a) - log_b, max=0.0))
    only_high = log_ndtr(torch.where(no_low, hi, 0.0))
    only_low = log_ndtr(torch.where(no_high, -lo, 0.0))
    return torch.where(no_low & no_high, torch.zeros_like(between),
                       torch.where(no_low, only_high, torch.where(no_high, only_low, between)))


def _standardised(bound: torch.Tensor, mean: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """(bound - mean) / scale, with an infinite ``bound`` kept as it is (no inf enters the
    arithmetic, so the gradient in ``mean`` and ``scale`` stays finite there)."""
    infinite = torch.isinf(bound)
    return torch.where(infinite, bound, (torch.where(infinite, 0.0, bound) - mean) / scale)


class OrdinalLikelihood(CategoricalLikelihood, nn.Module):
    """Probit ordinal likelihood of one latent value and ``n_classes`` ordered grades:
    ``mean``, ``var`` ``[N, 1]``, ``y`` ``[N]`` grade indices 0..K-1, probabilities ``[N, K]``.

    Parameters
    ----------
    n_classes
        K >= 2, the number of grades (the estimator passes its count of classes).
    cut_points
        K - 1 increasing starting cut points; default: those that make the grades equally likely
        under f ~ N(0, 2) (the prior at amplitude 1 plus the probit's noise). They are learnt
        from there, in a fit and in a stream alike.
    n_quadrature
        Gauss-Hermite points for alpha != 1 and for the expected log-likelihood.
    """

    PARAMETERS: ClassVar[dict] = {"n_quadrature": [Interval(Integral, 1, None, closed="left")]}
    N_LATENT = 1
    #: the largest change of each cut-point parameter in one optimiser step (the trainer holds every
    #: step to it): a gap may at most triple or shrink to a third per step, the first cut move by one
    #: latent unit, so no learning rate can throw the cut points together or apart in one step
    STEP_BOUNDS: ClassVar[dict] = {"first_cut": 1.0, "log_gaps": 1.0}

    def __init__(self, n_classes: int = 3, cut_points=None, n_quadrature: int = 48):
        nn.Module.__init__(self)
        if int(n_classes) < 2:
            raise ValueError(f"an ordinal likelihood needs at least 2 grades, got {n_classes}")
        self.n_classes, self.n_quadrature = int(n_classes), int(n_quadrature)
        if cut_points is None:
            cut_points = np.sqrt(2.0) * ndtri(np.arange(1, self.n_classes) / self.n_classes)
        b = torch.as_tensor(np.asarray(cut_points, dtype=np.float64))
        if b.shape != (self.n_classes - 1,) or not torch.all(torch.isfinite(b)) or torch.any(b.diff() <= 0):
            raise ValueError(f"cut_points must be {self.n_classes - 1} finite increasing numbers, got {b.tolist()}")
        self.first_cut = nn.Parameter(b[:1].clone())
        self.log_gaps = nn.Parameter(torch.log(b.diff()))

    def cut_points(self) -> torch.Tensor:
        """``[K - 1]`` the finite cut points b_0 < ... < b_{K-2}."""
        return torch.cat((self.first_cut, self.first_cut + torch.cumsum(torch.exp(self.log_gaps), 0)))

    def state_problems(self) -> list[str]:
        b = self.cut_points().detach()
        if bool(torch.all(torch.isfinite(b))) and not bool(torch.any(b.diff() <= 0)):
            return []
        return [f"cut points {b.tolist()} that are not {self.n_classes - 1} finite increasing numbers"]

    def config(self) -> dict:
        return {"n_classes": self.n_classes, "cut_points": self.cut_points().detach().cpu().tolist(),
                "n_quadrature": self.n_quadrature}

    def _bounds(self, y: torch.Tensor, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
        """``(b_{y-1}, b_y)`` ``[N]`` each, with -inf and +inf at the ends."""
        inf = torch.full((1,), torch.inf, dtype=dtype, device=device)
        b = torch.cat((-inf, self.cut_points().to(dtype=dtype, device=device), inf))
        y = y.long()
        return b[y], b[y + 1]

    def log_prob(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(y | f) ``[..., N]`` for ``f`` ``[..., N, 1]``."""
        low, high = self._bounds(y, f.dtype, f.device)
        one = torch.ones_like(f[..., 0])
        return log_diff_ndtr(_standardised(low, f[..., 0], one), _standardised(high, f[..., 0], one))

    def _quadrature(self, mean, var, y, transform) -> torch.Tensor:
        """E over f ~ N(mean, var) of transform(log p(y | f)) in log space, by Gauss-Hermite."""
        x, w = gauss_hermite(self.n_quadrature, dtype=mean.dtype, device=mean.device)
        f = mean[..., 0, None] + torch.sqrt(var[..., 0])[..., None] * x                    # [N, Q]
        low, high = self._bounds(y, mean.dtype, mean.device)
        one = torch.ones_like(f)
        return transform(log_diff_ndtr(_standardised(low[:, None], f, one), _standardised(high[:, None], f, one)),
                         torch.log(w))

    def log_expected_power(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                           alpha: float) -> torch.Tensor:
        """log E[p(y | f)^alpha] ``[N]``: closed form at alpha = 1, Gauss-Hermite in log space otherwise."""
        if alpha == 1.0:
            low, high = self._bounds(y, mean.dtype, mean.device)
            scale = torch.sqrt(1.0 + var[..., 0])
            return log_diff_ndtr(_standardised(low, mean[..., 0], scale), _standardised(high, mean[..., 0], scale))
        return self._quadrature(mean, var, y, lambda log_p, log_w: torch.logsumexp(alpha * log_p + log_w, -1))

    def expected_log_lik(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                         generator: torch.Generator | None = None,
                         rows: tuple[int, slice] | None = None) -> torch.Tensor:
        """E[log p(y | f)] ``[N]`` by Gauss-Hermite quadrature (``generator``, ``rows``: not used)."""
        del generator, rows
        return self._quadrature(mean, var, y, lambda log_p, log_w: (log_p * torch.exp(log_w)).sum(-1))

    def predict_proba(self, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """``[N, K]`` p(y = k) = Phi(z_k) - Phi(z_{k-1}), z_k = (b_k - m) / sqrt(1 + v), each
        difference in log space (a grade far from the mean keeps a positive probability)."""
        grades = torch.arange(self.n_classes, device=mean.device)
        low, high = self._bounds(grades, mean.dtype, mean.device)                             # [K] each
        scale = torch.sqrt(1.0 + var)                                                         # [N, 1]
        proba = torch.exp(log_diff_ndtr(_standardised(low, mean, scale), _standardised(high, mean, scale)))  # [N, K]
        return proba / proba.sum(-1, keepdim=True)
