"""Table 1 / C.6 of the deep-GP paper: predictive distributions on two synthetic problems.

Bimodal: x on linspace(-2, 2), y = 10 sin x or 10 cos x with probability 1/2 each, plus N(0, 1)
noise. Heteroscedastic: x on linspace(-4, 4), y = 7 sin x + 3 |cos(x / 2)| eps. 1,000 training
points and 500 test points on the same interval with fresh noise. The paper's settings: L = 4
layers of H = 3 units, M = 10, mini-batches of 50, S = 50 samples, 500 epochs, Adam at 0.01
(bimodal) and 0.002 (heteroscedastic). Nothing is tuned: every (alpha, seed) is fitted once and
scored once; the seed draws the data, the initialisation and the Monte Carlo draws.
``--hidden-mean-scale`` starts the hidden units' whitened means at random (DeepGPRegressor's
``hidden_mean_scale``). ``--hidden-inducing authors`` replaces the inducing inputs of the layers
after the first by the authors' start for H > D (``_adjust_z_dim`` in cvillacampa/dgps_pep): the
first layer's Z projected on the first right singular vector of the (standardised) training
inputs, tiled into every column; ``carried`` (ours) keeps Z carried through the hidden means. One JSON line per (problem, alpha, seed) in
benchmarks/results/dgp_synthetic.jsonl with the test RMSE and the test log-likelihood (mean log
predictive density); ``--plot`` also draws samples of the predictive distribution (the paper's
Fig. 5, first seed).

    python benchmarks/dgp_synthetic.py --threads 1 --problems bimodal --alphas 1 --seeds 0 1 2 3 4
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import torch

import alphagp.estimators.deep_gp
from alphagp import DeepGPRegressor

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

ALPHAS = (1e-3, 0.5, 1.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9)   # Table 1's three first
LEARNING_RATES = {"bimodal": 0.01, "heteroscedastic": 0.002}


def make_problem(name: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``X`` ``[n, 1]`` and ``y`` ``[n]`` of the named synthetic problem."""
    if name == "bimodal":
        x = np.linspace(-2.0, 2.0, n)
        y = np.where(rng.random(n) < 0.5, 10.0 * np.sin(x), 10.0 * np.cos(x)) + rng.standard_normal(n)
    elif name == "heteroscedastic":
        x = np.linspace(-4.0, 4.0, n)
        y = 7.0 * np.sin(x) + 3.0 * np.abs(np.cos(x / 2.0)) * rng.standard_normal(n)
    else:
        raise ValueError(name)
    return x[:, None], y


def with_authors_hidden_inducing(build_layers):
    """``initial_layers`` with the inducing inputs of every layer after the first set as the
    authors' code sets them when a layer has more inputs than the data (H > D): the first
    principal component of the first layer's Z (uncentred SVD of the inputs, as theirs), tiled."""
    def build(X, *args, **kwargs):
        layers = build_layers(X, *args, **kwargs)
        direction = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)[2][0]
        first_pc = layers[0].inducing_points[0].detach() @ torch.as_tensor(direction)      # [M]
        with torch.no_grad():
            for layer in layers[1:]:
                layer.inducing_points.copy_(first_pc[None, :, None].expand_as(layer.inducing_points))
        return layers
    return build


def main() -> None:
    parser = benchmark_parser(__doc__, output="dgp_synthetic.jsonl")
    parser.add_argument("--problems", nargs="+", default=["bimodal", "heteroscedastic"])
    parser.add_argument("--alphas", nargs="+", type=float, default=list(ALPHAS))
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--hidden-mean-scale", type=float, default=0.0)
    parser.add_argument("--hidden-inducing", choices=["carried", "authors"], default="carried",
                        help="the later layers' starting Z: ours, or the authors' tiled first principal component")
    parser.add_argument("--plot", default=None, help="PNG of predictive samples (needs matplotlib)")
    args = parse_benchmark_args(parser)
    if args.hidden_inducing == "authors":
        module = alphagp.estimators.deep_gp
        module.initial_layers = with_authors_hidden_inducing(module.initial_layers)
    draws = {}
    for problem, seed in itertools.product(args.problems, args.seeds):
        rng = np.random.default_rng(seed)
        X_tr, y_tr = make_problem(problem, 1000, rng)
        X_te, y_te = make_problem(problem, 500, rng)
        for alpha in args.alphas:
            model = DeepGPRegressor(n_layers=4, n_hidden=3, n_inducing=10, alpha=alpha, n_samples=50,
                                    n_predict_samples=100, batch_size=50, max_iter=args.epochs,
                                    learning_rate=LEARNING_RATES[problem], hidden_mean_scale=args.hidden_mean_scale,
                                    n_jobs=args.threads, random_state=seed)
            start = time.perf_counter()
            model.fit(X_tr, y_tr)
            seconds = time.perf_counter() - start
            metrics = model.evaluate(X_te, y_te)
            append_row(args.output, base_row("dgp-synthetic", problem=problem, alpha=alpha, epochs=args.epochs,
                                             seed=seed, hidden_mean_scale=args.hidden_mean_scale,
                                             hidden_inducing=args.hidden_inducing,
                                             train_seconds=seconds, rmse=metrics["rmse"], test_loglik=-metrics["nll"]))
            print(f"{problem:<15} alpha={alpha:<6g} seed {seed} rmse {metrics['rmse']:.3f} "
                  f"test LL {-metrics['nll']:.3f} ({seconds:.0f} s)", flush=True)
            if seed == args.seeds[0]:
                draws[problem, alpha] = (X_te[:, 0], model.sample_y(X_te, 20, random_state=0))
    if args.plot:
        plot(draws, args.plot)


def plot(draws: dict, path: str) -> None:
    """Samples of the predictive distribution per (problem, alpha): the paper's Fig. 5."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    problems = sorted({p for p, _ in draws})
    alphas = sorted({a for _, a in draws})
    fig, axes = plt.subplots(len(problems), len(alphas), figsize=(2.6 * len(alphas), 2.6 * len(problems)),
                             squeeze=False, sharey="row")
    for i, problem in enumerate(problems):
        for j, alpha in enumerate(alphas):
            if (problem, alpha) not in draws:
                continue
            x, samples = draws[problem, alpha]
            axes[i, j].plot(np.repeat(x, samples.shape[1]), samples.ravel(), ".", ms=1, alpha=0.3)
            axes[i, j].set_title(f"{problem}, alpha={alpha:g}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
