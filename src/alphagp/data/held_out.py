"""The validation rows an estimator holds out for early stopping, without O(N) Python objects.

:func:`held_out_rows` returns the rows that scikit-learn's ``train_test_split(np.arange(N),
test_size=fraction, stratify=y or None, random_state=random_state)`` returns, sorted, drawing
the same random numbers in the same order (``StratifiedShuffleSplit`` and ``ShuffleSplit`` of
scikit-learn 1.x; ``tests/data/test_held_out.py`` checks the two against each other). scikit-learn
builds its stratified halves by extending Python lists with one NumPy scalar per row, which for
10^7 rows took a 723 MiB peak (72 bytes a row); here the rows are marked in a boolean mask and
returned as int32 indices (int64 from 2^31 rows): about 7 bytes a row at the peak (70 MB for
10^7 rows) and 4 kept.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.extmath import _approximate_mode

_CHUNK = 1 << 16


def class_counts(y_idx) -> np.ndarray:
    """``[C]`` rows per class of the class indices ``y_idx`` ``[N]`` (0 .. C-1), counted in chunks."""
    counts = np.zeros(0, dtype=np.int64)
    for start in range(0, len(y_idx), _CHUNK):
        part = np.bincount(np.asarray(y_idx[start:start + _CHUNK]))
        counts = np.pad(counts, (0, max(0, len(part) - len(counts))))
        counts[:len(part)] += part
    return counts


def held_out_problem(y_idx, fraction: float, stratify: bool) -> str | None:
    """Why ``fraction`` of the rows of class indices ``y_idx`` ``[N]`` cannot be held out (stratified
    by class where ``stratify``), or ``None`` where they can: the one answer to "can rows be held
    out?" (early stopping's "auto", the selection's split and its candidates, :func:`held_out_rows`).
    Where scikit-learn's split would fail: an empty side, a class with one row, fewer rows on a
    side than classes."""
    n = len(y_idx)
    n_held = math.ceil(fraction * n)
    n_fit = n - n_held
    if n_fit <= 0 or n_held <= 0:
        return f"holding out {fraction} of {n} rows leaves {n_fit} to fit and {n_held} held out"
    if not stratify:
        return None
    counts = class_counts(y_idx)
    present = np.flatnonzero(counts)
    counts = counts[present]
    if counts.min() < 2:
        return f"the least populated classes have only 1 row (classes {present[counts < 2].tolist()}); each needs 2"
    if min(n_fit, n_held) < len(present):
        return f"{n_fit} rows to fit and {n_held} held out cannot each hold all {len(present)} classes"
    return None


def held_out_rows(y_idx, fraction: float, stratify: bool, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """``(fit_rows, held_rows)``, sorted row indices of the ``N = len(y_idx)`` rows: the
    ``ceil(fraction * N)`` held-out rows (stratified by the class indices ``y_idx`` when
    ``stratify``), and the rest. Raises ``ValueError`` with :func:`held_out_problem`'s reason where
    they cannot be held out."""
    problem = held_out_problem(y_idx, fraction, stratify)
    if problem:
        raise ValueError(problem)
    n = len(y_idx)
    n_held = math.ceil(fraction * n)
    n_fit = n - n_held
    rng = check_random_state(random_state)
    held = np.zeros(n, dtype=bool)
    if not stratify:
        held[rng.permutation(n)[:n_held]] = True
        return _rows(~held), _rows(held)
    counts = class_counts(y_idx)
    present = np.flatnonzero(counts)
    counts = counts[present]
    fit_per_class = _approximate_mode(counts, n_fit, rng)
    held_per_class = _approximate_mode(counts - fit_per_class, n_held, rng)
    for c, count, fit_c, held_c in zip(present, counts, fit_per_class, held_per_class):
        members = _rows(np.asarray(y_idx) == c)          # the class's rows in order, as a stable argsort
        held[members.take(rng.permutation(count), mode="clip")[fit_c:fit_c + held_c]] = True
    return _rows(~held), _rows(held)


def early_stopping_rows(y, early_stopping: bool, fraction: float, stratify: bool, random_state):
    """``(fit_rows, validation_rows)`` of a fit on targets ``y`` ``[N]`` (``validation_rows``
    ``None`` without early stopping); a ``ValueError`` that says what to change where the held-out
    share cannot be drawn."""
    if not early_stopping:
        return np.arange(len(y)), None
    try:
        return held_out_rows(y, fraction, stratify, random_state)
    except ValueError as err:
        raise ValueError(f"early stopping holds out validation_fraction={fraction} of the {len(y)} rows"
                         f"{' stratified by class' if stratify else ''} and cannot: {err}. Use more rows, another "
                         "validation_fraction, or early_stopping=False") from err


def _rows(mask: np.ndarray) -> np.ndarray:
    """Indices of the true entries of ``mask``, int32 below 2^31 rows, built chunk by chunk."""
    out = np.empty(int(np.count_nonzero(mask)), dtype=np.int32 if len(mask) < 2**31 else np.int64)
    filled = 0
    for start in range(0, len(mask), _CHUNK):
        found = np.flatnonzero(mask[start:start + _CHUNK]) + start
        out[filled:filled + len(found)] = found
        filled += len(found)
    return out
