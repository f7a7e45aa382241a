"""Trust at the edges: what the model files, the command line and augmented VI's start do with
the inputs that used to give a silent wrong answer, measured.

* ``concurrent``: one process saves two different models to one path in turn while this one loads
  that path for ``--seconds``; counts loads, loads that mixed the two models (one's classes with
  the other's probabilities) and errors.
* ``flipped``: a fitted model file and a checkpoint, each byte of ``--flips`` random positions
  flipped in turn (one bit); counts files refused with ``ModelFileError``, loaded with other
  predictions, and loaded unchanged.
* ``crafted``: files with a valid checksum whose header declares a huge model (classes of dtype
  ``<U100000000``, an EP file with n_data = 10^8, a deep GP with [2000, 2000] layers): the
  error and the growth of the peak memory of a fresh process that loads each.
* ``columns``: ``alphagp fit`` on a CSV, then ``alphagp evaluate`` on the same rows with the
  columns reversed: the test error of both (before the fix the reversed file was read in file
  order).
* ``augmented_start``: Wine in the logistic-softmax paper's Figure 5 setting (fixed kernel of
  amplitude 50, inducing inputs = training inputs, 100 CAVI steps), q started at the prior (the
  old start) and where the first batch's bound is higher (the new one): final ELBO and test
  NLL, three splits.

* ``many_classes``: the issue's many-class problem (C classes of 3 rows, 5 features) fitted by
  ``method`` with 2 iterations, then ``predict_proba`` on new rows in a fresh process: the growth
  of its peak resident memory during the prediction and the seconds per 1,000 rows (and those of
  the latent marginals alone, ``predict_f``: the matrix products, and of the direct C^2 sum the
  grid replaced from 40 classes), for C = 10, 100, 200 and 1,000.
* ``read_peak``: the command line's reading of a CSV (N rows x 20 columns) and of a LIBSVM file of
  60 rows with one feature index of 5,000,000, in a fresh process: the peak resident memory over
  the features' float64 size, and the outcome.

One JSON line per measurement to benchmarks/results/edges.jsonl.

    python benchmarks/edges.py --threads 1
    python benchmarks/edges.py --threads 1 --only many_classes read_peak
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from alphagp import DeepGPRegressor, GPClassifier, serialization
from alphagp.data import load_benchmark, load_bundled
from alphagp.serialization import ModelFileError
from alphagp.testing import ALTERNATING_SAVER

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

OUTPUT = "edges.jsonl"
_PEAK = """
import resource, sys
from alphagp import DeepGPRegressor, GPClassifier
from alphagp.serialization import ModelFileError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    (DeepGPRegressor if sys.argv[2] == "deep" else GPClassifier).load(sys.argv[1])
    outcome = "loaded"
except ModelFileError as err:
    outcome = "ModelFileError: " + str(err).split(": ", 1)[-1][:120]
print(outcome)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def concurrent(folder: Path, seconds: float) -> dict:
    X, y = load_bundled("new_thyroid")
    a, b = folder / "a.safetensors", folder / "b.safetensors"
    GPClassifier(n_inducing=8, max_iter=6, random_state=0).fit(X, y).save(a)
    GPClassifier(n_inducing=6, max_iter=6, random_state=1).fit(X, np.array(["x", "y", "z"])[y - 1]).save(b)
    expected = {tuple(map(str, m.classes_)): m.predict_proba(X[:20]) for m in map(GPClassifier.load, (a, b))}
    target = folder / "shared.safetensors"
    GPClassifier.load(a).save(target)
    writer = subprocess.Popen([sys.executable, "-c", ALTERNATING_SAVER, str(target), str(a), str(b)])
    loads = mixed = errors = 0
    seen = set()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                model = GPClassifier.load(target)
            except (ModelFileError, OSError):
                errors += 1
                continue
            key = tuple(map(str, model.classes_))
            seen.add(key)
            mixed += not np.allclose(model.predict_proba(X[:20]), expected[key], atol=1e-12)
            loads += 1
    finally:
        writer.kill()
        writer.wait()
    return {"loads": loads, "mixed": mixed, "errors": errors, "versions_seen": len(seen), "seconds": seconds}


