"""Numerical building blocks shared by every method.

Stable Cholesky with jitter escalation, Gauss-Hermite quadrature, the log-normaliser of a
one-dimensional Gaussian in natural parameters, and the Gaussian CDF in log space.
Everything is batched over leading dimensions and differentiable with PyTorch. And the time
limit an inner loop reads (:func:`time_limit`, :func:`past_deadline`): a fit's ``max_time`` reaches
the sweeps of exact EP inside one training step without the trainer knowing the method.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from functools import lru_cache

import numpy as np
import torch

LOG_2PI = math.log(2.0 * math.pi)


class CholeskyError(RuntimeError):
    """Raised when a matrix stays non-positive-definite after the largest jitter."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Inside it, :func:`past_deadline` says whether ``seconds`` (``None``: no limit) have passed
    since it was entered, or an enclosing limit's deadline, whichever comes first."""
    outer = _DEADLINE.get()
    deadline = None if seconds is None else time.perf_counter() + max(float(seconds), 0.0)
    if outer is not None:
        deadline = outer if deadline is None else min(deadline, outer)
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def past_deadline() -> bool:
    """Whether the innermost :func:`time_limit` has run out (``False`` outside any)."""
    deadline = _DEADLINE.get()
    return deadline is not None and time.perf_counter() >= deadline


def time_left() -> float:
    """Seconds left of the innermost :func:`time_limit` (infinity outside any; negative once past)."""
    deadline = _DEADLINE.get()
    return math.inf if deadline is None else deadline - time.perf_counter()


@lru_cache(maxsize=1)
def factorisation_rate() -> float:
    """Floating-point operations a second of this process's Cholesky factorisations (n^3 / 3 of a
    512 x 512 float64 matrix, the fastest of three; measured once): the scale of a method's
    :meth:`~alphagp.methods.base.SparseGPMethod.minimum_seconds`."""
    n = 512
    A = torch.eye(n, dtype=torch.float64) * n + torch.ones(n, n, dtype=torch.float64)
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        torch.linalg.cholesky(A)
        best = min(best, time.perf_counter() - started)
    return n**3 / 3 / max(best, 1e-9)


def step_generator(seed: int, step: int) -> torch.Generator:
    """The CPU generator of draw ``step`` of a stream seeded by ``seed`` (Monte Carlo draws, class
    subsets): seeded by ``seed * 1_000_003 + step``, so a resumed fit draws what an uninterrupted
    one would and two seeds' streams do not overlap for a million steps."""
    return torch.Generator().manual_seed(int(seed) * 1_000_003 + int(step))


def stable_cholesky(A: torch.Tensor, jitter: float = 1e-8, max_tries: int = 6) -> torch.Tensor:
    """Lower Cholesky factor of a batch of symmetric matrices ``A`` with shape ``[..., n, n]``.

    Tries ``A`` as it is, then adds ``jitter * mean(diag(A)) * 10**t`` to the diagonal for
    t = 0 .. max_tries-1. Raises :class:`CholeskyError` with the largest jitter tried when
    every attempt fails, so a user sees which matrix and why instead of a NaN.
    """
    L, info = torch.linalg.cholesky_ex(A)
    if not bool(torch.any(info)):
        return L
    scale = torch.diagonal(A, dim1=-2, dim2=-1).mean(-1).abs().clamp_min(1e-12)
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    for t in range(max_tries):
        extra = (jitter * 10.0**t) * scale
        L, info = torch.linalg.cholesky_ex(A + extra[..., None, None] * eye)
        if not bool(torch.any(info)):
            return L
    raise CholeskyError(
        f"Cholesky factorisation failed for a {A.shape[-1]}x{A.shape[-1]} matrix even with "
        f"jitter {jitter * 10.0 ** (max_tries - 1):.1e} x mean diagonal; the matrix is not "
        "positive definite (check for duplicated inducing points, extreme hyper-parameters "
        "or non-finite inputs)."
    )


