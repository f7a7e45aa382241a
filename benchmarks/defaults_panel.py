"""Quality per second, side by side: the default ``GPClassifier()`` beside GPflow's SVGP recipe,
scikit-learn's GaussianProcessClassifier (small sets), LogisticRegression and
HistGradientBoostingClassifier, on scikit-learn's digits and the classification sets of
``../shared/data``.

Every set is split 70/30 (stratified, seed 0; the split of ``defaults_test.py``), the inputs
standardised with the training rows' statistics. Every estimator runs one thread, one after
the other. One JSON line per (data set, estimator) goes to benchmarks/results/<output>, with the
test error, NLL, ECE, the training seconds and, for the two iterative GP fits, the test NLL
against training seconds (evaluation not counted):

* alphagp: ``GPClassifier()``, validated model selection (``estimators/model_selection.py``), the
  chosen fit's test metrics recorded every ``--eval-every`` epochs below ``CV_ROWS`` training rows;
* GPflow: SVGP with the robust-max likelihood, one inducing set of 50 k-means centres shared by
  the classes, one kernel, Adam 0.01, 200 epochs of 128 rows: the recipe of GPflow's
  multi-class notebook the issue timed (``peers/gpflow_svgp.py``, in ``peers/.venv-gpflow``);
* GPyTorch: its multi-class SVGP with the softmax likelihood, one inducing set per class (50
  k-means centres each), ARD kernels, Adam 0.01, 200 epochs of 128 rows (``peers/gpytorch_svgp.py``,
  in ``peers/.venv-gpytorch``);
* alphagp's closed form alone, ``GPClassifier(method="dirichlet")`` at its defaults, and GPyTorch's
  Dirichlet GP by its documented recipe (``peers/gpytorch_dirichlet.py``: exact up to 4,600
  training rows, its SGPR with 500 k-means centres beyond), the same model side by side;
* scikit-learn's ``GaussianProcessClassifier`` (one-vs-rest Laplace, an isotropic RBF kernel
  with its optimiser's restarts off) on sets of at most ``GPC_ROWS`` training rows;
* ``LogisticRegression()`` and ``HistGradientBoostingClassifier()`` with their defaults.

    bash benchmarks/peers/install_gpflow.sh      # once
    bash benchmarks/peers/install_gpytorch.sh    # once
    python benchmarks/defaults_panel.py --threads 1
    python benchmarks/report.py panel
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from study_sets import SETS
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier
from alphagp.data import load_benchmark, load_mnist
from alphagp.estimators.fit_plan import fitted_settings
from alphagp.estimators.model_selection import CV_ROWS
from alphagp.metrics import all_metrics, negative_log_likelihood
from alphagp.training import MetricsRecorder

from common import RESULTS, RUN_COMMIT, append_row, base_row, benchmark_parser, parse_benchmark_args, read_rows

PEERS = Path(__file__).resolve().parent / "peers"
GPC_ROWS = 600
#: the GP peers' stated time cap (issue 73): a recipe whose training seconds pass it stops at the end of
#: that epoch (GPflow's and GPyTorch's SVGP) or iteration (GPyTorch's Dirichlet GP), evaluated there;
#: its row's curve ends where it stood (GPyTorch's Dirichlet GP took 3,712 s on Shuttle without it)
PEER_CAP = 1200.0


#: the mid-sized and large sets: image subsets of the MNIST and Fashion-MNIST training images (their
#: first rows, a 70/30 split of them) and Shuttle
LARGER = ["shuttle", "mnist_5000", "fashion_mnist_5000", "mnist_20000", "fashion_mnist_20000"]


def load(dataset: str):
    """``(X, y)`` of a panel set: digits, a set of ../shared/data, or ``<mnist|fashion_mnist>_<rows>``
    (the first ``rows / 0.7`` training images, so that the 70 % training split has ``rows``)."""
    if dataset == "digits":
        return load_digits(return_X_y=True)
    name, _, rows = dataset.rpartition("_")
    if name in ("mnist", "fashion_mnist"):
        X, y, _, _ = load_mnist(name)
        n = round(int(rows) / 0.7)
        return np.asarray(X[:n], dtype=np.float64), np.asarray(y[:n])
    return load_benchmark(dataset)


def problem(dataset: str):
    X, y = load(dataset)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    mean, scale = X_train.mean(0), X_train.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    classes = np.unique(y_train)
    return ((X_train - mean) / scale, (X_test - mean) / scale, np.searchsorted(classes, y_train),
            np.searchsorted(classes, y_test))


def run_alphagp(X_train, X_test, y_train, y_test, eval_every: int, max_time: float | None = None):
    """``GPClassifier()``: model selection on the training rows, then the chosen candidate's
    final fit, whose test NLL is recorded every ``eval_every`` epochs against the seconds since
    ``fit`` began (the selection's included: the curve starts where the final fit does).

    From ``CV_ROWS`` training rows the selection's one split keeps the winner's fit as the final
    one, and a callback would make it fit again; there no curve is recorded (the row's seconds
    are the user's), only the end point."""
    clf = GPClassifier(n_jobs=1, random_state=0, max_time=max_time)
    start = time.perf_counter()
    recorder = MetricsRecorder(X_test, y_test, every=eval_every, classes=np.unique(y_train))
    clf.fit(X_train, y_train, callbacks=[recorder] if len(y_train) < CV_ROWS else None)
    seconds = time.perf_counter() - start
    selection = seconds - clf.history_[-1]["train_seconds"] if clf.history_ else 0.0
    proba = clf.predict_proba(X_test)
    curve = ([{"train_seconds": r["train_seconds"] + selection, "test_nll": r["nll"]} for r in recorder.rows]
             or [{"train_seconds": seconds, "test_nll": negative_log_likelihood(proba, y_test)}])
    results = getattr(clf, "cv_results_", {})
    return proba, seconds, {
        "curve": curve, "chose": fitted_settings(clf.fit_plan_), "candidate": getattr(clf, "candidate_", None),
        "scheme": getattr(clf, "selection_scheme_", None), "best_iteration": clf.best_iteration_, "max_time": max_time,
        "cv": {k: results[k] for k in ("candidate", "mean_test_nll", "std_test_nll", "mean_fit_time") if k in results}}


def run_alphagp_in_gpflow_time(X_train, X_test, y_train, y_test, eval_every: int, dataset: str = ""):
    """``GPClassifier(max_time=t)`` with t the GPflow recipe's training seconds on the set (its
    latest row in the results file)."""
    rows = [r for r in read_rows("defaults_panel.jsonl") if r["dataset"] == dataset and r["estimator"] == "GPflow SVGP"]
    if not rows:
        raise LookupError(f"no GPflow SVGP row for {dataset}: run that estimator first")
    return run_alphagp(X_train, X_test, y_train, y_test, eval_every, max_time=rows[-1]["train_seconds"])


def run_gpflow(X_train, X_test, y_train, y_test, eval_every: int):
    python = PEERS / ".venv-gpflow" / "bin" / "python"
    C = int(y_train.max()) + 1
    Z = KMeans(min(50, len(X_train)), n_init=1, random_state=0).fit(X_train).cluster_centers_
    d = X_train.shape[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "problem.npz")
        np.savez(path, X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test, Z=Z, n_classes=C,
                 amplitude=np.ones(1), lengthscale=np.full((1, d), np.sqrt(d)), noise=np.full(1, 0.1),
                 epsilon=1e-3, learning_rate=0.01, epochs=200, batch_size=128, eval_every=eval_every,
                 max_seconds=PEER_CAP)
        start = time.perf_counter()
        out = subprocess.run([str(python), str(PEERS / "gpflow_svgp.py"), path], check=True, stdout=subprocess.PIPE,
                             text=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "2"})
        wall = time.perf_counter() - start
        result = json.loads(out.stdout.strip().splitlines()[-1])
        proba = np.load(path + ".proba.npy")
    curve = [{"train_seconds": r["train_seconds"], "test_nll": r["test_nll"]} for r in result["curve"]]
    return proba, curve[-1]["train_seconds"], {"curve": curve, "process_seconds": wall, "version": result["version"],
                                               "cap_seconds": PEER_CAP}


def run_gpytorch(X_train, X_test, y_train, y_test, eval_every: int):
    python = PEERS / ".venv-gpytorch" / "bin" / "python"
    C, d = int(y_train.max()) + 1, X_train.shape[1]
    Z = KMeans(min(50, len(X_train)), n_init=1, random_state=0).fit(X_train).cluster_centers_
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "problem.npz")
        np.savez(path, X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
                 Z=np.broadcast_to(Z, (C, *Z.shape)).copy(), lengthscale=np.sqrt(d), learning_rate=0.01,
                 epochs=200, batch_size=128, eval_every=eval_every, max_seconds=PEER_CAP)
        out = subprocess.run([str(python), str(PEERS / "gpytorch_svgp.py"), path], check=True, stdout=subprocess.PIPE,
                             text=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        result = json.loads(out.stdout.strip().splitlines()[-1])
        proba = np.load(path + ".proba.npy")
    curve = [{"train_seconds": r["train_seconds"], "test_nll": r["test_nll"]} for r in result["curve"]]
    return proba, curve[-1]["train_seconds"], {"curve": curve, "version": result["version"], "cap_seconds": PEER_CAP}


#: GPyTorch's Dirichlet GP runs exact up to this many training rows (a batch of C exact GPs: Satimage's 4,504
#: rows fit), its SGPR with :data:`GPYTORCH_SGPR_INDUCING` k-means centres beyond
GPYTORCH_EXACT_ROWS = 4_600
GPYTORCH_SGPR_INDUCING = 500


def run_gpytorch_dirichlet(X_train, X_test, y_train, y_test, eval_every: int):
    """GPyTorch's Dirichlet GP by its documented recipe (``peers/gpytorch_dirichlet.py``): exact up to
    :data:`GPYTORCH_EXACT_ROWS` rows, SGPR beyond; test NLL every ``eval_every`` of its 50 iterations."""
    python = PEERS / ".venv-gpytorch" / "bin" / "python"
    exact = len(X_train) <= GPYTORCH_EXACT_ROWS
    M = 0 if exact else min(GPYTORCH_SGPR_INDUCING, len(X_train))
    Z = np.zeros((1, X_train.shape[1])) if exact else KMeans(M, n_init=1, random_state=0).fit(X_train).cluster_centers_
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "problem.npz")
        np.savez(path, X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test, alpha_epsilon=0.01,
                 iterations=50, learning_rate=0.1, eval_every=max(1, eval_every // 2), inducing=M, Z=Z,
                 max_seconds=PEER_CAP)
        out = subprocess.run([str(python), str(PEERS / "gpytorch_dirichlet.py"), path], check=True,
                             stdout=subprocess.PIPE, text=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        result = json.loads(out.stdout.strip().splitlines()[-1])
        proba = np.load(path + ".proba.npy")
    curve = [{"train_seconds": r["train_seconds"], "test_nll": r["test_nll"]} for r in result["curve"]]
    return proba, curve[-1]["train_seconds"], {"curve": curve, "version": result["version"], "inducing": M,
                                               "cap_seconds": PEER_CAP}


def run_dirichlet(X_train, X_test, y_train, y_test, _eval_every):
    """``GPClassifier(method="dirichlet")`` at its defaults (exact up to the method's exact rows,
    sparse beyond; the kernel from its own start): one point of test NLL against seconds."""
    clf = GPClassifier(method="dirichlet", n_jobs=1, random_state=0)
    start = time.perf_counter()
    clf.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    proba = clf.predict_proba(X_test)
    return proba, seconds, {"curve": [{"train_seconds": seconds, "test_nll": negative_log_likelihood(proba, y_test)}],
                            "exact": clf.fit_plan_.exact, "n_inducing": clf.n_inducing_,
                            "kernel_start": clf.kernel_start_.to_plain()}


def run_sklearn(make):
    def run(X_train, X_test, y_train, _y_test, _eval_every):
        model = make()
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start
        return model.predict_proba(X_test), seconds, {}
    return run


def gpc():
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    return GaussianProcessClassifier(ConstantKernel() * RBF(), random_state=0)


def logistic():
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(max_iter=1000)


def boosting():
    from sklearn.ensemble import HistGradientBoostingClassifier
    return HistGradientBoostingClassifier(random_state=0)


def catboost():
    from catboost import CatBoostClassifier
    return CatBoostClassifier(thread_count=1, random_seed=0, verbose=False, allow_writing_files=False)


def class_frequencies(_X_train, X_test, y_train, _y_test, _eval_every):
    """The training class frequencies, each count plus one half (``method="class_frequencies"``'s):
    the bar a classifier must clear."""
    start = time.perf_counter()
    counts = np.bincount(y_train, minlength=int(y_train.max()) + 1) + 0.5
    seconds = time.perf_counter() - start
    return np.broadcast_to(counts / counts.sum(), (len(X_test), len(counts))).copy(), seconds, {}


RUNS = {"alphagp GPClassifier()": run_alphagp, "alphagp GPClassifier(max_time=GPflow's)": run_alphagp_in_gpflow_time,
        "alphagp GPClassifier(method='dirichlet')": run_dirichlet, "GPyTorch Dirichlet GP": run_gpytorch_dirichlet,
        "GPflow SVGP": run_gpflow, "GPyTorch SVGP": run_gpytorch, "scikit-learn GPC": run_sklearn(gpc),
        "LogisticRegression": run_sklearn(logistic), "HistGradientBoosting": run_sklearn(boosting),
        "CatBoost": run_sklearn(catboost), "class frequencies": class_frequencies}
#: the estimators that need their data set's name
NAMED = ("alphagp GPClassifier(max_time=GPflow's)",)


def main() -> None:
    parser = benchmark_parser(__doc__, output="defaults_panel.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["digits", *SETS])
    parser.add_argument("--estimators", nargs="+", default=list(RUNS), choices=list(RUNS))
    parser.add_argument("--eval-every", type=int, default=10, help="epochs between the GP fits' test evaluations")
    parser.add_argument("--skip-done", action="store_true",
                        help="skip the (set, estimator) pairs the results file already has a row of at this commit "
                             "(an interrupted queue continues where it stopped)")
    args = parse_benchmark_args(parser)
    done = ({(r["dataset"], r["estimator"]) for r in read_rows(args.output) if r["commit"] == RUN_COMMIT}
            if args.skip_done and (RESULTS / args.output).exists() else set())
    for dataset in args.datasets:
        X_train, X_test, y_train, y_test = problem(dataset)
        for name in args.estimators:
            if (name == "scikit-learn GPC" and len(y_train) > GPC_ROWS) or (dataset, name) in done:
                continue
            named = {"dataset": dataset} if name in NAMED else {}
            with threadpool_limits(args.threads):
                proba, seconds, extra = RUNS[name](X_train, X_test, y_train, y_test, args.eval_every, **named)
            metrics = all_metrics(proba, y_test)
            append_row(args.output, base_row("defaults_panel", dataset=dataset, estimator=name, threads=args.threads,
                                             n_train=len(y_train), train_seconds=seconds,
                                             **{f"test_{k}": v for k, v in metrics.items()}, **extra))
            print(f"{dataset:14s} {name:24s} err={metrics['error']:.4f} nll={metrics['nll']:.4f} "
                  f"ece={metrics['ece']:.4f} {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
