"""The ``alphagp`` command: demo, fit, predict, evaluate, methods.

Every model flag's default is the estimator's own (read from ``GPClassifier`` and the deep-GP
estimators, so the help cannot drift from them); a flag that is not given is not passed, a flag
that does not apply to the model being fitted is an error, and no value is replaced.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

DESCRIPTION = ("Scalable Gaussian-process classification with calibrated probabilities: fit a model on a "
               "CSV/TSV or LIBSVM file, predict, evaluate, or run the demo on bundled data.")


# ---------------------------------------------------------------------- argument types
def _number(kind, low=None, high=None, low_open=False, what=None, high_open=False):
    """An argparse type: ``kind`` (int or float) within [low, high] (``low_open``: above ``low``;
    ``high_open``: below ``high``)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if (kind is float and not np.isfinite(value)) or (low is not None and (
                value < low or (low_open and value == low))) or (high is not None and (
                value > high or (high_open and value == high))):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
        return value
    return parse


_POSITIVE_INT = _number(int, 1, what="a positive integer")
_POSITIVE = _number(float, 0.0, low_open=True, what="positive")
_NON_NEGATIVE = _number(float, 0.0, what="zero or positive")
_UNIT = _number(float, 0.0, 1.0, low_open=True, what="in (0, 1]")
_PROBABILITY = _number(float, 0.0, 1.0, what="in [0, 1)", high_open=True)
_OPEN_UNIT = _number(float, 0.0, 1.0, low_open=True, high_open=True, what="in (0, 1)")


def _unit_or(word: str):
    """An argparse type: a number in (0, 1] or ``word`` (any case)."""
    def parse(text: str):
        if text.lower() == word:
            return word
        try:
            return _UNIT(text)
        except argparse.ArgumentTypeError as err:
            raise argparse.ArgumentTypeError(f"{err} (or {word!r})") from None
    return parse


#: ``--learning-rate-decay``: a factor in (0, 1] or ``cosine``; ``--alpha``: a power in (0, 1] or
#: ``auto`` (cross-validated; GPClassifier)
_learning_rate_decay, _alpha = _unit_or("cosine"), _unit_or("auto")


def _early_stopping(text: str):
    """``auto``, ``true`` or ``false`` (any case) as the estimator's value."""
    value = {"auto": "auto", "true": True, "false": False}.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"must be auto, true or false, got {text!r}")
    return value


def _alpha_grid(text: str) -> list[float]:
    """Comma-separated values in (0, 1], e.g. ``0.1,0.5,1``."""
    values = [_UNIT(part.strip()) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated values in (0, 1], got {text!r}")
    return values


def _distributed(text: str):
    """``false``, ``true`` or ``rows`` (any case) as the estimators' ``distributed``."""
    value = {"false": False, "true": True, "rows": "rows"}.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"must be false, true or rows, got {text!r}")
    return value


def _inducing_points(text: str) -> np.ndarray:
    """Inducing inputs from a ``.npy`` file (``[M, D]`` or ``[C, M, D]``; read without pickle)."""
    from .paths import check_readable_file
    try:
        return np.load(check_readable_file(text, ".npy file"), allow_pickle=False)
    except OSError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text} is not a .npy array file of numbers: {err}") from None


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({err}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"n_samples\": 2000}}', got {text!r}")
    return value


