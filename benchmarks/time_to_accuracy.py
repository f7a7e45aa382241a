"""Time to accuracy beside the libraries users would otherwise pick (issue 11, goal 3).

One run, one split, one library at a time, one thread each: alphagp's SEP, EP and augmented
logistic-softmax VI (the logistic-softmax paper's Figure 7), GPflow's SVGP
with the robust-max likelihood and GPyTorch's SVGP with a softmax likelihood, each trained for
the same training-time budget on mini-batches of the same size with Adam at the same rate, from
the same k-means++ inducing points. Test error and NLL are recorded against training seconds at
log-spaced times (evaluation not counted; GPflow's graph tracing counted, it is part of a user's wait), one JSON
row per evaluation. ``report.py tta`` draws NLL against time (one line per library) and gives,
for each library, the time it needs to reach the NLL that the worst library finally reaches.

Each library runs its usual multi-class configuration: alphagp and GPyTorch one inducing set
and kernel per class, GPflow (``--gpflow-inducing shared``, the default) one set and one kernel
for all classes, as its multi-class examples do; M is per set. alphagp's EP trains on the whole
set at once when it has at most ``--ep-batch-limit`` rows (the papers' batch EP), otherwise on
mini-batches with the inducing points fixed (``optimize_inducing="auto"``). Peers run in their
own virtual environments (``benchmarks/peers/install_gpflow.sh``, ``install_gpytorch.sh``).

    python benchmarks/time_to_accuracy.py --dataset satimage --minutes 2 --output tta.jsonl
    python benchmarks/time_to_accuracy.py --dataset mnist --M 100 --minutes 10 --output tta.jsonl
    python benchmarks/time_to_accuracy.py --dataset shuttle --libraries alphagp-augmented alphagp-sep \
        alphagp-ep gpflow --output tta_augmented.jsonl
    python benchmarks/report.py tta

``--paper-settings`` is the logistic-softmax authors' setting for Figure 7 (``theogf/MultiClassGPC``):
every set standardised (the image sets too), the lengthscale the median distance between 1,000
random training rows, one k-means inducing set (M = ``--M``) shared by all classes and held fixed
in the augmented method, Adam at ``--augmented-learning-rate`` (the authors' 0.1) on the log of
the kernel parameters, and the natural-gradient step rho_t = t^-0.51 (``step_delay`` tiny: the
first step is the batch's CAVI optimum). SEP and the peers get the same data, inducing set and
initial lengthscale and keep their usual training (``--learning-rate``, learnt inducing inputs).

    python benchmarks/time_to_accuracy.py --dataset shuttle --M 200 --minutes 3 --paper-settings \
        --libraries alphagp-augmented alphagp-sep gpflow --output tta_paper.jsonl
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import pairwise_distances

from alphagp import GPClassifier
from alphagp.data import load_mnist
from alphagp.data.streaming import column_mean_std
from alphagp.estimators import build
from alphagp.inducing import init_inducing_points

from common import append_row, base_row, benchmark_parser, parse_benchmark_args, split

PEERS = Path(__file__).resolve().parent / "peers"
LIBRARIES = ("alphagp-sep", "alphagp-ep", "alphagp-augmented", "gpflow", "gpytorch")


def problem(args) -> dict:
    """Training and test rows as every library sees them, the initial inducing points and kernel."""
    images = args.dataset in ("mnist", "fashion_mnist")
    if images:
        X, y, X_test, y_test = load_mnist(args.dataset)   # raw [0, 1] pixels, lengthscale 10 (the MNIST protocol)
        lengthscale = 10.0
    else:
        X, X_test, y, y_test = split(args.dataset, args.split)
        lengthscale = float(np.sqrt(X.shape[1]))   # alphagp's default on standardised features
    if not images or args.paper_settings:
        mean, scale = column_mean_std(X)
        scale = np.where(scale > 0, scale, 1.0)
        X, X_test = (X - mean) / scale, (X_test - mean) / scale
    classes = np.unique(y)
    y, y_test = np.searchsorted(classes, y), np.searchsorted(classes, y_test)
    C = len(classes)
    rng = np.random.default_rng(args.split)
    if args.paper_settings:
        sample = X[rng.choice(len(X), size=min(len(X), 1000), replace=False)]
        distances = pairwise_distances(sample)
        lengthscale = float(np.median(distances[np.triu_indices(len(sample), 1)]))
        Z_shared = init_inducing_points(X, C, args.M, "kmeans", True, rng)[0]
        Z = np.broadcast_to(Z_shared, (C, *Z_shared.shape)).copy()
    else:
        Z = init_inducing_points(X, C, args.M, "kmeans++", False, rng)
        Z_shared = init_inducing_points(X, C, args.M, "kmeans++", True, rng)[0]
    return {"X_train": X, "y_train": y, "X_test": X_test, "y_test": y_test, "Z": Z, "Z_shared": Z_shared,
            "n_classes": C, "lengthscale": lengthscale}


class Budget:
    """Callback: evaluates on the test rows at training times ``first``, then each time the
    training time has grown by the factor ``growth`` (log-spaced, as the curves are drawn), and
    stops at ``budget`` seconds."""

    def __init__(self, X_test, y_test, budget: float, first: float, growth: float):
        self.X_test, self.y_test = X_test, y_test
        self.budget, self.growth, self.next = budget, growth, first
        self.curve: list[dict] = []

    def __call__(self, state) -> None:
        done = state.train_seconds >= self.budget
        if state.train_seconds >= self.next or done:
            m = state.fit_so_far.evaluate(self.X_test, self.y_test)
            self.curve.append({"epoch": state.epoch, "train_seconds": state.train_seconds,
                               "test_error": m["error"], "test_nll": m["nll"]})
            self.next = state.train_seconds * self.growth
        state.stop = state.stop or done


def run_alphagp(method: str, p: dict, args) -> tuple[list[dict], dict]:
    batch = None if method == "ep" and len(p["y_train"]) <= args.ep_batch_limit else args.batch_size
    paper = args.paper_settings and method == "augmented"
    shared = args.alphagp_inducing == "shared" or paper
    learning_rate = args.augmented_learning_rate if paper else args.learning_rate
    clf = GPClassifier(method=method, n_inducing=args.M, inducing_points=p["Z_shared"] if shared else p["Z"],
                       shared_hyperparameters=shared, batch_size=batch, max_iter=100_000,
                       learning_rate=None if batch is None else learning_rate, standardize=False,
                       kernel_params={"lengthscale": p["lengthscale"]}, random_state=args.split, n_jobs=1,
                       optimize_inducing=False if paper else "auto",
                       method_params={"step_delay": 1e-9} if paper else None)
    budget = Budget(p["X_test"], p["y_test"], 60 * args.minutes, args.eval_first, args.eval_growth)
    with log_kernel_parameters(paper):
        clf.fit(p["X_train"], p["y_train"], callbacks=[budget])
    return budget.curve, {"batch_size": batch, "inducing": "shared" if shared else "per class",
                          "optimize_inducing": clf.optimize_inducing_, "learning_rate": learning_rate,
                          "settings": "paper" if paper else "alphagp"}


@contextlib.contextmanager
def log_kernel_parameters(active: bool):
    """Build the estimator's kernel with its parameters stored as logs (the authors' Adam steps
    are relative) while active; the library stores them through a softplus."""
    if not active:
        yield
        return
    original = build.ARDKernel
    build.ARDKernel = functools.partial(original, positive="log")
    try:
        yield
    finally:
        build.ARDKernel = original


def run_peer(library: str, p: dict, args) -> tuple[list[dict], dict]:
    shared = library == "gpflow" and args.gpflow_inducing == "shared"
    groups = 1 if shared else p["n_classes"]
    D = p["X_train"].shape[1]
    content = {"X_train": p["X_train"], "y_train": p["y_train"], "X_test": p["X_test"], "y_test": p["y_test"],
               "Z": p["Z_shared"] if shared else p["Z"], "n_classes": p["n_classes"],
               "lengthscale": np.full((groups, D), p["lengthscale"]) if library == "gpflow" else p["lengthscale"],
               "amplitude": np.ones(groups), "noise": np.full(groups, 0.1), "epsilon": 1e-3,
               "batch_size": args.batch_size, "learning_rate": args.learning_rate,
               "budget_seconds": 60 * args.minutes, "eval_first_seconds": args.eval_first,
               "eval_growth": args.eval_growth}
    python = PEERS / f".venv-{library}" / "bin" / "python"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "problem.npz"
        np.savez(path, **content)
        env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "TF_CPP_MIN_LOG_LEVEL": "2", "HOME": os.environ.get("HOME", "/tmp")}
        out = subprocess.run([str(python), str(PEERS / f"{library}_svgp.py"), str(path)], check=True,
                             stdout=subprocess.PIPE, text=True, env=env)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    info = {"batch_size": args.batch_size, "inducing": "shared" if shared else "per class",
            "version": result["version"]}
    return result["curve"], info


def main() -> None:
    parser = benchmark_parser(__doc__, threads=None, output="tta.jsonl")
    parser.add_argument("--dataset", default="satimage")
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--M", type=int, default=50, help="inducing points per set")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--minutes", type=float, default=2.0, help="training-time budget per library")
    parser.add_argument("--eval-first", type=float, default=0.5, help="first evaluation, training seconds")
    parser.add_argument("--eval-growth", type=float, default=1.25, help="factor between evaluation times")
    parser.add_argument("--ep-batch-limit", type=int, default=5000)
    parser.add_argument("--gpflow-inducing", choices=("shared", "per-class"), default="shared")
    parser.add_argument("--alphagp-inducing", choices=("shared", "per-class"), default="per-class",
                        help="shared: shared_hyperparameters=True, one kernel and one inducing set for all classes")
    parser.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=LIBRARIES)
    parser.add_argument("--paper-settings", action="store_true",
                        help="the logistic-softmax authors' data, inducing set and training for the augmented method")
    parser.add_argument("--augmented-learning-rate", type=float, default=0.1,
                        help="Adam's rate for the augmented method under --paper-settings")
    args = parse_benchmark_args(parser)
    torch.set_num_threads(1)
    p = problem(args)
    run_id = f"{args.dataset}-{args.split}-{time.strftime('%Y%m%dT%H%M%S')}"
    for library in args.libraries:
        try:
            if library.startswith("alphagp"):
                curve, info = run_alphagp(library.split("-")[1], p, args)
            else:
                curve, info = run_peer(library, p, args)
        except (RuntimeError, ValueError, subprocess.CalledProcessError) as err:  # recorded; the others still run
            append_row(args.output, base_row("time-to-accuracy", run=run_id, dataset=args.dataset, split=args.split,
                                             M=args.M, learning_rate=args.learning_rate, library=library,
                                             minutes=args.minutes, failed=f"{type(err).__name__}: {err}"))
            print(f"{library:12s} failed: {type(err).__name__}: {err}", flush=True)
            continue
        for point in curve:
            append_row(args.output, base_row("time-to-accuracy", run=run_id, dataset=args.dataset, split=args.split,
                                             M=args.M, library=library, minutes=args.minutes,
                                             n_train=len(p["y_train"]), **{"learning_rate": args.learning_rate, **info},
                                             paper_settings=args.paper_settings, lengthscale=p["lengthscale"], **point))
        last = curve[-1]
        print(f"{library:12s} {len(curve):3d} evaluations, final after {last['train_seconds']:.0f} s: "
              f"error {last['test_error']:.4f}, NLL {last['test_nll']:.4f}", flush=True)


if __name__ == "__main__":
    main()
