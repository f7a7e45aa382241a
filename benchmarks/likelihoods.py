"""Figures 3 and 4 of the logistic-softmax paper: four likelihoods on 3-class Gaussian mixtures.

Data (the authors' exp/comparison_likelihoods.jl): 500 points in 2-D, classes equally likely,
class k ~ N(c_k, sigma^2 I) with centres e_1 / sqrt 2, e_2 / sqrt 2 and (1 + sqrt 3) / 2 (1, 1) / sqrt 2;
a third of the points is the test set. Seven noise levels sigma^2 from 0.001 to 1 (0 itself would
put every point of a class on its centre). Since the mixture is known, the Bayes-optimal
p(y | x) gives the best reachable test NLL and its calibration (the ``bayes`` rows).

Likelihoods and the method that fits each (section 5.1: variational inference without the
augmentation, gradients by sampling; no setting is tuned, so no validation split is needed):
softmax, logistic-softmax and robust-max by sparse VI (``vi_softmax`` and ``vi_logistic_softmax``:
Monte Carlo expectations; ``vi``: quadrature), Heaviside by EP (``ep``); and, beyond the figure,
the logistic-softmax fitted by the augmented closed-form VI (``augmented``). M = 50 inducing points per class at k-means++ seeds (the authors' m),
batch training, 500 iterations for the variational methods (Adam 0.01, the authors' count) and
the library's 250 EP iterations (sign-adaptive rule). One JSON line per (sigma^2, seed, method)
to benchmarks/results/likelihoods.jsonl; ``--plot`` also draws the reliability diagrams and
confidence histograms of one seed at sigma^2 = 0.5 (Figure 3).

    python benchmarks/likelihoods.py --threads 2 --seeds 5 --plot likelihoods_reliability.png
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from scipy.stats import multivariate_normal
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.calibration import reliability_curve
from alphagp.metrics import all_metrics
from alphagp.plotting import plot_reliability

from common import RESULTS, append_row, base_row, benchmark_parser, parse_benchmark_args

NOISE_LEVELS = [0.001, 1 / 6, 1 / 3, 0.5, 2 / 3, 5 / 6, 1.0]
METHODS = {"softmax": "vi_softmax", "logistic-softmax": "vi_logistic_softmax", "robust-max": "vi", "heaviside": "ep",
           "logistic-softmax, augmented": "augmented"}
CENTRES = np.array([[1.0, 0.0], [0.0, 1.0], [(1 + math.sqrt(3)) / 2, (1 + math.sqrt(3)) / 2]]) / math.sqrt(2)


def mixture(noise: float, seed: int, n: int = 500):
    """X ``[n, 2]``, labels ``[n]`` and the Bayes posterior p(y | x) ``[n, 3]``."""
    g = np.random.default_rng(seed)
    y = g.integers(0, 3, n)
    X = CENTRES[y] + math.sqrt(noise) * g.standard_normal((n, 2))
    return X, y, bayes_posterior(X, noise)


def bayes_posterior(X: np.ndarray, noise: float) -> np.ndarray:
    """The mixture's p(y | x) ``[n, 3]`` at points ``X`` ``[n, 2]`` (classes equally likely)."""
    log_dens = np.stack([multivariate_normal(c, noise * np.eye(2)).logpdf(X) for c in CENTRES], 1)
    posterior = np.exp(log_dens - log_dens.max(1, keepdims=True))
    return posterior / posterior.sum(1, keepdims=True)


def main() -> None:
    parser = benchmark_parser(__doc__, output="likelihoods.jsonl")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--noise", nargs="+", type=float, default=NOISE_LEVELS)
    parser.add_argument("--likelihoods", nargs="+", default=list(METHODS))
    parser.add_argument("--plot", default=None, help="file name in benchmarks/results for the reliability "
                        "diagrams of seed 0 at sigma^2 = 0.5")
    args = parse_benchmark_args(parser)
    curves = {}
    for noise in args.noise:
        for seed in range(args.seeds):
            X, y, posterior = mixture(noise, seed)
            X_tr, X_te, y_tr, y_te, _, post_te = train_test_split(X, y, posterior, test_size=1 / 3, random_state=seed)
            append_row(args.output, base_row("likelihoods", noise=noise, seed=seed, likelihood="bayes", method=None,
                                             **all_metrics(post_te, y_te)))
            for name in args.likelihoods:
                method = METHODS[name]
                clf = GPClassifier(method=method, n_inducing=50, inducing_init="kmeans++",
                                   max_iter=250 if method == "ep" else 500, n_jobs=args.threads, random_state=seed)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    clf.fit(X_tr, y_tr)
                seconds = time.perf_counter() - start
                proba = clf.predict_proba(X_te)
                metrics = all_metrics(proba, y_te)
                append_row(args.output, base_row("likelihoods", noise=noise, seed=seed, likelihood=name, method=method,
                                                 train_seconds=seconds, n_train=len(y_tr), n_test=len(y_te),
                                                 **metrics))
                print(f"sigma^2={noise:.3f} seed={seed} {name:<17} error {metrics['error']:.3f} "
                      f"nll {metrics['nll']:.3f} ece {metrics['ece']:.3f} ({seconds:.1f} s)", flush=True)
                if seed == 0 and abs(noise - 0.5) < 1e-12:
                    curves[name] = reliability_curve(proba, y_te, n_bins=10)
    if args.plot and curves:
        plot_reliability(curves, RESULTS / args.plot, title="3-class Gaussian mixture, sigma^2 = 0.5, test set (seed 0)")


if __name__ == "__main__":
    main()
