"""Issue 46, item 1: balanced class weights on imbalanced data, alphagp beside HistGradientBoosting.

Each two-class set of ``../shared/data`` is split 70/30 (stratified, one split per seed); then the
minority class is thinned, in the training and the test rows alike, to one row for every
``--ratio`` rows of the majority class (a 1:20 problem by default). The inputs are standardised
with the training rows' statistics. Four fits per (set, seed), one thread each:

* ``GPClassifier()`` and ``GPClassifier(class_weight="balanced")`` (the default, validated model
  selection, whose held-out scores then weigh the rows too);
* ``HistGradientBoostingClassifier()`` and ``HistGradientBoostingClassifier(class_weight="balanced")``.

A row per fit records the minority class's recall, the balanced accuracy, the test NLL and the
balanced log-loss (the mean over the two classes of each class's mean NLL: what balanced weights
optimise). Nothing is chosen on the test rows.

    python benchmarks/class_weights.py --threads 1 --output class_weights.jsonl
    python benchmarks/report.py class_weights
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier
from alphagp.data import load_benchmark

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

SETS = ["banknote", "breast_cancer", "pima", "australian", "ionosphere"]


def thinned(X, y, ratio: float, rng: np.random.Generator):
    """The rows of ``X``, ``y`` with the minority class cut to one row per ``ratio`` majority rows."""
    labels, counts = np.unique(y, return_counts=True)
    minority = labels[counts.argmin()]
    rows_min, rows_maj = np.flatnonzero(y == minority), np.flatnonzero(y != minority)
    keep = rng.choice(rows_min, max(2, round(len(rows_maj) / ratio)), replace=False)
    rows = np.sort(np.r_[rows_maj, keep])
    return X[rows], y[rows]


def scores(proba: np.ndarray, y: np.ndarray, minority: int) -> dict:
    """Minority recall, balanced accuracy, NLL and balanced log-loss of ``proba`` ``[N, 2]``."""
    nll = -np.log(np.clip(proba[np.arange(len(y)), y], 1e-300, None))
    predicted = proba.argmax(1)
    recall = [float(np.mean(predicted[y == c] == c)) for c in (0, 1)]
    return {"minority_recall": recall[minority], "balanced_accuracy": float(np.mean(recall)),
            "nll": float(nll.mean()), "balanced_nll": float(np.mean([nll[y == c].mean() for c in (0, 1)])),
            "error": float(np.mean(predicted != y))}


ESTIMATORS = {
    "alphagp GPClassifier()": lambda seed: GPClassifier(random_state=seed, n_jobs=1),
    "alphagp GPClassifier(class_weight='balanced')": lambda seed: GPClassifier(class_weight="balanced",
                                                                              random_state=seed, n_jobs=1),
    "HistGradientBoosting": lambda seed: HistGradientBoostingClassifier(random_state=seed),
    "HistGradientBoosting(class_weight='balanced')": lambda seed: HistGradientBoostingClassifier(
        class_weight="balanced", random_state=seed),
}


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="class_weights.jsonl")
    parser.add_argument("--datasets", nargs="+", default=SETS)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--ratio", type=float, default=20.0, help="majority rows per minority row")
    args = parse_benchmark_args(parser)
    for dataset in args.datasets:
        X, y = load_benchmark(dataset)
        y = np.searchsorted(np.unique(y), y)
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
            X_tr, y_tr = thinned(X_tr, y_tr, args.ratio, rng)
            X_te, y_te = thinned(X_te, y_te, args.ratio, rng)
            mean, scale = X_tr.mean(0), X_tr.std(0)
            scale = np.where(scale > 0, scale, 1.0)
            X_tr, X_te = (X_tr - mean) / scale, (X_te - mean) / scale
            minority = int(np.argmin(np.bincount(y_tr)))
            for name, make in ESTIMATORS.items():
                clf = make(seed)
                start = time.perf_counter()
                with threadpool_limits(args.threads):
                    clf.fit(X_tr, y_tr)
                    seconds = time.perf_counter() - start
                    result = scores(clf.predict_proba(X_te), y_te, minority)
                append_row(args.output, base_row(
                    "class_weights", dataset=dataset, seed=seed, estimator=name, ratio=args.ratio,
                    n_train=len(y_tr), n_train_minority=int(np.sum(y_tr == minority)), n_test=len(y_te),
                    n_test_minority=int(np.sum(y_te == minority)), train_seconds=seconds,
                    candidate=getattr(clf, "candidate_", None), **{f"test_{k}": v for k, v in result.items()}))
                print(f"{dataset:14s} seed {seed} {name:48s} minority recall {result['minority_recall']:.3f} "
                      f"balanced NLL {result['balanced_nll']:.4f} NLL {result['nll']:.4f} {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
