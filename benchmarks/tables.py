"""Issue 46, item 4: mixed-type tables with missing values, alphagp beside HistGradientBoosting with
its native categorical support.

Two real tables no one here wrote:

* ``penguins``: the ``palmerpenguins`` package's table (344 penguins, 3 species; the island and the
  sex as text, the sex missing for 11 birds, four measurements missing for 2);
* ``australian``: the Statlog credit-approval set of ``../shared/data`` (690 rows), whose eight
  categorical attributes (A1, A4, A5, A6, A8, A9, A11, A12; UCI's description) are integer codes:
  given as pandas ``category`` columns, and once as the plain numbers for contrast.

Each table is split 70/30, stratified, for ``--seeds`` seeds; one thread; the test rows are scored
once per fit. Estimators: ``GPClassifier(categorical_features="from_dtype")`` (the default model
selection on the encoded table), ``GPClassifier()`` on the codes as numbers (Australian only: text
cannot be numbers), and ``HistGradientBoostingClassifier(categorical_features="from_dtype")``.

    python benchmarks/tables.py --threads 1 --output tables.jsonl
    python benchmarks/report.py tables
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier
from alphagp.data import load_benchmark
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

#: the categorical attributes of the Statlog Australian credit set (0-based columns)
AUSTRALIAN_CATEGORICAL = (0, 3, 4, 5, 7, 8, 10, 11)


def table(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """A mixed-type table and its labels; text and code columns as pandas categories."""
    if name == "penguins":
        from palmerpenguins import load_penguins
        frame = load_penguins()
        X = frame.drop(columns=["species"])
        return X.astype({c: "category" for c in ("island", "sex")}), frame["species"].to_numpy()
    X, y = load_benchmark("australian")
    frame = pd.DataFrame(X, columns=[f"A{j + 1}" for j in range(X.shape[1])])
    return frame.astype({f"A{j + 1}": "category" for j in AUSTRALIAN_CATEGORICAL}), y


def estimators(name: str, seed: int) -> dict:
    runs = {"alphagp GPClassifier(categorical_features='from_dtype')":
            lambda: GPClassifier(categorical_features="from_dtype", random_state=seed, n_jobs=1),
            "HistGradientBoosting(categorical_features='from_dtype')":
            lambda: HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=seed)}
    if name == "australian":
        runs["alphagp GPClassifier() on the codes as numbers"] = lambda: GPClassifier(random_state=seed, n_jobs=1)
    return runs


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="tables.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["penguins", "australian"])
    parser.add_argument("--seeds", type=int, default=5)
    args = parse_benchmark_args(parser)
    for dataset in args.datasets:
        X, y = table(dataset)
        classes = np.unique(y)
        for seed in range(args.seeds):
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
            for name, make in estimators(dataset, seed).items():
                numbers = "as numbers" in name
                fit_X, test_X = (X_tr.astype(np.float64), X_te.astype(np.float64)) if numbers else (X_tr, X_te)
                clf = make()
                start = time.perf_counter()
                with threadpool_limits(args.threads):
                    clf.fit(fit_X, y_tr)
                    seconds = time.perf_counter() - start
                    proba = clf.predict_proba(test_X)
                metrics = all_metrics(proba, np.searchsorted(classes, y_te))
                append_row(args.output, base_row("tables", dataset=dataset, seed=seed, estimator=name,
                                                 n_train=len(y_tr), n_test=len(y_te), train_seconds=seconds,
                                                 candidate=getattr(clf, "candidate_", None),
                                                 encoded_width=getattr(getattr(clf, "table_encoding_", None),
                                                                       "width", None),
                                                 **{f"test_{k}": v for k, v in metrics.items()}))
                print(f"{dataset:11s} seed {seed} {name:56s} err {metrics['error']:.4f} nll {metrics['nll']:.4f} "
                      f"ece {metrics['ece']:.4f} {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