def _kernel(text: str):
    """``auto`` or a kernel term in its text form (:func:`~alphagp.kernel_terms.parse_term`)."""
    if text == "auto":
        return text
    from .kernel_terms import parse_term
    try:
        return parse_term(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _class_weight(text: str):
    """``balanced`` or a JSON object of label -> weight (labels as the data file writes them)."""
    if text == "balanced":
        return text
    try:
        value = _json_object(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected 'balanced' or a JSON object such as '{{\"1\": 5}}' (label: "
                                         f"weight), got {text!r}") from None
    bad = {k: v for k, v in value.items()
           if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v < float("inf")}
    if bad:       # JSON's NaN and Infinity parse to floats: refused here too
        raise argparse.ArgumentTypeError(f"class weights must be finite non-negative numbers, got {bad}")
    return value


def _labelled_class_weight(class_weight, y: np.ndarray):
    """``class_weight`` with a JSON object's keys (strings) turned into the labels of ``y`` they
    write; a key that names no label is a ``ValueError``."""
    if not isinstance(class_weight, dict):
        return class_weight
    labels = {str(label): label for label in np.unique(y).tolist()}
    unknown = [k for k in class_weight if k not in labels]
    if unknown:
        raise ValueError(f"--class-weight names classes not in the data: {unknown}; the classes are "
                         f"{sorted(labels)}")
    return {labels[k]: float(v) for k, v in class_weight.items()}


# ---------------------------------------------------------------------- model flags
#: flag destination -> estimator parameter, for the flags that every estimator takes
_COMMON = {"alpha": "alpha", "n_inducing": "n_inducing", "batch_size": "batch_size", "max_iter": "max_iter",
           "max_time": "max_time", "early_stopping": "early_stopping", "validation_fraction": "validation_fraction",
           "learning_rate": "learning_rate", "learning_rate_decay": "learning_rate_decay", "tol": "tol",
           "n_iter_no_change": "n_iter_no_change", "checkpoint": "checkpoint", "dtype": "dtype",
           "device": "device", "distributed": "distributed", "class_weight": "class_weight",
           "categorical_features": "categorical_features"}
#: flag destination -> (estimator parameter, value it gives), for GPClassifier's flags
#: (the parameters without a flag here get one from their constraints: :func:`_generated`)
_GP_ONLY = {"method": ("method", None), "shared_hyperparameters": ("shared_hyperparameters", True),
            "fixed_hyperparameters": ("optimize_hyperparameters", False),
            "fixed_inducing": ("optimize_inducing", False), "no_standardize": ("standardize", False),
            "alpha_grid": ("alpha_grid", None), "kernel": ("kernel", None),
            "inducing_points": ("inducing_points", None), "ordinal": ("ordinal", None), "grades": ("grades", None)}
#: flag destination -> deep-GP parameter
_DEEP_ONLY = {"hidden": "n_hidden", "samples": "n_samples", "predict_samples": "n_predict_samples",
              "first_layer_kernel": "first_layer_kernel", "hidden_mean_scale": "hidden_mean_scale"}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _generated() -> dict[str, str]:
    """flag destination -> GPClassifier parameter, for the parameters without a flag of their own
    above: each gets ``--<parameter-name>``, its values and their check from the parameter's
    ``_parameter_constraints`` and its help from the class docstring (:func:`_generated_flags`), so a
    new option of the estimator is a flag without an edit of this module."""
    from . import GPClassifier
    covered = {*_COMMON.values(), *(param for param, _ in _GP_ONLY.values()), "n_jobs", "random_state", "verbose"}
    return {name: name for name in GPClassifier().get_params() if name not in covered}


def _constrained(flag: str, constraints: list):
    """argparse's ``type`` for a flag of a parameter with scikit-learn's ``constraints``: the first
    constraint the text satisfies gives its value (``none``: ``None``; ``true``/``false``: a boolean;
    a number in an ``Interval``; one of ``StrOptions``; a JSON object for ``dict``; the text for
    ``str``); otherwise one line that says what the flag takes."""
    from numbers import Integral

    from .constraints import Interval, StrOptions

    def parse(text: str):
        lowered = text.strip().lower()
        for constraint in constraints:
            if constraint is None and lowered == "none":
                return None
            if constraint == "boolean" and lowered in ("true", "false"):
                return lowered == "true"
            if isinstance(constraint, StrOptions) and text in constraint.options:
                return text
            if isinstance(constraint, Interval):
                try:
                    value = (int if issubclass(constraint.type, Integral) else float)(text)
                except ValueError:
                    continue
                if constraint.is_satisfied_by(value):
                    return value
            if constraint is dict:
                try:
                    value = json.loads(text)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    return value
            if constraint is str:
                return text
        said = "; or ".join("none" if c is None else "true or false" if c == "boolean" else "a JSON object"
                            if c is dict else str(c) for c in constraints)
        raise argparse.ArgumentTypeError(f"{flag} takes {said}; got {text!r}")
    return parse


def _parameter_help(cls, name: str) -> str:
    """The first sentence of parameter ``name``'s entry in ``cls``'s docstring (numpydoc's
    ``name : type`` line and its indented text), its literals' backquotes dropped."""
    lines = (cls.__doc__ or "").splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(f"{name} :"):
            indent = len(line) - len(line.lstrip())
            text = []
            for follow in lines[i + 1:]:
                if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                    break
                text.append(follow.strip())
            plain = " ".join(text).replace("``", "")
            sentence = re.split(r"(?<!e\.g)(?<!i\.e)\. ", plain)[0].rstrip(".")
            return sentence or name.replace("_", " ")
    return name.replace("_", " ")


def _generated_flags(group, defaults: dict) -> None:
    """The flags of :func:`_generated` in ``group``, each help with the estimator's default (and the
    choices of a parameter of options alone); a flag not given is absent from the arguments (so
    ``none`` given is told from a flag left out)."""
    from . import GPClassifier
    from .constraints import StrOptions
    for dest, param in _generated().items():
        flag = _flag(dest)
        constraints = GPClassifier._parameter_constraints[param]
        options = [o for c in constraints if isinstance(c, StrOptions) for o in sorted(c.options)]
        metavar = "{" + ",".join(options) + "}" if options and all(
            isinstance(c, StrOptions) or c is None for c in constraints) else None
        group.add_argument(flag, dest=dest, type=_constrained(flag, constraints), metavar=metavar,
                           default=argparse.SUPPRESS, help=f"{_parameter_help(GPClassifier, param)} (default: {defaults[param]!r}; "
                                              "not with --layers)")


def _defaults() -> tuple[dict, dict]:
    from . import DeepGPClassifier, GPClassifier
    return GPClassifier().get_params(), DeepGPClassifier().get_params()


def _add_model_options(p: argparse.ArgumentParser, regression: bool) -> None:
    """The model and training flags; each help names the default the estimator uses."""
    from .estimators.fit_plan import HIDDEN_WIDTH
    from .estimators.model_selection import DEFAULT_ALPHA_GRID
    from .kernel_terms import text_forms
    from .methods import METHODS
    gp, deep = _defaults()

    def both(name: str, gp_text=None) -> str:
        first = gp_text or gp[name]
        return f"(default: {first}; with --layers: {deep[name]})" if first != deep[name] else f"(default: {first})"

    g = p.add_argument_group("model (GPClassifier, or with --layers a deep GP)")
    g.add_argument("--method", choices=["auto", *METHODS], default=None,
                   help=f"inference method, see 'alphagp methods' (default: {gp['method']}; not with --layers)")
    g.add_argument("--alpha", type=_alpha, default=None,
                   help="power of the alpha-divergence in (0, 1]; 1 is EP; 'auto' cross-validates --alpha-grid "
                        "(not with --layers) "
                        + both("alpha", "the method's, 1 for ep/sep/rep and 0.5 for pep/apep/arpep/rpapep"))
    g.add_argument("--alpha-grid", type=_alpha_grid, default=None, metavar="A,B,...",
                   help="candidates of --alpha auto, comma-separated (default: "
                        f"{','.join(f'{a:g}' for a in DEFAULT_ALPHA_GRID)}; not with --layers)")
    g.add_argument("--kernel", type=_kernel, default=None, metavar="TERMS",
                   help=f"the covariance, terms {text_forms()} joined by + and * (rbf(columns): a lengthscale "
                        "per table column), e.g. 'rbf(columns) + linear' (default: "
                        f"{gp['kernel']}, the RBF with a lengthscale per feature; not with --layers)")
    g.add_argument("--inducing-points", type=_inducing_points, default=None, metavar="FILE.npy",
                   help="initial inducing inputs, an [M, D] or [C, M, D] array in a .npy file, in the units of "
                        "the features (default: chosen by --inducing-init; not with --layers)")
    g.add_argument("--n-inducing", type=_POSITIVE_INT, default=None,
                   help=f"inducing points per class (default: {gp['n_inducing']}; with --layers: "
                        f"{deep['n_inducing']} per unit)")
    g.add_argument("--shared-hyperparameters", action="store_true", default=None,
                   help="one kernel and one set of inducing points for all classes (not with --layers)")
    g.add_argument("--fixed-hyperparameters", action="store_true", default=None,
                   help="do not learn the kernel hyper-parameters (not with --layers)")
    g.add_argument("--fixed-inducing", action="store_true", default=None,
                   help="do not learn the inducing points (not with --layers)")
    g.add_argument("--no-standardize", action="store_true", default=None,
                   help="use the features as they are (not with --layers, which always standardises)")
    g.add_argument("--ordinal", action="store_true", default=None,
                   help="the classes are ordered grades: GPOrdinalClassifier, one latent function and learnt cut "
                        "points (method ordinal_ep unless --method names another ordinal method)")
    g.add_argument("--grades", type=_grades, default=None, metavar="G1,G2,...",
                   help="with --ordinal, the grades in their order, lowest first (default: the sorted labels, "
                        "numbers ascending; text in its characters' order, with a warning)")
    g.add_argument("--dtype", choices=["float64", "float32"], default=None,
                   help=f"floating-point type of the model {both('dtype')}")
    _generated_flags(g, gp)
    d = p.add_argument_group("deep GP (DeepGPClassifier / DeepGPRegressor)")
    d.add_argument("--layers", type=_POSITIVE_INT, default=None,
                   help="fit a deep GP with this many layers by approximate power EP "
                        "(default: none, a GPClassifier" + ("; with --regression: "
                                                            f"{deep['n_layers']}" if regression else "") + ")")
    if regression:
        d.add_argument("--regression", action="store_true", default=None,
                       help="a deep GP regressor for real targets (DeepGPRegressor)")
    d.add_argument("--hidden", type=_POSITIVE_INT, default=None,
                   help=f"units per hidden layer (default: min(D, {HIDDEN_WIDTH}); only with --layers)")
    d.add_argument("--samples", type=_POSITIVE_INT, default=None,
                   help=f"samples propagated through the layers in training (default: {deep['n_samples']}; "
                        "only with --layers)")
    d.add_argument("--predict-samples", type=_POSITIVE_INT, default=None,
                   help=f"samples of the predictive mixture (default: {deep['n_predict_samples']}; only with --layers)")
    d.add_argument("--first-layer-kernel", choices=["rbf", "polynomial", "normalized_polynomial"], default=None,
                   help=f"the first layer's kernel (default: {deep['first_layer_kernel']}; only with --layers)")
    d.add_argument("--hidden-mean-scale", type=_NON_NEGATIVE, default=None,
                   help="start each hidden unit's whitened mean from N(0, scale^2 I) "
                        f"(default: {deep['hidden_mean_scale']}; only with --layers)")
    t = p.add_argument_group("training")
    t.add_argument("--batch-size", type=_POSITIVE_INT, default=None,
                   help="mini-batch size with Adam " + both("batch_size", "all rows at once with the "
                                                            "sign-adaptive rate"))
    t.add_argument("--max-iter", type=_POSITIVE_INT, default=None,
                   help=f"epochs (batch training: iterations) {both('max_iter')}")
    t.add_argument("--learning-rate", type=_POSITIVE, default=None,
                   help="initial learning rate " + both("learning_rate", "1.0 for batch training of the EP "
                                                        "methods, 0.01 for Adam"))
    t.add_argument("--learning-rate-decay", type=_learning_rate_decay, default=None, metavar="{(0, 1],cosine}",
                   help="mini-batches: Adam's rate is multiplied by this after every epoch, or 'cosine': "
                        "annealed to 0 over the share of --max-iter or --max-time done "
                        f"{both('learning_rate_decay')}")
    t.add_argument("--max-time", type=_POSITIVE, default=None,
                   help="seconds of training (with --method auto, of the whole model selection); stops where "
                        "another step as long as the last would pass them (default: no limit)")
    t.add_argument("--early-stopping", type=_early_stopping, default=None, metavar="{auto,true,false}",
                   help="hold out --validation-fraction of the rows, stop when their NLL stops "
                                        f"improving and keep the best state {both('early_stopping')}")
    t.add_argument("--validation-fraction", type=_OPEN_UNIT, default=None,
                   help=f"held-out share of the rows for early stopping {both('validation_fraction')}")
    t.add_argument("--tol", type=_NON_NEGATIVE, default=None,
                   help="early stopping: minimum relative improvement per epoch of the held-out NLL, or "
                        "without a validation set of the objective (default: none)")
    t.add_argument("--n-iter-no-change", type=_POSITIVE_INT, default=None,
                   help=f"patience of early stopping, in epochs {both('n_iter_no_change')}")
    t.add_argument("--checkpoint", default=None,
                   help="checkpoint file; an existing one from the same data and settings is resumed (default: none)")
    t.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    t.add_argument("--device", default=None,
                   help="where the model's arithmetic runs: cpu, cuda, cuda:1, ... (default: cpu)")
    t.add_argument("--distributed", type=_distributed, default=None, metavar="{false,true,rows}",
                   help="split the fit across the processes of a torchrun launch: true splits the classes "
                        "(and rows), rows only the rows (default: false; user guide 'Distributed fits', docs/guide.md)")
    g_table = p.add_argument_group("mixed-type tables (GPClassifier)")
    g_table.add_argument("--categorical-features", choices=["from_dtype", "none"], default="from_dtype",
                         help="from_dtype: one-hot encode a CSV's text columns and impute its missing numbers with a "
                              "0/1 column marking them; none: every feature column must be numeric "
                              "(default: from_dtype)")
    t.add_argument("--class-weight", type=_class_weight, default=None, metavar="{balanced,JSON}",
                   help="class weights: 'balanced' or a JSON object of label -> weight, e.g. '{\"1\": 5}' "
                        "(default: none; classifiers only)")


def _grades(text: str) -> list[str]:
    """``--grades``: comma-separated labels, lowest first (matched to the file's labels in
    :func:`_grades_like`)."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) < 2 or any(not part for part in parts):
        raise argparse.ArgumentTypeError(f"give at least two comma-separated grades, lowest first; got {text!r}")
    return parts


def _grades_like(grades: list[str], y) -> list:
    """``--grades`` as the labels ``y`` of the file are: numbers where the target column is numeric
    (a grade that is not a number is then a one-line error), else text."""
    if not np.issubdtype(np.asarray(y).dtype, np.number):
        return grades
    try:
        values = [float(g) for g in grades]
    except ValueError:
        raise ValueError(f"--grades {','.join(grades)}: the target column holds numbers, so the grades must be "
                         "numbers (or read the labels as text with --text-labels)") from None
    return [int(v) if v.is_integer() else v for v in values]      # 1.5 stays 1.5: never truncated to a label


def _make_estimator(args):
    """A :class:`GPClassifier`, or with ``--layers`` (``--regression``) a deep-GP classifier (regressor),
    with the flags that were given; the estimator supplies the rest of its defaults."""
    from . import DeepGPClassifier, DeepGPRegressor, GPClassifier

    def given(dest):
        return getattr(args, dest, None) is not None

    regression = bool(getattr(args, "regression", None))
    deep = args.layers is not None or regression
    if regression and given("class_weight"):
        raise ValueError("--class-weight applies to classifiers, not to --regression")
    wrong = [_flag(dest) for dest in (_GP_ONLY if deep else _DEEP_ONLY) if given(dest)]
    wrong = sorted(wrong + [_flag(dest) for dest in _generated() if deep and hasattr(args, dest)])
    if wrong:
        raise ValueError(f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to a deep GP "
                         "(--layers/--regression)" if deep else
                         f"{', '.join(wrong)} {'applies' if len(wrong) == 1 else 'apply'} only to a deep GP; "
                         "add --layers")
    params = {param: getattr(args, dest) for dest, param in _COMMON.items() if given(dest)}
    if params.get("categorical_features") == "none":
        params["categorical_features"] = None
    params.update(n_jobs=args.n_jobs, verbose=not args.quiet, random_state=args.seed)
    if deep:
        params.update({param: getattr(args, dest) for dest, param in _DEEP_ONLY.items() if given(dest)})
        if args.layers is not None:
            params["n_layers"] = args.layers
        return (DeepGPRegressor if regression else DeepGPClassifier)(**params)
    for dest, (param, value) in _GP_ONLY.items():
        if given(dest):
            params[param] = getattr(args, dest) if value is None else value
    params.update({param: getattr(args, dest) for dest, param in _generated().items() if hasattr(args, dest)})
    ordinal = params.pop("ordinal", False)
    if "grades" in params and not ordinal:
        raise ValueError("--grades gives the order of ordered classes; add --ordinal")
    if ordinal:
        from . import GPOrdinalClassifier
        return GPOrdinalClassifier(**params)
    return GPClassifier(**params)


def _describe(clf) -> str:
    if hasattr(clf, "n_layers"):
        return f"a {clf.n_layers}-layer {type(clf).__name__} (alpha-divergence EP)"
    if hasattr(clf, "method_"):
        from .estimators.fit_plan import fitted_settings
        return f"{type(clf).__name__}(" + ", ".join(f"{k}={v!r}" for k, v in fitted_settings(clf.fit_plan_).items()) + ")"
    return f"{type(clf).__name__}(method={clf.method!r})"


def _print_selection(clf) -> None:
    """What ``method="auto"`` tried: each candidate's held-out NLL and seconds, the chosen marked."""
    from .estimators.held_out_schemes import said_of
    results = getattr(clf, "cv_results_", None)
    if not results:
        return
    print(f"  method='auto' chose {clf.candidate_}; held-out NLL {said_of(clf.selection_scheme_)}:")
    folds = sorted(k for k in results if k.startswith("split") and k.endswith("_test_nll"))
    for i, (name, nll, seconds, rank) in enumerate(zip(results["candidate"], results["mean_test_nll"],
                                                       results["mean_fit_time"], results["rank_test_nll"])):
        scored = [float(results[k][i]) for k in folds if np.isfinite(results[k][i])]
        if len(scored) == len(folds):
            score = f"{nll:.4f}"
        elif scored:        # raced out: the mean of the folds it was scored on (older files: NaN), then dropped
            score = (f"{np.mean(scored):.4f} on {len(scored)} of {len(folds)} fold{'s' * (len(folds) != 1)}, then "
                     "dropped (racing)")
        else:
            score = "not scored (the budget was spent)"
        time_cell = f"{seconds:.1f} s a fit" if np.isfinite(seconds) else "no fit"
        print(f"    {'*' if rank == 1 else ' '} {name:<18} {score}  ({time_cell})")


def _print_metrics(metrics: dict, seconds: float | None = None) -> None:
    for key, value in metrics.items():
        print(f"  test {key:<6} {value:.4f}")
    if seconds is not None:
        print(f"  train time {seconds:.2f} s")


# ---------------------------------------------------------------------- commands
def cmd_demo(args) -> int:
    from sklearn.model_selection import train_test_split

    from .data import load_bundled
    X, y = load_bundled("vehicle")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.1, random_state=args.seed, stratify=y)
    clf = _make_estimator(args)
    print(f"alphagp demo: {_describe(clf)} on the bundled Vehicle data (UCI; {len(Xtr)} train / "
          f"{len(Xte)} test rows, {X.shape[1]} features, {len(np.unique(y))} classes)")
    start = time.perf_counter()
    clf.fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    schedule = f"{clf.n_iter_} " + ("epochs of mini-batches" if clf.fit_plan_.mini_batches else "batch iterations")
    print(f"  fitted: {_describe(clf)}, {schedule}")
    _print_selection(clf)
    _print_metrics(clf.evaluate(Xte, yte), seconds)
    if not hasattr(clf, "n_skipped_updates_"):   # a deep GP
        return 0
    print(f"  objective  {clf.history_[-1]['objective']:.2f}  (the method's estimate of the log marginal "
          "likelihood, log Z_q)")
    skipped = clf.n_skipped_updates_ + clf.n_improper_cavities_
    if skipped:
        made = clf.n_iter_ * len(ytr) * len(clf.classes_)                 # one update per (row, class) and epoch
        print(f"  EP updates skipped: {skipped} of about {made} made ({skipped / made:.2%}): an update that would "
              "have left the approximation invalid is not applied (user guide 'Diagnostics', docs/guide.md)")
    return 0


def cmd_fit(args) -> int:
    from .data import read_file
    from .paths import check_writable
    clf = _make_estimator(args)
    clf._validate_params()
    check_writable(args.model)                    # before the fit, not after it
    if args.checkpoint:
        check_writable(args.checkpoint, "fit.ckpt")
    if Path(args.data).suffix.lower() in (".libsvm", ".svm", ".svmlight") and hasattr(clf, "check_fit_size"):
        from .data import read_libsvm  # what the fit would need, before the rows are made dense
        sparse, labels = read_libsvm(args.data, zero_based=args.zero_based, dense=False)
        clf.check_fit_size(sparse.shape[0], sparse.shape[1], labels)
    if args.weight_column is not None:
        _check_weight_text(args.data, args.weight_column, args.target)
    X, y = read_file(args.data, args.target, zero_based=args.zero_based,
                     mixed=getattr(clf, "categorical_features", None) is not None, text_labels=args.text_labels)
    weight = None
    if args.weight_column is not None:
        weight = _weight_column(X, args.weight_column, args.data, args.target)
    if args.class_weight is not None:
        clf.set_params(class_weight=_labelled_class_weight(args.class_weight, y))
    if getattr(clf, "grades", None) is not None:
        clf.set_params(grades=_grades_like(clf.grades, y))
    start = time.perf_counter()
    clf.fit(X, y, sample_weight=weight)
    clf.save(args.model)
    weights = "" if getattr(clf, "class_weight", None) is None else f", class weights {clf.class_weight!r}"
    print(f"fitted {_describe(clf)} on {len(y)} rows and {X.shape[1]} features{weights} in "
          f"{time.perf_counter() - start:.2f} s; saved to {args.model}")
    from .methods import ordinal_methods
    if getattr(clf, "method_", None) in ordinal_methods():           # ordered classes: say their order
        given = "as --grades gives" if getattr(clf, "grades", None) is not None else \
            "sorted: no --grades was given, and --grades sets another order"
        print(f"  grades, lowest first ({given}): {', '.join(map(str, clf.classes_))}")
    _print_selection(clf)
    return 0


def _check_weight_text(path, name: str, target: str) -> None:
    """Before a CSV/TSV file is read as features: a ``--weight-column`` that holds text is an error
    about the weights (not about a non-numeric feature column); other files and names that are
    not a column are left to the reading and to :func:`_weight_column`."""
    import pandas as pd
    if name == target or Path(path).suffix.lower() in (".libsvm", ".svm", ".svmlight"):
        return                                  # the target: _weight_column says so
    from .data import separator
    try:
        column = pd.read_csv(path, sep=separator(path), usecols=[name])[name]
    except (ValueError, OSError):
        return
    text = pd.to_numeric(column, errors="coerce").isna() & column.notna()
    if text.any():
        row = int(np.flatnonzero(text.to_numpy())[0])
        raise ValueError(f"--weight-column {name!r} must hold finite non-negative numbers; row {row} (counted from 0, the first below the header, as every row number alphagp prints) holds "
                         f"the text {column.iloc[row]!r}")


def _weight_column(X, name: str, path, target: str):
    """The row weights ``[N]`` of column ``name`` of the file's features ``X`` (removed from them),
    checked with one-line errors that name the column and the first bad row."""
    if name == target:
        raise ValueError(f"--weight-column {name!r} is the target column (--target); name a column of row weights")
    if name not in X.columns:
        raise ValueError(f"--weight-column {name!r} is not a column of {path}; its columns: {list(X.columns)[:20]}")
    values = _as_numbers(X.pop(name))
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if len(bad):
        raise ValueError(f"--weight-column {name!r} must hold finite non-negative numbers; row {bad[0]} (counted from 0, the first below the header, as every row number alphagp prints) "
                         f"holds {float(values[bad[0]])}" + (f" ({len(bad)} such rows)" if len(bad) > 1 else ""))
    if not np.any(values > 0):
        raise ValueError(f"--weight-column {name!r} is 0 in every row; at least one row needs a positive weight")
    return values


def _as_numbers(column) -> np.ndarray:
    """A column's values as float64 (text that is not a number: NaN)."""
    import pandas as pd
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)


