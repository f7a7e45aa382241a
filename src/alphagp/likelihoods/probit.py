"""Probit likelihood of a deep GP's output layer for two classes (deep-GP paper, binary problems).

p(y | f) = Phi(y f) with y = +-1 (class indices 0 / 1 map to -1 / +1). Given a propagated sample
the last layer's output is f ~ N(m, v + sigma^2) (sigma^2 the latent noise, added by
:meth:`~alphagp.likelihoods.base.Likelihood.with_output_noise`), and

    log int Phi(y f)^alpha N(f | m, v + sigma^2) df

is log Phi(y m / sqrt(1 + v + sigma^2)) at alpha = 1 and a Gauss-Hermite sum in log space otherwise
(the alpha paper's A.22 for one latent function).
"""

from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import torch

from ..constraints import Interval
from ..numerics import gauss_hermite, log_ndtr
from .base import CategoricalLikelihood


class ProbitLikelihood(CategoricalLikelihood):
    """Probit likelihood of one latent value and two classes: ``mean``, ``var`` ``[N, 1]``,
    ``y`` ``[N]`` class indices 0 or 1, probabilities ``[N, 2]``.

    Parameters
    ----------
    n_quadrature
        Gauss-Hermite points for alpha != 1 and for the expected log-likelihood.
    """

    PARAMETERS: ClassVar[dict] = {"n_quadrature": [Interval(Integral, 1, None, closed="left")]}
    N_LATENT = 1

    def __init__(self, n_quadrature: int = 48):
        self.n_quadrature = int(n_quadrature)

    @staticmethod
    def _signed(mean: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """y' f with y' = +-1 for class indices 1 / 0."""
        return (2.0 * y.to(mean.dtype) - 1.0) * mean[..., 0]

    def log_prob(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log Phi(y' f) ``[..., N]`` for ``f`` ``[..., N, 1]``."""
        return log_ndtr(self._signed(f, y))

    def _log_expected(self, mean, var, y, transform) -> torch.Tensor:
        """E over f ~ N(mean, var) of transform(log Phi(y' f)) in log space, by Gauss-Hermite."""
        x, w = gauss_hermite(self.n_quadrature, dtype=mean.dtype, device=mean.device)
        f = self._signed(mean, y)[..., None] + torch.sqrt(var[..., 0])[..., None] * x
        return transform(log_ndtr(f), torch.log(w))

    def log_expected_power(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                           alpha: float) -> torch.Tensor:
        """log Phi(y' m / sqrt(1 + v)) at alpha = 1, a Gauss-Hermite sum in log space otherwise; ``[N]``."""
        if alpha == 1.0:
            return log_ndtr(self._signed(mean, y) / torch.sqrt(1.0 + var[..., 0]))
        return self._log_expected(mean, var, y, lambda log_p, log_w: torch.logsumexp(alpha * log_p + log_w, -1))

    def expected_log_lik(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                         generator: torch.Generator | None = None,
                         rows: tuple[int, slice] | None = None) -> torch.Tensor:
        """E[log Phi(y' f)] ``[N]`` by Gauss-Hermite quadrature (``generator``, ``rows``: not used)."""
        del generator, rows
        return self._log_expected(mean, var, y, lambda log_p, log_w: (log_p * torch.exp(log_w)).sum(-1))

    def predict_proba(self, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """``[N, 2]`` probabilities of classes 0 and 1: Phi(-+m / sqrt(1 + v))."""
        z = mean[..., 0] / torch.sqrt(1.0 + var[..., 0])
        return torch.stack((torch.special.ndtr(-z), torch.special.ndtr(z)), -1)
