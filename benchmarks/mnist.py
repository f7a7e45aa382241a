"""MNIST with M = 200 inducing points per class, mini-batches of 200 and Adam (section 4.4).

Protocol (nothing is chosen on the test set): the last ``--validation`` training images
(default 10,000) are held out as a validation split and the model trains on the rest. Every
``--eval-every`` epochs the script evaluates the validation and the test split and appends a
row (``phase="eval"``). The model state with the lowest validation NLL is kept; when the
training-time budget or ``--max-epochs`` is reached, that state is restored and evaluated on
the test split once, written as the ``phase="selected"`` row, which also holds the mean test
metrics over the last ``--last`` evaluations. The paper reports SEP at 2.08% error and 0.0725 NLL.

    python benchmarks/mnist.py --method sep --threads 2 --max-minutes 120 --learning-rate-decay 0.95 \
        --eval-every 2 --output mnist_validated.jsonl

Any method that trains on mini-batches runs, with its alpha after a colon (issue 10's curves:
``--method sep``, ``--method pep:0.5``, ``--method vi``). ``--skip-done`` makes a queue of runs
resumable: a run whose selected row (same settings, clean tree) is in the output file is skipped.

Choosing among runs without touching the test split (issue 25): screen each configuration with
``--no-test --save-model PATH`` (the selected state of the run is saved), then

    python benchmarks/mnist.py --choose run_a.agp run_b.agp --output mnist_30min.jsonl

recomputes each saved model's validation NLL, evaluates the test split once for the lowest, and
writes a ``phase="chosen"`` row.
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from alphagp import GPClassifier
from alphagp.data import load_mnist
from alphagp.methods import METHODS

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args


def run_key(row: dict) -> tuple | None:
    """The settings that name one run (``None`` for a row other than a run's selected row)."""
    if row.get("phase", "selected") != "selected":
        return None
    return tuple(row.get(k) for k in ("method", "seed", "M", "batch_size", "n_train", "learning_rate",
                                      "learning_rate_decay", "damping", "inducing", "device", "shared_inducing_set",
                                      "inducing_init", "dtype", "max_minutes"))


def main() -> None:
    parser = benchmark_parser(__doc__, threads=2, output="mnist_validated.jsonl")
    minibatch = [name for name, spec in METHODS.items() if spec.cls.CAPABILITIES.mini_batches]
    parser.add_argument("--method", default="sep", help=f"one of {minibatch}, optionally with ':alpha'")
    parser.add_argument("--n-inducing", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--max-minutes", type=float, default=40.0, help="training-time budget")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--learning-rate-decay", type=lambda t: t if t == "cosine" else float(t), default=1.0,
                        help="Adam's rate is multiplied by this after every epoch, or 'cosine': annealed to 0 "
                             "over the training-time budget (or --max-epochs, whichever share is larger)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--save-model", default=None, help="save the selected (lowest validation NLL) model here")
    parser.add_argument("--choose", nargs="+", default=None, metavar="MODEL",
                        help="saved models: evaluate the test split once for the one of lowest validation NLL")
    parser.add_argument("--lengthscale", type=float, default=10.0,
                        help="initial lengthscale on raw [0, 1] pixels (about the typical distance "
                             "between two images; pixels are not standardised)")
    parser.add_argument("--damping", type=float, default=None,
                        help="EP damping (default 1 for the methods that damp; SEP replaces damping x |B| / N "
                             "of its tied factor per step)")
    parser.add_argument("--inducing", choices=("auto", "learn", "fixed"), default="auto",
                        help="optimize_inducing: 'auto' (the estimator's default), True or False")
    parser.add_argument("--shared", action="store_true",
                        help="shared_hyperparameters=True: one inducing set and kernel for all classes")
    parser.add_argument("--inducing-init", choices=("random", "kmeans++"), default="random")
    parser.add_argument("--test", action=argparse.BooleanOptionalAction, default=True,
                        help="--no-test: evaluate the validation split only (screening settings)")
    parser.add_argument("--validation", type=int, default=10_000,
                        help="the last this many training images form the validation split")
    parser.add_argument("--eval-every", type=int, default=2)
    parser.add_argument("--last", type=int, default=5, help="evaluations averaged in the selected row")
    parser.add_argument("--device", default="cpu", help="torch device of the model: cpu, cuda, cuda:1, ...")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-done", action="store_true",
                        help="do nothing when the output file holds this run's selected row from a clean tree")
    args = parse_benchmark_args(parser)
    X, y, Xte, yte = load_mnist()
    Xtr, ytr, Xva, yva = X[:-args.validation], y[:-args.validation], X[-args.validation:], y[-args.validation:]
    if args.choose:
        choose(args, Xva, yva, Xte, yte)
        return
    method, _, alpha = args.method.partition(":")
    clf = GPClassifier(method=method, alpha=float(alpha) if alpha else None, n_inducing=args.n_inducing,
                       batch_size=args.batch_size, max_iter=args.max_epochs, max_time=60 * args.max_minutes,
                       damping=args.damping, dtype=args.dtype, early_stopping=False,
                       learning_rate=args.learning_rate,
                       optimize_inducing={"auto": "auto", "learn": True, "fixed": False}[args.inducing],
                       learning_rate_decay=args.learning_rate_decay, standardize=False,
                       shared_hyperparameters=args.shared, inducing_init=args.inducing_init,
                       kernel_params={"lengthscale": args.lengthscale}, random_state=args.seed, n_jobs=args.threads,
                       device=args.device,
                       verbose=False)
    settings = dict(dataset="mnist", method=args.method.upper(), seed=args.seed, M=args.n_inducing,
                    batch_size=args.batch_size, n_train=len(ytr), n_validation=len(yva),
                    learning_rate=args.learning_rate, learning_rate_decay=args.learning_rate_decay,
                    damping=args.damping, inducing=args.inducing, device=args.device, selection="lowest validation NLL",
                    shared_inducing_set=args.shared, inducing_init=args.inducing_init, dtype=args.dtype,
                    max_minutes=args.max_minutes)
    if args.skip_done and run_key(settings) in done_keys(args.output, run_key):
        print(f"{args.method}: already in {args.output}, skipped", flush=True)
        return
    evaluations: list[dict] = []
    best: dict = {}

    def evaluate(state):
        if state.epoch % args.eval_every and not state.stop and state.epoch != args.max_epochs:
            return  # the last epoch is always evaluated
        if "setup_seconds" not in settings:  # fit's wall time before the first epoch (inducing-point seeding)
            settings["setup_seconds"] = time.perf_counter() - fit_start - state.train_seconds - eval_seconds[0]
        eval_start = time.perf_counter()
        so_far = state.fit_so_far                     # the model in training
        val, test = so_far.evaluate(Xva, yva), (so_far.evaluate(Xte, yte) if args.test else {})
        row = base_row("mnist-validated", phase="eval", epoch=state.epoch, train_seconds=state.train_seconds,
                       alpha=getattr(so_far.model_, "alpha", None), optimize_inducing=so_far.optimize_inducing_,
                       **{f"val_{k}": v for k, v in val.items()}, **{f"test_{k}": v for k, v in test.items()},
                       **settings)
        append_row(args.output, row)
        evaluations.append(row)
        eval_seconds[0] += time.perf_counter() - eval_start
        if not best or val["nll"] < best["val_nll"]:
            best.update(val_nll=val["nll"], epoch=state.epoch, train_seconds=state.train_seconds,
                        state=copy.deepcopy(so_far.model_.state_dict()))
        print(f"epoch {state.epoch:3d}  {state.train_seconds:8.1f} s  validation error {100 * val['error']:.2f}% "
              f"nll {val['nll']:.4f}", flush=True)

    fit_start, eval_seconds = time.perf_counter(), [0.0]
    clf.fit(Xtr, ytr, callbacks=[evaluate])  # max_time stops it; evaluate sees the stop
    clf.model_.load_state_dict(best["state"])
    if args.save_model:
        clf.save(args.save_model)
    test = clf.evaluate(Xte, yte) if args.test else {}
    last = evaluations[-args.last:]
    row = base_row("mnist-validated", phase="selected", epoch=best["epoch"], train_seconds=best["train_seconds"],
                   val_nll=best["val_nll"], alpha=getattr(clf.model_, "alpha", None),
                   optimize_inducing=clf.optimize_inducing_,
                   **{f"test_{k}": v for k, v in test.items()},
                   epochs_run=clf.n_iter_, n_last=len(last), diagnostics=clf.diagnostics_,
                   **{f"last_mean_test_{k}": float(np.mean([r[f"test_{k}"] for r in last]))
                      for k in ("error", "nll", "ece", "brier") if args.test},
                   **settings)
    append_row(args.output, row)
    print(f"selected epoch {best['epoch']} (validation NLL {best['val_nll']:.4f})"
          + (f": test error {100 * test['error']:.2f}%, NLL {test['nll']:.4f}" if args.test else ""), flush=True)


def choose(args, Xva, yva, Xte, yte) -> None:
    """Recompute the validation NLL of each saved model, evaluate the test split once for the
    lowest, and write a ``phase="chosen"`` row."""
    models = {path: GPClassifier.load(path) for path in args.choose}
    scores = {path: clf.evaluate(Xva, yva)["nll"] for path, clf in models.items()}
    for path, score in scores.items():
        print(f"{path}: validation NLL {score:.4f}", flush=True)
    chosen = min(scores, key=scores.get)
    test = models[chosen].evaluate(Xte, yte)
    append_row(args.output, base_row("mnist-validated", phase="chosen", model=chosen, validation_nll=scores,
                                     dataset="mnist", **{f"test_{k}": v for k, v in test.items()}))
    print(f"chosen {chosen}: test error {100 * test['error']:.2f}%, NLL {test['nll']:.4f}", flush=True)


if __name__ == "__main__":
    main()
