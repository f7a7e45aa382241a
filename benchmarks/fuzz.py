"""Issue 74's fuzz of every registered method: random small problems fitted or streamed, with and
without row weights (some of them 0), in float64 and float32, every prediction asked of every
fitted model, and every model written to a file, read back in this process and again in a fresh one.

Each problem draws N (20-200 rows), D (1-5 columns on scales from 1e-3 to 1e4, now and then a
constant column or duplicated rows), C (2-8 classes, at most N / 4; grades for the ordinal methods;
issue 80's audit found exact EP's fits of 179 rows and 8 classes taking minutes), the method
(every registered one and ``"auto"``), the dtype, the weights (none, uniform, integer counts, or
uniform with rows of weight 0; for a method without weights, a tenth of its problems test the
refusal), the route (``fit``, or a stream of two or three ``partial_fit``
calls where the method streams) and the settings (``n_inducing`` ``"auto"`` or 3-15, a handful of
iterations, mini-batches now and then). A fitted model is asked ``predict``, ``predict_proba``,
``predict_f``, ``predict_uncertainty``, ``conformalize`` and ``predict_set`` (both kinds of sets),
``evaluate`` and ``save``; the file is loaded again at once and, at the end, in one fresh process,
and both must predict the same probabilities.

Every outcome is counted, one row per problem: ``ok``; ``refused`` (a one-line ``ValueError`` that
says what to do, or a float32 factorisation that says float32 is the likely cause); ``unexplained``
(any other exception, or a message of more than one line); ``timeout`` (the problem, fit and
predictions, ran past ``--limit`` seconds; its seconds are every row's ``seconds``); ``nan`` (a non-finite output);
``unreadable`` (a written file that its own class refuses to load) and ``wrong`` (a file that loads
and predicts otherwise, here or in the fresh process).

    python benchmarks/fuzz.py --threads 1 --problems 1000 --limit 120 --output fuzz_80.jsonl
    python benchmarks/report.py fuzz
"""

from __future__ import annotations

import signal
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

from alphagp import GPClassifier, GPOrdinalClassifier
from alphagp.estimators.streams import streams_with
from alphagp.methods import METHODS, method_parameters, ordinal_methods
from alphagp.numerics import CholeskyError
from alphagp.serialization import ModelFileError

from common import append_row, base_row, benchmark_parser, fresh_process, parse_benchmark_args

#: the sampler methods' settings that keep a problem in seconds
QUICK = {"n_samples": 20, "burn_in": 10, "thin": 1, "n_predictive_samples": 64, "n_mc_samples": 8,
         "ep_iterations": 20, "newton_iterations": 20}
ORDINAL = set(ordinal_methods())


