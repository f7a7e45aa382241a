"""Robust-max multi-class likelihood (scalable EP eq. 13, alpha paper eq. 2, thesis eq. 2.22).

    p(y | f) = (1 - epsilon) prod_{k != y} Theta(f^y - f^k) + epsilon / C

epsilon is the probability of a labelling error (the label then drawn uniformly from the C
classes); ``epsilon = 0`` is the exact Heaviside (arg-max) likelihood. The deep-GP paper
draws a wrong label from the C - 1 other classes instead (``errors_to="other"``): p(y | f) is
1 - epsilon where f^y is the largest and epsilon / (C - 1) elsewhere.

Everything the methods need is an expectation under independent Gaussians
f^k ~ N(mean_k, var_k) (q's marginals at one point, FITC noise included). Because the
likelihood takes only two values, ``a = 1 - epsilon + epsilon / C`` where f^y is the largest and
``b = epsilon / C`` elsewhere,

    E[p(y | f)^alpha] = a^alpha P + b^alpha (1 - P),      E[log p(y | f)] = P log a + (1 - P) log b,

with P = P(f^y > f^k for all k != y) = int prod_{k != y} Phi((f - mean_k) / sqrt(var_k))
N(f | mean_y, var_y) df, the probability that one Gaussian is larger than several others
(1-D Gauss-Hermite quadrature, alpha paper A.22 and A.34). Everything is evaluated in log space,
so probabilities of 1e-300 and below stay finite.

The first expectation is the tilted normaliser Z of power EP (alpha paper eq. 8, A.22; REP at
alpha = 1, thesis eq. 5.20); the second is the expected log-likelihood of sparse VI (eq. 15 of
the EP paper, eq. 5 of the alpha paper), its alpha -> 0 limit. Tilted moments come from the
derivatives of log Z in the Gaussians' means and variances, by autodiff through the quadrature
(:meth:`~alphagp.likelihoods.base.Likelihood.tilted_derivatives`).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import ClassVar

import torch

from ..constraints import Interval, StrOptions
from ..numerics import log1mexp, log_prob_largest
from .base import CategoricalLikelihood

DEFAULT_EPSILON = 1e-3  # Hensman et al. (2015), used by all three papers


class RobustMaxLikelihood(CategoricalLikelihood):
    """Robust-max likelihood with labelling-error probability ``epsilon``.

    Parameters
    ----------
    epsilon
        in [0, 1); ``None`` is 1e-3, the value of Hensman et al. (2015) used by the papers.
    n_quadrature
        Gauss-Hermite points of the 1-D integral.
    errors_to
        ``"any"`` (a wrong label is drawn from all C classes: the EP and alpha
        papers) or ``"other"`` (from the C - 1 other classes: the deep-GP paper).
    """

    PARAMETERS: ClassVar[dict] = {"epsilon": [Interval(Real, 0, 1, closed="left"), None],
                                  "n_quadrature": [Interval(Integral, 1, None, closed="left")],
                                  "errors_to": [StrOptions({"any", "other"})]}

    def __init__(self, epsilon: float | None = None, n_quadrature: int = 48, errors_to: str = "any"):
        epsilon = DEFAULT_EPSILON if epsilon is None else epsilon
        if not 0.0 <= epsilon < 1.0:
            raise ValueError(f"epsilon must lie in [0, 1), got {epsilon}")
        if errors_to not in ("any", "other"):
            raise ValueError(f"errors_to must be 'any' or 'other', got {errors_to!r}")
        self.epsilon = float(epsilon)
        self.n_quadrature = int(n_quadrature)
        self.errors_to = errors_to

    def log_levels(self, n_classes: int) -> tuple[float, float]:
        """log a and log b: log p(y | f) where f^y is the largest, and elsewhere."""
        e = self.epsilon
        if self.errors_to == "other":
            return math.log1p(-e), (math.log(e / (n_classes - 1)) if e > 0 else -math.inf)
        return math.log1p(-e + e / n_classes), (math.log(e / n_classes) if e > 0 else -math.inf)

    def log_expected_power(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                           alpha: float) -> torch.Tensor:
        """log E[p(y | f)^alpha] ``[N]`` (alpha in (0, 1]), differentiable in ``mean`` and ``var`` ``[N, C]``."""
        log_p = log_prob_largest(mean, var, y, self.n_quadrature)
        log_a, log_b = self.log_levels(mean.shape[-1])
        if self.epsilon == 0.0:  # Theta^alpha = Theta
            return log_p
        return torch.logaddexp(alpha * log_a + log_p, alpha * log_b + log1mexp(log_p))

    def log_prob(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log a where f^y is the largest of ``f`` ``[..., N, C]``, log b elsewhere; ``[..., N]``."""
        log_a, log_b = self.log_levels(f.shape[-1])
        largest = f.gather(-1, y.expand(*f.shape[:-1])[..., None])[..., 0] >= f.max(-1).values
        levels = torch.tensor([log_a, log_b], dtype=f.dtype, device=f.device)     # not float32 scalars
        return torch.where(largest, levels[0], levels[1])

    def expected_log_lik(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                         generator: torch.Generator | None = None,
                         rows: tuple[int, slice] | None = None) -> torch.Tensor:
        """E[log p(y | f)] ``[N]``, the alpha -> 0 limit used by VI; needs ``epsilon > 0``
        (exact by quadrature: ``generator`` and ``rows`` are not used)."""
        del generator, rows
        if self.epsilon == 0.0:
            raise ValueError("the expected log-likelihood of the Heaviside likelihood is -inf; VI needs epsilon > 0")
        P = torch.exp(log_prob_largest(mean, var, y, self.n_quadrature))
        log_a, log_b = self.log_levels(mean.shape[-1])
        return P * log_a + (1.0 - P) * log_b

    def class_log_probs(self, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """``[N, C]`` log p(y = c) = log(a P_c + b (1 - P_c)); a P + b (1 - P) = (1 - epsilon) P + epsilon / C
        for ``errors_to="any"`` (alpha paper A.34)."""
        log_p = log_prob_largest(mean, var, None, self.n_quadrature)
        if self.epsilon == 0.0:
            return log_p
        log_a, log_b = self.log_levels(mean.shape[-1])
        return torch.logaddexp(log_a + log_p, log_b + log1mexp(log_p))

    def predict_proba(self, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """``[N, C]`` class probabilities, renormalised to sum to one (quadrature error)."""
        return torch.softmax(self.class_log_probs(mean, var), dim=-1)