def cholesky_solve(b: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """``(L L^T)^{-1} b`` for lower Cholesky factors ``L`` ``[..., n, n]`` and ``b`` ``[..., n, k]``,
    by two triangular solves.

    What ``torch.cholesky_solve`` computes, but on CUDA a batch of single right-hand sides takes
    cuSOLVER's ``potrsBatched``, which fails on large matrices with "invalid argument"
    (pytorch/pytorch#38603; met by the Dirichlet GP's sparse posterior at M = 8,000 in float64).
    """
    return torch.linalg.solve_triangular(L.mT, torch.linalg.solve_triangular(L, b, upper=False), upper=True)


def triangular_inverse(L: torch.Tensor) -> torch.Tensor:
    """Inverse of lower-triangular ``L`` ``[..., n, n]``.

    Multiplying a wide ``[..., n, m]`` right-hand side by it is a plain matrix product, faster
    than a triangular solve (which first copies the right-hand side into column-major order)
    and with a cheaper backward pass; ``L`` here is always a Cholesky factor with jitter.
    """
    eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand_as(L)
    return torch.linalg.solve_triangular(L, eye, upper=False)


@lru_cache(maxsize=16)
def _hermgauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite.hermgauss(n)
    return x * math.sqrt(2.0), w / math.sqrt(math.pi)


def gauss_hermite(n: int, dtype=torch.float64, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Nodes and weights for E_{N(0,1)}[f(z)] ~= sum_j w_j f(z_j) with ``n`` points."""
    x, w = _hermgauss(int(n))
    return (torch.as_tensor(x, dtype=dtype, device=device),
            torch.as_tensor(w, dtype=dtype, device=device))


def log_ndtr(x: torch.Tensor) -> torch.Tensor:
    """log Phi(x) for the standard normal CDF, accurate in both tails."""
    return torch.special.log_ndtr(x)


def inverse_mills(x: torch.Tensor) -> torch.Tensor:
    """N(x | 0, 1) / Phi(x), computed in log space so it stays finite for x << 0."""
    return torch.exp(-0.5 * x * x - 0.5 * LOG_2PI - log_ndtr(x))


def log1mexp(x: torch.Tensor) -> torch.Tensor:
    """log(1 - exp(x)) for x <= 0, accurate near 0 and for x << 0, with finite gradients.

    x = 0 (a probability that rounds to 1) is treated as minus the smallest positive float, so
    the result is about -708 instead of -inf; each branch sees only inputs where it is finite,
    so the branch not taken cannot send NaN into the backward pass.
    """
    x = x.clamp_max(-torch.finfo(x.dtype).tiny)
    near = x > -math.log(2.0)
    return torch.where(near, torch.log(-torch.expm1(torch.where(near, x, -1.0))),
                       torch.log1p(-torch.exp(torch.where(near, -1.0, x))))


#: the largest block of temporaries a prediction builds at once, in bytes (:func:`log_prob_largest`'s
#: [rows, c, k, Q]; the Monte Carlo predictives' [samples, rows, C]; Laplace's [rows, C, C] and draws)
QUADRATURE_BLOCK_BYTES = 32 * 2**20


def rows_per_block(bytes_per_row: int, block_bytes: int | None = None) -> int:
    """How many rows of ``bytes_per_row`` temporaries fit in ``block_bytes`` (default
    ``QUADRATURE_BLOCK_BYTES``; at least one)."""
    budget = QUADRATURE_BLOCK_BYTES if block_bytes is None else block_bytes
    return max(1, budget // max(1, int(bytes_per_row)))

#: the block's temporaries alive at once (the differences, their ratio and log Phi)
_LIVE_COPIES = 3


#: from this many classes, every class's probability of being the largest (``y=None``) is computed
#: on one grid per row (:func:`_log_prob_largest_on_a_grid`: work N C G instead of N C^2 Q)
GRID_CLASSES = 40
#: the grid's spacing: the smallest latent standard deviation of the row over this
GRID_RESOLUTION = 8
#: the most grid points a row may take; a row that would need more is computed exactly
GRID_POINTS = 8192


def _log_prob_largest_on_a_grid(mean: torch.Tensor, sd: torch.Tensor, x: torch.Tensor,
                                w: torch.Tensor) -> torch.Tensor:
    """``[N, C]`` log P(f^c is the largest), as :func:`log_prob_largest` with ``y=None`` gives it, at
    N C G cost. For class c the quadrature needs S(f) = sum_{k != c} log Phi((f - m_k) / s_k) at
    its nodes f = m_c + s_c x_j; S(f) = L(f) - log Phi(x_j) with L(f) the sum over all k, which is
    the same function for every c. L and its derivative sum_k phi(z_k) / (s_k Phi(z_k)) are
    computed once on a grid of G points spanning every class's nodes (spacing: the row's smallest
    s over :data:`GRID_RESOLUTION`), and L at the nodes by cubic Hermite interpolation (error
    O(h^4)); :func:`log_prob_largest` takes this route where no row needs more than
    :data:`GRID_POINTS` points (:func:`_grid_points`)."""
    N, C = mean.shape
    nodes = mean[:, :, None] + sd[:, :, None] * x                         # [N, C, Q]
    lo, hi = nodes.amin((1, 2)), nodes.amax((1, 2))                      # [N]
    G = _grid_points(mean, sd, x)
    out = torch.empty_like(mean)
    own = log_ndtr(x)                                                    # log Phi(x_j): the own term
    log_w = torch.log(w)
    rows = rows_per_block(G * C * mean.element_size() * 4)
    t = torch.linspace(0.0, 1.0, G, dtype=mean.dtype, device=mean.device)
    for r in range(0, N, rows):
        m, s, f = mean[r:r + rows], sd[r:r + rows], nodes[r:r + rows]
        a, b = lo[r:r + rows, None], hi[r:r + rows, None]
        grid = a + (b - a) * t                                            # [R, G]
        z = (grid[:, :, None] - m[:, None, :]) / s[:, None, :]            # [R, G, C]
        lz = log_ndtr(z)
        L = lz.sum(-1)                                                    # [R, G]
        dL = (torch.exp(-0.5 * z * z - 0.5 * LOG_2PI - lz) / s[:, None, :]).sum(-1)
        step = (b - a) / (G - 1)                                          # [R, 1]
        pos = ((f - a[:, :, None]) / step[:, :, None]).clamp(0, G - 1 - 1e-9)   # [R, C, Q]
        i = pos.floor().long()
        u = pos - i
        flat = i.reshape(i.shape[0], -1)
        L0, L1 = L.gather(1, flat).reshape(i.shape), L.gather(1, flat + 1).reshape(i.shape)
        d0, d1 = dL.gather(1, flat).reshape(i.shape), dL.gather(1, flat + 1).reshape(i.shape)
        hs = step[:, :, None]
        u2, u3 = u * u, u * u * u
        Lf = ((2 * u3 - 3 * u2 + 1) * L0 + (u3 - 2 * u2 + u) * hs * d0 + (-2 * u3 + 3 * u2) * L1
              + (u3 - u2) * hs * d1)                                      # cubic Hermite, [R, C, Q]
        out[r:r + rows] = torch.logsumexp(Lf - own + log_w, dim=-1)
    return out


def _grid_points(mean: torch.Tensor, sd: torch.Tensor, x: torch.Tensor) -> int:
    """The grid points :func:`_log_prob_largest_on_a_grid` takes for rows of means and standard
    deviations ``[N, C]`` and quadrature nodes ``x`` ``[Q]``: the span of the nodes over the
    smallest standard deviation's share (the largest over the rows)."""
    lo = (mean + sd * x.min()).amin(1)
    hi = (mean + sd * x.max()).amax(1)
    return int(torch.clamp(torch.ceil((hi - lo) * GRID_RESOLUTION / sd.amin(1)).max() + 1, min=2).item())


def log_prob_largest(mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor | None = None,
                     n_quadrature: int = 48) -> torch.Tensor:
    """log P(f^c > f^k for all k != c) for independent f^k ~ N(mean_k, var_k).

    Parameters
    ----------
    mean, var
        ``[N, C]``.
    y
        ``[N]`` class indices: return ``[N]`` for c = y_i; ``None``: return ``[N, C]`` for every c.

    Returns
    -------
    log probabilities by Gauss-Hermite quadrature over f^c, summed in log space. For every c the
    work is N C^2 Q terms, taken in blocks of rows and classes of at most
    ``QUADRATURE_BLOCK_BYTES``, so the memory stays bounded for any N and C.
    """
    x, w = gauss_hermite(n_quadrature, dtype=mean.dtype, device=mean.device)
    sd = torch.sqrt(var)
    C = mean.shape[-1]
    eye = torch.eye(C, dtype=torch.bool, device=mean.device)
    if y is None and C >= GRID_CLASSES and _grid_points(mean, sd, x) <= GRID_POINTS:
        return _log_prob_largest_on_a_grid(mean, sd, x, w)
    if y is None:
        # [rows, c, k, Q] blocks of at most QUADRATURE_BLOCK_BYTES each, whatever N and C
        per_c = C * n_quadrature * mean.element_size() * _LIVE_COPIES
        c_block = max(1, min(C, QUADRATURE_BLOCK_BYTES // per_c))
        row_block = max(1, QUADRATURE_BLOCK_BYTES // (per_c * c_block))
        # each block's result goes straight into one output: small results kept between the blocks'
        # freed temporaries stopped glibc from reusing them (7 GB of heap for 2,048 rows of 100 classes)
        out = torch.empty_like(mean)
        log_w = torch.log(w)
        for r in range(0, mean.shape[0], row_block):
            m, v = mean[r:r + row_block], sd[r:r + row_block]
            for c in range(0, C, c_block):
                f = m[:, c:c + c_block, None] + v[:, c:c + c_block, None] * x                # [R, c, Q]
                lp = log_ndtr((f[:, :, None, :] - m[:, None, :, None]) / v[:, None, :, None])  # [R, c, k, Q]
                lp = lp.masked_fill(eye[c:c + c_block, :, None], 0.0).sum(2)
                out[r:r + row_block, c:c + c_block] = torch.logsumexp(lp + log_w, dim=-1)
        return out
    else:
        f = mean.gather(1, y[:, None]) + sd.gather(1, y[:, None]) * x          # [N, Q]
        lp = log_ndtr((f[:, None, :] - mean[..., None]) / sd[..., None])       # [N, k, Q]
        lp = lp.masked_fill(eye[y][..., None], 0.0).sum(1)
    return torch.logsumexp(lp + torch.log(w), dim=-1)
