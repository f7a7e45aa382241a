"""Issue 67, item 1: what the closed form's kernel rows cost, lever by lever, on scikit-learn's
digits (the panel's 70/30 split, seed 0; only the training rows are read).

``--part evidence``: one evaluation of the Dirichlet GP's exact log marginal likelihood and its
gradient (alpha_eps 1e-3, the paper's noise, one ARD kernel at lengthscale sqrt(D)) on n random
training rows, by C Cholesky factors of n x n (``conjugate.batched_exact_log_evidence``, autodiff)
against one factor of K + diag(high) and a Woodbury correction per class
(``conjugate.exact_log_evidence``, its backward in closed form), in float64 and float32; the
median seconds of ``--repeats`` evaluations each, and the two values' relative difference.

``--part start``: ``GPClassifier(method="dirichlet")`` with its kernel start fitted on 300, 500,
1,000 and all fit rows (``kernel_start.DIRICHLET_START_ROWS``) and in float64 or float32
(``kernel_start.DIRICHLET_START_DTYPE``), scored on a stratified 20 % validation split of the training
rows (the test split is not read), HistGradientBoosting fitted on the same rows in the same
process for the ratio of seconds. One row per measurement to ``--output``.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier, kernel_start
from alphagp.conjugate import (
    batched_exact_log_evidence,
    class_order,
    exact_log_evidence,
    noise_levels,
    transformed_labels,
)

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def training_rows() -> tuple[np.ndarray, np.ndarray]:
    """Digits' 70 % training split of the panel (stratified, seed 0)."""
    X, y = load_digits(return_X_y=True)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return X_train, y_train


def evidence_seconds(X: np.ndarray, y: np.ndarray, n: int, dtype: torch.dtype, repeats: int) -> dict:
    """Seconds of one evaluation with its gradient, C factors against the Woodbury form (module
    docstring), on ``n`` random rows of ``X`` ``[N, D]`` in ``dtype``."""
    rows = np.random.default_rng(0).choice(len(X), size=min(n, len(X)), replace=False)
    Xs = (X[rows] - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    y_t = torch.as_tensor(y[rows])
    C = int(y.max()) + 1
    order, counts = class_order(y_t, C)
    Xt = torch.as_tensor(Xs[order.numpy()], dtype=dtype)
    labels = transformed_labels(1e-3)
    own = torch.nn.functional.one_hot(y_t[order], C).T.bool()
    T = torch.where(own, labels["t_own"], labels["t_other"]).to(dtype)
    noise = torch.where(own, labels["s_own"], labels["s_other"]).to(dtype)
    high, low = noise_levels(noise, counts)
    log_lengthscale = torch.full((Xt.shape[1],), 0.5 * np.log(Xt.shape[1]), dtype=dtype, requires_grad=True)

    def kernel() -> torch.Tensor:
        scaled = Xt / log_lengthscale.exp()
        sq = scaled.square().sum(-1)
        K = torch.exp(-0.5 * (sq[:, None] + sq[None, :] - 2 * scaled @ scaled.T).clamp_min(0))
        return K + 1e-6 * torch.eye(len(Xt), dtype=dtype)

    def timed(evaluate) -> tuple[float, float]:
        seconds, value = [], None
        for _ in range(repeats):
            log_lengthscale.grad = None
            start = time.perf_counter()
            value = evaluate(kernel())
            value.backward()
            seconds.append(time.perf_counter() - start)
        return float(np.median(seconds)), float(value.detach())

    factors, v_factors = timed(lambda K: batched_exact_log_evidence(K, noise, T))
    woodbury, v_woodbury = timed(lambda K: exact_log_evidence(K, high, low, T, counts))
    return {"n": len(rows), "classes": C, "dtype": str(dtype).split(".")[-1], "c_factors_seconds": factors,
            "woodbury_seconds": woodbury, "relative_difference": abs(v_factors - v_woodbury) / abs(v_factors)}


def start_rows_fit(X: np.ndarray, y: np.ndarray, rows: int, dtype: torch.dtype, threads: int) -> dict:
    """One ``GPClassifier(method="dirichlet")`` fit with its start on ``rows`` rows in ``dtype``,
    scored on a 20 % validation split of ``X``, and HistGradientBoosting on the same rows."""
    X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    kernel_start.DIRICHLET_START_ROWS, kernel_start.DIRICHLET_START_DTYPE = rows, dtype
    start = time.perf_counter()
    clf = GPClassifier(method="dirichlet", random_state=0, n_jobs=threads).fit(X_fit, y_fit)
    seconds = time.perf_counter() - start
    p = clf.predict_proba(X_val)
    start = time.perf_counter()
    hgb = HistGradientBoostingClassifier(random_state=0).fit(X_fit, y_fit)
    hgb_seconds = time.perf_counter() - start
    return {"start_rows": min(rows, len(X_fit)), "dtype": str(dtype).split(".")[-1], "fit_rows": len(X_fit),
            "seconds": seconds, "val_nll": float(log_loss(y_val, p, labels=clf.classes_)),
            "val_error": float(np.mean(clf.classes_[p.argmax(1)] != y_val)),
            "start_seconds": clf.kernel_start_.seconds, "start_evaluations": clf.kernel_start_.evaluations,
            "hgb_seconds": hgb_seconds, "hgb_val_nll": float(log_loss(y_val, hgb.predict_proba(X_val)))}


def main() -> None:
    parser = benchmark_parser(__doc__, output="closed_form_levers.jsonl")
    parser.add_argument("--part", choices=["evidence", "start"], nargs="+", default=["evidence", "start"])
    parser.add_argument("--rows", type=int, nargs="+", default=[300, 500, 1000, 1257])
    parser.add_argument("--repeats", type=int, default=5)
    args = parse_benchmark_args(parser)
    X, y = training_rows()
    parts = {"evidence": (lambda n, dtype: evidence_seconds(X, y, n, dtype, args.repeats),
                          "{dtype} n={n}: C factors {c_factors_seconds:.3f} s, Woodbury {woodbury_seconds:.3f} s"),
             "start": (lambda n, dtype: start_rows_fit(X, y, n, dtype, args.threads),
                       ("{dtype} start rows={start_rows}: val NLL {val_nll:.4f} in {seconds:.1f} s "
                        "(HGB {hgb_seconds:.1f} s)"))}
    with threadpool_limits(args.threads):
        for part in args.part:
            measure, line = parts[part]
            for n in args.rows:
                for dtype in (torch.float64, torch.float32):
                    row = measure(n, dtype)
                    append_row(args.output, base_row("closed-form-levers", part=part, threads=args.threads, **row))
                    print(f"{part} " + line.format(**row), flush=True)


if __name__ == "__main__":
    main()
