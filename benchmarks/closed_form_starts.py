"""Issue 79: the closed form's kernel start on real tables, at which ``alpha_eps`` it is searched and
with or without the kernel's linear term (the study behind ``DIRICHLET_LINEAR_START_EPS`` and the
second closed-form candidate; the development panel's tables, ``real_tables.py``).

For each table (70/30 stratified split, seed 0, the training rows encoded as the default encodes
them) and each start (``"dirichlet"`` and ``"dirichlet_linear"``, each searched at alpha_eps 1e-3,
1e-2 and 0.1 with noise_scale 1), the closed form is fitted at every point of the default's
leave-one-out grid (``LOO_DIRICHLET_GRID``) from that start on the training rows; the point of
lowest leave-one-out NLL is kept and scored once on the test rows. One row per (table, start,
alpha_eps of the search).

    python benchmarks/closed_form_starts.py --threads 1
"""

from __future__ import annotations

import itertools
import time
import warnings

import numpy as np

from alphagp import GPClassifier
from alphagp.estimators import model_selection
from alphagp.estimators.classifier_family import class_probabilities
from alphagp.estimators.run import standardisation
from alphagp.kernel_start import STARTS, fit_kernel_start
from alphagp.metrics import negative_log_likelihood

from common import benchmark_parser, parse_benchmark_args, run_study

TABLES = ["mroz", "infert", "fishing", "yogurt", "catsup", "titanic", "somerville"]
SEARCHED_AT = (1e-3, 1e-2, 1e-1)


def study(name: str) -> list[dict]:
    import real_tables
    X_train, X_test, y_train, y_test = real_tables.split(name)
    encoder = GPClassifier(method="class_frequencies").fit(X_train, y_train)
    encode = encoder.table_encoding_.transform if hasattr(encoder, "table_encoding_") else np.asarray
    A, B = np.asarray(encode(X_train), dtype=float), np.asarray(encode(X_test), dtype=float)
    classes = np.unique(y_train)
    y_idx, test_idx = np.searchsorted(classes, y_train), np.searchsorted(classes, y_test)
    est = GPClassifier(random_state=0)
    grid = model_selection.LOO_DIRICHLET_GRID
    rows = []
    for surrogate, searched_at in itertools.product(("dirichlet", "dirichlet_linear"), SEARCHED_AT):
        started = time.perf_counter()
        start = fit_kernel_start(standardisation(A, True, None), y_idx, len(classes), surrogate=surrogate,
                                 rng=np.random.default_rng(0),
                                 **STARTS[surrogate].settings({"alpha_eps": searched_at, "noise_scale": 1.0}, None))
        best = None
        for point in itertools.product(*grid.values()):
            params = {**est.get_params(), "method": "dirichlet", "kernel_init": surrogate, "checkpoint": None,
                      "verbose": False, "method_params": dict(zip(grid, point))}
            result = est._fit_result(params, A, y_idx, classes, start={surrogate: start}, own=False)
            loo = model_selection.leave_one_out_nll(result)
            if best is None or loo < best[0]:
                best = (loo, dict(zip(grid, point)), result)
        test = negative_log_likelihood(class_probabilities(best[2].predictor(1), B, len(classes)), test_idx)
        rows.append({"dataset": name, "start": surrogate, "searched_at": searched_at, "n_train": len(y_train),
                     "loo_nll": best[0], "point": best[1], "test_nll": test,
                     "seconds": time.perf_counter() - started})
    return rows


def main() -> None:
    parser = benchmark_parser(__doc__, output="closed_form_starts.jsonl")
    parser.add_argument("--tables", nargs="+", default=TABLES)
    args = parse_benchmark_args(parser)
    warnings.simplefilter("ignore")
    run_study(args, study, lambda name, row: f"{name:12s} {row['start']:17s} at {row['searched_at']:g}: test "
                                             f"{row['test_nll']:.4f} (leave-one-out {row['loo_nll']:.4f}, {row['point']})")


if __name__ == "__main__":
    main()
