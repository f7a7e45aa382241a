"""Gaussian log-normalisers and KL divergences, written once: the g terms of every EP and power-EP
energy and the KL terms of the variational bounds.

g(theta) is the log-normaliser of a Gaussian in natural parameters (precision, natural mean): in
one dimension for h-space cavities and sites (EP paper eq. 59), and relative to N(0, I) in the
whitened coordinates w = L^{-1} u where the sparse methods keep q (alpha paper eq. 8-10).
"""

from __future__ import annotations

import torch

from .numerics import LOG_2PI, stable_cholesky, triangular_inverse


def gaussian_log_normaliser(tau: torch.Tensor, nu: torch.Tensor) -> torch.Tensor:
    """g(theta) for a 1-D Gaussian with precision ``tau`` and natural mean ``nu`` (eq. 59, D=1).

    g = 1/2 log(2 pi) - 1/2 log(tau) + nu^2 / (2 tau). Elementwise over any shape.
    """
    return 0.5 * LOG_2PI - 0.5 * torch.log(tau) + 0.5 * nu * nu / tau


def log_det_from_cholesky(L: torch.Tensor) -> torch.Tensor:
    """log |A| from its Cholesky factor ``L`` of shape ``[..., n, n]``; returns ``[...]``."""
    return 2.0 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)


def whitened_log_normaliser_from_cholesky(LB: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """g - g(N(0, I)) = 1/2 c'c - 1/2 log|B| ``[...]`` of the Gaussian with precision B = LB LB'
    ``[..., M, M]`` and natural mean b, from ``LB`` and ``c = LB^{-1} b`` ``[..., M]`` (the log-normaliser
    g(theta) = 1/2 b' B^{-1} b - 1/2 log|B| + const of every energy; alpha paper eq. 8-10)."""
    return 0.5 * ((c * c).sum(-1) - log_det_from_cholesky(LB))


#: the log-determinant part of :func:`tied_cavity_log_normaliser_gap` is the plain difference of
#: two log-determinants where the dtype's rounding over eps (the relative error that difference
#: carries) is below this, else it is taken from the eigenvalues
_DIFFERENCE_MAX_ERROR = 1e-9


def tied_cavity_log_normaliser_gap(Bm: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    """g(cavity) - g(q) ``[...]`` where q has whitened precision ``Bm`` = I + W ``[..., M, M]`` and natural
    mean ``b`` ``[..., M]``, and the cavity removes the share ``eps`` of the tied factor (I + W, b):
    precision B_cav = I + (1 - eps) W, natural mean (1 - eps) b (SEP, EP paper section 2.3.1; APEP,
    alpha paper eq. 8).

    The energies take n / alpha times this gap with eps = alpha / n, and n reaches 10^5-10^6 (MNIST),
    so subtracting two O(M) log-normalisers loses about log10(n) digits: all of them in float32.
    The quadratic parts are formed from O(eps) terms, with no cancellation: with mu = B^{-1} b and
    mu_cav the cavity's mean,

        g(cav) - g(q) = -eps/2 (mu_cav + b)' mu - 1/2 [log det B_cav - log det B],

    because (1 - eps)^2 B_cav^{-1} - B^{-1} = -eps (1 - eps) B_cav^{-1} B^{-1} - eps B^{-1}. The
    log-determinants' difference is taken from the two Cholesky factors the means need where that
    keeps nine digits (its relative error is about the dtype's rounding / eps: 1.2e-10 at SEP's
    eps on MNIST in float64, so the energy moves by about 1e-6 nats at most), else as
    sum_i log1p(-eps w_i / (1 + w_i)) over the eigenvalues w_i of W, free of cancellation
    (float32, and float64 from about 4.5 million factors; the eigenvalues cost about as much
    again as the rest of this function). Differentiable either way (``eigvalsh``'s gradient
    needs no eigenvector gaps).
    """
    eye = torch.eye(Bm.shape[-1], dtype=Bm.dtype, device=Bm.device)
    W = Bm - eye
    chol, chol_cav = stable_cholesky(Bm), stable_cholesky(torch.add(eye, W, alpha=1.0 - eps))
    mu = torch.cholesky_solve(b[..., None], chol)[..., 0]
    mu_cav = torch.cholesky_solve((1.0 - eps) * b[..., None], chol_cav)[..., 0]
    if torch.finfo(Bm.dtype).eps / eps <= _DIFFERENCE_MAX_ERROR:
        log_det_ratio = 2.0 * (torch.diagonal(chol_cav, dim1=-2, dim2=-1).log()
                               - torch.diagonal(chol, dim1=-2, dim2=-1).log()).sum(-1)
    else:
        w = torch.linalg.eigvalsh(W)
        log_det_ratio = torch.log1p(-eps * w / (1.0 + w)).sum(-1)
    return -0.5 * eps * ((mu_cav + b) * mu).sum(-1) - 0.5 * log_det_ratio


def whitened_kl(Bm: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """KL[q || N(0, I)] ``[C]`` for q with precision ``Bm`` ``[C, M, M]`` and natural mean ``b`` ``[C, M]``:
    (tr B^{-1} + mu' mu - M + log|B|) / 2 with mu = B^{-1} b."""
    LB = stable_cholesky(Bm)
    LB_inv = triangular_inverse(LB)
    mu = torch.cholesky_solve(b[..., None], LB)[..., 0]
    return 0.5 * (LB_inv.square().sum((-1, -2)) + mu.square().sum(-1) - Bm.shape[-1] + log_det_from_cholesky(LB))


def whitened_kl_from_sqrt(mean: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    """KL[N(mean, R R') || N(0, I)] ``[C]`` for means ``[C, M]`` and lower-triangular square roots
    ``R`` ``[C, M, M]``: (tr R R' + mean' mean - M - log|R R'|) / 2 (EP paper eq. 15's KL)."""
    log_det = torch.log(torch.diagonal(R, dim1=-2, dim2=-1).square()).sum(-1)
    return 0.5 * (R.square().sum((-1, -2)) + mean.square().sum(-1) - R.shape[-1] - log_det)
