"""Active learning on Waveform by predictive entropy against random selection (alpha paper
section 5.6, Figures 6 and 7).

Protocol of the paper: 1,000 random Waveform rows per repetition; 100 start the training set, 500
are the test set and 400 the pool; 100 pool points are added one at a time, either the one of
highest predictive entropy (:func:`alphagp.active.most_uncertain`) or one drawn at random. The
first fit runs ``--iterations`` (250) batch iterations; after each addition the model is refitted
for ``--retrain`` (25) iterations from the previous fit's kernel hyper-parameters and inducing
inputs (the paper re-trains "reusing the solution obtained so far"; here q itself starts afresh,
which the estimator's API gives without a warm start of the sites). Features are standardised
once per repetition on the start and pool rows (never on the test rows). The test error and NLL
after each addition make one curve; one row per (method, alpha, selection, repetition) goes to
benchmarks/results/active_learning.jsonl, and ``--skip-done`` continues an interrupted queue.

    python benchmarks/active_learning.py --threads 1 --repetitions 5 --skip-done \\
        --methods pep:0.001 pep:0.5 pep:1 apep:0.001 apep:0.5 apep:1 arpep:0.001 arpep:0.5 arpep:1 \\
                  rpapep:0.001 rpapep:0.5 rpapep:1

The paper averages 100 repetitions and trains by L-BFGS (PEP: 50 and 5 iterations of alternating
EP updates and L-BFGS); here PEP uses its batch step (EP updates and sign-adaptive gradient steps
together) and the others Adam, at the estimator's default rates.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from alphagp import GPClassifier
from alphagp.active import most_uncertain
from alphagp.data import load_benchmark

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args


def repetition_split(repetition: int):
    """``(X_start, y_start, X_pool, y_pool, X_test, y_test)``: 1,000 random Waveform rows split
    100 / 400 / 500, standardised on the start and pool rows."""
    X, y = load_benchmark("waveform_21")
    rng = np.random.default_rng(repetition)
    rows = rng.choice(len(y), 1000, replace=False)
    start, pool, test = rows[:100], rows[100:500], rows[500:]
    scale_rows = np.concatenate([start, pool])
    mean, sd = X[scale_rows].mean(0), X[scale_rows].std(0)
    Xs = (X - mean) / sd
    return Xs[start], y[start], Xs[pool], y[pool], Xs[test], y[test]


def fit(spec: str, X, y, iterations: int, seed: int, previous: GPClassifier | None, n_inducing: int,
        threads: int) -> GPClassifier:
    """A fit of ``spec`` (``method:alpha``), warm from ``previous``'s kernel and inducing inputs."""
    method, _, alpha = spec.partition(":")
    warm = {}
    if previous is not None:
        kernel = previous.model_.kernel
        warm = dict(inducing_points=previous.model_.inducing_points.detach().numpy().copy(),
                    kernel_params={"lengthscale": kernel.lengthscale.detach().numpy().copy(),
                                   "amplitude": kernel.amplitude.detach().numpy().copy(),
                                   "noise": kernel.noise.detach().numpy().copy()})
    clf = GPClassifier(method=method, alpha=float(alpha) if alpha else None, n_inducing=n_inducing,
                       max_iter=iterations, standardize=False, early_stopping=False, random_state=seed,
                       n_jobs=threads, **warm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # ConvergenceWarning: 25 iterations do not converge a refit
        return clf.fit(X, y)


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="active_learning.jsonl")
    parser.add_argument("--methods", nargs="+", default=["pep:0.5", "apep:0.5", "arpep:0.5", "rpapep:0.5"])
    parser.add_argument("--selections", nargs="+", choices=("entropy", "random"), default=["entropy", "random"])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--additions", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=250)
    parser.add_argument("--retrain", type=int, default=25)
    parser.add_argument("--n-inducing", type=int, default=20)
    parser.add_argument("--skip-done", action="store_true")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, lambda r: (r["method_spec"], r["selection"], r["repetition"])) if args.skip_done else set()
    for repetition in range(args.repetitions):
        X0, y0, Xp, yp, Xt, yt = repetition_split(repetition)
        for spec in args.methods:
            for selection in args.selections:
                if (spec, selection, repetition) in done:
                    continue
                rng = np.random.default_rng(1000 + repetition)
                X, y, pool = X0, y0, np.arange(len(yp))
                clf = fit(spec, X, y, args.iterations, repetition, None, args.n_inducing, args.threads)
                start = time.perf_counter()
                curve = [clf.evaluate(Xt, yt)]
                for _ in range(args.additions):
                    pick = (most_uncertain(clf, Xp[pool])[0] if selection == "entropy"
                            else int(rng.integers(len(pool))))
                    X, y = np.vstack([X, Xp[pool[pick]]]), np.append(y, yp[pool[pick]])
                    pool = np.delete(pool, pick)
                    clf = fit(spec, X, y, args.retrain, repetition, clf, args.n_inducing, args.threads)
                    curve.append(clf.evaluate(Xt, yt))
                row = base_row("active-learning", dataset="waveform_21", method=spec.split(":")[0].upper(),
                               method_spec=spec, alpha=clf.alpha_, selection=selection, repetition=repetition,
                               n_start=100, n_pool=400, n_test=len(yt), M=args.n_inducing,
                               iterations=args.iterations, retrain=args.retrain, seconds=time.perf_counter() - start,
                               test_error=[c["error"] for c in curve], test_nll=[c["nll"] for c in curve])
                append_row(args.output, row)
                print(f"{spec} {selection} rep {repetition}: test error {curve[0]['error']:.3f} -> "
                      f"{curve[-1]['error']:.3f} in {row['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
