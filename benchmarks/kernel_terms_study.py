"""Issue 79, items 2-3: the kernel of exact (power) EP on real tables, and its choice per table by the
model's own measure on the training rows (the development panel, ``real_tables.py``).

For each table where exact EP runs in the default (N (C - 1) pair factors at most
``EXACT_EP_FACTORS``; 70/30 stratified split, seed 0, the training rows as the default encodes them)
and each kernel of :data:`KERNELS` (the default's RBF with one lengthscale; one lengthscale per table
column, a category column's one-hot block sharing one; each with a linear term), exact power EP at
the default's alpha (``exact_pep``, the default's most frequent winner on these tables) is fitted on the
training rows from its own start (the kernel's type-II maximum likelihood of the EP evidence) and
scored once on the test rows. Each row keeps the two measures a fit could choose its kernel by
without the test rows: the log evidence per training row at the start's optimum, and EP's
leave-one-out NLL of the training rows from the cavities (``ExactEP.leave_one_out``). One row per
(table, kernel).

    python benchmarks/kernel_terms_study.py --threads 1
    python benchmarks/report.py kernelterms
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from alphagp import GPClassifier
from alphagp.estimators.model_selection import EXACT_EP_FACTORS
from alphagp.kernel_terms import RBF, Linear
from alphagp.metrics import negative_log_likelihood

from common import benchmark_parser, parse_benchmark_args, run_study

#: name -> the kernel (``"auto"``: the default's, the RBF with one lengthscale of exact EP's start)
KERNELS = {"rbf(one)": "auto", "rbf(columns)": RBF("columns"), "rbf(one) + linear": RBF("one") + Linear(),
           "rbf(columns) + linear": RBF("columns") + Linear()}


def study(name: str) -> list[dict]:
    import real_tables
    X_train, X_test, y_train, y_test = real_tables.split(name)
    classes = np.unique(y_train)
    if len(y_train) * (len(classes) - 1) > EXACT_EP_FACTORS:
        return []
    rows = []
    for kernel_name, kernel in KERNELS.items():
        started = time.perf_counter()
        model = GPClassifier(method="exact_pep", kernel=kernel, random_state=0, verbose=False).fit(X_train, y_train)
        seconds = time.perf_counter() - started
        proba, y_idx, _ = model.model_.leave_one_out()
        loo = negative_log_likelihood(proba.numpy(), y_idx.numpy())
        test = negative_log_likelihood(model.predict_proba(X_test), np.searchsorted(classes, y_test))
        rows.append({"dataset": name, "kernel": kernel_name, "n_train": len(y_train), "n_classes": len(classes),
                     "n_features": int(model.model_.inducing_points.shape[-1]),
                     "log_evidence_per_row": model.kernel_start_.log_marginal_likelihood / len(y_train),
                     "loo_nll": loo, "test_nll": test, "train_seconds": seconds})
    return rows


def main() -> None:
    parser = benchmark_parser(__doc__, output="kernel_terms_study.jsonl")
    import real_tables
    parser.add_argument("--tables", nargs="+", default=list(real_tables.TABLES), choices=list(real_tables.TABLES))
    args = parse_benchmark_args(parser)
    warnings.simplefilter("ignore")
    run_study(args, study, lambda name, row: f"{name:12s} {row['kernel']:22s} test {row['test_nll']:.4f} evidence/row "
                                             f"{row['log_evidence_per_row']:.4f} loo {row['loo_nll']:.4f} "
                                             f"{row['train_seconds']:.1f}s")


if __name__ == "__main__":
    main()
