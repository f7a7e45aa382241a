"""Figure 6 of the logistic-softmax paper: inducing points and shared hyper-parameters on Shuttle.

The augmented logistic-softmax VI (``method="augmented"``) with M from 5 to 400 inducing points,
one kernel and inducing set per class (independent) or one for all classes (shared), inducing
inputs at k-means++ seeds and held fixed (the paper's setting), mini-batches of 200, Adam at 0.01
on the kernel, the default natural-gradient schedule. Nothing is tuned, so there is no
validation split: each configuration is fitted once on all the training rows (75 % of the
58,000 rows, the original 43,500 / 14,500 proportion) for the whole budget, with the estimator's
early stopping off, and scored once on the test rows. The paper trains for 200 epochs;
``--epochs`` sets the count here (the results record it, and the epochs run). One JSON line per
(M, shared) to benchmarks/results/augmented_inducing.jsonl with test error, NLL and the training
seconds.

``--inducing-set one`` separates the paper's two settings: the paper varies only the kernel
hyper-parameters and keeps one inducing set for all classes either way, while the default
(``per-setting``) gives the independent fit one k-means++ set per class. With ``one``, one
k-means++ set (standardised rows, seeded by ``--split``) is drawn per M and given to both fits as
``inducing_points`` (held fixed), so only the kernels differ. Rows record ``inducing_set``.

    python benchmarks/augmented_inducing.py --threads 2 --epochs 10
    python benchmarks/augmented_inducing.py --threads 1 --epochs 10 --inducing-set one
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.cluster import kmeans_plusplus

from alphagp import GPClassifier
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, parse_benchmark_args, split


def one_inducing_set(X: np.ndarray, M: int, seed: int) -> np.ndarray:
    """``[M, D]`` k-means++ seeds of the standardised rows of ``X``, in the units of ``X``: the set
    both hyper-parameter settings share under ``--inducing-set one``."""
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    centers, _ = kmeans_plusplus((X - mean) / scale, M, random_state=seed)
    return centers * scale + mean


def main() -> None:
    parser = benchmark_parser(__doc__, output="augmented_inducing.jsonl")
    parser.add_argument("--M", nargs="+", type=int, default=[5, 10, 20, 50, 100, 200, 400])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--inducing-set", choices=("per-setting", "one"), default="per-setting",
                        help="one: both fits get the same k-means++ set, so only the kernels differ")
    args = parse_benchmark_args(parser)
    X_tr, X_te, y_tr, y_te = split("shuttle", args.split)
    y_idx = np.searchsorted(np.unique(y_tr), y_te)
    for M in args.M:
        Z = one_inducing_set(X_tr, M, args.split) if args.inducing_set == "one" else None
        for shared in (False, True):
            clf = GPClassifier(method="augmented", n_inducing=M, inducing_init="kmeans++", optimize_inducing=False,
                               inducing_points=Z, shared_hyperparameters=shared, batch_size=args.batch_size, max_iter=args.epochs,
                               early_stopping=False, n_jobs=args.threads, random_state=args.split)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                clf.fit(X_tr, y_tr)
            seconds = time.perf_counter() - start
            metrics = all_metrics(clf.predict_proba(X_te), y_idx)
            append_row(args.output, base_row("augmented-inducing", dataset="shuttle", split=args.split, M=M,
                                             shared=shared, inducing_set=args.inducing_set, threads=args.threads, epochs=args.epochs, epochs_run=int(clf.n_iter_),
                                             early_stopping=False, batch_size=args.batch_size,
                                             n_train=len(y_tr), train_seconds=seconds,
                                             training_seconds=clf.history_[-1]["train_seconds"], **metrics))
            print(f'M={M:4d} {"shared" if shared else "independent":<11} set {args.inducing_set} error {metrics["error"]:.4f} '
                  f"nll {metrics['nll']:.4f} ({seconds:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
