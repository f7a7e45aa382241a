"""GPflow's SVGP with its ordinal likelihood on one prepared problem (runs in GPflow's own venv).

Reads the ``.npz`` written by ``benchmarks/ordinal.py`` (standardised training and test rows,
grade indices 0..K-1, the initial inducing points ``[M, D]``), builds GPflow's usual ordinal
model: ``gpflow.likelihoods.Ordinal`` with bin edges at -(K-2)/2, ..., (K-2)/2 (GPflow keeps the
edges fixed and learns the likelihood's sigma; with the kernel variance that sets the scale),
one squared-exponential ARD kernel plus white noise, an SVGP of one latent function with a full
Cholesky q(u), trained by GPflow's recommended ``gpflow.optimizers.Scipy`` (L-BFGS-B) on the whole
training set for at most ``maxiter`` iterations, inducing inputs learnt. Prints one JSON object:
the test probabilities of every grade ``[N, K]`` and the training seconds.

    benchmarks/peers/.venv-gpflow/bin/python benchmarks/peers/gpflow_ordinal.py problem.npz
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main(path: str) -> None:
    import gpflow
    import tensorflow as tf

    p = np.load(path)
    X, y, X_test, Z = p["X_train"], p["y_train"].astype(float)[:, None], p["X_test"], p["Z"]
    K, maxiter = int(p["n_grades"]), int(p["maxiter"])
    tf.config.threading.set_intra_op_parallelism_threads(int(p["threads"]))
    tf.config.threading.set_inter_op_parallelism_threads(int(p["threads"]))
    edges = np.arange(K - 1, dtype=np.float64) - (K - 2) / 2.0
    kernel = gpflow.kernels.SquaredExponential(lengthscales=np.full(X.shape[1], np.sqrt(X.shape[1]))) \
        + gpflow.kernels.White(0.01)
    model = gpflow.models.SVGP(kernel, gpflow.likelihoods.Ordinal(edges), Z.copy(), num_latent_gps=1,
                               num_data=len(y))
    start = time.perf_counter()
    result = gpflow.optimizers.Scipy().minimize(model.training_loss_closure((X, y)), model.trainable_variables,
                                                options={"maxiter": maxiter})
    seconds = time.perf_counter() - start
    proba = np.stack([np.exp(model.predict_log_density((X_test, np.full((len(X_test), 1), float(k)))).numpy())
                      for k in range(K)], 1)
    print(json.dumps({"proba": proba.tolist(), "train_seconds": seconds, "iterations": int(result.nit),
                      "converged": bool(result.success)}))


if __name__ == "__main__":
    main(sys.argv[1])
