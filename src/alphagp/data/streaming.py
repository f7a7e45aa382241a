"""Row-wise views of large (memory-mapped) arrays that never copy the whole array."""

from __future__ import annotations

import numpy as np

_CHUNK = 65536


def column_mean_std(X, chunk: int = _CHUNK, weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations of ``X`` ``[N, D]`` (or ``[N]``), reading ``chunk`` rows at
    a time; with ``weight`` ``[N]`` (non-negative, not all 0) the weighted ones, as if row i were
    repeated ``weight[i]`` times.

    Each column is divided by its largest magnitude before it is summed or squared, so values
    from 1e-300 to 1e300 neither overflow nor underflow (squaring 1e155 gives inf, squaring 1e-162
    gives 0); the results are scaled back. Raises ``ValueError`` for non-finite values.
    """
    n = X.shape[0]
    peak = np.zeros(X.shape[1:])
    for start in range(0, n, chunk):
        part = np.asarray(X[start:start + chunk], dtype=np.float64)
        if not np.all(np.isfinite(part)):
            raise ValueError("the data contain NaN or infinity")
        peak = np.maximum(peak, np.abs(part).max(0))
    unit = np.where(peak > 0, peak, 1.0)
    ones = np.ones(min(n, chunk))

    def weights(start: int) -> np.ndarray:
        w = ones[:min(chunk, n - start)] if weight is None else np.asarray(weight[start:start + chunk], np.float64)
        return w.reshape(-1, *([1] * (len(X.shape) - 1)))

    total = np.zeros(X.shape[1:])
    for start in range(0, n, chunk):
        total += (np.asarray(X[start:start + chunk], dtype=np.float64) / unit * weights(start)).sum(0)
    count = n if weight is None else float(np.sum(weight))
    mean = total / count
    sq = np.zeros(X.shape[1:])
    for start in range(0, n, chunk):
        sq += ((np.asarray(X[start:start + chunk], dtype=np.float64) / unit - mean) ** 2 * weights(start)).sum(0)
    return mean * unit, np.sqrt(sq / count) * unit


class StandardizedRows:
    """``(X - mean) / scale`` computed only for the rows asked for.

    Supports ``len``, ``shape``, ``X[rows]`` and ``np.asarray`` (which does materialise the
    whole standardised array; batch training needs it anyway).
    """

    def __init__(self, X, mean: np.ndarray, scale: np.ndarray):
        self.X, self.mean, self.scale = X, mean, scale
        self.shape = X.shape

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        return (np.asarray(self.X[rows], dtype=np.float64) - self.mean) / self.scale

    def __array__(self, dtype=None, copy=None):
        out = self[slice(None)]
        return out if dtype is None else out.astype(dtype)


class RowSubset:
    """Rows ``rows`` (an index array) of ``X``, read only when asked for: ``len``, ``shape``,
    ``X[key]`` for a slice or an index array of the subset, and ``np.asarray`` (all of it)."""

    def __init__(self, X, rows: np.ndarray):
        self.X, self.rows = X, np.asarray(rows)
        self.shape = (len(self.rows), *X.shape[1:])

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        return np.asarray(self.X[self.rows[key]])

    def __array__(self, dtype=None, copy=None):
        out = self[slice(None)]
        return out if dtype is None else out.astype(dtype)
