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

    def _scaled(self, A: torch.Tensor) -> torch.Tensor:
        """Inputs divided by the lengthscales: ``[G, n, D]`` (``[n, D]`` shared inputs broadcast)."""
        inv_ls = 1.0 / self.lengthscale[:, None, :]                 # [G, 1, D]
        return A * inv_ls if A.dim() == 3 else A[None] * inv_ls

    def _from_scaled(self, A_: torch.Tensor, B_: torch.Tensor, sq_A: torch.Tensor, sq_B: torch.Tensor):
        """a exp(-|A_i - B_j|^2 / 2) from scaled inputs ``[G, n, D]``, ``[G, m, D]`` and their squared norms.

        The exponent log a - |A_i|^2/2 - |B_j|^2/2 + A_i . B_j is one product of the inputs
        augmented by two columns, so neither the forward nor the backward pass materialises
        an ``[n, m]`` intermediate besides the result.
        """
        G = max(A_.shape[0], B_.shape[0], self.raw_amplitude.shape[0])
        A_, B_ = A_.expand(G, -1, -1), B_.expand(G, -1, -1)
        log_amp = torch.log(self.amplitude).expand(G)[:, None].expand(G, A_.shape[1])
        A_aug = torch.cat((A_, (log_amp - 0.5 * sq_A.expand(G, -1))[..., None],
                           torch.ones_like(A_[..., :1])), -1)
        B_aug = torch.cat((B_, torch.ones_like(B_[..., :1]), -0.5 * sq_B.expand(G, -1)[..., None]), -1)
        K = torch.exp(A_aug @ B_aug.transpose(-1, -2))
        return K.expand(self.n_latent, -1, -1) if K.shape[0] == 1 else K

    def cross(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """Noise-free covariance between ``A`` and ``B``.

        Args:
            A: ``[C, n, D]`` (per-latent inputs, e.g. inducing points) or ``[n, D]`` (shared).
            B: ``[C, m, D]`` or ``[m, D]``.
        Returns:
            ``[C, n, m]``.
        """
        A_, B_ = self._scaled(A), self._scaled(B)
        return self._from_scaled(A_, B_, (A_ * A_).sum(-1), (B_ * B_).sum(-1))

    def inducing_covariances(self, Z: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """K_uu ``[C, M, M]`` and K_uf ``[C, M, n]`` for inducing points ``Z`` and data ``X``.

        Same values as ``cross(Z, Z)`` and ``cross(Z, X)``, but Z is scaled and squared once
        and both blocks come from one product, so the backward pass reads the ``[C, M, D]``
        inputs a third as often (it dominates a step when D is large, e.g. MNIST).

        Args:
            Z: ``[C, M, D]`` or ``[M, D]``; X: ``[n, D]``.
        """
        Z_, X_ = self._scaled(Z), self._scaled(X)
        Z_ = Z_.expand(max(Z_.shape[0], X_.shape[0]), -1, -1)
        ZX_ = torch.cat((Z_, X_.expand(Z_.shape[0], -1, -1)), 1)    # [G, M + n, D]
        sq = (ZX_ * ZX_).sum(-1)
        M = Z_.shape[1]
        Kuu, Kuf = self._from_scaled(Z_, ZX_, sq[:, :M], sq).split([M, X.shape[0]], dim=-1)
        return Kuu, Kuf

    def diag(self, n: int) -> torch.Tensor:
        """Prior variance of ``n`` data points including the additive noise: ``[C, n]``."""
        return (self.amplitude + self.noise)[:, None].expand(self.n_latent, n)
