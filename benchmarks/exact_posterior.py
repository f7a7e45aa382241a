"""EP, SEP and power EP against the exact posterior (Gibbs sampling) on small GP-prior problems.

The setting of tests/methods/test_exact_posterior.py (3 classes, 40 training and 30 test points in
2-D drawn from the GP prior with noise 0.05, true hyper-parameters fixed, inducing points on
the training inputs), over several seeds: the mean and largest absolute difference between
each method's test probabilities and the average of two Gibbs chains, and the chains'
difference from each other (Monte Carlo error). A second sampler targets the posterior under
the paper's factorised likelihood (eq. 33), the posterior EP approximates, which separates
EP's own error from that of the likelihood's form. The sampler is the test suite's own
(alphagp.testing.gibbs_reference, NumPy and SciPy only). One JSON line per (seed, method) goes to
benchmarks/results/exact_posterior.jsonl.

    python benchmarks/exact_posterior.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import numpy as np

from alphagp import GPClassifier
from alphagp.testing import gibbs_reference as gibbs

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

METHODS = {"EP": dict(method="ep"), "SEP": dict(method="sep"), "EP alpha=0.5": dict(method="ep", alpha=0.5),
           "SEP alpha=0.5": dict(method="sep", alpha=0.5)}


def main() -> None:
    parser = benchmark_parser(__doc__, output="exact_posterior.jsonl")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--samples", type=int, default=1500)
    args = parse_benchmark_args(parser)
    for seed in args.seeds:
        p = gibbs.draw_problem(seed, args.noise)
        n_train, n_test = len(p.y_train), len(p.X_test)
        chains, factorised = ([gibbs.chain_probabilities(p, sampler, args.samples, seed=100 * seed + s) for s in (1, 2)]
                              for sampler in (gibbs.sample_posterior, gibbs.sample_product_of_phi_posterior))
        exact, target = (chains[0] + chains[1]) / 2, (factorised[0] + factorised[1]) / 2
        chain_gap = float(np.abs(chains[0] - chains[1]).max())
        common = dict(dataset="gp-prior-3class", seed=seed, noise=args.noise, n_train=n_train, n_test=n_test,
                      gibbs_chain_max_gap=chain_gap, gibbs_samples=args.samples,
                      factorised_chain_max_gap=float(np.abs(factorised[0] - factorised[1]).max()))
        likelihood_gap = np.abs(target - exact)
        append_row(args.output, base_row("exact-posterior", method="factorised-likelihood posterior",
                                         mean_abs_diff=float(likelihood_gap.mean()),
                                         max_abs_diff=float(likelihood_gap.max()), **common))
        for name, params in METHODS.items():
            clf = GPClassifier(inducing_points=p.X_train, kernel_params=dict(lengthscale=1.0, amplitude=1.0,
                                                                             noise=args.noise),
                               optimize_hyperparameters=False, optimize_inducing=False, standardize=False,
                               max_iter=200, n_jobs=args.threads, **params).fit(p.X_train, p.y_train)
            proba = clf.predict_proba(p.X_test)
            diff, own = np.abs(proba - exact), np.abs(proba - target)
            append_row(args.output, base_row("exact-posterior", method=name, mean_abs_diff=float(diff.mean()),
                                             max_abs_diff=float(diff.max()),
                                             mean_abs_diff_factorised=float(own.mean()),
                                             max_abs_diff_factorised=float(own.max()), **common))
            print(f"seed {seed} {name:14s} exact: mean |diff| {diff.mean():.4f} max {diff.max():.4f}; factorised "
                  f"likelihood: mean {own.mean():.4f} max {own.max():.4f} (chains differ by up to {chain_gap:.4f})",
                  flush=True)

if __name__ == "__main__":
    main()
