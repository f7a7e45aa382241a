"""GPflow's SVGP with the robust-max likelihood on one prepared problem (runs in GPflow's own venv).

Reads the ``.npz`` written by ``benchmarks/vi_vs_gpflow.py`` (standardised training and test
rows, class indices, the initial inducing points ``[C, M, D]`` and kernel hyper-parameters, the
labelling-error probability, the Adam rate and schedule), builds the same model as alphagp's
``method="vi"`` (one ARD squared-exponential kernel plus white noise and one inducing set per
class, a full Cholesky q(u) per class) and trains it by full-batch Adam, recording the test
metrics every ``eval_every`` iterations against training seconds (evaluation not counted, the
first call's graph tracing counted). Prints one JSON object.

    benchmarks/peers/.venv-gpflow/bin/python benchmarks/peers/gpflow_svgp.py problem.npz

A problem from ``benchmarks/defaults_panel.py`` holds ``epochs``, ``batch_size`` and
``eval_every`` (mini-batches for that many epochs; with ``max_seconds``, fewer where the training
seconds pass it, the last epoch evaluated). One from ``benchmarks/time_to_accuracy.py`` instead holds ``batch_size``,
``budget_seconds``, ``eval_first_seconds`` and ``eval_growth``: the model then trains on
mini-batches (a fresh permutation each epoch) until the training-time budget is spent,
evaluating first after ``eval_first_seconds`` of training and then each time the training time
has grown by the factor ``eval_growth``. Its ``Z`` may be ``[M, D]``: one kernel and one inducing
set shared by all classes (GPflow's usual multi-class SVGP).
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
    shared = Z.ndim == 2
    C = int(p["n_classes"]) if shared else Z.shape[0]
    if shared:  # one kernel and one inducing set for all classes
        kernel = gpflow.kernels.SharedIndependent(
            gpflow.kernels.SquaredExponential(variance=float(p["amplitude"][0]), lengthscales=p["lengthscale"][0].copy())
            + gpflow.kernels.White(variance=float(p["noise"][0])), output_dim=C)
        inducing = gpflow.inducing_variables.SharedIndependentInducingVariables(
            gpflow.inducing_variables.InducingPoints(Z.copy()))
    else:
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
                               num_latent_gps=C, whiten=True, num_data=len(ytr))
    optimizer = tf.optimizers.Adam(float(p["learning_rate"]))
    variables = model.trainable_variables

    @tf.function(input_signature=[tf.TensorSpec([None, Xtr.shape[1]], tf.float64), tf.TensorSpec([None, 1], tf.float64)])
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = model.training_loss((x, y))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    def metrics() -> dict:
        probs = [model.predict_y(Xte[i:i + 2000])[0].numpy() for i in range(0, len(Xte), 2000)]
        prob = np.clip(np.concatenate(probs), 1e-300, None)
        prob = prob / prob.sum(1, keepdims=True)
        metrics.last = prob
        return {"nll": float(-np.mean(np.log(prob[np.arange(len(yte)), yte]))),
                "error": float(np.mean(prob.argmax(1) != yte))}

    Y = ytr.reshape(-1, 1).astype(np.float64)
    curve, seconds, first_step = [], 0.0, None
    if "epochs" in p:           # mini-batches for a number of epochs (defaults_panel.py), evaluated every eval_every
        batch, rng = int(p["batch_size"]), np.random.default_rng(0)
        for epoch in range(1, int(p["epochs"]) + 1):
            for idx in np.array_split(rng.permutation(len(ytr)), max(1, -(-len(ytr) // batch))):
                start = time.perf_counter()
                step(tf.constant(Xtr[idx]), tf.constant(Y[idx]))
                seconds += time.perf_counter() - start
                first_step = seconds if first_step is None else first_step
            capped = seconds >= float(p.get("max_seconds", np.inf))        # the panel's stated time cap
            if epoch % int(p["eval_every"]) == 0 or epoch == int(p["epochs"]) or capped:
                curve.append({"epoch": epoch, "train_seconds": seconds, **{f"test_{k}": v for k, v in metrics().items()}})
            if capped:
                break
    elif "budget_seconds" in p:   # mini-batches until the training-time budget is spent
        batch, budget, first = int(p["batch_size"]), float(p["budget_seconds"]), float(p["eval_first_seconds"])
        rng, next_eval, epoch = np.random.default_rng(0), first, 0
        while seconds < budget:
            epoch += 1
            for idx in np.array_split(rng.permutation(len(ytr)), max(1, -(-len(ytr) // batch))):
                start = time.perf_counter()
                step(tf.constant(Xtr[idx]), tf.constant(Y[idx]))
                seconds += time.perf_counter() - start
                first_step = seconds if first_step is None else first_step
                if seconds >= next_eval or seconds >= budget:
                    curve.append({"epoch": epoch, "train_seconds": seconds,
                                  **{f"test_{k}": v for k, v in metrics().items()}})
                    next_eval = seconds * float(p["eval_growth"])
                if seconds >= budget:
                    break
    else:                        # full-batch Adam for a number of iterations (vi_vs_gpflow.py)
        x, y = tf.constant(Xtr), tf.constant(Y)
        iterations, every = int(p["iterations"]), int(p["eval_every"])
        for it in range(1, iterations + 1):
            start = time.perf_counter()
            step(x, y)
            seconds += time.perf_counter() - start
            first_step = seconds if first_step is None else first_step
            if it % every == 0 or it == iterations:
                curve.append({"iteration": it, "train_seconds": seconds,
                              **{f"test_{k}": v for k, v in metrics().items()}})
    if "epochs" in p:          # the final test probabilities, scored by the caller with alphagp.metrics
        np.save(path + ".proba.npy", metrics.last)
    print(json.dumps({"library": "gpflow", "version": gpflow.__version__, "tensorflow": tf.__version__,
                      "first_step_seconds": first_step, "curve": curve}))


if __name__ == "__main__":
    main(sys.argv[1])
