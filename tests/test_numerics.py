import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from alphagp.gaussians import gaussian_log_normaliser, log_det_from_cholesky, tied_cavity_log_normaliser_gap
from alphagp.numerics import CholeskyError, cholesky_solve, gauss_hermite, inverse_mills, log_ndtr, stable_cholesky


def test_cholesky_of_a_positive_definite_batch_reconstructs_it(rng):
    A = rng.standard_normal((3, 5, 5))
    A = torch.tensor(A @ A.transpose(0, 2, 1) + 5 * np.eye(5))
    L = stable_cholesky(A)
    assert torch.allclose(L @ L.transpose(-1, -2), A, atol=1e-10)
    assert torch.allclose(log_det_from_cholesky(L), torch.logdet(A))


@pytest.mark.parametrize("k", [1, 3])
def test_cholesky_solve_by_triangular_solves_solves_the_system(rng, k):
    A = torch.as_tensor(rng.normal(size=(4, 30, 30)))
    A = A @ A.mT + 30 * torch.eye(30, dtype=A.dtype)
    b = torch.as_tensor(rng.normal(size=(4, 30, k)))
    x = cholesky_solve(b, stable_cholesky(A))
    torch.testing.assert_close(A @ x, b, rtol=0, atol=1e-10)
    torch.testing.assert_close(x, torch.linalg.solve(A, b), rtol=1e-10, atol=1e-12)


def test_cholesky_escalates_jitter_on_a_singular_matrix(rng):
    x = torch.tensor(rng.standard_normal((6, 1)))
    A = x @ x.T  # rank one: plain Cholesky fails
    assert torch.any(torch.linalg.cholesky_ex(A).info)
    L = stable_cholesky(A)
    assert torch.allclose(L @ L.T, A, atol=1e-3 * A.diagonal().mean().item())


def test_cholesky_raises_a_clear_error_when_jitter_is_not_enough():
    A = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    with pytest.raises(CholeskyError, match="not positive definite"):
        stable_cholesky(A, max_tries=3)


def test_gauss_hermite_matches_gaussian_moments():
    x, w = gauss_hermite(20)
    for k, moment in [(0, 1), (2, 1), (4, 3), (6, 15)]:
        assert float((w * x**k).sum()) == pytest.approx(moment, rel=1e-12)
    assert float((w * torch.cos(x)).sum()) == pytest.approx(math.exp(-0.5), rel=1e-12)


def test_log_ndtr_and_inverse_mills_match_scipy_in_the_tails():
    x = np.array([-40.0, -10.0, -1.0, 0.0, 3.0, 12.0])
    assert np.allclose(log_ndtr(torch.tensor(x)).numpy(), norm.logcdf(x), rtol=1e-12)
    expected = np.exp(norm.logpdf(x) - norm.logcdf(x))
    assert np.allclose(inverse_mills(torch.tensor(x)).numpy(), expected, rtol=1e-10)


def test_log_normaliser_is_log_of_gaussian_integral():
    tau, nu = torch.tensor(2.5, dtype=torch.float64), torch.tensor(-0.7, dtype=torch.float64)
    # int exp(-tau/2 h^2 + nu h) dh = sqrt(2 pi / tau) exp(nu^2 / (2 tau))
    from scipy.integrate import quad
    val, _ = quad(lambda h: math.exp(-0.5 * 2.5 * h * h - 0.7 * h), -50, 50)
    assert float(gaussian_log_normaliser(tau, nu)) == pytest.approx(math.log(val), rel=1e-10)


def test_log1mexp_is_accurate_and_its_gradient_finite_up_to_zero():
    from alphagp.numerics import log1mexp
    x = torch.tensor([-50.0, -1.0, -0.5, -1e-8, -1e-300, 0.0, 1e-16], dtype=torch.float64, requires_grad=True)
    y = log1mexp(x)
    expected = np.log(-np.expm1(np.array([-50.0, -1.0, -0.5, -1e-8])))
    np.testing.assert_allclose(y[:4].detach().numpy(), expected, rtol=1e-12, atol=1e-15)
    assert torch.all(torch.isfinite(y)) and y[-1].item() < -700      # probability 1: about -708, not -inf
    (grad,) = torch.autograd.grad(y.sum(), x)
    assert torch.all(torch.isfinite(grad))


