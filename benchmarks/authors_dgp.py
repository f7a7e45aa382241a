"""The deep-GP paper's UCI regression fits by the authors' own code, on our data and splits: the
peer of ``benchmarks/dgp_uci.py`` that says whether a gap to Tables C.7-C.8 is ours or the paper's.

The authors' code (``cvillacampa/dgps_pep``, written for TensorFlow 1.15) runs unchanged through
``tensorflow.compat.v1``; the one name TensorFlow 2 removed (``tf.contrib.distributions.percentile``,
the median of the lengthscale initialisation) is mapped to ``tfp.stats.percentile``. The settings
are those of their ``experiments/uci/run_uci.py``: min(D, 30) hidden units, M = 100 inducing
inputs from k-means, S = 20 samples, mini-batches of 100, Adam at 0.001 for 20,000 iterations,
hidden-layer noise 1e-5 and likelihood variance 0.01; inputs and targets standardised with the
training rows' moments. Their code seeds nothing (it assigns ``np.random.seed = seed``), so this
script seeds NumPy's global generator with the split number for k-means and the shuffles.

One JSON line per (data set, split, L, alpha) in benchmarks/results/authors_dgp.jsonl: RMSE, the
mean and median test log-likelihood, the three test points of lowest log-likelihood (target,
predictive mean and sd), the learned likelihood variance in the targets' units, and the energy
on all training rows at 20 points of the run. It needs TensorFlow 2.15 and TensorFlow Probability
0.23 (NumPy < 2) beside alphagp, and a checkout of the authors' repository:

    git --git-dir=<mirror of cvillacampa/dgps_pep> archive HEAD | tar -x -C /tmp/dgps_pep
    python benchmarks/authors_dgp.py --authors /tmp/dgps_pep --authors-commit 30ce21f --threads 1 \\
        --datasets energy --splits 1 --layers 2 --alphas 1
"""

from __future__ import annotations

import math
import sys
import time
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from dgp_uci import PAPER_NAME, REGRESSION, split, summarise_points
from scipy.cluster.vq import kmeans2

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def tensorflow_one(threads: int):
    """``tensorflow.compat.v1`` in graph mode, installed as ``tensorflow`` for the authors'
    modules, with its sessions on ``threads`` threads."""
    import tensorflow as tf
    import tensorflow_probability as tfp

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    v1.contrib = SimpleNamespace(distributions=SimpleNamespace(percentile=tfp.stats.percentile))
    v1.Session = partial(v1.Session, config=v1.ConfigProto(intra_op_parallelism_threads=threads,
                                                             inter_op_parallelism_threads=1))
    sys.modules["tensorflow"] = v1
    return v1


def standardise(train: np.ndarray, *others: np.ndarray):
    """The authors' ``DatasetLoader.normalize``: the training rows' mean and sd (+ 1e-6)."""
    mean, sd = train.mean(0), train.std(0) + 1e-6
    return mean, sd, [(a - mean) / sd for a in (train, *others)]


def per_point(net, X: np.ndarray, y: np.ndarray, y_mean: float, y_sd: float):
    """Test log-likelihood ``[n]`` and the predictive mean and sd ``[n]`` of the authors' model
    (their ``getLogLikelihoodError`` and ``predict`` ops, kept per point)."""
    out = net.layers[-1]
    feed = {net.training_data_tf: X, out.test_targets_tf: y[:, None], out.y_train_std: [y_sd],
            out.y_train_mean: [y_mean], net.set_for_training: 0.0}
    (loglik, _), (mean, var) = net.sess.run([net.outputLikelihoodError, net.predict_function], feed)
    return loglik.ravel(), mean.ravel(), np.sqrt(var.ravel())


def fit_one(GPNetwork, v1, name: str, k: int, L: int, alpha: float, iterations: int) -> dict:
    X_tr, X_te, y_tr, y_te = split(name, k)
    _, _, (X_tr, X_te) = standardise(X_tr, X_te)
    y_mean, y_sd, (ys_tr,) = standardise(y_tr[:, None])
    y_mean, y_sd = float(y_mean[0]), float(y_sd[0])
    seed_function = np.random.seed
    seed_function(k)
    Z = kmeans2(X_tr, 100, minit="points")[0]
    net = GPNetwork(X_tr, ys_tr, L, min(30, X_tr.shape[1]), 100, no_samples=20, inducing_points=Z,
                    var_noise=1e-5, lik_noise=0.01, shared_prior=False, alpha=alpha, seed=0)
    np.random.seed = seed_function          # their constructor overwrites it with an int
    batches = math.ceil(len(y_tr) / 100)
    epochs = math.ceil(iterations / batches)
    marks = sorted({round(i * epochs / 20) for i in range(1, 21)})
    trace, done, start = [], 0, time.perf_counter()
    train_feed = {net.training_data_tf: X_tr, net.training_targets_tf: ys_tr, net.set_for_training: 1.0}
    for mark in marks:
        net.train(v1.train.AdamOptimizer(0.001) if done == 0 else None, no_epochs=mark - done,
                  minibatch_size=100, show_training_info=False, continue_training=done > 0)
        done = mark
        trace.append([done, -float(net.sess.run(net.energy, train_feed))])
    seconds = time.perf_counter() - start
    loglik, mean, sd = per_point(net, X_te, y_te, y_mean, y_sd)
    noise = float(np.exp(net.sess.run(net.layers[-1].lvar_noise))) * y_sd ** 2
    median, lowest = summarise_points(loglik, mean, sd, y_te)
    return dict(dataset=name, paper_name=PAPER_NAME[name], task="regression", split=k, layers=L, alpha=alpha,
                iterations=iterations, epochs=epochs, n_train=len(y_tr), n_test=len(y_te), train_seconds=seconds,
                learning_rate=0.001, rmse=float(np.sqrt(np.mean((mean - y_te) ** 2))),
                test_loglik=float(np.mean(loglik)), test_loglik_median=median,
                lowest_test_points=lowest, likelihood_variance=noise, energy_by_epoch=trace)


def main() -> None:
    parser = benchmark_parser(__doc__, output="authors_dgp.jsonl")
    parser.add_argument("--authors", type=Path, required=True, help="checkout of cvillacampa/dgps_pep")
    parser.add_argument("--authors-commit", required=True, help="the commit of that checkout (recorded in the rows)")
    parser.add_argument("--datasets", nargs="+", default=["energy"], choices=list(REGRESSION))
    parser.add_argument("--layers", nargs="+", type=int, default=[2])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1.0])
    parser.add_argument("--splits", nargs="+", type=int, default=[0])
    parser.add_argument("--iterations", type=int, default=20_000)
    args = parse_benchmark_args(parser)
    v1 = tensorflow_one(args.threads)
    sys.path.insert(0, str(args.authors.resolve()))
    from dgps_pepmcm.gp_network import GPNetwork

    for name in args.datasets:
        for k in args.splits:
            for L in args.layers:
                for alpha in args.alphas:
                    row = fit_one(GPNetwork, v1, name, k, L, alpha, args.iterations)
                    append_row(args.output, base_row("authors-dgp-uci", library="dgps_pep",
                                                     authors_commit=args.authors_commit, **row))
                    print(f"{name:<12} split {k} L={L} alpha={alpha:<6g} rmse {row['rmse']:.4f} "
                          f"test LL {row['test_loglik']:.4f} (median {row['test_loglik_median']:.4f}, "
                          f"{row['train_seconds']:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