def cmd_update(args) -> int:
    """Continue a saved model on new rows (``partial_fit``) and save it in place."""
    from .paths import check_writable
    check_writable(args.model)
    clf = _load_model(args.model)
    if not hasattr(clf, "partial_fit"):
        from .estimators.streams import streaming_methods
        what = f"a {type(clf).__name__}" + (f" of method {clf.method_!r}" if hasattr(clf, "method_") else "")
        raise ValueError(f"{args.model} holds {what}, which cannot take new rows; the methods that stream (fit "
                         f"with one of them to update): {', '.join(streaming_methods())}")
    X, y, weight = _read_for(clf, args, weight_column=args.weight_column)
    start = time.perf_counter()
    clf.partial_fit(X, y, sample_weight=weight)
    clf.save(args.model)
    print(f"updated {_describe(clf)} with {len(y)} rows in {time.perf_counter() - start:.2f} s "
          f"(update {clf.n_iter_}); saved to {args.model}")
    return 0


def _load_model(path):
    """The estimator stored in ``path``, of whichever kind it declares."""
    from . import DeepGPClassifier, DeepGPRegressor, GPClassifier, serialization
    from .estimators import GPOrdinalClassifier, model_file
    from .estimators.gp_classifier import MODEL_KIND
    kinds = {MODEL_KIND: GPClassifier, **{cls.MODEL_KIND: cls for cls in (DeepGPClassifier, DeepGPRegressor,
                                                                          GPOrdinalClassifier)}}
    content = serialization.read(path, tuple(kinds))       # one read: a file replaced meanwhile is never mixed
    return model_file.read(kinds[content["__kind__"]], path, content)


