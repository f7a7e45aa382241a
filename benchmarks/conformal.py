"""Issue 46, item 3: split-conformal prediction sets of the default ``GPClassifier()`` on the panel's
sets: empirical coverage and mean set size at 90 % and 95 %, per class; and (issue 60, item 18)
the class-conditional (Mondrian) sets of the same fresh calibration rows.

Each set is split 70/30 as in ``defaults_panel.py`` (stratified, seed 0, standardised by the
training rows). The 70 % is split again: 80 % fits ``GPClassifier()``, 20 % (stratified) calibrates
(``conformalize``). The 30 % test rows are scored once. Where the fit held out rows of its own (the
default's one-split selection, from 2,000 rows), the sets calibrated on those rows are scored too,
before the fresh calibration replaces them.

    python benchmarks/conformal.py --threads 1 --output conformal.jsonl
    python benchmarks/report.py conformal
"""

from __future__ import annotations

import numpy as np
from defaults_panel import problem
from sklearn.model_selection import train_test_split
from study_sets import SETS
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

LEVELS = (0.9, 0.95)


def coverage(sets: np.ndarray, y: np.ndarray) -> dict:
    """Coverage overall and per class, and the mean set size, of boolean ``sets`` ``[N, C]``."""
    hit = sets[np.arange(len(y)), y]
    return {"coverage": float(hit.mean()), "mean_set_size": float(sets.sum(1).mean()),
            "class_coverage": [float(hit[y == c].mean()) for c in np.unique(y)],
            "class_rows": [int(np.sum(y == c)) for c in np.unique(y)]}


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="conformal.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["digits", *SETS])
    args = parse_benchmark_args(parser)
    for dataset in args.datasets:
        X_train, X_test, y_train, y_test = problem(dataset)
        X_fit, X_cal, y_fit, y_cal = train_test_split(X_train, y_train, test_size=0.2, stratify=y_train,
                                                      random_state=0)
        clf = GPClassifier(random_state=0, n_jobs=args.threads)
        with threadpool_limits(args.threads):
            clf.fit(X_fit, y_fit)
            routes = {}
            if getattr(clf, "conformity_scores_", None) is not None:
                routes["fit's held-out rows"] = (len(clf.conformity_scores_),
                                                 {lvl: clf.predict_set(X_test, lvl) for lvl in LEVELS})
            clf.conformalize(X_cal, y_cal)
            routes["fresh calibration rows"] = (len(y_cal), {lvl: clf.predict_set(X_test, lvl) for lvl in LEVELS})
            routes["fresh calibration rows, per class"] = (
                len(y_cal), {lvl: clf.predict_set(X_test, lvl, conditional="class") for lvl in LEVELS})
        for route, (n_cal, sets) in routes.items():
            for level, s in sets.items():
                result = coverage(s, y_test)
                append_row(args.output, base_row("conformal", dataset=dataset, route=route, level=level,
                                                 n_fit=len(y_fit), n_calibration=n_cal, n_test=len(y_test),
                                                 candidate=clf.candidate_, **result))
                print(f"{dataset:14s} {route:24s} {level:.2f}: coverage {result['coverage']:.3f} "
                      f"set size {result['mean_set_size']:.2f} (min class {min(result['class_coverage']):.3f})",
                      flush=True)


if __name__ == "__main__":
    main()