def problem(rng: np.random.Generator) -> dict:
    """One drawn problem (module docstring)."""
    method = "auto" if rng.random() < 0.05 else str(rng.choice(sorted(METHODS)))
    n, d = int(rng.integers(20, 201)), int(rng.integers(1, 6))
    C = int(rng.integers(2, min(8, n // 4) + 1))
    X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-3, 4, d)
    if rng.random() < 0.15:
        X[:, rng.integers(d)] = 3.0                                 # a constant column
    if rng.random() < 0.15:
        k = int(rng.integers(1, n // 2))
        X[-k:] = X[:k]                                              # duplicated rows
    y = np.digitize(X @ rng.normal(size=d) / np.maximum(X.std(0), 1e-12).mean() + rng.normal(size=n),
                    np.quantile(rng.normal(size=1000), np.linspace(0, 1, C + 1)[1:-1]))
    y[:C] = np.arange(C)                                            # every class present
    weighted = method == "auto" or METHODS[method].cls.CAPABILITIES.sample_weight
    kind = str(rng.choice(["none", "uniform", "counts", "zeros"])) if weighted or rng.random() < 0.1 else "none"
    weight = {"none": None, "uniform": rng.uniform(0.2, 2.0, n), "counts": rng.integers(1, 4, n).astype(float),
              "zeros": np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.5, 1.5, n))}[kind]
    if weight is not None:
        weight[:C] = np.maximum(weight[:C], 0.5)                    # every class keeps weight
    stream = streams_with(method) and rng.random() < 0.4
    return {"method": method, "X": X, "y": y, "weight": weight, "weights": kind, "stream": stream,
            "dtype": str(rng.choice(["float64", "float32"])),
            "n_inducing": "auto" if rng.random() < 0.4 else int(rng.integers(3, 16)),
            "max_iter": int(rng.integers(3, 21)), "mini_batch": bool(rng.random() < 0.25),
            "calls": int(rng.integers(2, 4)), "ordinal_estimator": method in ORDINAL and rng.random() < 0.7}


def estimator(p: dict):
    """The problem's unfitted estimator."""
    own = method_parameters(p["method"]) if p["method"] != "auto" else {}
    params = dict(method=p["method"], dtype=p["dtype"], n_inducing=p["n_inducing"], max_iter=p["max_iter"],
                  random_state=0, method_params={k: v for k, v in QUICK.items() if k in own} or None)
    if p["mini_batch"] and p["method"] != "auto" and METHODS[p["method"]].cls.CAPABILITIES.mini_batches:
        params["batch_size"] = max(4, len(p["y"]) // 3)
    if p["method"] != "auto" and not METHODS[p["method"]].cls.CAPABILITIES.sparse:
        params["n_inducing"] = "auto"                               # exact methods take every row
    return GPOrdinalClassifier(**params) if p["ordinal_estimator"] else GPClassifier(**params)


def fit(p: dict, warned: list):
    """The problem's estimator, fitted or streamed (the warnings appended to ``warned``)."""
    est = estimator(p)
    X, y, w = p["X"], p["y"], p["weight"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if p["stream"]:
            for k, rows in enumerate(np.array_split(np.arange(len(y)), p["calls"])):
                est.partial_fit(X[rows], y[rows], classes=np.unique(y) if k == 0 else None,
                                sample_weight=None if w is None else w[rows])
        else:
            est.fit(X, y, sample_weight=w)
    warned.extend(str(m.message) for m in caught)
    return est


def outputs(est, X, y) -> dict:
    """Every public prediction of ``est`` on ``X`` (labels ``y`` for conformalize and evaluate)."""
    out = {"proba": est.predict_proba(X), "f": est.predict_f(X, return_std=True)[1],
           "uncertainty": est.predict_uncertainty(X, n_samples=32)["total"]}
    assert set(np.asarray(est.predict(X)).tolist()) <= set(np.asarray(est.classes_).tolist())
    est.conformalize(X, y)
    out["set"] = est.predict_set(X, 0.8).astype(float) + est.predict_set(X, 0.8, non_empty=True)
    out["evaluate"] = np.array(list(est.evaluate(X, y).values()))
    return out


class Timeout(Exception):
    """Raised by the alarm of ``--limit`` inside a problem that ran past it."""


def _alarm(_signum, _frame):
    raise Timeout


def explained(err: Exception, dtype: str) -> bool:
    """A refusal the user can act on: one line, a ``ValueError`` (files' ``ModelFileError`` too), or a
    float32 failure that names float32 as its likely cause."""
    one_line = "\n" not in str(err).strip()
    if isinstance(err, ValueError):
        return one_line
    return isinstance(err, (FloatingPointError, CholeskyError)) and dtype == "float32" and "Likely cause: float32" in str(err)


def main() -> None:
    parser = benchmark_parser(__doc__, output="fuzz.jsonl")
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=120, help="seconds a problem may take (default 120)")
    args = parse_benchmark_args(parser)
    signal.signal(signal.SIGALRM, _alarm)
    rng = np.random.default_rng(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="alphagp_fuzz_"))
    rows, saved = [], []
    for i in range(args.problems):
        p = problem(rng)
        row = {"problem": i, "method": p["method"], "dtype": p["dtype"], "weights": p["weights"],
               "route": "stream" if p["stream"] else "fit", "n_rows": len(p["y"]), "n_classes": int(p["y"].max()) + 1,
               "estimator": "GPOrdinalClassifier" if p["ordinal_estimator"] else "GPClassifier",
               "outcome": "ok", "message": None}
        warned: list = []
        began = time.perf_counter()
        signal.alarm(args.limit)
        try:
            est = fit(p, warned)
            row["fitted_method"] = est.method_
            out = outputs(est, p["X"], p["y"])
            if not all(np.all(np.isfinite(v)) for v in out.values()):
                row["outcome"] = "nan"
            model = folder / f"m{i}.agp"
            est.save(model)
            try:
                again = type(est).load(model)
            except ModelFileError as err:
                row["outcome"], row["message"] = "unreadable", str(err)[:300]
            else:
                if not np.array_equal(again.predict_proba(p["X"]), out["proba"]):
                    row["outcome"] = "wrong"
                np.save(folder / f"x{i}.npy", p["X"])
                np.save(folder / f"p{i}.npy", out["proba"])
                saved.append((str(model), str(folder / f"x{i}.npy"), str(folder / f"p{i}.npy")))
        except Timeout:
            row["outcome"], row["message"] = "timeout", f"past --limit {args.limit} s"
        except Exception as err:  # noqa: BLE001 - every exception is counted, none hidden
            row["outcome"] = "refused" if explained(err, p["dtype"]) else "unexplained"
            row["message"] = "".join(traceback.format_exception_only(err))[:300]
            if row["outcome"] == "unexplained":
                row["traceback"] = "".join(traceback.format_exception(err))[-1500:]
        finally:
            signal.alarm(0)
        row["seconds"] = time.perf_counter() - began
        row["warnings"] = sorted({w[:80] for w in warned})
        rows.append(row)
        if (i + 1) % 50 == 0:
            print(f"{i + 1} problems: " + ", ".join(f"{k} {sum(r['outcome'] == k for r in rows)}"
                                                    for k in sorted({r['outcome'] for r in rows})), flush=True)
    stale = set(fresh_process(saved))
    for row in rows:
        model = str(folder / f"m{row['problem']}.agp")
        row["fresh_process"] = None if model not in {s[0] for s in saved} else ("wrong" if model in stale else "same")
        append_row(args.output, base_row("fuzz", seed=args.seed, threads=args.threads, **row))


if __name__ == "__main__":
    main()