def _read_for(clf, args, labels_used: bool = True, weight_column: str | None = None):
    """Features of ``args.data`` in the columns ``clf`` was fitted on (matched by name), and labels
    (``labels_used=False``: a prediction, which only drops them); with ``weight_column``, also the
    rows' weights from that column (not a feature)."""
    from .data import align_columns, read_file
    if weight_column is not None:
        _check_weight_text(args.data, weight_column, args.target)
    X, y = read_file(args.data, args.target, n_features=clf.n_features_in_, zero_based=args.zero_based,
                     mixed=hasattr(clf, "table_encoding_"), text_labels=getattr(args, "text_labels", False),
                     labels_used=labels_used)
    weight = None if weight_column is None else _weight_column(X, weight_column, args.data, args.target)
    X = align_columns(X, getattr(clf, "feature_names_in_", None), args.data)
    return X, y, weight


def cmd_predict(args) -> int:
    from .paths import check_writable
    if args.output:
        check_writable(args.output, "predictions.csv")
    clf = _load_model(args.model)
    X, _, _ = _read_for(clf, args, labels_used=False)
    if not hasattr(clf, "predict_proba"):
        mean, std = clf.predict(X, return_std=True)
        with open(args.output, "w") if args.output else contextlib.nullcontext(sys.stdout) as out:
            out.write("prediction,std\n")
            for m, s in zip(mean, std):
                out.write(f"{m:.6g},{s:.6g}\n")
        return 0
    proba = clf.predict_proba(X)
    grades = hasattr(clf, "predict_median")          # an ordinal model: its median and mean grade too
    extra = [clf.predict_median(X), clf.predict_mean(X)] if grades else []
    # the mean of grades that are not numbers is a position among them (0 the lowest), and says so
    mean_name = "mean_grade" if np.issubdtype(np.asarray(clf.classes_).dtype, np.number) else "mean_grade_position"
    with open(args.output, "w") if args.output else contextlib.nullcontext(sys.stdout) as out:
        out.write(",".join(["prediction", *(["median_grade", mean_name] if grades else []),
                            *[f"p_{c}" for c in clf.classes_]]) + "\n")
        for i, (label, row) in enumerate(zip(clf.classes_[np.argmax(proba, 1)], proba)):
            cells = [str(extra[0][i]), f"{extra[1][i]:.6g}"] if grades else []
            out.write(",".join([str(label), *cells] + [f"{p:.6g}" for p in row]) + "\n")
    return 0


