"""The ``alphagp`` command: demo, fit, predict, evaluate."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from .parallel import torch_threads


def _float_or_none(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """One flag per estimator parameter, with the estimator's defaults (see ``GPClassifier``)."""
    from .methods import METHODS
    g = p.add_argument_group("model")
    g.add_argument("--method", choices=list(METHODS), default="ep",
                   help="inference method (see 'alphagp methods')")
    g.add_argument("--alpha", type=_float_or_none, default=None,
                   help="power of the alpha-divergence in (0, 1]; 1 is EP (default: the method's, 1 or 0.5)")
    g.add_argument("--epsilon", type=_float_or_none, default=None,
                   help="labelling-error probability of the robust-max likelihood (default: 1e-3)")
    g.add_argument("--method-params", type=json.loads, default=None,
                   help='further method arguments as JSON, e.g. \'{"n_samples": 2000}\' for gibbs')
    g.add_argument("--n-inducing", type=int, default=None,
                   help="inducing points per class (default: 50; demo: 10%% of the training rows)")
    g.add_argument("--shared-hyperparameters", action="store_true",
                   help="one kernel and one set of inducing points for all classes")
    g.add_argument("--inducing-init", choices=["random", "kmeans++"], default="random",
                   help="initial inducing points: random training rows or k-means++ seeding")
    g.add_argument("--fixed-hyperparameters", action="store_true", help="do not learn the kernel hyper-parameters")
    g.add_argument("--fixed-inducing", action="store_true", help="do not learn the inducing points")
    g.add_argument("--no-standardize", action="store_true", help="use the features as they are")
    g.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="floating-point type of the model")
    d = p.add_argument_group("deep GP (DeepGPClassifier / DeepGPRegressor)")
    d.add_argument("--layers", type=int, default=None,
                   help="fit a deep GP with this many layers by approximate power EP (default: a GPClassifier)")
    d.add_argument("--regression", action="store_true",
                   help="fit: a deep GP regressor (real targets; --layers defaults to 2)")
    d.add_argument("--hidden", type=int, default=None, help="units per hidden layer (default: min(D, 30))")
    d.add_argument("--samples", type=int, default=20, help="samples propagated through the layers in training")
    t = p.add_argument_group("training")
    t.add_argument("--batch-size", type=int, default=None,
                   help="mini-batch size with Adam (default: batch training with the sign-adaptive rate)")
    t.add_argument("--max-iter", type=int, default=250, help="epochs (batch training: iterations)")
    t.add_argument("--damping", type=_float_or_none, default=None,
                   help="EP damping in (0, 1] (default: 0.5 in batch training, 1 with mini-batches)")
    t.add_argument("--learning-rate", type=_float_or_none, default=None,
                   help="initial learning rate (default: 1.0 for batch training, 0.01 for Adam)")
    t.add_argument("--learning-rate-decay", type=float, default=1.0,
                   help="mini-batches: Adam's rate is multiplied by this after every epoch")
    t.add_argument("--tol", type=_float_or_none, default=None,
                   help="early stopping: minimum relative rise of log Z_q per epoch (default: none, no early stopping)")
    t.add_argument("--n-iter-no-change", type=int, default=10, help="patience of early stopping, in epochs")
    t.add_argument("--checkpoint", default=None,
                   help="checkpoint file; an existing one from the same data and settings is resumed")
    t.add_argument("--seed", type=int, default=0, help="random seed")


