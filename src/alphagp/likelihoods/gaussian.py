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
from .base import Likelihood


class GaussianLikelihood(Likelihood):
    """Gaussian noise on a single regression output: ``mean``, ``var`` ``[N, 1]``, targets ``y`` ``[N]``.

    Parameters
    ----------
    variance
        sigma^2, a float or a one-element tensor (a deep GP's last-layer noise, which
        :meth:`with_output_noise` puts here).
    """

    N_LATENT = 1

    def __init__(self, variance: float | torch.Tensor = 1.0):
        self.variance = variance

    def _noise(self, like: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.variance, dtype=like.dtype, device=like.device).reshape(-1)[0]

    def log_prob(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log N(y | f, sigma^2) ``[..., N]`` for ``f`` ``[..., N, 1]``."""
        s2 = self._noise(f)
        return -0.5 * (LOG_2PI + torch.log(s2) + (y - f[..., 0]).square() / s2)

    def log_expected_power(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                           alpha: float) -> torch.Tensor:
        """log int N(y | f, sigma^2)^alpha N(f | mean, var) df ``[N]`` (closed form, module docstring)."""
        m, v, s2 = mean[..., 0], var[..., 0], self._noise(mean)
        return (-0.5 * alpha * (LOG_2PI + torch.log(s2)) + 0.5 * torch.log(s2) - 0.5 * torch.log(alpha * v + s2)
                - 0.5 * (y - m).square() / (v + s2 / alpha))

    def expected_log_lik(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                         generator: torch.Generator | None = None,
                         rows: tuple[int, slice] | None = None) -> torch.Tensor:
        """E[log N(y | f, sigma^2)] = log N(y | mean, sigma^2) - var / (2 sigma^2) ``[N]`` (``generator``,
        ``rows``: not used)."""
        del generator, rows
        return self.log_prob(mean, y) - 0.5 * var[..., 0] / self._noise(mean)

    def with_output_noise(self, mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor):
        """The last layer's unit noise ``[1]`` is this likelihood's variance; the latent moments stay."""
        return GaussianLikelihood(noise), mean, var

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
