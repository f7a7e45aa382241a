"""float32 against float64 where the energy multiplies a small log-normaliser gap by n.

SEP's and APEP's energies hold n / alpha (g(cavity) - g(q)) with the cavity removing the share
alpha / n of a tied factor, and RPAPEP's N / alpha (g(q^r) - g(q)) with r = 1 - alpha / (N + 1). At
MNIST's shape (N = 540,000, n = N (C - 1) = 4.9 million) the two log-normalisers agree to about
six digits, so their plain difference leaves float32 almost nothing. The tests build one state
per method as after training, evaluate the energy and its gradients in float64 and in a float32
copy, and hold them to a stated tolerance: relative 1e-6 on the energy and 1e-4 on each gradient.
(The plain differences gave 2e-5 on SEP's energy and up to 1.5e-3 on its gradients.)"""

import numpy as np
import pytest
import torch

from alphagp.kernels import ARDKernel
from alphagp.methods import build_method

C, M, D, BATCH, N = 10, 20, 5, 64, 540_000


def _trained_looking_state(name, model, g):
    """Overwrite the approximation's state with values of a trained model's size."""
    with torch.no_grad():
        if name == "sep":   # the tied factor: many rank-one sites in u-space
            V = torch.tensor(g.standard_normal((C, M, 200)))
            model.site_precision.copy_(V @ V.transpose(-1, -2) / 4.0)
            model.site_natural.copy_(20.0 * torch.tensor(g.standard_normal((C, M))))
        elif name == "apep":  # the global factor's whitened square root and natural mean
            model.site_sqrt.copy_(torch.tril(torch.tensor(g.standard_normal((C, M, M))), -1)
                                  + 3.0 * torch.eye(M, dtype=torch.float64))
            model.site_natural.copy_(20.0 * torch.tensor(g.standard_normal((C, M))))
        else:                 # a concentrated whitened posterior
            model.q_sqrt.copy_(torch.tril(0.01 * torch.tensor(g.standard_normal((C, M, M))), -1)
                               + 0.1 * torch.eye(M, dtype=torch.float64))
            model.q_mean.copy_(torch.tensor(g.standard_normal((C, M))))


def _energy_and_gradients(model, X, y):
    """The energy of the batch (X, y) scaled to N rows, and its gradients, in float64."""
    dtype = model.inducing_points.dtype
    terms = model._objective(*model._whitened_kernel(X.to(dtype)), y, torch.arange(len(y)))
    energy = terms.total(N, len(y))
    grads = torch.autograd.grad(energy, [p for p in model.parameters() if p.requires_grad])
    return energy.double(), [grad.double() for grad in grads]


def _build(name, Z, dtype):
    return build_method(name, Z.to(dtype), ARDKernel(C, D, dtype=dtype), n_data=N, alpha=0.5)


@pytest.mark.parametrize("name", ["sep", "apep", "rpapep"])
def test_float32_energy_and_gradients_agree_with_float64_where_n_times_the_gap_cancels(name):
    g = np.random.default_rng(0)
    X, y = torch.tensor(g.standard_normal((BATCH, D))), torch.arange(BATCH) % C
    Z = torch.tensor(g.standard_normal((C, M, D)))
    model = _build(name, Z, torch.float64)
    _trained_looking_state(name, model, g)
    single = _build(name, Z, torch.float32)
    single.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in model.state_dict().items()})
    energy, grads = _energy_and_gradients(model, X, y)
    energy32, grads32 = _energy_and_gradients(single, X, y)
    assert abs(energy32 - energy) <= 1e-6 * abs(energy)
    for exact, approx in zip(grads, grads32):
        assert torch.linalg.vector_norm(approx - exact) <= 1e-4 * torch.linalg.vector_norm(exact)
