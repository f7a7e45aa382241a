"""Issue 69's fuzz of the ordinal surface: random small problems of ordered classes, every public
method of the estimator called on every fitted model, the models re-read in a fresh process, and
their files edited field by field (the checksum recomputed, as a tool that edits files would).

Each problem draws its grades (text, integers, half steps or a pandas ordered categorical; 2 to 5
of them, declared with ``grades=`` or not), the estimator (``GPOrdinalClassifier`` or
``GPClassifier(method="ordinal_*")``), the method (``ordinal_ep``, ``ordinal_pep``, ``ordinal_vi``),
row weights or none, a learning rate (the default or up to 50) and a fit or a two-call stream
(``ordinal_vi``). A fitted model is asked ``predict``, ``predict_proba``, ``predict_f``,
``predict_uncertainty``, ``conformalize`` and ``predict_set``, ``predict_median`` and
``predict_mean`` (the ordinal estimator), ``evaluate`` and ``save``; every saved model is loaded
again in one fresh process, which must predict the same; one field of each file is then edited.

Every outcome is counted, one row per problem: ``refused`` (a one-line ``ValueError`` or
``ModelFileError`` that says what to do), ``unexplained`` (any other exception, or a message of
more than one line), ``nan`` (a non-finite output), ``wrong`` (an edited file that loads and
predicts differently, or a fresh process that predicts differently), ``collapsed`` (a training
accuracy below the majority grade's share by 0.05 with no warning).

    python benchmarks/ordinal_fuzz.py --threads 1 --problems 1000
    python benchmarks/report.py ordinalfuzz
"""

from __future__ import annotations

import json
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from alphagp import GPClassifier, GPOrdinalClassifier, serialization
from alphagp.serialization import ModelFileError

from common import append_row, base_row, benchmark_parser, fresh_process, parse_benchmark_args

METHODS = ("ordinal_ep", "ordinal_pep", "ordinal_vi")
#: the file edits, each a function of (header content, tensors) that changes one field
EDITS = ("reverse classes", "ordered on", "grades reversed", "method ep", "log_gaps inf", "first_cut nan",
         "log_gaps 800", "log_gaps shape", "n_inducing", "dtype", "n_features_in")


def problem(rng: np.random.Generator) -> dict:
    """One drawn problem (module docstring)."""
    n, K, D = int(rng.integers(20, 70)), int(rng.integers(2, 6)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, D))
    score = X @ rng.normal(size=D) + 0.5 * rng.normal(size=n)
    y_idx = np.digitize(score, np.quantile(score, np.linspace(0, 1, K + 1)[1:-1]))
    kind = str(rng.choice(["text", "int", "half", "categorical"]))
    names = {"text": np.array(["poor", "fair", "good", "great", "best"][:K]), "int": np.arange(K) * 10 + 1,
             "half": np.arange(1, K + 1) * 0.5, "categorical": np.array(["e", "d", "c", "b", "a"][:K])}[kind]
    y = names[y_idx]
    declared = kind in ("text", "half") or bool(rng.random() < 0.3)
    if kind == "categorical":
        y = pd.Series(pd.Categorical(y, categories=list(names), ordered=True))
    return {"X": X, "y": y, "y_idx": y_idx, "kind": kind, "grades": list(names) if declared else None,
            "ordinal_estimator": bool(rng.random() < 0.7), "method": str(rng.choice(METHODS)),
            "weight": rng.uniform(0.2, 2.0, n) if rng.random() < 0.3 else None,
            "rate": [None, 1.0, 10.0, 50.0][int(rng.integers(0, 4))], "stream": bool(rng.random() < 0.3)}


def one_line(err: Exception) -> bool:
    return "\n" not in str(err).strip()


def fit(p: dict, warned: list) -> object:
    """The problem's fitted estimator (the warnings it raised appended to ``warned``)."""
    params = dict(n_inducing=6, max_iter=20, random_state=0, learning_rate=p["rate"], method=p["method"])
    est = (GPOrdinalClassifier(grades=p["grades"], **params) if p["ordinal_estimator"] else GPClassifier(**params))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if p["stream"] and p["method"] == "ordinal_vi":
            half = len(p["X"]) // 2
            classes = p["grades"] if p["grades"] is not None else np.unique(np.asarray(p["y"]))
            est.partial_fit(p["X"][:half], np.asarray(p["y"])[:half], classes=classes,
                            sample_weight=None if p["weight"] is None else p["weight"][:half])
            est.partial_fit(p["X"][half:], np.asarray(p["y"])[half:],
                            sample_weight=None if p["weight"] is None else p["weight"][half:])
        else:
            est.fit(p["X"], p["y"], sample_weight=p["weight"])
    warned.extend(str(w.message) for w in caught)
    return est


def outputs(est, X, y) -> dict:
    """Every public prediction of ``est`` on ``X`` (labels ``y`` for conformalize and evaluate)."""
    out = {"predict": np.asarray(est.predict(X)), "proba": est.predict_proba(X),
           "f": est.predict_f(X, return_std=True)[1], "uncertainty": est.predict_uncertainty(X, n_samples=64)["total"]}
    est.conformalize(X, y)
    out["set"] = est.predict_set(X, 0.8).astype(float)
    if hasattr(est, "predict_median"):
        out["median"], out["mean"] = np.asarray(est.predict_median(X)), est.predict_mean(X)
    out["evaluate"] = np.array(list(est.evaluate(X, y).values()))
    return out


