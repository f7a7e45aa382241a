"""ARD squared-exponential covariance with amplitude and additive noise, batched over latent functions.

The papers' choice (scalable EP, section 4): for latent function c,

    k_c(x, x') = a_c exp(-1/2 sum_d (x_d - x'_d)^2 / l_{c,d}^2) + n_c [x = x'],

where the additive noise n_c only enters the prior variance of a training or test point,
never the covariance between inducing points. Positive parameters are stored through
a softplus so an unconstrained optimiser can move them freely.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.functional import softplus


def inverse_softplus(x: torch.Tensor) -> torch.Tensor:
    """Inverse of softplus for positive ``x`` (stable for large x)."""
    return x + torch.log(-torch.expm1(-x))


class ARDKernel(nn.Module):
    """ARD squared-exponential kernel for ``n_latent`` latent functions.

    Parameters have shape ``[G, ...]`` where G is ``n_latent``, or 1 when the
    hyper-parameters are shared across latent functions (then they broadcast).

    Args:
        n_latent: number of latent functions C.
        n_features: input dimension D.
        shared: one set of hyper-parameters for all latent functions.
        lengthscale, amplitude, noise: initial values (scalars, or arrays broadcastable to
            ``[G, D]``, ``[G]``, ``[G]``).
    """

    def __init__(self, n_latent: int, n_features: int, shared: bool = False,
                 lengthscale=None, amplitude=1.0, noise=0.1, dtype=torch.float64):
        super().__init__()
        groups = 1 if shared else n_latent
        if lengthscale is None:
            lengthscale = math.sqrt(n_features)
        ls = torch.as_tensor(lengthscale, dtype=dtype).expand(groups, n_features).clone()
        amp = torch.as_tensor(amplitude, dtype=dtype).expand(groups).clone()
        nz = torch.as_tensor(noise, dtype=dtype).expand(groups).clone()
        for name, value in (("lengthscale", ls), ("amplitude", amp), ("noise", nz)):
            if not torch.all(torch.isfinite(value)) or torch.any(value <= 0):
                raise ValueError(f"kernel {name} must be finite and positive, got {value.tolist()}")
        self.n_latent = n_latent
        self.raw_lengthscale = nn.Parameter(inverse_softplus(ls))
        self.raw_amplitude = nn.Parameter(inverse_softplus(amp))
        self.raw_noise = nn.Parameter(inverse_softplus(nz))

    @property
    def lengthscale(self) -> torch.Tensor:
        """``[G, D]``"""
        return softplus(self.raw_lengthscale)

    @property
    def amplitude(self) -> torch.Tensor:
        """``[G]``"""
        return softplus(self.raw_amplitude)

    @property
    def noise(self) -> torch.Tensor:
        """``[G]``"""
        return softplus(self.raw_noise)

    def cross(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """Noise-free covariance between ``A`` and ``B``.

        Args:
            A: ``[C, n, D]`` (per-latent inputs, e.g. inducing points) or ``[n, D]`` (shared).
            B: ``[C, m, D]`` or ``[m, D]``.
        Returns:
            ``[C, n, m]``.
        """
        ls = self.lengthscale[:, None, :]  # [G, 1, D]
        A_ = A / ls if A.dim() == 3 else A[None] / ls
        B_ = B / ls if B.dim() == 3 else B[None] / ls
        # log k = log a - |A_|^2 / 2 - |B_|^2 / 2 + A_ . B_, fused into one baddbmm and one exp
        base = (torch.log(self.amplitude)[:, None, None] - 0.5 * (A_ * A_).sum(-1)[:, :, None]
                - 0.5 * (B_ * B_).sum(-1)[:, None, :])
        A_, B_ = A_.expand(base.shape[0], -1, -1), B_.expand(base.shape[0], -1, -1)
        K = torch.exp(torch.baddbmm(base, A_, B_.transpose(-1, -2)))
        return K.expand(self.n_latent, -1, -1) if K.shape[0] == 1 else K

    def diag(self, n: int) -> torch.Tensor:
        """Prior variance of ``n`` data points including the additive noise: ``[C, n]``."""
        return (self.amplitude + self.noise)[:, None].expand(self.n_latent, n)
