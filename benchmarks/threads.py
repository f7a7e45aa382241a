"""Fit time against ``n_jobs``, on an idle machine and beside one busy process.

On the 2-core machines, PyTorch's default of one thread per core made fits 8-17 times slower
whenever anything else ran (its OpenMP threads wait on each other). This times the same fit
for each ``n_jobs``, first alone and then with a second process spinning on one core, in
alternation, and writes one JSON line per timing to benchmarks/results/threads.jsonl. Two
problems: ``digits`` (SEP on scikit-learn's digits, 1,797 rows, 64 features, 10 classes,
M = 20, mini-batches of 200, 20 epochs) and ``satellite`` (batch EP on Satellite's 20% split of
split 0, 1,287 rows, 36 features, 6 classes, M = 64, 50 iterations).

    python benchmarks/threads.py --n-jobs 1 2 --repeats 3 --problems digits satellite
"""

from __future__ import annotations

import subprocess
import sys
import time

from sklearn.datasets import load_digits

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, parse_benchmark_args, split

BUSY = "import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n"


def problem(name: str):
    """Data and estimator settings of a named problem."""
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X, y, dict(method="sep", n_inducing=20, batch_size=200, max_iter=20)
    X, _, y, _ = split("satimage", 0)
    return X, y, dict(method="ep", n_inducing=64, max_iter=50)


def fit_seconds(X, y, n_jobs: int, settings: dict) -> float:
    clf = GPClassifier(n_jobs=n_jobs, random_state=0, **settings)
    start = time.perf_counter()
    clf.fit(X, y)
    return time.perf_counter() - start


def main() -> None:
    parser = benchmark_parser(__doc__, threads=None, output="threads.jsonl")
    parser.add_argument("--n-jobs", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--problems", nargs="+", default=["digits", "satellite"], choices=["digits", "satellite"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parse_benchmark_args(parser)
    for name in args.problems:
        X, y, settings = problem(name)
        fit_seconds(X, y, 1, {**settings, "max_iter": 1})  # warm-up: imports, allocator
        for repeat in range(args.repeats):
            for load in ("idle", "one busy process"):
                busy = subprocess.Popen([sys.executable, "-c", BUSY]) if load != "idle" else None
                try:
                    for n_jobs in args.n_jobs:
                        seconds = fit_seconds(X, y, n_jobs, settings)
                        append_row(args.output, base_row("threads", dataset=name, **settings, n_jobs=n_jobs,
                                                         load=load, repeat=repeat, fit_seconds=seconds))
                        print(f"{name:9s} {load:17s} n_jobs={n_jobs}: {seconds:6.2f} s", flush=True)
                finally:
                    if busy:
                        busy.kill()
                        busy.wait()

if __name__ == "__main__":
    main()