def edit(path: Path, out: Path, what: str) -> bool:
    """Write ``path`` with one field changed (``what``, one of :data:`EDITS`) and a recomputed
    checksum; ``False`` where the model has no such field to change (two grades have no gaps, a
    GPClassifier no ``grades``), so the edit changed nothing."""
    import struct
    raw = path.read_bytes()
    header = json.loads(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]["alphagp"])
    tensors = serialization.load_tensors(raw)
    content = header["content"]
    before = (json.dumps(header), {k: v.clone() for k, v in tensors.items()})
    gaps = next((k for k in tensors if k.endswith("log_gaps")), None)
    first = next((k for k in tensors if k.endswith("first_cut")), None)
    if what == "reverse classes":
        content["classes"]["values"] = content["classes"]["values"][::-1]
    elif what == "ordered on":
        content["classes"]["values"] = content["classes"]["values"][::-1]
        content["classes"]["ordered"] = True
    elif what == "grades reversed" and content["params"].get("grades") is not None:
        content["params"]["grades"] = content["params"]["grades"][::-1]
    elif what == "method ep":
        content["method"]["name"] = "ep"
        content["fit_plan"]["method"] = "ep"
    elif what == "log_gaps inf" and gaps:
        tensors[gaps] = torch.full_like(tensors[gaps], float("inf"))
    elif what == "first_cut nan" and first:
        tensors[first] = torch.full_like(tensors[first], float("nan"))
    elif what == "log_gaps 800" and gaps:
        tensors[gaps] = torch.full_like(tensors[gaps], 800.0)
    elif what == "log_gaps shape" and gaps:
        tensors[gaps] = torch.zeros(tensors[gaps].numel() + 2, dtype=tensors[gaps].dtype)
    elif what == "n_inducing":
        content["fit_plan"]["n_inducing"] = int(content["fit_plan"]["n_inducing"]) + 3
    elif what == "dtype":
        content["params"]["dtype"] = "float32"
    elif what == "n_features_in":
        content["n_features_in"] = int(content["n_features_in"]) + 1
    text = json.dumps(header)
    out.write_bytes(serialization.save_tensors(tensors, metadata={
        "alphagp": text, "alphagp_sha256": serialization.checksum(text, tensors)}))
    return text != before[0] or any(k not in before[1] or before[1][k].shape != v.shape
                                    or not torch.equal(before[1][k].nan_to_num(), v.nan_to_num()) for k, v in tensors.items())


def main() -> None:
    parser = benchmark_parser(__doc__, output="ordinal_fuzz.jsonl")
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parse_benchmark_args(parser)
    rng = np.random.default_rng(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="ordinal_fuzz_"))
    rows, saved = [], []
    for i in range(args.problems):
        p = problem(rng)
        row = {"problem": i, "kind": p["kind"], "declared": p["grades"] is not None, "method": p["method"],
               "estimator": "GPOrdinalClassifier" if p["ordinal_estimator"] else "GPClassifier",
               "weights": p["weight"] is not None, "rate": p["rate"], "stream": p["stream"] and p["method"] == "ordinal_vi",
               "outcome": "ok", "message": None, "edits": {}}
        warned: list = []
        try:
            est = fit(p, warned)
            out = outputs(est, p["X"], np.asarray(p["y"]))
            if not all(np.all(np.isfinite(v.astype(float))) for k, v in out.items() if k not in ("predict", "median")):
                row["outcome"] = "nan"
            accuracy = float(np.mean(out["predict"] == np.asarray(p["y"])))
            majority = float(np.max(np.bincount(p["y_idx"])) / len(p["y_idx"]))
            row["accuracy"], row["majority"] = accuracy, majority
            if accuracy < majority - 0.05 and not warned and row["outcome"] == "ok":
                row["outcome"] = "collapsed"
            model = folder / f"m{i}.safetensors"
            est.save(model)
            np.save(folder / f"x{i}.npy", p["X"])
            np.save(folder / f"p{i}.npy", out["proba"])
            saved.append((str(model), str(folder / f"x{i}.npy"), str(folder / f"p{i}.npy")))
            for what in EDITS:
                edited = folder / f"e{i}.safetensors"
                if not edit(model, edited, what):
                    row["edits"][what] = "no such field"
                    continue
                try:
                    again = type(est).load(edited)
                    same = (np.array_equal(again.predict_proba(p["X"]), out["proba"])
                            and np.array_equal(np.asarray(again.predict(p["X"])), out["predict"]))
                    undetectable = (what in ("reverse classes", "ordered on") and p["grades"] is None
                                    and p["ordinal_estimator"])
                    row["edits"][what] = "same" if same else ("order edited (its one record)" if undetectable
                                                              else "wrong")
                except (ModelFileError, ValueError) as err:
                    row["edits"][what] = "refused" if one_line(err) else "unexplained"
                except Exception as err:  # noqa: BLE001 - counted, not hidden
                    row["edits"][what] = f"unexplained: {type(err).__name__}"
        except ValueError as err:
            row["outcome"], row["message"] = ("refused" if one_line(err) else "unexplained"), str(err)[:200]
        except Exception as err:  # noqa: BLE001 - counted, not hidden
            row["outcome"], row["message"] = "unexplained", "".join(traceback.format_exception_only(err))[:300]
        row["warnings"] = sorted({w[:80] for w in warned})
        rows.append(row)
        if (i + 1) % 100 == 0:
            print(f"{i + 1} problems", flush=True)
    stale = set(fresh_process(saved))
    for row in rows:
        row["fresh_process"] = None if row["outcome"] not in ("ok", "collapsed", "nan") else \
            ("wrong" if str(folder / f"m{row['problem']}.safetensors") in stale else "same")
        append_row(args.output, base_row("ordinal-fuzz", seed=args.seed, threads=args.threads, **row))


if __name__ == "__main__":
    main()
