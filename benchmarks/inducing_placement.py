"""Where each method puts its inducing points (Figure 3 of the scalable-EP paper, Figure 2 of the
alpha paper, thesis Figure 6.1).

A synthetic 2-D problem with three classes: x uniform in [-2.5, 2.5]^2, latent functions drawn
from the GP prior (SE kernel, lengthscale 1, amplitude 1, noise 1e-2) and labels by argmax. The
kernel is fixed at those true values; only the inducing points (random training points at the
start, the same for every method) and q are learnt, in batch training. One figure: rows are
methods, columns M; training points coloured by class, decision boundaries in black, inducing
points as black-edged dots. Test error and NLL on 2,000 further points go to
benchmarks/results/inducing_placement.jsonl.

    python benchmarks/inducing_placement.py --threads 1 --M 1 4 16 64 256

With ``--alphas`` the columns are values of alpha at the single M given (alpha paper Figure 2:
``--methods pep apep arpep rpapep --alphas 0.001 0.5 1 --M 128 --n-train 1000 --figure
inducing_placement_alpha.png``).
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from alphagp import GPClassifier

from common import RESULTS, append_row, base_row, benchmark_parser, parse_benchmark_args

TRUE_KERNEL = {"lengthscale": 1.0, "amplitude": 1.0, "noise": 1e-2}


def problem(n_train: int, n_test: int, seed: int = 0):
    g = np.random.default_rng(seed)
    n = n_train + n_test
    X = g.uniform(-2.5, 2.5, (n, 2))
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-0.5 * d2) + 1e-6 * np.eye(n)
    F = np.linalg.cholesky(K) @ g.standard_normal((n, 3)) + np.sqrt(TRUE_KERNEL["noise"]) * g.standard_normal((n, 3))
    y = F.argmax(1)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def main() -> None:
    parser = benchmark_parser(__doc__, output="inducing_placement.jsonl")
    parser.add_argument("--methods", nargs="+", default=["gfitc", "ep", "sep", "rep", "pep:0.5", "vi"])
    parser.add_argument("--M", nargs="+", type=int, default=[1, 4, 16, 64])
    parser.add_argument("--n-train", type=int, default=500)
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--alphas", nargs="+", type=float, default=None,
                        help="columns are these alphas (at the first --M) instead of the values of M")
    parser.add_argument("--figure", default="inducing_placement.png", help="PNG in benchmarks/results")
    args = parse_benchmark_args(parser)
    columns = [(args.M[0], a) for a in args.alphas] if args.alphas else [(m, None) for m in args.M]
    X, y, X_test, y_test = problem(args.n_train, 2000)
    grid = np.linspace(-2.5, 2.5, 150)
    G1, G2 = np.meshgrid(grid, grid)
    G = np.stack([G1.ravel(), G2.ravel()], 1)
    fig, axes = plt.subplots(len(args.methods), len(columns), figsize=(2.6 * len(columns), 2.6 * len(args.methods)),
                             squeeze=False)
    colours = np.array(["tab:blue", "tab:red", "tab:green"])
    for i, spec in enumerate(args.methods):
        for j, (m, column_alpha) in enumerate(columns):
            method, _, alpha = spec.partition(":")
            alpha = column_alpha if column_alpha is not None else (float(alpha) if alpha else None)
            start_Z = X[np.random.default_rng(m).choice(len(y), m, replace=False)]
            clf = GPClassifier(method=method, alpha=alpha, inducing_points=start_Z,
                               kernel_params=TRUE_KERNEL, optimize_hyperparameters=False, standardize=False,
                               max_iter=args.max_iter, random_state=0, n_jobs=args.threads)
            start = time.perf_counter()
            clf.fit(X, y)
            seconds = time.perf_counter() - start
            metrics = clf.evaluate(X_test, y_test)
            append_row(args.output, base_row(
                "inducing-placement", figure=args.figure, method=spec, alpha=getattr(clf.model_, "alpha", None), M=m,
                n_train=len(y), max_iter=args.max_iter,
                test_error=metrics["error"], test_nll=metrics["nll"], train_seconds=seconds))
            print(f"{spec:8s} alpha={alpha} M={m:4d} err={metrics['error']:.3f} nll={metrics['nll']:.3f} "
                  f"{seconds:.1f}s", flush=True)
            ax = axes[i, j]
            ax.scatter(X[:, 0], X[:, 1], c=colours[y], s=3, alpha=0.5, linewidths=0)
            ax.contour(G1, G2, clf.predict_proba(G).argmax(1).reshape(G1.shape), levels=[0.5, 1.5], colors="k",
                       linewidths=0.8)
            Z = clf.model_.inducing_points.detach().numpy().reshape(-1, 2)   # standardize=False: data units
            ax.scatter(Z[:, 0], Z[:, 1], c="white", edgecolors="k", s=14, linewidths=0.8)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_xlim(-2.5, 2.5)
            ax.set_ylim(-2.5, 2.5)
            if i == 0:
                ax.set_title(f"alpha = {column_alpha:g}" if column_alpha is not None else f"M = {m}")
            if j == 0:
                ax.set_ylabel(spec.upper())
    fig.tight_layout()
    fig.savefig(RESULTS / args.figure, dpi=110)
    print(f"figure: {RESULTS / args.figure}")


if __name__ == "__main__":
    main()