def cmd_evaluate(args) -> int:
    from .paths import check_writable
    clf = _load_model(args.model)
    if args.plot:
        if not hasattr(clf, "predict_proba"):
            raise ValueError("--plot draws a reliability diagram, which needs a classifier")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError("--plot needs matplotlib: pip install matplotlib") from None
        check_writable(args.plot, "reliability.png")
    if args.weight_column is not None and "sample_weight" not in inspect.signature(clf.evaluate).parameters:
        raise ValueError(f"--weight-column weights the metrics of a classifier; {args.model} holds a "
                         f"{type(clf).__name__}, whose evaluation takes no weights")
    X, y, weight = _read_for(clf, args, weight_column=args.weight_column)
    metrics = clf.evaluate(X, y) if weight is None else clf.evaluate(X, y, sample_weight=weight)
    if args.plot:
        from .calibration import predicted_probabilities, reliability_curve
        from .plotting import plot_reliability
        plot_reliability(reliability_curve(*predicted_probabilities(clf, X, y)), args.plot,
                         title=f"{getattr(clf, 'method_', type(clf).__name__)} on {Path(args.data).name}")
    if args.json:
        print(json.dumps(metrics))
    else:
        print(f"{args.model} on {args.data} ({len(y)} rows):")
        _print_metrics(metrics)
    return 0


