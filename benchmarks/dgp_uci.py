"""Tables C.7-C.12 of the deep-GP paper: deep GPs on UCI regression, binary and multi-class sets.

The paper's protocol: 90 % / 10 % train / test splits (regression: the published splits in
``*_splits.npz``; classification: random splits), Satellite 20 % / 80 %, Waveform 1,000 rows
30 % / 70 %, Vowel's first 6 classes; L in {2, 3, 4, 5} layers of min(D, 30) units, M = 100,
mini-batches of 100, S = 20 samples, Adam at 0.001 for 20,000 iterations; averages over 20
splits. Nothing is tuned: every (L, alpha) is fitted once per split and scored once on its test
rows. ``--iterations`` sets the budget (the results record it; epochs = iterations / batches
per epoch, rounded up) and ``--learning-rate`` Adam's rate; the rows record the energy at 20
points of the run. One JSON line per (data set, split, L, alpha) in
benchmarks/results/dgp_uci.jsonl: RMSE (regression) or error (classification) and the mean
test log-likelihood. Every fit runs the whole budget on all the training rows (no early
stopping, as the paper). ``--skip-done`` leaves out the fits whose row from a clean tree (same
set, split, L, alpha, budget and rate, the whole budget run) the output file already holds, so an
interrupted queue is resumed by running its command again. Regression rows also record the median test log-likelihood and the three test
points of lowest log-likelihood (target, predictive mean and standard deviation), which show
whether a few points dominate the mean, and the mean test log-likelihood without the test rows that
repeat a training row exactly, target included (Wine-red has 41-51 such rows in each test split);
``--save-models DIR`` keeps each fitted model's file.

    python benchmarks/dgp_uci.py --threads 2 --datasets boston kin8nm glass waveform \\
        --layers 2 --alphas 0.001 0.5 1 --splits 0 1 2 --iterations 2000
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from alphagp import DeepGPClassifier, DeepGPRegressor
from alphagp.data import data_dir, load_benchmark, read_table

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args, ran_whole_budget

REGRESSION = {"boston": "BOSTON", "power_plant": "POWER", "concrete": "CONCRETE", "energy": "ENERGY",
              "kin8nm": "KIN8NM", "naval": "NAVAL", "protein": "PROTEIN", "wine_quality_red": "WINERED", "yacht": "YACHT"}
BINARY = {"australian": "AUSTRALIAN", "ionosphere": "IONO", "pima": "PIMA", "sonar": "SONAR",
          "breast_cancer": "BREAST", "crabs": "CRABS"}
MULTICLASS = {"glass": "GLASS", "new_thyroid": "NEW-THYROID", "svmguide2": "SVMGUIDE2", "satimage": "SATELLITE",
              "vehicle": "VEHICLE", "vowel": "VOWEL", "waveform_21": "WAVEFORM", "wine": "WINE"}
TEST_FRACTION = {"satimage": 0.8, "waveform_21": 0.7}
#: the paper's name of each set (the key of its rows in tables/deep-gps-ijar2022.json)
PAPER_NAME = {**REGRESSION, **BINARY, **MULTICLASS}


def split(name: str, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test rows of split ``k`` of data set ``name`` under the paper's protocol."""
    if name in REGRESSION:
        X, y = read_table(data_dir() / f"{name}.tsv.gz")
        with np.load(data_dir() / f"{name}_splits.npz") as s:
            train, test = s[f"train_{k}"], s[f"test_{k}"]
        return X[train], X[test], y[train].astype(np.float64), y[test].astype(np.float64)
    X, y = load_benchmark(name)
    rng = np.random.default_rng(k)
    if name == "waveform_21":       # the paper generates 1,000 instances
        keep = rng.choice(len(y), 1000, replace=False)
        X, y = X[keep], y[keep]
    if name == "vowel":             # its first 6 classes
        keep = np.isin(y, np.unique(y)[:6])
        X, y = X[keep], y[keep]
    return train_test_split(X, y, test_size=TEST_FRACTION.get(name, 0.1), random_state=k, stratify=y)


def energy_trace(history: list[dict], points: int = 20) -> list[list[float]]:
    """``[epoch, objective]`` at up to ``points`` evenly spaced epochs and the last: whether the
    energy was still rising when the budget ran out."""
    keep = sorted({round(i * (len(history) - 1) / (points - 1)) for i in range(points)}) if len(history) > 1 else [0]
    return [[history[i]["epoch"], history[i]["objective"]] for i in keep if i < len(history)]


