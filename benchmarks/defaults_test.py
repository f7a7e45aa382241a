"""The default chosen on validation splits (``defaults_study.py``), reported once on the test
splits: ``GPClassifier()`` (``method="auto"``) beside the previous default (``method="ep"``:
batch EP, M = 50, 250 iterations), on scikit-learn's digits and the classification sets of
``../shared/data``: 70 % of the rows for training (stratified, seed 0; the same split as the
study, whose validation rows are part of these training rows), 30 % for testing. One thread, one
fit at a time; one JSON line per (data set, estimator) in benchmarks/results/<output>.

    python benchmarks/defaults_test.py --threads 1
"""

from __future__ import annotations

import time

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from study_sets import SETS

from alphagp import GPClassifier
from alphagp.data import load_benchmark
from alphagp.estimators.fit_plan import fitted_settings

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

ESTIMATORS = {"auto": {}, "previous default (ep)": {"method": "ep"}}


def main() -> None:
    parser = benchmark_parser(__doc__, output="defaults_test.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["digits", *SETS])
    args = parse_benchmark_args(parser)
    for dataset in args.datasets:
        X, y = load_digits(return_X_y=True) if dataset == "digits" else load_benchmark(dataset)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        for name, params in ESTIMATORS.items():
            start = time.perf_counter()
            clf = GPClassifier(n_jobs=args.threads, random_state=0, **params).fit(X_train, y_train)
            seconds = time.perf_counter() - start
            metrics = clf.evaluate(X_test, y_test)
            row = {"dataset": dataset, "estimator": name, "threads": args.threads, "seconds": seconds,
                   "n_train": len(y_train), **fitted_settings(clf.fit_plan_), "best_iteration": clf.best_iteration_,
                   **{f"test_{k}": v for k, v in metrics.items()}}
            append_row(args.output, base_row("defaults_test", **row))
            print(f"{dataset:14s} {name:22s} err={metrics['error']:.4f} nll={metrics['nll']:.4f} "
                  f"ece={metrics['ece']:.4f} {seconds:.1f}s ({clf.method_})", flush=True)


if __name__ == "__main__":
    main()
