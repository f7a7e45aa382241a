"""Exact EP in seconds (issue 73): ``GPClassifier(method="exact_ep")`` (its kernel by L-BFGS-B on
EP's own evidence, one lengthscale, and one per feature) beside scikit-learn's
``GaussianProcessClassifier`` (Laplace, one-vs-rest for more than two classes, an isotropic RBF
times a constant, its optimiser's restarts off: the panel's) and ``LogisticRegression()``, in the
same run, one thread, one after the other.

Every set is the panel's 70/30 stratified split (seed 0, inputs standardised with the training
rows' statistics; ``defaults_panel.problem``); nothing is chosen on the test rows (each estimator
runs at its defaults). One JSON line per (set, estimator) with the test error, NLL, ECE and the
training seconds.

    python exact_ep.py --threads 1
    python report.py exactep
"""

from __future__ import annotations

import time

from defaults_panel import gpc, logistic, problem
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args

#: the panel's two-class sets and its small multi-class ones (N (C - 1) up to about 2,000 factors)
BINARY = ["sonar", "ionosphere", "breast_cancer", "australian", "pima", "crabs", "banknote"]
MULTI_CLASS = ["wine", "new_thyroid", "glass", "svmguide2", "vehicle"]


def exact_ep(lengthscales: str):
    def make():
        return GPClassifier(method="exact_ep", method_params={"lengthscales": lengthscales}, n_jobs=1, random_state=0)
    return make


ESTIMATORS = {"exact EP (one lengthscale)": exact_ep("one"), "exact EP (ARD)": exact_ep("ard"),
              "scikit-learn GPC": gpc, "LogisticRegression": logistic}


def main() -> None:
    parser = benchmark_parser(__doc__, output="exact_ep.jsonl")
    parser.add_argument("--datasets", nargs="+", default=[*BINARY, *MULTI_CLASS])
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=list(ESTIMATORS))
    parser.add_argument("--skip-done", action="store_true", help="leave out the (set, estimator) pairs already run "
                        "from a clean tree at any commit (an interrupted queue goes on)")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, lambda r: (r["dataset"], r["estimator"])) if args.skip_done else set()
    for dataset in args.datasets:
        X_train, X_test, y_train, y_test = problem(dataset)
        for name in args.estimators:
            if (dataset, name) in done:
                continue
            model = ESTIMATORS[name]()
            with threadpool_limits(args.threads):
                start = time.perf_counter()
                model.fit(X_train, y_train)
                seconds = time.perf_counter() - start
                proba = model.predict_proba(X_test)
            extra = {}
            if isinstance(model, GPClassifier):
                extra = {"kernel_start": model.kernel_start_.to_plain(), "ep_sweeps": model.model_.diagnostics()["ep_sweeps"]}
            metrics = all_metrics(proba, y_test)
            append_row(args.output, base_row("exact_ep", dataset=dataset, estimator=name, threads=args.threads,
                                             n_train=len(y_train), n_classes=int(y_train.max()) + 1,
                                             n_features=X_train.shape[1], train_seconds=seconds,
                                             **{f"test_{k}": v for k, v in metrics.items()}, **extra))
            print(f"{dataset:14s} {name:28s} err={metrics['error']:.4f} nll={metrics['nll']:.4f} {seconds:.2f}s",
                  flush=True)


if __name__ == "__main__":
    main()
