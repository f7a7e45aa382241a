"""Issue 79, item 5: where the exact closed form's prediction spends its seconds, over the training rows.

Synthetic blobs (26 classes, 16 features, seed 0): ``GPClassifier(method="dirichlet", random_state=0)``
fitted exactly on N training rows, then timed apart: the posterior's factors, made at the first
prediction and kept (one test row), the latent marginals of 2,000 test rows (``predict_f``: the
means and the per-class predictive variances against the N rows) and their class probabilities
(``predict_proba``: the same marginals, then the softmax averaged over the likelihood's
quasi-Monte Carlo draws, 1,024 per row; the draws' seconds are the difference). One row per N.

    python benchmarks/closed_form_prediction.py --threads 1
    python benchmarks/report.py cfpredict
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

N_CLASSES, N_FEATURES, N_TEST = 26, 16, 2_000


def blobs(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of 26 Gaussian classes around random centres (unit spread, centres at scale 2)."""
    centres = np.random.default_rng(0).normal(scale=2.0, size=(N_CLASSES, N_FEATURES))
    y = rng.integers(0, N_CLASSES, n)
    return centres[y] + rng.normal(size=(n, N_FEATURES)), y


def measure(n_train: int, threads: int) -> dict:
    rng = np.random.default_rng(n_train)
    X, y = blobs(n_train, rng)
    X_test, _ = blobs(N_TEST, rng)
    with threadpool_limits(threads):
        started = time.perf_counter()
        model = GPClassifier(method="dirichlet", random_state=0, n_jobs=threads, verbose=False).fit(X, y)
        fit = time.perf_counter() - started
        started = time.perf_counter()
        model.predict_f(X_test[:1], return_std=True)        # the posterior's factors, made once and kept
        posterior = time.perf_counter() - started
        started = time.perf_counter()
        model.predict_f(X_test, return_std=True)
        latent = time.perf_counter() - started
        started = time.perf_counter()
        model.predict_proba(X_test)
        proba = time.perf_counter() - started
    return {"n_train": n_train, "n_test": N_TEST, "n_classes": N_CLASSES, "exact": bool(model.fit_plan_.exact),
            "fit_seconds": fit, "posterior_seconds": posterior, "latent_seconds": latent, "proba_seconds": proba}


def main() -> None:
    parser = benchmark_parser(__doc__, output="closed_form_prediction.jsonl")
    parser.add_argument("--rows", nargs="+", type=int, default=[1_000, 2_000, 4_000, 8_000])
    args = parse_benchmark_args(parser)
    for n in args.rows:
        row = measure(n, args.threads)
        append_row(args.output, base_row("closed_form_prediction", threads=args.threads, **row))
        print(f"N={n}: fit {row['fit_seconds']:.1f} s, posterior {row['posterior_seconds']:.1f} s, latent marginals "
              f"{row['latent_seconds']:.1f} s, "
              f"probabilities {row['proba_seconds']:.1f} s (exact: {row['exact']})", flush=True)


if __name__ == "__main__":
    main()
