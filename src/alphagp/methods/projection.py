"""Marginals of linear projections of a Gaussian in whitened coordinates, with a closed-form backward.

Per latent function (leading dimension C), q(w) has natural parameters

    precision  B = B0 + Psi diag(w) Psi',        natural mean  b = b0 + Psi nu,

with ``B0`` ``[C, M, M]``, ``b0`` ``[C, M]``, ``Psi`` ``[C, M, n]`` and optional per-column site
parameters ``w``, ``nu`` ``[C, n]`` (the sites of the batch along the current directions,
scalable-EP eq. 25-27). The function returns, for every column psi_i,

    mean_i = psi_i' B^{-1} b,    var_i = psi_i' B^{-1} psi_i,                     (eq. 66-67)

and g = -1/2 log|B| + 1/2 b' B^{-1} b, the log-normaliser of q minus that of N(0, I)
(eq. 59-60 in whitened coordinates).

Why a hand-written backward: autodiff through the two triangular solves and the Gram matrix
re-reads and stores about twenty ``[C, M, n]`` arrays per step, and a training step is bound
by exactly those memory passes. With mu = B^{-1} b, At = B^{-1} Psi and incoming gradients
(gm, gv, gg) of (mean, var, g), the adjoints are

    dE/db   = r = gg mu + At gm
    dE/dB   = -gg (B^{-1} + mu mu') / 2 - At diag(gv) At' - (rho mu' + mu rho') / 2,  rho = At gm
    dE/dPsi = 2 At diag(gv) + mu gm' + 2 (dE/dB) Psi diag(w) + r nu'

(dE/dB symmetric; B0 and b0 receive dE/dB and dE/db), which need six passes over
``[C, M, n]``. ``tests/methods/test_projection.py`` checks them against finite differences.
"""

from __future__ import annotations

import torch

from ..gaussians import whitened_log_normaliser_from_cholesky
from ..numerics import stable_cholesky, triangular_inverse


class _ProjectedMarginals(torch.autograd.Function):
    @staticmethod
    def forward(ctx, B0, b0, Psi, w, nu):
        Bm, b, Psi_w = B0, b0, None
        if w is not None:
            Psi_w = Psi * w[:, None, :]
            Bm = torch.baddbmm(B0, Psi_w, Psi.transpose(-1, -2))
            b = torch.baddbmm(b0[..., None], Psi, nu[..., None])[..., 0]
        LB = stable_cholesky(Bm)
        LB_inv = triangular_inverse(LB)
        c = (LB_inv @ b[..., None])[..., 0]
        A = LB_inv @ Psi
        mean = (c[:, None, :] @ A)[:, 0]
        var = torch.linalg.vector_norm(A, dim=1).square()  # one fused pass, no [C, M, n] temporary
        g = whitened_log_normaliser_from_cholesky(LB, c)
        ctx.save_for_backward(LB_inv, c, A, Psi_w, nu)
        return mean, var, g

    @staticmethod
    def backward(ctx, g_mean, g_var, g_g):
        LB_inv, c, A, Psi_w, nu = ctx.saved_tensors
        LB_inv_t = LB_inv.transpose(-1, -2)
        mu = (LB_inv_t @ c[..., None])[..., 0]                                      # B^{-1} b
        At = LB_inv_t @ A                                                           # B^{-1} Psi
        rho = (At @ g_mean[..., None])[..., 0]
        r = g_g[:, None] * mu + rho
        At_gv = At * g_var[:, None, :]
        sym = rho[:, :, None] * mu[:, None, :]
        g_B = (-0.5 * g_g[:, None, None] * (LB_inv_t @ LB_inv + mu[:, :, None] * mu[:, None, :])
               - At_gv @ At.transpose(-1, -2) - 0.5 * (sym + sym.transpose(-1, -2)))
        if Psi_w is None:
            g_Psi = torch.baddbmm(At_gv, mu[:, :, None], g_mean[:, None, :], beta=2.0)
        else:
            outer_left = torch.stack((mu, r), -1)                                   # [C, M, 2]
            outer_right = torch.stack((g_mean, nu), 1)                              # [C, 2, n]
            g_Psi = torch.baddbmm(At_gv, outer_left, outer_right, beta=2.0)
            g_Psi = torch.baddbmm(g_Psi, g_B, Psi_w, alpha=2.0)
        return g_B, r, g_Psi, None, None


def projected_marginals(B0: torch.Tensor, b0: torch.Tensor, Psi: torch.Tensor,
                        w: torch.Tensor | None = None, nu: torch.Tensor | None = None):
    """Means and variances ``[C, n]`` of psi_i' w under q, and g(q) - g(N(0, I)) ``[C]``.

    Parameters
    ----------
    B0, b0
        ``[C, M, M]``, ``[C, M]`` natural parameters of q without the batch's sites.
    Psi
        ``[C, M, n]`` projection directions (whitened, ``L^{-1} K_uf``).
    w, nu
        ``[C, n]`` site precisions and natural means along the columns of Psi, or None.

    Returns
    -------
    ``(mean, var, g)``; differentiable w.r.t. ``B0``, ``b0`` and ``Psi`` (sites held fixed).
    """
    if (w is None) != (nu is None):
        raise ValueError("give both site precisions w and natural means nu, or neither")
    return _ProjectedMarginals.apply(B0, b0, Psi, w, nu)


def whitened_log_normaliser(Bm: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """g(q) - g(N(0, I)) = -1/2 log|B| + 1/2 b' B^{-1} b ``[C]`` for precision ``Bm`` ``[C, M, M]`` and
    natural mean ``b`` ``[C, M]``, with the closed-form backward of :func:`projected_marginals`
    (no projections): dg/dB = -(B^{-1} + mu mu') / 2, dg/db = mu = B^{-1} b."""
    return projected_marginals(Bm, b, Bm.new_zeros(*Bm.shape[:-1], 0))[2]