def flipped(folder: Path, flips: int) -> list[dict]:
    X, y = load_bundled("new_thyroid")
    model, ckpt = folder / "model.safetensors", folder / "fit.ckpt"
    clf = GPClassifier(n_inducing=8, max_iter=6, random_state=0, checkpoint=ckpt).fit(X, y)
    clf.save(model)
    reference = clf.predict_proba(X)
    rng = np.random.default_rng(0)
    rows = []
    for what, path in (("model file", model), ("checkpoint", ckpt)):
        raw = path.read_bytes()
        damaged = folder / "damaged"
        counts = {"refused": 0, "other_predictions": 0, "unchanged": 0}
        for position in rng.choice(len(raw), min(flips, len(raw)), replace=False):
            data = bytearray(raw)
            data[position] ^= 1 << int(rng.integers(8))
            damaged.write_bytes(bytes(data))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if what == "model file":
                        proba = GPClassifier.load(damaged).predict_proba(X)
                    else:
                        serialization.read(damaged, "alphagp.checkpoint")
                        proba = reference
            except (ModelFileError, OSError, ValueError):
                counts["refused"] += 1
                continue
            counts["unchanged" if np.array_equal(proba, reference) else "other_predictions"] += 1
        rows.append({"file": what, "bytes": len(raw), "flips": min(flips, len(raw)), **counts})
    return rows


def crafted(folder: Path) -> list[dict]:
    X, y = load_bundled("new_thyroid")
    good = folder / "ep.safetensors"
    GPClassifier(method="ep", n_inducing=8, max_iter=6, random_state=0).fit(X, y).save(
        good, include_training_state=True)
    rng = np.random.default_rng(0)
    Xr = rng.uniform(-3, 3, (120, 2))
    deep = folder / "deep.safetensors"
    DeepGPRegressor(n_layers=2, n_hidden=2, n_inducing=10, n_samples=5, batch_size=25, max_iter=1,
                    random_state=0).fit(Xr, np.sin(Xr[:, 0])).save(deep)

    def classes_dtype(c):
        c["classes"]["dtype"] = "<U100000000"

    def ep_n_data(c):
        c["method"]["config"]["n_data"] = 10**8

    def deep_layers(c):
        c["model"]["config"]["architecture"][0] = [2000, 2000, 2]

    rows = []
    for name, source, kind, edit in (("classes dtype <U100000000", good, "model", classes_dtype),
                                     ("EP n_data 10^8", good, "model", ep_n_data),
                                     ("deep GP layer [2000, 2000]", deep, "deep", deep_layers)):
        file_kind = serialization.file_kind(source)
        content = serialization.read(source, file_kind)
        content.pop("__file_bytes__")
        edit(content)
        out = folder / "crafted.safetensors"
        serialization.write(out, file_kind, content)            # a valid checksum: crafted, not damaged
        done = subprocess.run([sys.executable, "-c", _PEAK, str(out), kind], capture_output=True, text=True,
                              check=True)
        outcome, grown = done.stdout.strip().splitlines()
        rows.append({"file": name, "bytes": out.stat().st_size, "outcome": outcome,
                     "peak_growth_mib": round(float(grown), 1)})
    return rows


def columns(folder: Path) -> dict:
    from alphagp.cli import main
    X, y = load_bundled("vehicle")
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
    rng = np.random.default_rng(0)
    test = rng.random(len(frame)) < 0.2
    frame[~test].to_csv(folder / "train.csv", index=False)
    frame[test].to_csv(folder / "test.csv", index=False)
    frame[test][["label", *reversed(frame.columns[:-1])]].to_csv(folder / "reversed.csv", index=False)
    model = folder / "m.safetensors"
    main(["--quiet", "fit", "--data", str(folder / "train.csv"), "--target", "label", "--model", str(model),
          "--n-inducing", "20", "--max-iter", "50"])
    clf = GPClassifier.load(model)
    row = {}
    for name in ("test", "reversed"):
        out = subprocess.run([sys.executable, "-m", "alphagp", "evaluate", "--model", str(model), "--data",
                              str(folder / f"{name}.csv"), "--target", "label", "--json"],
                             capture_output=True, text=True, check=True)
        row[f"{name}_error"] = json.loads(out.stdout)["error"]
    # what reading the reversed file in file order (the old behaviour) gives
    reversed_in_file_order = pd.read_csv(folder / "reversed.csv").drop(columns="label").to_numpy()
    row["reversed_in_file_order_error"] = float(np.mean(clf.predict(reversed_in_file_order) != y[test]))
    return row


