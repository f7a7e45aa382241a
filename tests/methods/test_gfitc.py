"""GFITC against dense f-space EP (NumPy only): with the FITC prior written out, and, at M = N
with the inducing points on the data, against full EP with the exact GP prior."""

import numpy as np
import pytest
import torch

from alphagp import GPClassifier
from alphagp.data import load_bundled
from alphagp.kernels import ARDKernel
from alphagp.methods import build_method
from alphagp.testing import dense_reference as ref


def _setup(n=9, C=3, M=None, seed=0):
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, 2))
    y = g.permutation(np.arange(n) % C)
    Z = np.stack([X if M is None else X[g.choice(n, M, replace=False)] for _ in range(C)])
    kernel = ARDKernel(C, 2, lengthscale=[[1.0, 1.5], [0.8, 1.2], [1.3, 0.9]][:C], amplitude=[1.0, 1.5, 0.7][:C],
                       noise=0.05)
    kernel.requires_grad_(False)
    model = build_method("gfitc", torch.as_tensor(Z), kernel, n_data=n, alpha=1.0, damping=0.5)
    model.ep_iterations, model.ep_tol = 5000, 1e-12
    model.inducing_points.requires_grad_(False)
    k = model.kernel
    arrays = (k.lengthscale.detach().numpy(), k.amplitude.detach().numpy(), k.noise.detach().numpy())
    return torch.as_tensor(X), torch.as_tensor(y), model, Z, arrays


def _gfitc_marginals(model, X, y):
    with torch.no_grad():
        _, Psi, s = model._whitened_kernel(X)
        post = model._posterior(Psi, s, y)
    return post["mean_f"].numpy().T, post["var_f"].numpy().T


def test_gfitc_matches_dense_ep_with_the_fitc_prior():
    X, y, model, Z, arrays = _setup(M=4)
    log_z = model.local_update(X, y, torch.arange(len(y))).total(len(y), len(y)).item()
    priors = []
    for K, Kx, s in ref.kernel_blocks(Z, X.numpy(), *arrays):
        priors.append(Kx.T @ np.linalg.solve(K, Kx) + np.diag(s))
    mean, var, ref_log_z = ref.dense_heaviside_ep(priors, y.numpy())
    got_mean, got_var = _gfitc_marginals(model, X, y)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(got_var, var, rtol=1e-7, atol=1e-8)
    assert log_z == pytest.approx(ref_log_z, rel=1e-8)
    assert int(model.n_skipped_updates) == 0 and int(model.n_improper_cavities) == 0


def test_gfitc_with_inducing_points_on_the_data_is_full_ep():
    X, y, model, _, (ls, amp, noise) = _setup(M=None)
    log_z = model.local_update(X, y, torch.arange(len(y))).total(len(y), len(y)).item()
    priors = [ref.se_kernel(X.numpy(), X.numpy(), ls[c], amp[c]) + noise[c] * np.eye(len(y)) for c in range(3)]
    mean, var, ref_log_z = ref.dense_heaviside_ep(priors, y.numpy())
    got_mean, got_var = _gfitc_marginals(model, X, y)
    # the only difference is the 1e-6 amplitude jitter of K_uu
    np.testing.assert_allclose(got_mean, mean, atol=1e-4)
    np.testing.assert_allclose(got_var, var, atol=1e-4)
    assert log_z == pytest.approx(ref_log_z, abs=1e-4)


def test_gfitc_gradient_is_that_of_the_converged_ep_estimate():
    """d log Z_EP / d theta with the sites fixed equals the finite difference of log Z_EP with EP
    re-run to convergence at each perturbed kernel."""
    X, y, model, _, _ = _setup(M=4)
    idx = torch.arange(len(y))
    model.kernel.requires_grad_(True)
    params = list(model.kernel.parameters())
    grads = torch.autograd.grad(model.local_update(X, y, idx).total(len(y), len(y)), params)
    direction = [torch.randn(p.shape, generator=torch.Generator().manual_seed(1), dtype=p.dtype) for p in params]
    analytic = sum((g * d).sum() for g, d in zip(grads, direction)).item()
    h, values = 1e-5, []
    for sign in (1.0, -1.0):
        with torch.no_grad():
            for p, d in zip(params, direction):
                p.add_(sign * h * d)
        values.append(model.local_update(X, y, idx).total(len(y), len(y)).item())
        with torch.no_grad():
            for p, d in zip(params, direction):
                p.sub_(sign * h * d)
    assert analytic == pytest.approx((values[0] - values[1]) / (2 * h), rel=1e-5)


def test_gfitc_refuses_mini_batches_and_fits_end_to_end(tmp_path):
    X, y = load_bundled("new_thyroid")
    with pytest.raises(ValueError, match="batch only"):
        GPClassifier(method="gfitc", batch_size=50, n_inducing=5, max_iter=2).fit(X, y)
    clf = GPClassifier(method="gfitc", n_inducing=8, max_iter=30, random_state=0,
                       method_params={"ep_tol": 1e-4}).fit(X[::2], y[::2])
    assert clf.model_.ep_tol == 1e-4
    metrics = clf.evaluate(X[1::2], y[1::2])
    assert metrics["error"] < 0.1 and metrics["nll"] < 0.35, metrics
    clf.save(tmp_path / "m")
    again = GPClassifier.load(tmp_path / "m")
    assert again.model_.ep_tol == 1e-4
    assert np.array_equal(again.predict_proba(X), clf.predict_proba(X))