def cmd_methods(args) -> int:
    from .methods import method_table
    table = method_table()
    if args.markdown:
        print("| method | what it is | method_params (defaults) |\n| --- | --- | --- |")
        for name, summary, own in table:
            print(f"| `{name}` | {summary} | {own.replace('=', ' = ') if own else '-'} |")
        return 0
    width = max(len(name) for name, _, _ in table)
    for name, summary, own in table:
        print(f"{name:<{width}}  {summary}")
        if own:
            print(f"{'':<{width}}  method_params: {own}")
    return 0


# ---------------------------------------------------------------------- the parser
class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends each option's default unless its help already states one or it is required."""

    def _get_help_string(self, action):
        if action.required or "default" in (action.help or "") or action.default is None:
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


def _add_text_labels(p: argparse.ArgumentParser) -> None:
    p.add_argument("--text-labels", action="store_true",
                   help="read the target column as text, so that labels such as 'None' or 'NA', which pandas reads "
                        "as missing, are labels (an empty cell is still a missing label, an error)")


def _add_zero_based(p: argparse.ArgumentParser) -> None:
    p.add_argument("--zero-based", action="store_true",
                   help="a LIBSVM file numbers its features from 0 (scikit-learn's dump_svmlight_file default), "
                        "not from 1 as LIBSVM does; give it at fit and at predict/evaluate alike")