def _make_estimator(args):
    """A :class:`GPClassifier`, or with ``--layers`` a deep GP (``--regression``: the regressor)."""
    from . import DeepGPClassifier, DeepGPRegressor, GPClassifier
    if args.layers is not None or args.regression:
        cls = DeepGPRegressor if args.regression else DeepGPClassifier
        return cls(n_layers=args.layers or 2, n_hidden=args.hidden, n_inducing=args.n_inducing or 100,
                   alpha=0.5 if args.alpha is None else args.alpha, n_samples=args.samples,
                   batch_size=args.batch_size or 100, max_iter=args.max_iter,
                   learning_rate=args.learning_rate or 1e-3, learning_rate_decay=args.learning_rate_decay,
                   tol=args.tol, n_iter_no_change=args.n_iter_no_change, checkpoint=args.checkpoint,
                   dtype=args.dtype, n_jobs=args.n_jobs, verbose=not args.quiet, random_state=args.seed)
    return GPClassifier(method=args.method, alpha=args.alpha, epsilon=args.epsilon,
                        method_params=args.method_params, n_inducing=args.n_inducing or 50,
                        batch_size=args.batch_size, max_iter=args.max_iter, damping=args.damping,
                        learning_rate=args.learning_rate, learning_rate_decay=args.learning_rate_decay,
                        shared_hyperparameters=args.shared_hyperparameters, inducing_init=args.inducing_init,
                        optimize_hyperparameters=not args.fixed_hyperparameters,
                        optimize_inducing=False if args.fixed_inducing else "auto", standardize=not args.no_standardize,
                        tol=args.tol, n_iter_no_change=args.n_iter_no_change, checkpoint=args.checkpoint,
                        dtype=args.dtype, n_jobs=args.n_jobs, verbose=not args.quiet, random_state=args.seed)


def _print_metrics(metrics: dict, seconds: float | None = None) -> None:
    for key, value in metrics.items():
        print(f"  test {key:<6} {value:.4f}")
    if seconds is not None:
        print(f"  train time {seconds:.2f} s")


def cmd_demo(args) -> int:
    from sklearn.model_selection import train_test_split

    from .data import load_bundled
    X, y = load_bundled("vehicle")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.1, random_state=args.seed, stratify=y)
    m = args.n_inducing or max(1, round(0.1 * len(Xtr)))
    what = f"a {args.layers}-layer deep GP (alpha-divergence EP)" if args.layers else args.method.upper()
    print(f"alphagp demo: {what} on the bundled Vehicle data (UCI; {len(Xtr)} train / "
          f"{len(Xte)} test rows, {X.shape[1]} features, {len(np.unique(y))} classes), "
          f"M = {m} inducing points per class, {args.max_iter} batch iterations")
    args.n_inducing = m
    clf = _make_estimator(args)
    start = time.perf_counter()
    clf.fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    _print_metrics(clf.evaluate(Xte, yte), seconds)
    if not hasattr(clf, "n_skipped_updates_"):   # a deep GP
        return 0
    print(f"  log Z_q    {clf.history_[-1]['objective']:.2f}  (EP updates refused: {clf.n_skipped_updates_} "
          f"improper sites, {clf.n_improper_cavities_} improper cavities)")
    return 0


def cmd_fit(args) -> int:
    from .data import read_file
    X, y = read_file(args.data, args.target)
    clf = _make_estimator(args)
    start = time.perf_counter()
    clf.fit(X, y)
    clf.save(args.model)
    name = type(clf).__name__ if args.layers or args.regression else args.method.upper()
    print(f"fitted {name} on {len(y)} rows in {time.perf_counter() - start:.2f} s; "
          f"saved to {args.model}")
    return 0


def _load_model(path):
    """The estimator stored in ``path``, of whichever kind it declares."""
    from . import DeepGPClassifier, DeepGPRegressor, GPClassifier, serialization
    from .estimator import MODEL_KIND
    kinds = {MODEL_KIND: GPClassifier, **{cls.MODEL_KIND: cls for cls in (DeepGPClassifier, DeepGPRegressor)}}
    kind = serialization.file_kind(path)
    if kind not in kinds:
        raise serialization.ModelFileError(f"{path} holds a {kind!r}, not an alphagp model")
    return kinds[kind].load(path)


def cmd_predict(args) -> int:
    from .data import read_file
    clf = _load_model(args.model)
    X, _ = read_file(args.data, args.target)
    if not hasattr(clf, "predict_proba"):
        mean, std = clf.predict(X, return_std=True)
        with open(args.output, "w") if args.output else contextlib.nullcontext(sys.stdout) as out:
            out.write("prediction,std\n")
            for m, s in zip(mean, std):
                out.write(f"{m:.6g},{s:.6g}\n")
        return 0
    proba = clf.predict_proba(X)
    with open(args.output, "w") if args.output else contextlib.nullcontext(sys.stdout) as out:
        out.write(",".join(["prediction"] + [f"p_{c}" for c in clf.classes_]) + "\n")
        for label, row in zip(clf.classes_[np.argmax(proba, 1)], proba):
            out.write(",".join([str(label)] + [f"{p:.6g}" for p in row]) + "\n")
    return 0