@pytest.mark.parametrize("eps", [0.3, 1e-3, 1e-7])
def test_tied_cavity_gap_equals_the_difference_of_log_normalisers(rng, eps):
    """Against the plain difference g(cavity) - g(q) of two log-normalisers in float64 (exact
    enough at these eps), and its gradient against finite differences."""
    from alphagp.methods.projection import whitened_log_normaliser
    C, M = 3, 6
    A = torch.tensor(rng.standard_normal((C, M, M)))
    W = A @ A.transpose(-1, -2)
    eye = torch.eye(M, dtype=torch.float64)
    b = torch.tensor(rng.standard_normal((C, M)))
    direct = whitened_log_normaliser(eye + (1 - eps) * W, (1 - eps) * b) - whitened_log_normaliser(eye + W, b)
    gap = tied_cavity_log_normaliser_gap(eye + W, b, eps)
    assert torch.allclose(gap, direct, rtol=1e-6, atol=0)
    Wg, bg = W.clone().requires_grad_(), b.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda W_, b_: tied_cavity_log_normaliser_gap(
        eye + 0.5 * (W_ + W_.transpose(-1, -2)), b_, eps), (Wg, bg))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_tied_gap_from_two_log_determinants_equals_the_one_from_eigenvalues(rng, monkeypatch, dtype):
    """Where the gap takes the plain difference of the two Cholesky log-determinants (float64 at
    moderate eps), it equals, value and gradient, the cancellation-free form from the eigenvalues
    (forced here); in float32 at MNIST's eps the eigenvalues are used, and the gap matches the
    float64 value, which the plain difference in float32 would miss entirely."""
    import alphagp.gaussians
    C, M = 3, 40
    G = torch.tensor(rng.standard_normal((C, M, M)))
    W, b = G @ G.mT / M, torch.tensor(rng.standard_normal((C, M)))
    eye = torch.eye(M, dtype=torch.float64)

    def gap_and_gradient(eps, dtype=torch.float64):
        Wg = W.to(dtype).requires_grad_()
        value = tied_cavity_log_normaliser_gap(eye.to(dtype) + Wg, b.to(dtype), eps)
        return value.detach().double(), torch.autograd.grad(value.sum(), Wg)[0].double()

    for eps in (1e-3, 2e-6):
        plain = gap_and_gradient(eps)
        monkeypatch.setattr(alphagp.gaussians, "_DIFFERENCE_MAX_ERROR", 0.0)
        exact = gap_and_gradient(eps)
        monkeypatch.undo()
        assert torch.allclose(plain[0], exact[0], rtol=1e-8, atol=0)
        assert torch.allclose(plain[1], exact[1], rtol=1e-7, atol=1e-12 * float(exact[1].abs().max()))
        if dtype == torch.float32:
            single = gap_and_gradient(eps, torch.float32)
            assert torch.allclose(single[0], exact[0], rtol=1e-3, atol=0)

@pytest.mark.parametrize("C", [40, 120])
def test_the_grid_route_of_every_class_probability_equals_the_direct_sum(C, monkeypatch):
    """Issue 60, item 11: from GRID_CLASSES classes, log P(f^c is the largest) for every c comes from
    one grid per row (N C G work) instead of the direct N C^2 Q sum; the two agree to 1e-7 in
    probability, and a row too spread for the grid falls back to the direct sum."""
    from alphagp import numerics
    g = torch.Generator().manual_seed(C)
    mean = torch.randn(30, C, generator=g, dtype=torch.float64) * 2
    var = torch.rand(30, C, generator=g, dtype=torch.float64) * 2 + 0.05
    grid = numerics.log_prob_largest(mean, var)
    monkeypatch.setattr(numerics, "GRID_CLASSES", 10**9)
    direct = numerics.log_prob_largest(mean, var)
    assert (grid.exp() - direct.exp()).abs().max() < 1e-7
    monkeypatch.setattr(numerics, "GRID_CLASSES", 40)
    monkeypatch.setattr(numerics, "GRID_POINTS", 10)
    torch.testing.assert_close(numerics.log_prob_largest(mean, var), direct, rtol=0, atol=0)
