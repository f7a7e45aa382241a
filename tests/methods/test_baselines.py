"""Label regression and the Laplace baseline against independent dense computations (NumPy/SciPy)."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from scipy.special import log_softmax
from scipy.stats import multivariate_normal

from alphagp import GPClassifier
from alphagp.data import load_bundled
from alphagp.kernels import ARDKernel
from alphagp.methods import build_method
from alphagp.testing import dense_reference as ref


def _model(name, n=10, C=3, M=4, seed=0):
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, 2))
    y = g.permutation(np.arange(n) % C)
    Z = np.stack([X[g.choice(n, M, replace=False)] + 0.05 * g.standard_normal((M, 2)) for _ in range(C)])
    kernel = ARDKernel(C, 2, lengthscale=1.3, amplitude=[1.0, 1.4, 0.8][:C], noise=0.1)
    kernel.requires_grad_(False)
    model = build_method(name, torch.as_tensor(Z), kernel, n_data=n)
    k = model.kernel
    arrays = (k.lengthscale.expand(C, -1).detach().numpy(), k.amplitude.detach().numpy(), k.noise.detach().numpy())
    return torch.as_tensor(X), torch.as_tensor(y), model, ref.kernel_blocks(Z, X, *arrays), Z, arrays


def test_label_regression_is_exact_fitc_regression_on_one_hot_labels():
    X, y, model, blocks, Z, arrays = _model("label_regression")
    objective = model.local_update(X, y, torch.arange(len(y))).total(len(y), len(y)).item()
    expected, means, variances = 0.0, [], []
    X_test = np.random.default_rng(5).standard_normal((7, 2))
    test_blocks = ref.kernel_blocks(Z, X_test, *arrays)
    for c, ((K, Kx, s), (_, Kt, st)) in enumerate(zip(blocks, test_blocks)):
        t = (y.numpy() == c).astype(float)
        cov = Kx.T @ np.linalg.solve(K, Kx) + np.diag(s)                        # FITC prior of t^c
        expected += multivariate_normal(np.zeros(len(t)), cov).logpdf(t)
        cross = Kt.T @ np.linalg.solve(K, Kx)                                     # Q(x*, X)
        means.append(cross @ np.linalg.solve(cov, t))
        q_star = np.einsum("mn,mk,kn->n", Kt, np.linalg.inv(K), Kt)
        variances.append(q_star - np.einsum("nm,mk,nk->n", cross, np.linalg.inv(cov), cross) + st)
    assert objective == pytest.approx(expected, rel=1e-9)
    mean, var = model.predict_f(torch.as_tensor(X_test))
    np.testing.assert_allclose(mean.numpy().T, means, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var.numpy().T, variances, rtol=1e-7, atol=1e-9)


def test_laplace_mode_and_hessian_match_an_independent_optimisation():
    X, y, model, blocks, _, _ = _model("laplace", n=12)
    model.after_fit(X, y)
    C, M = model.mode.shape
    Ls = [np.linalg.cholesky(K) for K, _, _ in blocks]
    Psi = [np.linalg.solve(L, Kx) for L, (_, Kx, _) in zip(Ls, blocks)]         # whitened projections

    def neg_log_post(w):
        W = w.reshape(C, M)
        H = np.stack([W[c] @ Psi[c] for c in range(C)], 1)                       # [N, C]
        return 0.5 * w @ w - log_softmax(H, 1)[np.arange(len(y)), y.numpy()].sum()

    best = minimize(neg_log_post, np.zeros(C * M), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(model.mode.numpy().ravel(), best.x, atol=1e-5)
    h, w0 = 1e-4, best.x
    numeric = np.zeros((C * M, C * M))
    for j in range(C * M):
        e = np.zeros(C * M)
        e[j] = h
        numeric[:, j] = (minimize_grad(neg_log_post, w0 + e) - minimize_grad(neg_log_post, w0 - e)) / (2 * h)
    np.testing.assert_allclose(model.hessian.numpy(), 0.5 * (numeric + numeric.T), atol=1e-5)


def minimize_grad(f, x, h=1e-5):
    """Central-difference gradient of ``f`` at ``x``."""
    out = np.zeros_like(x)
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = h
        out[j] = (f(x + e) - f(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("name", ["laplace", "label_regression"])
def test_baselines_fit_end_to_end_and_round_trip(tmp_path, name):
    X, y = load_bundled("new_thyroid")
    clf = GPClassifier(method=name, n_inducing=8, max_iter=30, random_state=0).fit(X[::2], y[::2])
    metrics = clf.evaluate(X[1::2], y[1::2])
    assert metrics["error"] < 0.1 and metrics["nll"] < 0.4, metrics
    clf.save(tmp_path / "m")
    np.testing.assert_allclose(GPClassifier.load(tmp_path / "m").predict_proba(X), clf.predict_proba(X), atol=1e-12)
    with pytest.raises(ValueError, match="batch only|alpha"):
        GPClassifier(method=name, batch_size=20, alpha=0.5, n_inducing=4, max_iter=2).fit(X, y)