def augmented_start(splits: int) -> list[dict]:
    from sklearn.model_selection import train_test_split

    from alphagp.methods.augmented import AugmentedVI
    X, y = load_benchmark("wine")
    choose = AugmentedVI._choose_start
    rows = []
    for seed in range(splits):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=1 / 3, random_state=seed, stratify=y)
        d = X.shape[1]
        kernel = {"amplitude": np.full(3, 50.0), "lengthscale": np.full((3, d), np.sqrt(d)), "noise": np.full(3, 1e-3)}
        for start in ("prior (old)", "higher bound (new)"):
            AugmentedVI._choose_start = (lambda *_: None) if start.startswith("prior") else choose
            try:
                clf = GPClassifier(method="augmented", kernel_params=kernel, optimize_hyperparameters=False,
                                   inducing_points=X_tr, optimize_inducing=False, max_iter=100,
                                   random_state=seed).fit(X_tr, y_tr)
            finally:
                AugmentedVI._choose_start = choose
            rows.append({"split": seed, "start": start, "final_elbo": clf.history_[-1]["objective"],
                         **clf.evaluate(X_te, y_te)})
    return rows


_MANY_CLASSES_FIT = """
import sys
import numpy as np
from alphagp import GPClassifier
C, method, path, threads = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
r = np.random.default_rng(0)
y = np.arange(3 * C) % C
X = r.normal(size=(C, 5))[y] * 3 + r.normal(size=(3 * C, 5))
GPClassifier(method=method, max_iter=2, n_jobs=threads, random_state=0).fit(X, y).save(path)
"""
_MANY_CLASSES = """
import json, resource, sys, time
import numpy as np
from alphagp import GPClassifier
path, n_rows = sys.argv[1], int(sys.argv[2])
m = GPClassifier.load(path)
r = np.random.default_rng(1)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
X = r.normal(size=(n_rows, 5))
p = m.predict_proba(X)
seconds = time.perf_counter() - start
start = time.perf_counter()
m.predict_f(X)                              # the latent marginals alone: the matrix products
latent = time.perf_counter() - start
from alphagp import numerics
numerics.GRID_CLASSES = 10**9               # the direct N C^2 Q sum of before, on the same rows
start = time.perf_counter()
direct = m.predict_proba(X)
direct_seconds = time.perf_counter() - start
print(json.dumps({"peak_growth_mib": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024,
                  "seconds_per_1000_rows": 1000 * seconds / n_rows, "rows": n_rows,
                  "latent_seconds_per_1000_rows": 1000 * latent / n_rows,
                  "direct_seconds_per_1000_rows": 1000 * direct_seconds / n_rows,
                  "max_difference_from_direct": float(np.abs(p - direct).max()),
                  "max_row_sum_error": float(np.abs(p.sum(1) - 1).max())}))
"""


def many_classes(folder: Path, threads: int) -> list[dict]:
    """Prediction memory and time against the number of classes (module docstring): the model is
    fitted and saved by one process and loaded by a fresh one, whose peak memory before and after
    ``predict_proba`` is compared (so the fit's peak does not hide the prediction's)."""
    rows = []
    for C, n_rows in ((10, 2048), (100, 512), (200, 256), (1000, 16)):
        for method in ("pep", "vi_softmax"):
            path = folder / f"{method}_{C}.agp"
            subprocess.run([sys.executable, "-c", _MANY_CLASSES_FIT, str(C), method, str(path), str(threads)],
                           capture_output=True, text=True, check=True)
            out = subprocess.run([sys.executable, "-c", _MANY_CLASSES, str(path), str(n_rows)],
                                 env={**os.environ, "OMP_NUM_THREADS": str(threads)},
                                 capture_output=True, text=True, check=True)
            rows.append({"classes": C, "method": method, **json.loads(out.stdout.strip().splitlines()[-1])})
            print("many_classes", rows[-1], flush=True)
    return rows


