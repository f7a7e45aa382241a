"""Wine-red's duplicate rows and what they do to a test log-likelihood (issue 48).

Wine-red (the deep-GP paper's regression splits in ../shared/data) has 240 rows that repeat an
earlier row exactly, target included; splits 0, 1 and 2 have 51, 41 and 43 of their 160 test rows
equal to a training row. This counts them and fits an exact GP (scikit-learn's
GaussianProcessRegressor: ARD RBF plus white noise, standardised inputs and target) on each
split, scoring the test log-likelihood and RMSE on all test rows and on the test rows that
duplicate no training row. One row per split to benchmarks/results/winered_duplicates.jsonl.

    python benchmarks/winered_duplicates.py --threads 1
"""

from __future__ import annotations

import warnings

import numpy as np
from dgp_uci import duplicated_in, split
from scipy.stats import norm
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from alphagp.data import data_dir, read_table

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="winered_duplicates.jsonl")
    parser.add_argument("--splits", type=int, default=3)
    args = parse_benchmark_args(parser)
    X, y = read_table(data_dir() / "wine_quality_red.tsv.gz")
    _, counts = np.unique(np.column_stack([X, y]), axis=0, return_counts=True)
    repeats = int((counts - 1).sum())
    for k in range(args.splits):
        Xtr, Xte, ytr, yte = split("wine_quality_red", k)
        dup = duplicated_in(np.column_stack([Xte, yte]), np.column_stack([Xtr, ytr]))
        mu, sd, ym, ys = Xtr.mean(0), Xtr.std(0), ytr.mean(), ytr.std()
        kernel = ConstantKernel(1.0) * RBF(np.ones(X.shape[1]), (1e-2, 1e3)) + WhiteKernel(0.1, (1e-6, 10))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)    # the noise at its bound is the finding
            gp = GaussianProcessRegressor(kernel, random_state=0).fit((Xtr - mu) / sd, (ytr - ym) / ys)
        m, s = gp.predict((Xte - mu) / sd, return_std=True)
        mean, std = m * ys + ym, s * ys
        ll, err = norm.logpdf(yte, mean, std), mean - yte
        row = base_row("winered-duplicates", dataset="wine_quality_red", split=k, repeated_rows=repeats,
                       n_test=len(yte), n_test_duplicates=int(dup.sum()), model="exact GP (scikit-learn)",
                       noise_variance=float(gp.kernel_.k2.noise_level) * ys**2,
                       test_ll_mean=float(ll.mean()), test_ll_median=float(np.median(ll)),
                       test_ll_mean_duplicates=float(ll[dup].mean()),
                       test_ll_mean_without_duplicates=float(ll[~dup].mean()),
                       test_ll_median_without_duplicates=float(np.median(ll[~dup])),
                       test_rmse=float(np.sqrt(np.mean(err**2))),
                       test_rmse_without_duplicates=float(np.sqrt(np.mean(err[~dup] ** 2))))
        append_row(args.output, row)
        print(f"split {k}: {row['n_test_duplicates']} of {len(yte)} test rows repeat a training row; mean test "
              f"log-likelihood {row['test_ll_mean']:.3f} (without them {row['test_ll_mean_without_duplicates']:.3f})",
              flush=True)


if __name__ == "__main__":
    main()
