"""Gaussian likelihood of a deep GP's output layer (deep-GP paper, regression; eq. 18-19).

p(y | f) = N(y | f, sigma^2) on standardised targets; sigma^2 is the last layer's noise. Given
a propagated sample, the last layer's output is f ~ N(m, v), so the tilted normaliser of power
EP is closed form:

    log int N(y | f, sigma^2)^alpha N(f | m, v) df
        = -(alpha / 2) log(2 pi sigma^2) + 1/2 log sigma^2 - 1/2 log(alpha v + sigma^2)
          - (y - m)^2 / (2 (v + sigma^2 / alpha)),

because N(y | f, sigma^2)^alpha is proportional to N(y | f, sigma^2 / alpha). At alpha = 1 it is
the predictive density log N(y | m, v + sigma^2); (1 / alpha) times it tends to E[log N(y | f,
sigma^2)] = log N(y | m, sigma^2) - v / (2 sigma^2) as alpha -> 0 (the VI term).
"""

from __future__ import annotations

import math

import torch

from ..numerics import LOG_2PI


class GaussianLikelihood:
    """Gaussian noise on a single regression output."""

    def log_tilted(self, mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor, y: torch.Tensor,
                   alpha: float) -> torch.Tensor:
        """log int N(y | f, noise)^alpha N(f | mean, var) df ``[S, N]`` for ``mean``, ``var`` ``[S, N, 1]``
        (one row per propagated sample), ``noise`` ``[1]`` and targets ``y`` ``[N]``."""
        m, v, s2 = mean[..., 0], var[..., 0], noise[0]
        return (-0.5 * alpha * (LOG_2PI + torch.log(s2)) + 0.5 * torch.log(s2) - 0.5 * torch.log(alpha * v + s2)
                - 0.5 * (y - m).square() / (v + s2 / alpha))

    def log_density(self, mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(y | sample) = log N(y | mean, var + noise) ``[S, N]`` (the tilted normaliser at alpha = 1)."""
        return self.log_tilted(mean, var, noise, y, 1.0)

    @staticmethod
    def mixture_moments(mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor):
        """Mean and variance ``[N]`` of the equally weighted mixture of N(mean_s, var_s + noise)
        over the samples s (``mean``, ``var`` ``[S, N, 1]``)."""
        m, v = mean[..., 0], var[..., 0] + noise[0]
        mix_mean = m.mean(0)
        return mix_mean, (v + m.square()).mean(0) - mix_mean.square()

    @staticmethod
    def mixture_log_density(mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor, y: torch.Tensor):
        """log (1/S) sum_s N(y | mean_s, var_s + noise) ``[N]``."""
        m, v = mean[..., 0], var[..., 0] + noise[0]
        log_n = -0.5 * (LOG_2PI + torch.log(v) + (y - m).square() / v)
        return torch.logsumexp(log_n, 0) - math.log(m.shape[0])
