"""GPyTorch's Dirichlet-based GP classifier on one prepared problem (runs in GPyTorch's own venv).

GPyTorch's documented recipe (its example "GP Classification with a Dirichlet Likelihood"):
``DirichletClassificationLikelihood(train_y, alpha_epsilon, learn_additional_noise=True)``, an
exact GP over its transformed targets with a constant mean and a scaled RBF kernel per class
(``batch_shape=[C]``), ``ExactMarginalLogLikelihood``, Adam at rate 0.1 for 50 iterations, and
the class probabilities as the mean of the softmax of 256 draws of the latent posterior. With
``inducing`` > 0 the kernel is GPyTorch's ``InducingPointKernel`` over that many k-means centres
(its SGPR, Titsias' bound: the paper's large-scale route) instead of the exact GP.

Reads an ``.npz`` with ``X_train``, ``y_train`` (class indices), ``X_test``, ``y_test``,
``alpha_epsilon``, ``iterations``, ``learning_rate``, ``eval_every``, ``inducing`` (0: exact)
and ``Z`` (the inducing inputs where ``inducing`` > 0), and optionally ``max_seconds`` (the iterations
stop at the first whose training seconds pass it, evaluated); evaluation time is not counted. Writes
the final test probabilities beside the problem file and prints one JSON object.

    benchmarks/peers/.venv-gpytorch/bin/python benchmarks/peers/gpytorch_dirichlet.py problem.npz
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main(path: str) -> None:
    import gpytorch
    import torch

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    p = np.load(path)
    Xtr, ytr = torch.as_tensor(p["X_train"]), torch.as_tensor(p["y_train"]).long()
    Xte, yte = torch.as_tensor(p["X_test"]), p["y_test"]
    inducing = int(p["inducing"])
    likelihood = gpytorch.likelihoods.DirichletClassificationLikelihood(
        ytr, alpha_epsilon=float(p["alpha_epsilon"]), learn_additional_noise=True, dtype=torch.float64)
    C = likelihood.num_classes
    batch = torch.Size((C,))

    class DirichletGPModel(gpytorch.models.ExactGP):
        def __init__(self):
            super().__init__(Xtr, likelihood.transformed_targets, likelihood)
            self.mean_module = gpytorch.means.ConstantMean(batch_shape=batch)
            kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(batch_shape=batch), batch_shape=batch)
            if inducing:
                kernel = gpytorch.kernels.InducingPointKernel(kernel, inducing_points=torch.as_tensor(p["Z"]),
                                                              likelihood=likelihood)
            self.covar_module = kernel

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    model = DirichletGPModel()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(p["learning_rate"]))
    generator = torch.Generator().manual_seed(0)

    def metrics() -> dict:
        model.eval()
        likelihood.eval()
        with gpytorch.settings.fast_pred_var(), torch.no_grad():
            probs = []
            for start in range(0, len(Xte), 1000):
                latent = model(Xte[start:start + 1000])
                draws = latent.mean + latent.stddev * torch.randn((256, *latent.mean.shape), generator=generator)
                probs.append(torch.softmax(draws, -2).mean(0).T.numpy())    # [C, b] per draw: classes on dim -2
        model.train()
        likelihood.train()
        prob = np.clip(np.concatenate(probs), 1e-300, None)
        metrics.last = prob / prob.sum(1, keepdims=True)
        return {"test_nll": float(-np.mean(np.log(metrics.last[np.arange(len(yte)), yte]))),
                "test_error": float(np.mean(metrics.last.argmax(1) != yte))}

    model.train()
    likelihood.train()
    seconds, curve = 0.0, []
    iterations, every = int(p["iterations"]), int(p["eval_every"])
    for i in range(1, iterations + 1):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = -mll(model(Xtr), likelihood.transformed_targets).sum()
        loss.backward()
        optimizer.step()
        seconds += time.perf_counter() - start
        capped = seconds >= float(p["max_seconds"]) if "max_seconds" in p else False   # the panel's time cap
        if i % every == 0 or i == iterations or capped:
            curve.append({"iteration": i, "train_seconds": seconds, **metrics()})
        if capped:
            break
    np.save(path + ".proba.npy", metrics.last)
    print(json.dumps({"version": gpytorch.__version__, "curve": curve}))


if __name__ == "__main__":
    main(sys.argv[1])
