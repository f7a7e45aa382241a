"""Issue 80, item 1: exact EP's cost against its pair factors P = N (C - 1), the measure behind the
default's limit (``model_selection.EXACT_EP_FACTORS``: exact EP and power EP are its candidates up
to that many).

For each (rows, classes) of :data:`SHAPES` (labels that follow the features: the arg-max of random
projections plus noise, 10 standard normal features, seed 0), one thread: the seconds of one
parallel EP sweep at a fixed kernel (the posterior's factorisation and solve), of the kernel
search, and of a whole ``GPClassifier(method=...)`` fit of ``exact_ep`` and ``exact_pep`` at their
defaults, with the search's evaluations. One row per (shape, method).

    python exact_ep_cost.py --threads 1
    python report.py exactepcost
"""

from __future__ import annotations

import time

import numpy as np
import torch

from alphagp import GPClassifier
from alphagp.likelihoods.heaviside import HeavisideLikelihood
from alphagp.pair_ep import NOISE, expectation_propagation, pair_covariance, pair_layout, pair_noise

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args

#: (rows, classes): pair factors from 150 to 2,000
SHAPES = [(150, 2), (300, 2), (250, 3), (500, 2), (250, 5), (500, 3), (1000, 2), (375, 5), (500, 4), (500, 5)]
METHODS = ("exact_ep", "exact_pep")


def problem(n: int, C: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 10))
    y = np.argmax(X @ rng.standard_normal((10, C)) + rng.standard_normal((n, C)), 1)
    return X, y


def sweep_seconds(X: np.ndarray, y: np.ndarray, C: int) -> float:
    """One EP sweep from the prior at the RBF of lengthscale sqrt(D) and amplitude 1 (the search's
    start), best of two."""
    Xt = torch.as_tensor(X)
    layout = pair_layout(torch.as_tensor(y), C)
    K = torch.exp(-0.5 * torch.cdist(Xt, Xt).square() / X.shape[1])[None]
    G = pair_covariance(K, layout)
    noise = pair_noise(torch.tensor([NOISE], dtype=torch.float64), layout)
    tilted = HeavisideLikelihood().pair_factor_tilted
    best = np.inf
    for _ in range(2):
        started = time.perf_counter()
        expectation_propagation(G, noise, tilted, max_sweeps=2)
        best = min(best, (time.perf_counter() - started) / 2)
    return best


def main() -> None:
    parser = benchmark_parser(__doc__, output="exact_ep_cost.jsonl")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, lambda r: (r["n_rows"], r["n_classes"], r["method"]))
    for n, C in SHAPES:
        X, y = problem(n, C)
        sweep = sweep_seconds(X, y, C)
        for method in METHODS:
            if (n, C, method) in done:
                continue
            started = time.perf_counter()
            fitted = GPClassifier(method=method, random_state=0, n_jobs=args.threads, verbose=False).fit(X, y)
            seconds = time.perf_counter() - started
            row = dict(n_rows=n, n_classes=C, pair_factors=n * (C - 1), method=method, sweep_seconds=sweep,
                       fit_seconds=seconds, search_seconds=fitted.kernel_start_.seconds,
                       search_evaluations=fitted.kernel_start_.evaluations, threads=args.threads)
            append_row(args.output, base_row("exact-ep-cost", **row))
            print(f"{n} rows, {C} classes ({n * (C - 1)} pair factors), {method}: a sweep {sweep:.3f} s, the fit "
                  f"{seconds:.1f} s ({row['search_evaluations']} evaluations)", flush=True)


if __name__ == "__main__":
    main()
