"""Issue 79, item 3: does scoring the closed form by its leave-one-out on every row leak, when its
kernel start was fitted on every row?

For each problem (tables of pure noise: ``--noise-seeds`` draws of 58 rows, 4 standard-normal
features and 3 classes of proportions 0.6/0.25/0.15, the table of ``test_model_selection``; and the
small tables of the development panel, ``real_tables.py``, their 70 % training split) this fits
the closed form (``method="dirichlet"`` at alpha_eps = 1e-3, noise_scale = 0.1, the default's first
point) from the shared Dirichlet kernel start, as the selection does, and records:

* ``loo_every_row``: the exact leave-one-out NLL of the training rows, the start fitted on every row
  (what scoring by leave-one-out on every row would use);
* ``loo_refit``: the NLL of each training row predicted by a fit whose kernel start and posterior
  were fitted without it (the honest leave-one-out, n starts; ``refits_failed`` counts the refits
  whose factorisation failed, left out of the mean);
* ``frequencies_loo``: the class frequencies' leave-one-out NLL (each row from the others' counts);
* ``test_nll``: the fit on every training row, on fresh rows (noise: 2,000 drawn alike) or the
  table's 30 % test split.

    python benchmarks/loo_leak.py --threads 1
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.estimators import model_selection
from alphagp.estimators.classifier_family import class_probabilities
from alphagp.methods.class_frequencies import PRIOR_COUNT
from alphagp.metrics import negative_log_likelihood
from alphagp.numerics import CholeskyError

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

POINT = {"alpha_eps": 1e-3, "noise_scale": 0.1}


def _noise(seed: int, n: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 4)), rng.choice(["a", "b", "c"], n, p=[0.6, 0.25, 0.15])


def _fit(X, y_idx, classes):
    """The selection's closed form on rows ``X``: the shared start on them, then the point's fit."""
    est = GPClassifier(random_state=0)
    start = model_selection.shared_kernel_starts(model_selection.selector_of(est, X.shape[1]), X, y_idx, {"dirichlet"})
    params = {**est.get_params(), "method": "dirichlet", "kernel_init": "dirichlet", "method_params": POINT,
              "checkpoint": None, "verbose": False}
    return est._fit_result(params, X, y_idx, classes, start=start, own=False)


def leak(X, y, X_test, y_test) -> dict:
    """The four NLLs of the module docstring for training rows ``X``, ``y`` and test rows."""
    classes = np.unique(y)
    y_idx = np.searchsorted(classes, y)
    whole = _fit(X, y_idx, classes)
    refit, failed = [], 0
    for i in range(len(y)):
        rest = np.delete(np.arange(len(y)), i)
        try:
            one = _fit(X[rest], y_idx[rest], classes)
        except CholeskyError:                # the selection would leave such a fit out: counted, not scored
            failed += 1
            continue
        refit.append(negative_log_likelihood(class_probabilities(one.predictor(1), X[i:i + 1], len(classes)),
                                             y_idx[i:i + 1]))
    counts = np.bincount(y_idx, minlength=len(classes)).astype(float)
    others = counts[None, :] - np.eye(len(classes))[y_idx] + PRIOR_COUNT
    test_idx = np.searchsorted(classes, y_test)
    return {"n_train": len(y), "loo_every_row": model_selection.leave_one_out_nll(whole),
            "loo_refit": float(np.mean(refit)), "refits_failed": failed,
            "frequencies_loo": negative_log_likelihood(others / others.sum(1, keepdims=True), y_idx),
            "test_nll": negative_log_likelihood(class_probabilities(whole.predictor(1), X_test, len(classes)),
                                                test_idx)}


def main() -> None:
    parser = benchmark_parser(__doc__, output="loo_leak.jsonl")
    parser.add_argument("--noise-seeds", type=int, default=5)
    parser.add_argument("--tables", nargs="*", default=["bids", "survey", "infert"])
    args = parse_benchmark_args(parser)
    warnings.simplefilter("ignore")
    problems = [(f"noise_{s}", *_noise(s, 58), *_noise(1000 + s, 2000)) for s in range(args.noise_seeds)]
    if args.tables:
        import real_tables
        for name in args.tables:
            frame, labels = real_tables.load(name)
            X_train, X_test, y_train, y_test = train_test_split(frame, labels, test_size=0.3, stratify=labels,
                                                                random_state=0)
            encoder = GPClassifier(method="class_frequencies").fit(X_train, y_train)
            encode = encoder.table_encoding_.transform if hasattr(encoder, "table_encoding_") else np.asarray
            problems.append((name, encode(X_train), y_train, encode(X_test), y_test))
    for name, X, y, X_test, y_test in problems:
        row = leak(np.asarray(X, dtype=float), y, np.asarray(X_test, dtype=float), y_test)
        append_row(args.output, base_row("loo_leak", dataset=name, threads=args.threads, point=POINT, **row))
        print(f"{name:10s} " + " ".join(f"{k}={v:.4f}" for k, v in row.items() if k not in ("n_train", "refits_failed"))
              + f" refits_failed={row['refits_failed']}", flush=True)


if __name__ == "__main__":
    main()
