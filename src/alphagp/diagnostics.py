"""Markov-chain diagnostics."""

from __future__ import annotations

import numpy as np


def effective_sample_size(chain: np.ndarray) -> np.ndarray:
    """Effective sample size of each column of one chain ``[S, K]``; returns ``[K]``.

    S / (1 + 2 sum_t rho_t), with the autocorrelations rho_t from an FFT and the sum truncated by
    Geyer's initial monotone positive sequence (pairs rho_2m + rho_2m+1 summed while positive and
    non-increasing), as in Stan and ArviZ for a single chain.
    """
    x = np.asarray(chain, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    S = x.shape[0]
    x = x - x.mean(0)
    n = 1 << (2 * S - 1).bit_length()
    spectrum = np.fft.rfft(x, n=n, axis=0)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=n, axis=0)[:S] / S
    var = acov[0]
    out = np.full(x.shape[1], float(S))
    for k in np.flatnonzero(var > 0):
        rho = acov[:, k] / var[k]
        pairs = rho[: S - S % 2].reshape(-1, 2).sum(1)            # rho_0 + rho_1, rho_2 + rho_3, ...
        positive = np.flatnonzero(pairs <= 0)
        pairs = pairs[: positive[0] if positive.size else len(pairs)]
        pairs = np.minimum.accumulate(pairs)                       # monotone
        tau = -1.0 + 2.0 * pairs.sum()                             # 1 + 2 sum_{t>=1} rho_t
        out[k] = S / max(tau, 1.0 / S)
    return out