def fit_key(row: dict) -> tuple:
    """What names one fit of this script: data set, split, L, alpha, iterations, learning rate,
    and whether it ran the whole budget (a fit stopped early, as the estimator's automatic early
    stopping once did on sets of 10,000 rows and more, is not the paper's protocol)."""
    return (row["dataset"], row["split"], row["layers"], row["alpha"], row["iterations"], row["learning_rate"],
            ran_whole_budget(row))


def duplicated_in(rows: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``[len(rows)]`` whether each row (features and target) equals a row of ``reference``."""
    seen = {tuple(r) for r in reference}
    return np.array([tuple(r) in seen for r in rows], dtype=bool)


def point_scores(model, X_tr, y_tr, X_te, y_te) -> dict:
    """A fitted regressor's per-point test record: the median test log-likelihood, the three
    lowest points (:func:`summarise_points`), and the mean test log-likelihood over the test rows
    that repeat no training row (``None`` when every test row repeats one)."""
    mean, std = model.predict(X_te, return_std=True)
    loglik = model.predict_log_density(X_te, y_te)
    median, lowest = summarise_points(loglik, mean, std, y_te)
    repeats = duplicated_in(np.column_stack([X_te, y_te]), np.column_stack([X_tr, y_tr]))
    return {"test_loglik_median": median, "lowest_test_points": lowest, "n_test_duplicates": int(repeats.sum()),
            "test_loglik_without_duplicates": float(loglik[~repeats].mean()) if (~repeats).any() else None}


def summarise_points(loglik, mean, std, y, count: int = 3) -> tuple[float, list[dict]]:
    """The median of the test log-likelihoods ``loglik`` ``[n]`` and the ``count`` test points of
    lowest log-likelihood: index in the test set, target, predictive mean and standard deviation."""
    return float(np.median(loglik)), [
        {"index": int(i), "y": float(y[i]), "mean": float(mean[i]), "std": float(std[i]),
         "loglik": float(loglik[i])} for i in np.argsort(loglik)[:count]]


def main() -> None:
    parser = benchmark_parser(__doc__, output="dgp_uci.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["boston", "kin8nm", "glass", "waveform_21"],
                        choices=list(PAPER_NAME))
    parser.add_argument("--layers", nargs="+", type=int, default=[2, 3])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-3, 0.5, 1.0])
    parser.add_argument("--splits", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's rate (the paper's 0.001)")
    parser.add_argument("--skip-done", action="store_true", help="leave out the fits the output file already holds")
    parser.add_argument("--save-models", type=Path, help="folder for each fitted model's file")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, fit_key) if args.skip_done else set()
    for name in args.datasets:
        regression = name in REGRESSION
        for k in args.splits:
            X_tr, X_te, y_tr, y_te = split(name, k)
            epochs = math.ceil(args.iterations / math.ceil(len(y_tr) / 100))
            for L in args.layers:
                for alpha in args.alphas:
                    if (name, k, L, alpha, args.iterations, args.learning_rate, True) in done:
                        continue
                    cls = DeepGPRegressor if regression else DeepGPClassifier
                    model = cls(n_layers=L, n_inducing=100, alpha=alpha, n_samples=20, batch_size=100,
                                max_iter=epochs, learning_rate=args.learning_rate, early_stopping=False,
                                n_jobs=args.threads, random_state=k)
                    start = time.perf_counter()
                    model.fit(X_tr, y_tr)
                    seconds = time.perf_counter() - start
                    metrics = model.evaluate(X_te, y_te)
                    score = {"rmse": metrics["rmse"]} if regression else {"error": metrics["error"]}
                    if regression:
                        score.update(point_scores(model, X_tr, y_tr, X_te, y_te))
                    if args.save_models:
                        args.save_models.mkdir(parents=True, exist_ok=True)
                        model.save(args.save_models / f"{name}_split{k}_L{L}_alpha{alpha:g}.alphagp")
                    append_row(args.output, base_row(
                        "dgp-uci", dataset=name, paper_name=PAPER_NAME[name],
                        task="regression" if regression else ("binary" if name in BINARY else "multiclass"),
                        split=k, layers=L, alpha=alpha, iterations=args.iterations, epochs=epochs,
                        n_train=len(y_tr), n_test=len(y_te), train_seconds=seconds, learning_rate=args.learning_rate,
                        epochs_run=int(model.n_iter_), energy_by_epoch=energy_trace(model.history_),
                        test_loglik=-metrics["nll"], diagnostics=model.diagnostics_, **score))
                    first = next(iter(score))
                    print(f"{name:<12} split {k} L={L} alpha={alpha:<6g} {first} {score[first]:.4f} "
                          f"test LL {-metrics['nll']:.4f} ({seconds:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
