"""The ``alphagp`` command: demo, fit, predict, evaluate."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

import numpy as np
import torch


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", choices=["ep", "sep"], default="ep")
    p.add_argument("--alpha", type=float, default=1.0, help="power of power EP in (0, 1]; 1 is EP")
    p.add_argument("--n-inducing", type=int, default=None,
                   help="inducing points per class (default: 50; demo: 10%% of the training rows)")
    p.add_argument("--batch-size", type=int, default=None, help="mini-batch size (default: batch training)")
    p.add_argument("--max-iter", type=int, default=250, help="epochs")
    p.add_argument("--learning-rate", type=float, default=None)
    p.add_argument("--learning-rate-decay", type=float, default=1.0,
                   help="mini-batches: Adam's rate is multiplied by this after every epoch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default=None, help="checkpoint file; an existing one is resumed")


def _make_classifier(args):
    from . import GPClassifier
    return GPClassifier(method=args.method, alpha=args.alpha, n_inducing=args.n_inducing or 50,
                        batch_size=args.batch_size, max_iter=args.max_iter,
                        learning_rate=args.learning_rate, learning_rate_decay=args.learning_rate_decay,
                        checkpoint=args.checkpoint,
                        verbose=not args.quiet, random_state=args.seed)


def _print_metrics(metrics: dict, seconds: float | None = None) -> None:
    for key in ("error", "nll", "ece", "brier"):
        print(f"  test {key:<6} {metrics[key]:.4f}")
    if seconds is not None:
        print(f"  train time {seconds:.2f} s")


def cmd_demo(args) -> int:
    from sklearn.model_selection import train_test_split

    from .data import load_bundled
    X, y = load_bundled("vehicle")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.1, random_state=args.seed, stratify=y)
    m = args.n_inducing or max(1, round(0.1 * len(Xtr)))
    print(f"alphagp demo: {args.method.upper()} on the bundled Vehicle data (UCI; {len(Xtr)} train / "
          f"{len(Xte)} test rows, {X.shape[1]} features, {len(np.unique(y))} classes), "
          f"M = {m} inducing points per class, {args.max_iter} batch iterations")
    args.n_inducing = m
    clf = _make_classifier(args)
    start = time.perf_counter()
    clf.fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    _print_metrics(clf.evaluate(Xte, yte), seconds)
    print(f"  log Z_q    {clf.history_[-1]['objective']:.2f}  (skipped EP updates: {clf.n_skipped_updates_})")
    return 0


def cmd_fit(args) -> int:
    from .data import read_file
    X, y = read_file(args.data, args.target)
    clf = _make_classifier(args)
    start = time.perf_counter()
    clf.fit(X, y)
    clf.save(args.model)
    print(f"fitted {args.method.upper()} on {len(y)} rows in {time.perf_counter() - start:.2f} s; "
          f"saved to {args.model}")
    return 0


def cmd_predict(args) -> int:
    from . import GPClassifier
    from .data import read_file
    clf = GPClassifier.load(args.model)
    X, _ = read_file(args.data, args.target)
    proba = clf.predict_proba(X)
    with open(args.output, "w") if args.output else contextlib.nullcontext(sys.stdout) as out:
        out.write(",".join(["prediction"] + [f"p_{c}" for c in clf.classes_]) + "\n")
        for label, row in zip(clf.classes_[np.argmax(proba, 1)], proba):
            out.write(",".join([str(label)] + [f"{p:.6g}" for p in row]) + "\n")
    return 0


def cmd_evaluate(args) -> int:
    from . import GPClassifier
    from .data import read_file
    clf = GPClassifier.load(args.model)
    X, y = read_file(args.data, args.target)
    metrics = clf.evaluate(X, y)
    if args.json:
        print(json.dumps(metrics))
    else:
        print(f"{args.model} on {args.data} ({len(y)} rows):")
        _print_metrics(metrics)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="alphagp", description=__doc__)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="train on bundled real data and print test metrics")
    _add_model_options(demo)
    demo.set_defaults(func=cmd_demo)

    fit = sub.add_parser("fit", help="fit a classifier on a CSV/TSV or LIBSVM file")
    fit.add_argument("--data", required=True)
    fit.add_argument("--target", default="target", help="label column of a CSV/TSV file")
    fit.add_argument("--model", required=True, help="where to save the fitted model")
    _add_model_options(fit)
    fit.set_defaults(func=cmd_fit)

    pred = sub.add_parser("predict", help="class probabilities for a file")
    pred.add_argument("--model", required=True)
    pred.add_argument("--data", required=True)
    pred.add_argument("--target", default=None, help="label column to drop, if the file has one")
    pred.add_argument("--output", default=None, help="CSV file (default: standard output)")
    pred.set_defaults(func=cmd_predict)

    ev = sub.add_parser("evaluate", help="error, NLL, ECE and Brier score on a labelled file")
    ev.add_argument("--model", required=True)
    ev.add_argument("--data", required=True)
    ev.add_argument("--target", default="target")
    ev.add_argument("--json", action="store_true")
    ev.set_defaults(func=cmd_evaluate)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, TypeError) as err:
        print(f"alphagp {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
