import numpy as np
import pytest
import torch

from alphagp.methods.base import whitened_sites
from alphagp.methods.projection import projected_marginals, whitened_log_normaliser


def _problem(C=2, M=4, n=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    R = torch.randn(C, M, M, generator=g, dtype=torch.float64)
    B0 = torch.eye(M, dtype=torch.float64) + 0.3 * R @ R.transpose(-1, -2)
    b0 = torch.randn(C, M, generator=g, dtype=torch.float64)
    Psi = torch.randn(C, M, n, generator=g, dtype=torch.float64)
    w = torch.rand(C, n, generator=g, dtype=torch.float64)
    nu = torch.randn(C, n, generator=g, dtype=torch.float64)
    return B0, b0, Psi, w, nu


@pytest.mark.parametrize("with_sites", [True, False])
def test_values_match_dense_gaussian_algebra(with_sites):
    B0, b0, Psi, w, nu = _problem()
    sites = (w, nu) if with_sites else ()
    mean, var, g = projected_marginals(B0, b0, Psi, *sites)
    for c in range(B0.shape[0]):
        P, p, A = B0[c].numpy(), b0[c].numpy(), Psi[c].numpy()
        if with_sites:
            P = P + A @ np.diag(w[c].numpy()) @ A.T
            p = p + A @ nu[c].numpy()
        cov = np.linalg.inv(P)
        mu = cov @ p
        np.testing.assert_allclose(mean[c].numpy(), A.T @ mu, rtol=1e-10)
        np.testing.assert_allclose(var[c].numpy(), np.einsum("mi,mk,ki->i", A, cov, A), rtol=1e-10)
        np.testing.assert_allclose(g[c].item(), 0.5 * (p @ mu - np.linalg.slogdet(P)[1]), rtol=1e-10)


@pytest.mark.parametrize("with_sites", [True, False])
def test_closed_form_backward_matches_finite_differences(with_sites):
    B0, b0, Psi, w, nu = _problem()
    sites = (w, nu) if with_sites else ()

    def f(B0_raw, b0, Psi):
        # B0 enters symmetrised, as every caller builds it (I + L' Lambda L)
        return projected_marginals(0.5 * (B0_raw + B0_raw.transpose(-1, -2)), b0, Psi, *sites)

    inputs = tuple(t.clone().requires_grad_() for t in (B0, b0, Psi))
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_sites_must_come_in_pairs():
    B0, b0, Psi, w, _ = _problem()
    with pytest.raises(ValueError, match="both"):
        projected_marginals(B0, b0, Psi, w)


def _sites_problem(C=2, M=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(C, M, M, generator=g, dtype=torch.float64)
    L = torch.linalg.cholesky(A @ A.transpose(-1, -2) + M * torch.eye(M, dtype=torch.float64))
    R = torch.randn(C, M, M, generator=g, dtype=torch.float64)
    return L, R @ R.transpose(-1, -2), torch.randn(C, M, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("given_value", [False, True])
def test_whitened_sites_values_and_closed_form_backward(given_value):
    L, precision, natural = _sites_problem()
    Bm, b = whitened_sites(L, precision, natural)
    eye = torch.eye(L.shape[-1], dtype=torch.float64)
    torch.testing.assert_close(Bm, eye + L.transpose(-1, -2) @ precision @ L, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(b, (L.transpose(-1, -2) @ natural[..., None])[..., 0], rtol=1e-12, atol=1e-12)

    def f(L, precision_raw, natural):
        precision = 0.5 * (precision_raw + precision_raw.transpose(-1, -2))  # the sums are symmetric
        value = None
        if given_value:  # the value a caller already knows, computed apart from the autograd graph
            with torch.no_grad():
                value = (eye + L.transpose(-1, -2) @ precision @ L, (L.transpose(-1, -2) @ natural[..., None])[..., 0])
        return whitened_sites(L, precision, natural, value)

    inputs = tuple(t.clone().requires_grad_() for t in (L, precision, natural))
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_whitened_log_normaliser_matches_dense_algebra_and_finite_differences():
    B0, b0, _, _, _ = _problem()
    g = whitened_log_normaliser(B0, b0)
    for c in range(B0.shape[0]):
        P, p = B0[c].numpy(), b0[c].numpy()
        np.testing.assert_allclose(g[c].item(), 0.5 * (p @ np.linalg.solve(P, p) - np.linalg.slogdet(P)[1]),
                                   rtol=1e-10)

    def f(B0_raw, b0):
        return whitened_log_normaliser(0.5 * (B0_raw + B0_raw.transpose(-1, -2)), b0)

    assert torch.autograd.gradcheck(f, (B0.clone().requires_grad_(), b0.clone().requires_grad_()),
                                    eps=1e-6, atol=1e-7, rtol=1e-5)