class _OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line, as every other error of the command is: the
    message and where the usage is, not the usage itself."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The ``alphagp`` command's parser. With the command line ``argv``, the model flags (whose help
    reads the estimators' defaults, which imports PyTorch) are added only to the command it names
    (``demo`` or ``fit``), so ``alphagp --help`` and the other commands answer without them."""
    from .version import __version__
    named = None if argv is None else {a for a in argv if a in ("demo", "fit", "update", "predict", "evaluate",
                                                                 "methods")}

    def model_options(p, command, regression):
        if named is None or command in named:
            _add_model_options(p, regression=regression)

    fmt = _HelpFormatter
    parser = _OneLineParser(prog="alphagp", description=DESCRIPTION, parents=[_global_options(True)],
                            formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"alphagp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    common = dict(parents=[_global_options(False)], formatter_class=fmt)

    demo = sub.add_parser("demo", help="train on bundled real data and print test metrics", **common)
    model_options(demo, "demo", regression=False)
    demo.set_defaults(func=cmd_demo)

    fit = sub.add_parser("fit", help="fit a model on a CSV/TSV or LIBSVM file", **common)
    fit.add_argument("--data", required=True,
                     help="training file: CSV/TSV with a header row (optionally .gz) or LIBSVM (.libsvm, .svm; "
                          "features numbered from 1). The column names are stored in the model")
    fit.add_argument("--target", default="target", help="label column of a CSV/TSV file")
    _add_text_labels(fit)
    fit.add_argument("--weight-column", default=None, metavar="NAME",
                     help="a CSV/TSV column of non-negative row weights (fit's sample_weight; not a feature)")
    _add_zero_based(fit)
    fit.add_argument("--model", required=True, help="where to save the fitted model (a data-only safetensors file)")
    model_options(fit, "fit", regression=True)
    fit.set_defaults(func=cmd_fit)

    update = sub.add_parser("update", help="continue a saved model on new rows (partial_fit) and save it in place",
                            **common)
    update.add_argument("--model", required=True, help="model file written by 'alphagp fit' (rewritten)")
    update.add_argument("--data", required=True, help="the new rows: CSV/TSV with a header row, or LIBSVM")
    update.add_argument("--target", default="target", help="label column of a CSV/TSV file")
    update.add_argument("--weight-column", default=None, metavar="NAME",
                        help="a CSV/TSV column of non-negative row weights (partial_fit's sample_weight; not a "
                             "feature)")
    _add_text_labels(update)
    _add_zero_based(update)
    update.set_defaults(func=cmd_update)

    pred = sub.add_parser("predict", help="class probabilities (an ordinal model's median and mean grade too; a "
                          "regressor's mean and std) for a file", **common)
    pred.add_argument("--model", required=True, help="model file written by 'alphagp fit'")
    pred.add_argument("--data", required=True,
                      help="CSV/TSV or LIBSVM file; CSV/TSV columns are matched to the model's by name")
    pred.add_argument("--target", default=None, help="label column to drop, if the file has one")
    _add_text_labels(pred)
    _add_zero_based(pred)
    pred.add_argument("--output", default=None, help="CSV file (default: standard output)")
    pred.set_defaults(func=cmd_predict)

    ev = sub.add_parser("evaluate", help="error, NLL, ECE and Brier score on a labelled file", **common)
    ev.add_argument("--model", required=True, help="model file written by 'alphagp fit'")
    ev.add_argument("--data", required=True,
                    help="labelled CSV/TSV or LIBSVM file; CSV/TSV columns are matched to the model's by name")
    ev.add_argument("--target", default="target", help="label column of a CSV/TSV file")
    _add_text_labels(ev)
    _add_zero_based(ev)
    ev.add_argument("--weight-column", default=None, metavar="NAME",
                    help="a CSV/TSV column of non-negative row weights: the metrics are weighted means (not a "
                         "feature; the column a model was fitted with --weight-column on)")
    ev.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ev.add_argument("--plot", default=None, metavar="FILE.png",
                    help="also write a reliability diagram and confidence histogram there (needs matplotlib)")
    ev.set_defaults(func=cmd_evaluate)

    methods = sub.add_parser("methods", help="list the inference methods and their method_params", **common)
    methods.add_argument("--markdown", action="store_true", help="as a Markdown table (the README's)")
    methods.set_defaults(func=cmd_methods)
    return parser


@contextlib.contextmanager
def _one_line_warnings(command: str):
    """Warnings printed as ``alphagp CMD: warning: ...`` lines, without source lines."""
    def show(message, _category, _filename, _lineno, file=None, _line=None):
        print(f"alphagp {command}: warning: {message}", file=file or sys.stderr)
    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def main(argv=None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:     # at once: nothing to import
        from .version import __version__
        print(f"alphagp {__version__}")
        raise SystemExit(0)                                           # as argparse's version action exits
    args = build_parser(list(sys.argv[1:] if argv is None else argv)).parse_args(argv)
    from .numerics import CholeskyError  # after the parse: --help needs neither PyTorch nor a model
    from .threads import torch_threads
    try:
        with _one_line_warnings(args.command), torch_threads(args.n_jobs):
            return args.func(args)
    except BrokenPipeError:             # the reader of the output stopped (`alphagp predict ... | head`)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python's own advice: no second error at exit
        return 0
    except (ValueError, OSError, TypeError, ImportError, ArithmeticError, CholeskyError) as err:
        print(f"alphagp {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