def cmd_evaluate(args) -> int:
    from .data import read_file
    clf = _load_model(args.model)
    X, y = read_file(args.data, args.target)
    metrics = clf.evaluate(X, y)
    if args.plot:
        if not hasattr(clf, "predict_proba"):
            raise ValueError("--plot draws a reliability diagram, which needs a classifier")
        from .calibration import plot_reliability, predicted_probabilities, reliability_curve
        plot_reliability(reliability_curve(*predicted_probabilities(clf, X, y)), args.plot,
                         title=f"{getattr(clf, 'method', type(clf).__name__)} on {Path(args.data).name}")
    if args.json:
        print(json.dumps(metrics))
    else:
        print(f"{args.model} on {args.data} ({len(y)} rows):")
        _print_metrics(metrics)
    return 0


def cmd_methods(args) -> int:
    from .methods import METHODS
    width = max(map(len, METHODS))
    for name, spec in METHODS.items():
        print(f"{name:<{width}}  {spec.summary}")
    return 0


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends each option's default unless its help already states one or it is required."""

    def _get_help_string(self, action):
        if action.required or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _global_options(defaults: bool) -> argparse.ArgumentParser:
    """``--n-jobs`` and ``--quiet``, accepted before or after the subcommand.

    The copy given to the subcommands has no defaults (``SUPPRESS``), so a value given before
    the subcommand is not overwritten by the subcommand's default.
    """
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--n-jobs", "--threads", dest="n_jobs", type=int, default=None if defaults else argparse.SUPPRESS,
                   help="threads used by PyTorch (default: 1; -1 for all cores)")
    p.add_argument("--quiet", action="store_true", default=False if defaults else argparse.SUPPRESS,
                   help="no progress output")
    return p


def build_parser() -> argparse.ArgumentParser:
    fmt = _HelpFormatter
    parser = argparse.ArgumentParser(prog="alphagp", description=__doc__, parents=[_global_options(True)],
                                     formatter_class=fmt)
    sub = parser.add_subparsers(dest="command", required=True)
    common = dict(parents=[_global_options(False)], formatter_class=fmt)

    demo = sub.add_parser("demo", help="train on bundled real data and print test metrics", **common)
    _add_model_options(demo)
    demo.set_defaults(func=cmd_demo)

    fit = sub.add_parser("fit", help="fit a classifier on a CSV/TSV or LIBSVM file", **common)
    fit.add_argument("--data", required=True,
                     help="training file: CSV/TSV with a header row (optionally .gz) or LIBSVM (.libsvm, .svm)")
    fit.add_argument("--target", default="target", help="label column of a CSV/TSV file")
    fit.add_argument("--model", required=True, help="where to save the fitted model (a data-only safetensors file)")
    _add_model_options(fit)
    fit.set_defaults(func=cmd_fit)

    pred = sub.add_parser("predict", help="class probabilities for a file", **common)
    pred.add_argument("--model", required=True, help="model file written by 'alphagp fit'")
    pred.add_argument("--data", required=True, help="CSV/TSV or LIBSVM file with the same feature columns")
    pred.add_argument("--target", default=None, help="label column to drop, if the file has one")
    pred.add_argument("--output", default=None, help="CSV file (default: standard output)")
    pred.set_defaults(func=cmd_predict)

    ev = sub.add_parser("evaluate", help="error, NLL, ECE and Brier score on a labelled file", **common)
    ev.add_argument("--model", required=True, help="model file written by 'alphagp fit'")
    ev.add_argument("--data", required=True, help="labelled CSV/TSV or LIBSVM file")
    ev.add_argument("--target", default="target", help="label column of a CSV/TSV file")
    ev.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ev.add_argument("--plot", default=None, metavar="FILE.png",
                    help="also write a reliability diagram and confidence histogram there (needs alphagp[plot])")
    ev.set_defaults(func=cmd_evaluate)

    methods = sub.add_parser("methods", help="list the inference methods", **common)
    methods.set_defaults(func=cmd_methods)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with torch_threads(args.n_jobs):
            return args.func(args)
    except (ValueError, FileNotFoundError, TypeError) as err:
        print(f"alphagp {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