_READ_PEAK = """
import json, resource, sys, time
start = time.perf_counter()
from alphagp.cli import main
size = float(sys.argv[2])
code = main(["--quiet", "fit", "--data", sys.argv[1], "--model", sys.argv[3], "--method", "sep", "--batch-size",
             "1000", "--max-iter", "1", "--n-inducing", "5"] + sys.argv[4:])
print(json.dumps({"exit": code, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "features_mib": size / 2**20, "seconds": time.perf_counter() - start}))
"""


def read_peak(folder: Path) -> list[dict]:
    """The command line's peak memory while reading and fitting (module docstring), against a
    fresh process that only imports alphagp and fits on a tiny file."""
    rng = np.random.default_rng(0)
    rows = []
    tiny = folder / "tiny.csv"
    pd.DataFrame(rng.normal(size=(100, 20)), columns=[f"f{j}" for j in range(20)]).assign(
        target=rng.integers(0, 3, 100)).to_csv(tiny, index=False)
    base = json.loads(subprocess.run([sys.executable, "-c", _READ_PEAK, str(tiny), "0", str(folder / "m.agp")],
                                     capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    for n in (500_000, 2_000_000):
        path = folder / f"rows{n}.csv"
        frame = pd.DataFrame(rng.normal(size=(n, 20)), columns=[f"f{j}" for j in range(20)])
        frame.assign(target=rng.integers(0, 3, n)).to_csv(path, index=False)
        del frame
        out = subprocess.run([sys.executable, "-c", _READ_PEAK, str(path), str(n * 20 * 8), str(folder / "m.agp")],
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"file": f"CSV, {n} rows x 20", **row, "baseline_mib": base["peak_mib"],
                     "peak_over_features": (row["peak_mib"] - base["peak_mib"]) / row["features_mib"]})
        path.unlink()
        print("read_peak", rows[-1], flush=True)
    huge = folder / "huge.libsvm"
    with open(huge, "w") as f:
        f.writelines(f"{i % 2} 1:{rng.normal():.3f} 2:{rng.normal():.3f}" + (" 5000000:1.0" if i == 0 else "") + "\n"
                     for i in range(60))
    out = subprocess.run([sys.executable, "-c", _READ_PEAK, str(huge), str(60 * 5_000_000 * 8), str(folder / "m.agp"),
                          "--method", "ep"], capture_output=True, text=True, check=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    rows.append({"file": "LIBSVM, 60 rows, largest index 5,000,000", **row, "baseline_mib": base["peak_mib"],
                 "peak_over_features": (row["peak_mib"] - base["peak_mib"]) / row["features_mib"],
                 "error": out.stderr.strip().splitlines()[-1][:200] if out.stderr.strip() else ""})
    print("read_peak", rows[-1], flush=True)
    return rows


MEASUREMENTS = ("concurrent", "flipped", "crafted", "columns", "augmented_start", "many_classes", "read_peak")


def main() -> None:
    parser = benchmark_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the concurrent-load run")
    parser.add_argument("--flips", type=int, default=400, help="bytes flipped in each file")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=MEASUREMENTS, default=list(MEASUREMENTS))
    args = parse_benchmark_args(parser)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs = {"concurrent": lambda: [concurrent(folder, args.seconds)], "flipped": lambda: flipped(folder, args.flips),
                "crafted": lambda: crafted(folder), "columns": lambda: [columns(folder)],
                "augmented_start": lambda: augmented_start(args.splits), "many_classes": lambda: many_classes(folder, args.threads),
                "read_peak": lambda: read_peak(folder)}
        measured = [(what, row) for what in args.only for row in runs[what]()]
    for what, row in measured:
        append_row(OUTPUT, base_row("edges", measurement=what, threads=args.threads, **row))
        print(what, json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
