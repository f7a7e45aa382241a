"""Why the default model is under-confident, and which settings fix it: a study on scikit-learn's
digits (the issue's split: 70/30 stratified, seed 0) and sets of ../shared/data (``--datasets``),
every setting scored on a validation split carved from the training rows (10 %, stratified,
seed 0). The test split is not read here.

Each configuration is a set of GPClassifier parameters (``CONFIGS``); one JSON line per
configuration goes to benchmarks/results/<output> with the validation error, NLL, ECE, mean
confidence and accuracy, the fitted kernel's noise, amplitude and median lengthscale, and the
training seconds. One thread, one configuration at a time.

    python benchmarks/defaults_study.py --threads 1 --configs default ep_noise_0.01 ...
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from study_sets import SETS

from alphagp import GPClassifier
from alphagp.data import load_benchmark
from alphagp.estimators import model_selection
from alphagp.estimators.held_out_schemes import scheme_for
from alphagp.estimators.model_selection import Candidate
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args

#: name -> GPClassifier parameters (beyond n_jobs and random_state)
CONFIGS = {
    "default": {},
    "ep_1000": {"max_iter": 1000},
    "ep_noise_0.01": {"kernel_params": {"noise": 0.01}},
    "ep_noise_0.001": {"kernel_params": {"noise": 0.001}},
    "ep_noise_0.01_1000": {"kernel_params": {"noise": 0.01}, "max_iter": 1000},
    "ep_fixed_hyper": {"optimize_hyperparameters": False},
    "ep_M_125": {"n_inducing": 125},
    "ep_kmeans": {"inducing_init": "kmeans++"},
    "pep_0.5": {"method": "pep", "alpha": 0.5},
    "vi_128x200": {"method": "vi", "batch_size": 128, "max_iter": 200},
    "vi_128x200_noise_0.01": {"method": "vi", "batch_size": 128, "max_iter": 200, "kernel_params": {"noise": 0.01}},
    "sep_128x200": {"method": "sep", "batch_size": 128, "max_iter": 200},
    "sep_128x200_noise_0.01": {"method": "sep", "batch_size": 128, "max_iter": 200, "kernel_params": {"noise": 0.01}},
    "vi_M25": {"method": "vi", "batch_size": 128, "max_iter": 200, "n_inducing": 25},
    "vi_M100": {"method": "vi", "batch_size": 128, "max_iter": 200, "n_inducing": 100},
    "vi_M200": {"method": "vi", "batch_size": 128, "max_iter": 200, "n_inducing": 200},
    "vi_kmeans": {"method": "vi", "batch_size": 128, "max_iter": 200, "inducing_init": "kmeans"},
    "vi_256x200": {"method": "vi", "batch_size": 256, "max_iter": 200},
    "vi_128x100": {"method": "vi", "batch_size": 128, "max_iter": 100},
    "vi_batch_1000": {"method": "vi", "max_iter": 1000, "learning_rate": 0.01},
    # validated early stopping (10 % of the fit rows, patience 10) on at every size
    "vi_es": {"method": "vi", "batch_size": 128, "max_iter": 200, "early_stopping": True,
              "inducing_init": "kmeans"},
    "sep_es": {"method": "sep", "batch_size": 128, "max_iter": 200, "early_stopping": True,
               "inducing_init": "kmeans"},
    "ep_es": {"early_stopping": True},
    "pep_es": {"method": "pep", "alpha": 0.5, "early_stopping": True},
    # the small-data default's over-fitting late (the panel): fewer iterations, patience 20
    "pep_100": {"method": "pep", "alpha": 0.5, "max_iter": 100},
    "pep_es_20": {"method": "pep", "alpha": 0.5, "early_stopping": True, "n_iter_no_change": 20},
    # n_inducing="auto" growing with N: the "auto" settings with more inducing points
    "auto_M100": {"n_inducing": 100},
    "auto_M200": {"n_inducing": 200},
}



def split(dataset: str = "digits"):
    """The fit and validation rows of ``dataset`` (scikit-learn's digits, or a set of ../shared/data):
    70 % of the rows for training (stratified, seed 0), 10 % of those held out for validation."""
    X, y = load_digits(return_X_y=True) if dataset == "digits" else load_benchmark(dataset)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return train_test_split(X_train, y_train, test_size=0.1, stratify=y_train, random_state=0)


_MINI = {"batch_size": 128, "inducing_init": "kmeans"}
#: the wide portfolio of the study of method="auto" (``--portfolio``): the library's candidates and more;
#: the default's portfolio is chosen from these by their held-out scores and seconds
WIDE = (
    Candidate("sep", {"method": "sep", **_MINI, "early_stopping": True}),
    Candidate("vi", {"method": "vi", **_MINI, "early_stopping": True}),
    Candidate("vi_cosine", {"method": "vi", **_MINI, "learning_rate_decay": "cosine", "max_iter": 100,
                            "early_stopping": False}, max_rows=2_000),
    Candidate("label_regression", {"method": "label_regression"}, max_rows=2_000),
    Candidate("pep", {"method": "pep"}, max_rows=2_000),
    Candidate("arpep", {"method": "arpep"}, max_rows=2_000),
    Candidate("rpapep", {"method": "rpapep"}, max_rows=2_000),
)
#: the levers of issue 44 as candidates of the same selection (``--portfolio levers``): natural-gradient
#: steps on VI's q, a patience of 50 epochs instead of 10, twice the inducing points
LEVERS = (
    Candidate("vi_natgrad", {"method": "vi", **_MINI, "early_stopping": True,
                             "method_params": {"natural_gradient_rate": 0.1}}),
    Candidate("vi_patience50", {"method": "vi", **_MINI, "early_stopping": True, "n_iter_no_change": 50}),
    Candidate("sep_patience50", {"method": "sep", **_MINI, "early_stopping": True, "n_iter_no_change": 50}),
    Candidate("sep_M100", {"method": "sep", **_MINI, "early_stopping": True, "n_inducing": 100}),
    Candidate("vi_M100_cosine", {"method": "vi", **_MINI, "n_inducing": 100, "learning_rate_decay": "cosine",
                                 "max_iter": 100, "early_stopping": False}, max_rows=2_000),
)
#: issue 58's kernel start: issue 44's portfolio (sep, vi with patience 50, rpapep, pep) from the
#: fixed start (sqrt(D) lengthscales, as it was) and from the regression of the labels
#: (``kernel_init="regression"``), and VI and PEP from the regression's start with the kernel held
#: fixed (only q and the inducing inputs learnt)
_ISSUE_44 = {"sep": ({"method": "sep", **_MINI, "early_stopping": True}, None),
             "vi": ({"method": "vi", **_MINI, "early_stopping": True, "n_iter_no_change": 50}, None),
             "rpapep": ({"method": "rpapep"}, 2_000), "pep": ({"method": "pep"}, 2_000)}
KERNEL_START = (
    *(Candidate(f"{name}_{start}", {**params, "kernel_init": start}, max_rows=rows)
      for start in ("fixed", "regression") for name, (params, rows) in _ISSUE_44.items()),
    Candidate("vi_regression_kernel_fixed", {**_ISSUE_44["vi"][0], "kernel_init": "regression",
                                             "optimize_hyperparameters": False}),
    Candidate("pep_regression_kernel_fixed", {**_ISSUE_44["pep"][0], "kernel_init": "regression",
                                              "optimize_hyperparameters": False}, max_rows=2_000),
)
#: issue 67's closed form: the Dirichlet GP with its kernel held at the shared Dirichlet start, over a
#: grid of alpha_eps and noise scales; issue 44's four methods from the Dirichlet start's kernel
#: (lengthscales, amplitude and noise) and today's portfolio (issue 58's), all in one selection
DIRICHLET_GRID = {"alpha_eps": (1e-1, 1e-2, 1e-3, 1e-4), "noise_scale": (1.0, 0.3, 0.1)}
CLOSED_FORM = (
    *(Candidate(f"dirichlet_{eps:g}_{scale:g}", {"method": "dirichlet", "kernel_init": "dirichlet",
                                                 "optimize_hyperparameters": False,
                                                 "method_params": {"alpha_eps": eps, "noise_scale": scale}})
      for eps in DIRICHLET_GRID["alpha_eps"] for scale in DIRICHLET_GRID["noise_scale"]),
    *(Candidate(f"{name}_dirichlet", {**params, "kernel_init": "dirichlet"}, max_rows=rows)
      for name, (params, rows) in _ISSUE_44.items()),
    *(c for c in KERNEL_START if c.name in ("rpapep_fixed", "sep_regression", "vi_regression", "pep_regression")),
)
#: issue 67, item 3 on small data: EP and power EP on the exact GP (inducing inputs at every training
#: row; a count above the rows is clipped to them) from the closed form's kernel and from the
#: regression's, beside the closed form at its default and the sparse PEP of the default
EVERY_ROW = 10**6
EP_EXACT = (
    Candidate("dirichlet_0.001_1", {"method": "dirichlet", "kernel_init": "dirichlet",
                                    "method_params": {"alpha_eps": 1e-3, "noise_scale": 1.0}}),
    Candidate("pep_regression", {"method": "pep", "kernel_init": "regression"}),
    *(Candidate(f"{method}_exact_{start}", {"method": method, "kernel_init": start, "n_inducing": EVERY_ROW})
      for method in ("ep", "pep") for start in ("dirichlet", "regression")),
)
#: issue 73: the default's portfolio of issue 67 (the closed form's grid of six points, SEP and PEP in their
#: row windows) with exact EP (one lengthscale, and one per feature) and exact power EP (alpha = 0.5), each up
#: to 2,000 pair factors, and the class frequencies
_EXACT_FACTORS = 2_000
_ISSUE_67_MINI = {"batch_size": 128, "inducing_init": "kmeans", "early_stopping": True}
EXACT_EP_STUDY = (
    *(Candidate(f"dirichlet(alpha_eps={eps:g}, noise_scale={scale:g})",
                {"method": "dirichlet", "kernel_init": "dirichlet", "method_params": {"alpha_eps": eps, "noise_scale": scale}})
      for eps in (1e-2, 1e-3, 1e-4) for scale in (1.0, 0.1)),
    Candidate("sep", {"method": "sep", **_ISSUE_67_MINI, "kernel_init": "regression"}, max_rows=1_000),
    Candidate("sep", {"method": "sep", **_ISSUE_67_MINI, "kernel_init": "regression"}, min_rows=2_000),
    Candidate("pep", {"method": "pep", "kernel_init": "regression"}, max_rows=1_000),
    *(Candidate(f"{method}(lengthscales={ls})", {"method": method, "kernel_init": "exact_ep",
                                                  "method_params": {"lengthscales": ls}}, max_factors=_EXACT_FACTORS)
      for method, ls in (("exact_ep", "one"), ("exact_ep", "ard"), ("exact_pep", "one"))),
    model_selection.FREQUENCIES,
)
PORTFOLIOS = {"wide": WIDE, "levers": LEVERS, "kernel_start": KERNEL_START, "closed_form": CLOSED_FORM,
              "ep_exact": EP_EXACT, "exact_ep": EXACT_EP_STUDY}


def main() -> None:
    parser = benchmark_parser(__doc__, output="defaults_study.jsonl")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--datasets", nargs="+", default=["digits"],
                        help="'digits' and classification sets of ../shared/data ('all': digits and SETS)")
    parser.add_argument("--levers", action="store_true",
                        help="instead of --configs: issue 58's selection-cost and capacity levers for the default "
                             "(one row per set; run_levers)")
    parser.add_argument("--portfolio", choices=list(PORTFOLIOS),
                        help="instead of --configs: method='auto''s selection over a portfolio (WIDE or LEVERS) on "
                             "each set's 70 %% training rows (cross-validation or one split, as the library does, "
                             "with the same folds for every portfolio); one row per set with every candidate's "
                             "held-out NLL and seconds")
    parser.add_argument("--skip-done", action="store_true",
                        help="with --portfolio: leave out the sets the results file has a clean row of for it")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, lambda r: (r["dataset"], r.get("portfolio"))) if args.skip_done else set()
    for dataset in (["digits", *SETS] if args.datasets == ["all"] else args.datasets):
        if args.portfolio and (dataset, args.portfolio) in done:
            continue
        (run_levers if args.levers else run_portfolio if args.portfolio else run)(dataset, args)


def run_portfolio(dataset: str, args) -> None:
    """The selection of ``method="auto"`` over the portfolio ``args.portfolio`` on the training rows
    of ``dataset`` (the panel's 70 % split); the test rows are not read."""
    from defaults_panel import load
    X, y = load(dataset)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    clf = GPClassifier(n_jobs=args.threads, random_state=0, verbose=True)
    y_idx = np.searchsorted(np.unique(y_train), y_train)
    start = time.perf_counter()
    rows = np.asarray(X_train, dtype=np.float64)
    selection = model_selection.select(model_selection.selector_of(clf, rows.shape[1]), rows, y_train, y_idx,
                                       portfolio=PORTFOLIOS[args.portfolio], race=False)
    row = {"dataset": dataset, "portfolio": args.portfolio, "n_train": len(y_train), "n_features": X_train.shape[1],
           "n_classes": len(np.unique(y_train)), "threads": args.threads, "scheme": selection.scheme,
           "chosen": selection.candidate.name, "seconds": time.perf_counter() - start,
           "cv_results": selection.cv_results,
           "kernel_starts": {k: v.to_plain() for k, v in selection.kernel_starts.items()}}
    append_row(args.output, base_row("defaults_portfolio", **row))
    print(f"{dataset:14s} chose {selection.candidate.name} ({selection.scheme}) in {row['seconds']:.1f}s", flush=True)


#: the inducing points per class tried on the winner (``--levers``) from this many fit rows
CAPACITY_ROWS = 600
CAPACITY = (100, 200)


def _val_nll(clf, X_val, y_val) -> float:
    return float(all_metrics(clf.predict_proba(X_val), np.searchsorted(clf.classes_, y_val))["nll"])


def run_levers(dataset: str, args) -> None:
    """The levers of issue 58 that change what the default's selection costs or keeps, on the
    fit and validation rows of ``dataset`` (:func:`split`; the test rows are not read):

    * ``default``: ``GPClassifier()`` (the portfolio, racing, the final refit), its validation NLL
      and seconds;
    * ``fold_average`` (cross-validated sets): the winner's models on the selection's own folds,
      their probabilities averaged, instead of the refit (it saves the refit's seconds);
    * ``first_fold``: the candidate the first fold alone would have chosen (one split instead of
      ``cv`` folds), refitted on all fit rows where it differs from the winner;
    * ``capacity`` (from :data:`CAPACITY_ROWS` fit rows): the winner refitted with
      :data:`CAPACITY` inducing points per class (the default has 50).
    """
    X_fit, X_val, y_fit, y_val = split(dataset)
    X_fit, X_val = np.asarray(X_fit, dtype=np.float64), np.asarray(X_val, dtype=np.float64)

    def timed_fit(**params):
        start = time.perf_counter()
        clf = GPClassifier(**{"n_jobs": args.threads, "random_state": 0, **params}).fit(X_fit, y_fit)
        return clf, time.perf_counter() - start

    default, seconds = timed_fit()
    results = default.cv_results_
    best = results["rank_test_nll"].index(1)
    winner = dict(results["params"][best])
    row = {"dataset": dataset, "n_fit": len(y_fit), "n_features": X_fit.shape[1], "threads": args.threads,
           "n_classes": len(np.unique(y_fit)), "scheme": default.selection_scheme_, "chosen": default.candidate_,
           "default": {"val_nll": _val_nll(default, X_val, y_val), "seconds": seconds}, "cv_results": results}
    refit, refit_seconds = timed_fit(**winner)
    row["refit"] = {"val_nll": _val_nll(refit, X_val, y_val), "seconds": refit_seconds}
    if default.selection_scheme_ == "cv":
        y_idx = np.searchsorted(default.classes_, y_fit)
        seed = int(np.random.default_rng(0).integers(2**31 - 1))
        folds = scheme_for(y_idx, default.cv, default.validation_fraction, seed).folds
        proba, fold_seconds = 0.0, 0.0
        for fold in folds:
            start = time.perf_counter()
            member = GPClassifier(**{"n_jobs": args.threads, **winner}).fit(X_fit[fold.train], y_fit[fold.train])
            fold_seconds += time.perf_counter() - start
            proba = proba + member.predict_proba(X_val) / len(folds)
        row["fold_average"] = {"val_nll": float(all_metrics(proba, np.searchsorted(default.classes_, y_val))["nll"]),
                               "seconds": fold_seconds}
        first = np.asarray(results["split0_test_nll"], dtype=float)
        pick = int(np.nanargmin(first))
        if pick == best:
            row["first_fold"] = {"chosen": results["candidate"][pick], **row["refit"]}
        else:
            clf, s = timed_fit(**results["params"][pick])
            row["first_fold"] = {"chosen": results["candidate"][pick], "val_nll": _val_nll(clf, X_val, y_val),
                                 "seconds": s}
    if len(y_fit) >= CAPACITY_ROWS:
        row["capacity"] = {}
        for m in CAPACITY:
            clf, s = timed_fit(**{**winner, "n_inducing": m})
            row["capacity"][str(m)] = {"val_nll": _val_nll(clf, X_val, y_val), "seconds": s}
    append_row(args.output, base_row("defaults_levers", **row))
    print(f"{dataset:14s} chose {row['chosen']} ({row['scheme']}): default {row['default']['val_nll']:.4f} "
          f"({seconds:.1f}s) refit {row['refit']['val_nll']:.4f} "
          + " ".join(f"{k} {row[k]['val_nll']:.4f}" for k in ("fold_average", "first_fold") if k in row)
          + " ".join(f" M{m} {v['val_nll']:.4f} ({v['seconds']:.1f}s)" for m, v in row.get("capacity", {}).items()),
          flush=True)


def run(dataset: str, args) -> None:
    X_fit, X_val, y_fit, y_val = split(dataset)
    for name in args.configs:
        params = CONFIGS[name]
        start = time.perf_counter()
        try:
            clf = GPClassifier(n_jobs=args.threads, random_state=0, **params).fit(X_fit, y_fit)
        except ValueError as err:                 # e.g. a class too small to hold out a stratified share
            print(f"{dataset:14s} {name:26s} not run: {err}", flush=True)
            continue
        seconds = time.perf_counter() - start
        proba = clf.predict_proba(X_val)
        index = np.searchsorted(clf.classes_, y_val)
        metrics = all_metrics(proba, index)
        kernel = clf.model_.kernel
        row = {"best_iteration": clf.best_iteration_, "dataset": dataset, "n_fit": len(y_fit), "n_features": X_fit.shape[1],
               "n_classes": len(np.unique(y_fit)), "config": name, "params": params, "threads": args.threads, "seconds": seconds,
               "n_iter": clf.n_iter_, **{f"val_{k}": v for k, v in metrics.items()},
               "val_mean_confidence": float(proba.max(1).mean()),
               "final_objective": clf.history_[-1]["objective"],
               "noise": kernel.noise.detach().mean().item(), "amplitude": kernel.amplitude.detach().mean().item(),
               "median_lengthscale": kernel.lengthscale.detach().median().item()}
        append_row(args.output, base_row("defaults_study", **row))
        print(f"{dataset:14s} {name:26s} err={metrics['error']:.4f} nll={metrics['nll']:.4f} ece={metrics['ece']:.4f} "
              f"conf={row['val_mean_confidence']:.3f} noise={row['noise']:.3g} amp={row['amplitude']:.3g} "
              f"ls={row['median_lengthscale']:.3g} {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
