"""GPflow's SVGP with the robust-max likelihood on one prepared problem (runs in GPflow's own venv).

Reads the ``.npz`` written by ``benchmarks/vi_vs_gpflow.py`` (standardised training and test
rows, class indices, the initial inducing points ``[C, M, D]`` and kernel hyper-parameters, the
labelling-error probability, the Adam rate and schedule), builds the same model as alphagp's
``method="vi"`` (one ARD squared-exponential kernel plus white noise and one inducing set per
class, a full Cholesky q(u) per class) and trains it by full-batch Adam, recording the test
metrics every ``eval_every`` iterations against training seconds (evaluation not counted, the
first call's graph tracing counted). Prints one JSON object.

    benchmarks/peers/.venv-gpflow/bin/python benchmarks/peers/gpflow_svgp.py problem.npz
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main(path: str) -> None:
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import gpflow

    gpflow.config.set_default_float(np.float64)
    p = np.load(path)
    Xtr, ytr, Xte, yte, Z = p["X_train"], p["y_train"], p["X_test"], p["y_test"], p["Z"]
    C = Z.shape[0]
    kernels = [gpflow.kernels.SquaredExponential(variance=float(p["amplitude"][c]),
                                                 lengthscales=p["lengthscale"][c].copy())
               + gpflow.kernels.White(variance=float(p["noise"][c])) for c in range(C)]
    kernel = gpflow.kernels.SeparateIndependent(kernels)
    inducing = gpflow.inducing_variables.SeparateIndependentInducingVariables(
        [gpflow.inducing_variables.InducingPoints(Z[c].copy()) for c in range(C)])
    # alphagp's robust max is (1 - eps) Theta + eps / C; GPflow's puts eps' / (C - 1) on each wrong
    # class: the two agree when eps' = eps (C - 1) / C.
    invlink = gpflow.likelihoods.RobustMax(C, epsilon=float(p["epsilon"]) * (C - 1) / C)
    model = gpflow.models.SVGP(kernel, gpflow.likelihoods.MultiClass(C, invlink=invlink), inducing,
                               num_latent_gps=C, whiten=True)
    data = (tf.constant(Xtr), tf.constant(ytr.reshape(-1, 1).astype(np.float64)))
    optimizer = tf.optimizers.Adam(float(p["learning_rate"]))
    variables = model.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = model.training_loss(data)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    def metrics() -> dict:
        prob, _ = model.predict_y(Xte)
        prob = np.clip(prob.numpy(), 1e-300, None)
        prob = prob / prob.sum(1, keepdims=True)
        return {"nll": float(-np.mean(np.log(prob[np.arange(len(yte)), yte]))),
                "error": float(np.mean(prob.argmax(1) != yte))}

    curve, seconds, first_step = [], 0.0, None
    iterations, every = int(p["iterations"]), int(p["eval_every"])
    for it in range(1, iterations + 1):
        start = time.perf_counter()
        step()
        seconds += time.perf_counter() - start
        first_step = seconds if first_step is None else first_step
        if it % every == 0 or it == iterations:
            curve.append({"iteration": it, "train_seconds": seconds, **{f"test_{k}": v for k, v in metrics().items()}})
    print(json.dumps({"library": "gpflow", "version": gpflow.__version__, "tensorflow": tf.__version__,
                      "first_step_seconds": first_step, "curve": curve}))


if __name__ == "__main__":
    main(sys.argv[1])
