"""Issue 46, item 2: telling Fashion-MNIST images from MNIST digits by a model fitted on MNIST, with
the uncertainty beyond p of ``predict_uncertainty``.

The default ``GPClassifier(max_time=...)`` and ``HistGradientBoostingClassifier()`` fit the first
``--train-rows`` MNIST training images (pixels in [0, 1]; one thread each). Both then score the
10,000 MNIST test images (in distribution) and the 10,000 Fashion-MNIST test images (out of
distribution, OOD). Each score's area under the ROC curve for "this image is OOD" (1 is perfect,
0.5 chance) is recorded:

* alphagp: the epistemic part (mutual information between the label and the latent functions),
  the total predictive entropy, and 1 - the largest probability, from 256 posterior draws a row;
* HistGradientBoosting: 1 - the largest probability and the predictive entropy (it has no
  posterior to split).

The test metrics on MNIST and a thinned ROC curve per score go in the rows too.

    python benchmarks/ood.py --threads 1 --output ood.jsonl
    python benchmarks/report.py ood      # table and benchmarks/results/ood.png
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score, roc_curve
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier
from alphagp.data import load_mnist
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def entropy(proba: np.ndarray) -> np.ndarray:
    return -np.sum(proba * np.log(np.clip(proba, 1e-300, None)), axis=1)


def thinned_roc(is_ood: np.ndarray, score: np.ndarray, points: int = 200) -> dict:
    fpr, tpr, _ = roc_curve(is_ood, score)
    keep = np.unique(np.linspace(0, len(fpr) - 1, points).astype(int))
    return {"fpr": fpr[keep].round(5).tolist(), "tpr": tpr[keep].round(5).tolist()}


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="ood.jsonl")
    parser.add_argument("--train-rows", type=int, default=10_000)
    parser.add_argument("--max-minutes", type=float, default=10.0, help="GPClassifier's max_time, in minutes")
    args = parse_benchmark_args(parser)
    X, y, X_in, y_in = load_mnist("mnist")
    _, _, X_out, _ = load_mnist("fashion_mnist")
    X, y = np.asarray(X[:args.train_rows], dtype=np.float64), np.asarray(y[:args.train_rows])
    X_in, X_out = np.asarray(X_in, dtype=np.float64), np.asarray(X_out, dtype=np.float64)
    both = np.concatenate([X_in, X_out])
    is_ood = np.r_[np.zeros(len(X_in)), np.ones(len(X_out))]
    runs = {"alphagp GPClassifier()": GPClassifier(max_time=60 * args.max_minutes, random_state=0,
                                                   n_jobs=args.threads),
            "HistGradientBoosting": HistGradientBoostingClassifier(random_state=0)}
    for name, clf in runs.items():
        start = time.perf_counter()
        with threadpool_limits(args.threads):
            clf.fit(X, y)
            seconds = time.perf_counter() - start
            proba = clf.predict_proba(both)
            scores = {"1 - max probability": 1.0 - proba.max(1), "predictive entropy": entropy(proba)}
            if hasattr(clf, "predict_uncertainty"):
                parts = clf.predict_uncertainty(both, n_samples=256)
                scores = {"mutual information (epistemic)": parts["epistemic"],
                          "total entropy (sampled)": parts["total"], **scores}
        metrics = all_metrics(proba[:len(X_in)], np.asarray(y_in))
        for score_name, score in scores.items():
            auroc = float(roc_auc_score(is_ood, score))
            append_row(args.output, base_row("ood", estimator=name, score=score_name, auroc=auroc,
                                             n_train=len(y), train_seconds=seconds,
                                             candidate=getattr(clf, "candidate_", None),
                                             roc=thinned_roc(is_ood, score),
                                             **{f"mnist_test_{k}": v for k, v in metrics.items()}))
            print(f"{name:24s} {score_name:32s} AUROC {auroc:.4f}   (MNIST test error {metrics['error']:.4f}, "
                  f"NLL {metrics['nll']:.4f}; {seconds:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
