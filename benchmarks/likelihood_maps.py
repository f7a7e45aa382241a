"""Figure 8 of the logistic-softmax paper (Appendix A.4): the predictive probabilities of each
likelihood over the plane as RGB maps, one class to a colour channel.

The data and fits are Figure 3's (``likelihoods.py``): 500 points of the 3-class Gaussian mixture
at sigma^2 = 0.5 (the paper's figure), two thirds for training, each likelihood fitted by its
method with the same settings; the Bayes posterior of the known mixture is the reference map.
Each map is a ``--grid`` x ``--grid`` lattice over the training points' range padded by 1. The
row of each likelihood holds what the map shows, in numbers: the mean over the lattice of the
largest class probability, the share of the lattice where it passes 0.99, the mean absolute
difference from the Bayes map, and the test NLL. ``--plot`` draws the maps.

    python benchmarks/likelihood_maps.py --threads 1 --plot likelihood_maps.png
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from likelihoods import METHODS, bayes_posterior, mixture
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.metrics import all_metrics

from common import RESULTS, append_row, base_row, benchmark_parser, parse_benchmark_args


def lattice(X: np.ndarray, n: int) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """``[n * n, 2]`` points of a lattice over ``X``'s range padded by 1, row by row from the
    bottom, and its extent (x0, x1, y0, y1)."""
    (x0, y0), (x1, y1) = X.min(0) - 1.0, X.max(0) + 1.0
    gx, gy = np.meshgrid(np.linspace(x0, x1, n), np.linspace(y0, y1, n))
    return np.column_stack([gx.ravel(), gy.ravel()]), (x0, x1, y0, y1)


def map_summary(proba: np.ndarray, bayes: np.ndarray) -> dict:
    """What a map shows, for ``[n, 3]`` probabilities on the lattice and the Bayes map there."""
    top = proba.max(1)
    return {"mean_max_probability": float(top.mean()), "share_above_0_99": float(np.mean(top > 0.99)),
            "mean_abs_diff_bayes": float(np.abs(proba - bayes).mean())}


def plot_maps(maps: dict, extent, X, y, path) -> None:
    """One RGB panel per likelihood (class k -> channel k) with the training points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = round(np.sqrt(next(iter(maps.values())).shape[0]))
    cols = 3
    rows = -(-len(maps) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.ravel()[len(maps):]:
        ax.axis("off")
    for ax, (name, proba) in zip(axes.ravel(), maps.items()):
        ax.imshow(proba.reshape(n, n, 3), origin="lower", extent=extent, aspect="auto")
        ax.scatter(X[:, 0], X[:, 1], c=np.eye(3)[y] * 0.5, s=4, edgecolors="white", linewidths=0.2)
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Predictive probabilities as RGB (class k -> channel k), sigma^2 = 0.5, seed 0", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = benchmark_parser(__doc__, output="likelihood_maps.jsonl")
    parser.add_argument("--noise", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", type=int, default=120)
    parser.add_argument("--likelihoods", nargs="+", default=list(METHODS))
    parser.add_argument("--plot", default=None, help="file name in benchmarks/results for the maps")
    args = parse_benchmark_args(parser)
    X, y, posterior = mixture(args.noise, args.seed)
    X_tr, X_te, y_tr, y_te, _, post_te = train_test_split(X, y, posterior, test_size=1 / 3, random_state=args.seed)
    grid, extent = lattice(X_tr, args.grid)
    bayes = bayes_posterior(grid, args.noise)
    maps = {"bayes": bayes}
    append_row(args.output, base_row("likelihood-maps", noise=args.noise, seed=args.seed, likelihood="bayes",
                                     method=None, grid=args.grid, threads=args.threads,
                                     **map_summary(bayes, bayes), **all_metrics(post_te, y_te)))
    for name in args.likelihoods:
        method = METHODS[name]
        clf = GPClassifier(method=method, n_inducing=50, inducing_init="kmeans++",
                           max_iter=250 if method == "ep" else 500, n_jobs=args.threads, random_state=args.seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            clf.fit(X_tr, y_tr)
        seconds = time.perf_counter() - start
        maps[name] = clf.predict_proba(grid)
        summary, metrics = map_summary(maps[name], bayes), all_metrics(clf.predict_proba(X_te), y_te)
        append_row(args.output, base_row("likelihood-maps", noise=args.noise, seed=args.seed, likelihood=name,
                                         method=method, grid=args.grid, threads=args.threads,
                                         train_seconds=seconds, **summary, **metrics))
        print(f"{name:<28} mean max p {summary['mean_max_probability']:.3f}, above 0.99 on "
              f"{100 * summary['share_above_0_99']:.1f} %, |p - bayes| {summary['mean_abs_diff_bayes']:.3f}, "
              f"test NLL {metrics['nll']:.3f} ({seconds:.1f} s)", flush=True)
    if args.plot:
        plot_maps(maps, extent, X_tr, y_tr, RESULTS / args.plot)


if __name__ == "__main__":
    main()
