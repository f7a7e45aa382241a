"""Threads used by PyTorch inside ``fit`` and ``predict`` (scikit-learn's ``n_jobs``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from joblib import effective_n_jobs


@contextmanager
def torch_threads(n_jobs: int | None) -> Iterator[int]:
    """Run the body with ``n_jobs`` intra-op threads and restore the previous number afterwards.

    ``n_jobs`` follows scikit-learn: ``None`` means 1 (unless inside a joblib
    ``parallel_config`` that says otherwise), ``-1`` all cores, ``-2`` all but one. One thread
    is the default because a 2-core machine with anything else running makes PyTorch's
    OpenMP threads wait on each other (a fit 8-17 times slower, BENCHMARKS.md).
    """
    threads = effective_n_jobs(n_jobs)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)
