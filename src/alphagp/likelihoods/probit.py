"""Probit likelihood of a deep GP's output layer for two classes (deep-GP paper, binary problems).

p(y | f) = Phi(y f) with y = +-1 (class indices 0 / 1 map to -1 / +1). Given a propagated sample
the last layer's output is f ~ N(m, v + sigma^2) (sigma^2 the latent noise), and

    log int Phi(y f)^alpha N(f | m, v + sigma^2) df

is log Phi(y m / sqrt(1 + v + sigma^2)) at alpha = 1 and a Gauss-Hermite sum in log space otherwise
(the alpha paper's A.22 for one latent function).
"""

from __future__ import annotations

import torch

from ..numerics import gauss_hermite, log_ndtr


class ProbitLikelihood:
    """Probit likelihood of one latent output.

    Args:
        n_quadrature: Gauss-Hermite points for alpha != 1.
    """

    def __init__(self, n_quadrature: int = 48):
        self.n_quadrature = int(n_quadrature)

    def log_tilted(self, mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor, y: torch.Tensor,
                   alpha: float) -> torch.Tensor:
        """``[S, N]`` for ``mean``, ``var`` ``[S, N, 1]``, ``noise`` ``[1]`` and class indices ``y`` ``[N]`` (0 or 1)."""
        sign = 2.0 * y.to(mean.dtype) - 1.0
        m, v = sign * mean[..., 0], var[..., 0] + noise[0]
        if alpha == 1.0:
            return log_ndtr(m / torch.sqrt(1.0 + v))
        x, w = gauss_hermite(self.n_quadrature, dtype=mean.dtype, device=mean.device)
        f = m[..., None] + torch.sqrt(v)[..., None] * x
        return torch.logsumexp(alpha * log_ndtr(f) + torch.log(w), -1)

    def sample_probabilities(self, mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """``[S, N, 2]`` probabilities of classes 0 and 1 given each propagated sample."""
        z = mean[..., 0] / torch.sqrt(1.0 + var[..., 0] + noise[0])
        return torch.stack((torch.special.ndtr(-z), torch.special.ndtr(z)), -1)
