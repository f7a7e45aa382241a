"""GPyTorch's deep GP (doubly stochastic VI, Salimbeni & Deisenroth 2017) on one prepared
regression problem (runs in GPyTorch's own venv).

Reads the ``.npz`` written by ``benchmarks/dgp_gpytorch.py``: standardised training and test
rows and targets, the targets' scale, and alphagp's initial inducing inputs ``Z_l`` ``[H_l, M,
D_l]``, lengthscales and fixed mean weights ``W_l`` of every layer, so both libraries start from
the same model. The architecture is alphagp's: L layers of independent ARD squared-exponential
GPs with their own inducing points and a full Cholesky q(u) (whitened), fixed linear means x W in
the hidden layers, no mean in the last, a Gaussian likelihood (noise 0.01 at the start). GPyTorch
has no inter-layer noise. Trained with Adam on ``DeepApproximateMLL(VariationalELBO)`` with S
samples, mini-batches and epochs as given; predictions are the mixture of the S_pred propagated
samples' Gaussians, scored like alphagp's (RMSE of the mixture mean, mean log mixture density,
original units). Prints one JSON object.

    benchmarks/peers/.venv-gpytorch/bin/python benchmarks/peers/gpytorch_dgp.py problem.npz
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np


def main(path: str) -> None:
    import gpytorch
    import torch
    from gpytorch.models.deep_gps import DeepGP, DeepGPLayer

    p = np.load(path)
    torch.set_num_threads(int(p["threads"]))
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(int(p["seed"]))
    n_layers = int(p["n_layers"])

    class FixedLinearMean(gpytorch.means.Mean):
        def __init__(self, W):
            super().__init__()
            self.register_buffer("W", torch.as_tensor(W))              # [D, H]

        def forward(self, x):                                         # x [..., H, n, D] -> [..., H, n]
            return torch.einsum("...hnd,dh->...hn", x, self.W)

    class Layer(DeepGPLayer):
        def __init__(self, depth):
            Z = torch.as_tensor(p[f"Z_{depth}"])                      # [H, M, D]
            H, M, D = Z.shape
            last = depth == n_layers - 1
            batch = torch.Size([]) if last else torch.Size([H])
            q_u = gpytorch.variational.CholeskyVariationalDistribution(M, batch_shape=batch)
            strategy = gpytorch.variational.VariationalStrategy(self, Z[0] if last else Z, q_u,
                                                                learn_inducing_locations=True)
            super().__init__(strategy, D, None if last else H)
            self.mean_module = gpytorch.means.ZeroMean() if last else FixedLinearMean(p[f"W_{depth}"])
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(batch_shape=batch, ard_num_dims=D), batch_shape=batch)
            self.covar_module.base_kernel.lengthscale = float(p[f"lengthscale_{depth}"])
            self.covar_module.outputscale = 1.0

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    class Model(DeepGP):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Layer(d) for d in range(n_layers)])
            self.likelihood = gpytorch.likelihoods.GaussianLikelihood()
            self.likelihood.noise = 0.01

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    Xtr, ytr = torch.as_tensor(p["X_train"]), torch.as_tensor(p["y_train"])
    Xte, yte = torch.as_tensor(p["X_test"]), torch.as_tensor(p["y_test"])
    model = Model()
    objective = gpytorch.mlls.DeepApproximateMLL(
        gpytorch.mlls.VariationalELBO(model.likelihood, model, len(ytr)))
    optimizer = torch.optim.Adam(model.parameters(), lr=float(p["learning_rate"]))
    batch, epochs = int(p["batch_size"]), int(p["epochs"])
    generator = torch.Generator().manual_seed(int(p["seed"]))
    start = time.perf_counter()
    model.train()
    with gpytorch.settings.num_likelihood_samples(int(p["n_samples"])):
        for _ in range(epochs):
            order = torch.randperm(len(ytr), generator=generator)
            for i in range(0, len(ytr), batch):
                idx = order[i:i + batch]
                optimizer.zero_grad()
                loss = -objective(model(Xtr[idx]), ytr[idx])
                loss.backward()
                optimizer.step()
    seconds = time.perf_counter() - start
    model.eval()
    scale = float(p["y_scale"])
    with torch.no_grad(), gpytorch.settings.num_likelihood_samples(int(p["n_predict_samples"])):
        out = model.likelihood(model(Xte))
        m, v = out.mean, out.variance                                  # [S, n]
    mix_mean = m.mean(0)
    log_n = -0.5 * (math.log(2 * math.pi) + torch.log(v) + (yte - m) ** 2 / v)
    loglik = torch.logsumexp(log_n, 0) - math.log(m.shape[0]) - math.log(scale)
    print(json.dumps({"rmse": float(torch.sqrt(((mix_mean - yte) ** 2).mean())) * scale,
                      "test_loglik": float(loglik.mean()), "train_seconds": seconds,
                      "gpytorch": gpytorch.__version__, "torch": torch.__version__}))


if __name__ == "__main__":
    main(sys.argv[1])
