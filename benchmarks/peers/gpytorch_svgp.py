"""GPyTorch's SVGP with a softmax likelihood on one prepared problem (runs in GPyTorch's own venv).

Reads the ``.npz`` written by ``benchmarks/time_to_accuracy.py`` (or by ``defaults_panel.py``,
with ``epochs`` and ``eval_every`` instead of the budget: that many epochs, or fewer where the
training seconds pass ``max_seconds``, the final test probabilities saved beside the problem file): training and test rows, class
indices, initial inducing points ``Z`` ``[C, M, D]`` (one set per class, like alphagp's), the
initial lengthscale, the mini-batch size, Adam's rate, the training-time budget and when to
evaluate (first after ``eval_first_seconds``, then at times growing by ``eval_growth``). The
model is GPyTorch's usual multi-class SVGP: C independent latent GPs, each with an ARD
squared-exponential kernel, its own inducing points and a full Cholesky q(u) (whitened), and
``SoftmaxLikelihood`` without mixing weights (its expected log-likelihood is a Monte Carlo
estimate). Evaluation time is not counted. Prints one JSON object.

    benchmarks/peers/.venv-gpytorch/bin/python benchmarks/peers/gpytorch_svgp.py problem.npz
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
    p = np.load(path)
    Xtr, ytr = torch.as_tensor(p["X_train"]), torch.as_tensor(p["y_train"]).long()
    Xte, yte = torch.as_tensor(p["X_test"]), p["y_test"]
    Z = torch.as_tensor(p["Z"])
    C, M, D = Z.shape

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self):
            q_u = gpytorch.variational.CholeskyVariationalDistribution(M, batch_shape=torch.Size([C]))
            strategy = gpytorch.variational.IndependentMultitaskVariationalStrategy(
                gpytorch.variational.VariationalStrategy(self, Z, q_u, learn_inducing_locations=True),
                num_tasks=C)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ZeroMean(batch_shape=torch.Size([C]))
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(ard_num_dims=D, batch_shape=torch.Size([C])), batch_shape=torch.Size([C]))
            self.covar_module.base_kernel.lengthscale = float(p["lengthscale"])

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    model = SVGP()
    likelihood = gpytorch.likelihoods.SoftmaxLikelihood(num_features=C, num_classes=C, mixing_weights=False)
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=len(ytr))
    optimizer = torch.optim.Adam(list(model.parameters()) + list(likelihood.parameters()), lr=float(p["learning_rate"]))
    batch = int(p["batch_size"])
    generator = torch.Generator().manual_seed(0)

    def metrics() -> dict:
        model.eval()
        likelihood.eval()
        probs = []
        with torch.no_grad(), gpytorch.settings.num_likelihood_samples(64):
            for start in range(0, len(Xte), 1000):
                probs.append(likelihood(model(Xte[start:start + 1000])).probs.mean(0).numpy())
        model.train()
        likelihood.train()
        prob = np.clip(np.concatenate(probs), 1e-300, None)
        metrics.last = prob / prob.sum(1, keepdims=True)
        return {"nll": float(-np.mean(np.log(prob[np.arange(len(yte)), yte]))),
                "error": float(np.mean(prob.argmax(1) != yte))}

    def step(idx) -> float:
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = -mll(model(Xtr[idx]), ytr[idx])
        loss.backward()
        optimizer.step()
        return time.perf_counter() - start

    model.train()
    likelihood.train()
    curve, seconds = [], 0.0
    if "epochs" in p:            # mini-batches for a number of epochs (defaults_panel.py), evaluated every eval_every
        for epoch in range(1, int(p["epochs"]) + 1):
            for idx in torch.randperm(len(ytr), generator=generator).split(batch):
                seconds += step(idx)
            capped = seconds >= float(p["max_seconds"]) if "max_seconds" in p else False   # the panel's time cap
            if epoch % int(p["eval_every"]) == 0 or epoch == int(p["epochs"]) or capped:
                curve.append({"epoch": epoch, "train_seconds": seconds, **{f"test_{k}": v for k, v in metrics().items()}})
            if capped:
                break
        np.save(path + ".proba.npy", metrics.last)   # the final test probabilities, scored by the caller
    budget, first = float(p["budget_seconds"]) if "budget_seconds" in p else 0.0, float(p.get("eval_first_seconds", 0))
    next_eval, epoch = first, 0
    while seconds < budget:
        epoch += 1
        for idx in torch.randperm(len(ytr), generator=generator).split(batch):
            seconds += step(idx)
            if seconds >= next_eval or seconds >= budget:
                curve.append({"epoch": epoch, "train_seconds": seconds, **{f"test_{k}": v for k, v in metrics().items()}})
                next_eval = seconds * float(p["eval_growth"])
            if seconds >= budget:
                break
    print(json.dumps({"library": "gpytorch", "version": gpytorch.__version__, "torch": torch.__version__,
                      "curve": curve}))


if __name__ == "__main__":
    main(sys.argv[1])
