"""Issue 73, item 4: the closed form's capacity. ``GPClassifier(method="dirichlet")`` with M inducing
rows (random rows or k-means centres; ``--n-inducing auto``: the method's own count, which grows
with the rows within the memory) on larger sets, its held-out NLL against M and seconds, and
HistGradientBoosting's seconds on the same rows in the same run.

Only training rows are read: Satimage and Shuttle take the panel's 70 % training split (stratified,
seed 0), Fashion-MNIST 20,000 its first 20,000 training images' 70 % (``defaults_panel.load``),
MNIST its 60,000 training images; of these a stratified 10 % is held out (seed 0) and scores every
fit, which fits the other 90 %. The kernel is the closed form's own start (type-II maximum likelihood
on 1,000 random rows) in every fit, so M and the inducing inputs are the only levers; nothing is
chosen here. One row per (set, M, inducing inputs).

    python closed_form_capacity.py --threads 1 --skip-done
    python report.py capacity
"""

from __future__ import annotations

import time

import numpy as np
from defaults_panel import load
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier
from alphagp.data import load_mnist
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args

SETS = ["satimage", "shuttle", "fashion_mnist_20000", "mnist"]
#: k-means centres only up to this M (scikit-learn's MiniBatchKMeans on 20,000 rows of 784 pixels
#: takes minutes beyond)
KMEANS_MAX = 2_000


def fit_rows(dataset: str):
    """``(X_fit, X_held, y_fit, y_held)``: the training rows (module docstring), 10 % held out."""
    if dataset == "mnist":
        X, y, _, _ = load_mnist("mnist")
    else:
        X, y = load(dataset)
        X, _, y, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return train_test_split(np.asarray(X, dtype=np.float64), y, test_size=0.1, stratify=y, random_state=0)


def main() -> None:
    parser = benchmark_parser(__doc__, output="closed_form_capacity.jsonl")
    parser.add_argument("--datasets", nargs="+", default=SETS)
    parser.add_argument("--n-inducing", nargs="+", default=["500", "1000", "2000", "4000", "auto"])
    parser.add_argument("--inducing-init", nargs="+", default=["random", "kmeans"], choices=["random", "kmeans"])
    parser.add_argument("--bound-iterations", type=int, default=0,
                        help="also learn the kernel for each M with random rows: this many L-BFGS iterations on the bound")
    parser.add_argument("--skip-done", action="store_true", help="leave out what a clean row already holds")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, lambda r: (r["dataset"], r["asked"], r["inducing_init"], r.get("kernel", "start"))) \
        if args.skip_done else set()
    for dataset in args.datasets:
        X, X_held, y, y_held = fit_rows(dataset)
        with threadpool_limits(args.threads):
            if (dataset, "hgb", "-", "start") not in done:
                start = time.perf_counter()
                hgb = HistGradientBoostingClassifier(random_state=0).fit(X, y)
                seconds = time.perf_counter() - start
                metrics = all_metrics(hgb.predict_proba(X_held), np.searchsorted(hgb.classes_, y_held))
                append_row(args.output, base_row("closed_form_capacity", dataset=dataset, asked="hgb",
                                                 inducing_init="-", n_fit=len(y), threads=args.threads,
                                                 seconds=seconds, **{f"held_{k}": v for k, v in metrics.items()}))
            for asked in args.n_inducing:
                for init in args.inducing_init:
                    m = asked if asked == "auto" else int(asked)
                    if init == "kmeans" and (m == "auto" or m > KMEANS_MAX):
                        continue
                    kernels = ["start"] + ([f"bound({args.bound_iterations})"]
                                           if args.bound_iterations and init == "random" and m != "auto" else [])
                    clf = None
                    for kernel in kernels:
                        if (dataset, asked, init, kernel) in done:
                            continue
                        params = {}
                        if kernel != "start":        # from the start's kernel, learnt on the bound, inputs held
                            clf = clf or GPClassifier(method="dirichlet", n_inducing=m, inducing_init=init,
                                                      n_jobs=args.threads, random_state=0).fit(X, y)
                            params = {"kernel_params": clf.kernel_start_.kernel_params(), "kernel_init": "fixed",
                                      "optimize_inducing": False, "max_iter": args.bound_iterations}
                        start = time.perf_counter()
                        fit = GPClassifier(method="dirichlet", n_inducing=m, inducing_init=init, n_jobs=args.threads,
                                           random_state=0, **params).fit(X, y)
                        seconds = time.perf_counter() - start + (clf.kernel_start_.seconds if params else 0.0)
                        clf = fit if kernel == "start" else clf
                        metrics = all_metrics(fit.predict_proba(X_held), np.searchsorted(fit.classes_, y_held))
                        append_row(args.output, base_row(
                            "closed_form_capacity", dataset=dataset, asked=asked, inducing_init=init, kernel=kernel,
                            n_fit=len(y), n_inducing=fit.n_inducing_, exact=fit.fit_plan_.exact, threads=args.threads,
                            seconds=seconds, kernel_start=(fit.kernel_start_ or clf.kernel_start_).to_plain(),
                            **{f"held_{k}": v for k, v in metrics.items()}))
                        print(f"{dataset:20s} M={fit.n_inducing_:6d} ({asked}, {init}, {kernel}) held-out "
                              f"nll={metrics['nll']:.4f} err={metrics['error']:.4f} {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
