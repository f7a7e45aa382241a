"""Which method when: every registered method at its defaults, on a small set in batch mode and,
where the method takes mini-batches, on a mid-sized set in mini-batches.

Small: scikit-learn's digits (1,797 rows, 64 features, 10 classes), batch training for
``--max-iter`` iterations. Mid-sized: Satellite (6,435 rows, 36 features, 6 classes), mini-batches
of 200 for ``--epochs`` epochs, for the methods whose ``Capabilities.mini_batches`` is true. Both:
a stratified 75/25 split per seed, M = 50 inducing points per class (the methods with an exact
form where the rows allow, such as the closed form, at their own choice: every row here), everything
else at the estimator's and the method's defaults, one thread. Nothing is tuned, so there is no validation
split: each fit is scored once on its test rows. A method that refuses the set (exact EP's memory
check, in one line) has a row with its reason (``refused``). A row records the fit's and the prediction's
seconds, the epochs run, and test error, NLL, ECE and Brier score. The loop runs over the registry
(``alphagp.methods.METHODS``), so a new method is measured without an edit.

    python benchmarks/method_guide.py --threads 1 --seeds 0 1 2
    python benchmarks/report.py methodguide
"""

from __future__ import annotations

import time
import warnings

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.data import load_benchmark
from alphagp.methods import METHODS

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

#: data set -> (loader, training mode)
SETS = {"digits": (lambda: load_digits(return_X_y=True), "batch"),
        "satimage": (lambda: load_benchmark("satimage"), "mini-batch")}


def fit_and_score(name: str, X_tr, X_te, y_tr, y_te, mode: str, args, seed: int) -> dict:
    """Fit method ``name`` in ``mode`` and return the row's measurements."""
    batch = dict(batch_size=None, max_iter=args.max_iter) if mode == "batch" else dict(
        batch_size=200, max_iter=args.epochs)
    capabilities = METHODS[name].cls.CAPABILITIES
    own = not capabilities.sparse or capabilities.exact_rows > 0    # exact where the rows allow: its own choice
    clf = GPClassifier(method=name, n_inducing="auto" if own else args.M, n_jobs=args.threads, random_state=seed,
                       **batch)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_tr, y_tr)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    metrics = clf.evaluate(X_te, y_te)
    predict_seconds = time.perf_counter() - start
    epochs = max(int(clf.n_iter_), 1)
    return dict(fit_seconds=fit_seconds, epochs=epochs, n_inducing=int(clf.n_inducing_), seconds_per_epoch=fit_seconds / epochs,
                predict_seconds=predict_seconds, n_test=len(y_te),
                **{f"test_{k}": v for k, v in metrics.items()})


def main() -> None:
    parser = benchmark_parser(__doc__, output="method_guide.jsonl")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--datasets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--M", type=int, default=50, help="inducing points per class")
    parser.add_argument("--max-iter", type=int, default=250, help="batch iterations (the estimator's default)")
    parser.add_argument("--epochs", type=int, default=20, help="mini-batch epochs")
    args = parse_benchmark_args(parser)
    for dataset in args.datasets:
        load, mode = SETS[dataset]
        X, y = load()
        for seed in args.seeds:
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
            for name in args.methods:
                if mode == "mini-batch" and not METHODS[name].cls.CAPABILITIES.mini_batches:
                    continue
                try:
                    row = fit_and_score(name, X_tr, X_te, y_tr, y_te, mode, args, seed)
                except ValueError as err:      # a refusal in one line (exact EP's memory check): recorded
                    row = {"refused": str(err)}
                append_row(args.output, base_row("method-guide", dataset=dataset, mode=mode, method=name, seed=seed,
                                                 M=args.M, n_train=len(y_tr), n_features=X.shape[1],
                                                 n_classes=len(set(y.tolist())), **row))
                if "refused" in row:
                    print(f"{dataset:9s} {mode:10s} {name:20s} seed {seed}: refused: {row['refused']}", flush=True)
                    continue
                print(f"{dataset:9s} {mode:10s} {name:20s} seed {seed}: error {row['test_error']:.3f} "
                      f"nll {row['test_nll']:.3f} ece {row['test_ece']:.3f}  fit {row['fit_seconds']:.1f} s "
                      f"({row['seconds_per_epoch']:.3f} s an epoch), predict {row['predict_seconds']:.1f} s",
                      flush=True)


if __name__ == "__main__":
    main()
