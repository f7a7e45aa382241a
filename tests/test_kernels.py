import numpy as np
import pytest
import torch
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from alphagp.kernels import ARDKernel


def _assert_gradient_matches_central_differences(f, params, rng, eps=1e-6):
    """The autograd gradient of the scalar ``f()`` in each of ``params`` against central differences
    along a random direction."""
    grads = torch.autograd.grad(f(), params)
    with torch.no_grad():
        for p, g in zip(params, grads):
            direction = torch.tensor(rng.standard_normal(p.shape))
            p += eps * direction
            up = f()
            p -= 2 * eps * direction
            down = f()
            p += eps * direction
            assert np.isclose(float((up - down) / (2 * eps)), float((g * direction).sum()), rtol=1e-6, atol=1e-8)


def test_ard_kernel_matches_scikit_learn(rng):
    A, B = rng.standard_normal((7, 3)), rng.standard_normal((5, 3))
    ls = np.array([[0.5, 1.0, 2.0], [1.5, 0.7, 0.9]])
    k = ARDKernel(2, 3, lengthscale=torch.tensor(ls), amplitude=torch.tensor([1.3, 0.4]), noise=0.2)
    K = k.cross(torch.tensor(A), torch.tensor(B)).detach().numpy()
    for c, amp in enumerate([1.3, 0.4]):
        ref = (ConstantKernel(amp) * RBF(ls[c]))(A, B)
        assert np.allclose(K[c], ref, atol=1e-12)
    assert np.allclose(k.diag(torch.tensor(A[:4])).detach().numpy(), np.array([[1.5] * 4, [0.6] * 4]))


def test_shared_kernel_broadcasts_and_per_class_inputs_work(rng):
    k = ARDKernel(3, 2, shared=True, lengthscale=0.8)
    Z = torch.tensor(rng.standard_normal((3, 4, 2)))
    X = torch.tensor(rng.standard_normal((6, 2)))
    K = k.cross(Z, X)
    assert K.shape == (3, 4, 6)
    ref = RBF(0.8)(Z[1].numpy(), X.numpy())
    assert np.allclose(K[1].detach().numpy(), ref)
    assert k.raw_lengthscale.shape == (1, 2)


def test_inducing_covariances_match_scikit_learn_per_class_and_shared(rng):
    Z = rng.standard_normal((2, 4, 3))
    X = rng.standard_normal((6, 3))
    ls = np.array([[0.5, 1.0, 2.0], [1.5, 0.7, 0.9]])
    for k, scales in ((ARDKernel(2, 3, lengthscale=torch.tensor(ls), amplitude=torch.tensor([1.3, 0.4])),
                       [(1.3, ls[0]), (0.4, ls[1])]),
                      (ARDKernel(2, 3, shared=True, lengthscale=0.8, amplitude=2.0), [(2.0, 0.8)] * 2)):
        Kuu, Kuf = k.inducing_covariances(torch.tensor(Z), torch.tensor(X))
        assert Kuu.shape == (2, 4, 4) and Kuf.shape == (2, 4, 6)
        for c, (amp, scale) in enumerate(scales):
            kernel = ConstantKernel(amp) * RBF(scale)
            assert np.allclose(Kuu[c].detach().numpy(), kernel(Z[c]), atol=1e-12)
            assert np.allclose(Kuf[c].detach().numpy(), kernel(Z[c], X), atol=1e-12)


def test_inducing_covariances_gradient_matches_finite_differences(rng):
    """Gradients w.r.t. Z and the raw hyper-parameters against central differences along random directions."""
    X = torch.tensor(rng.standard_normal((5, 3)))
    weights = torch.tensor(rng.standard_normal((2, 4, 9)))
    for shared in (False, True):
        k = ARDKernel(2, 3, shared=shared, lengthscale=torch.tensor([0.7, 1.2, 2.0]), amplitude=1.5)
        Z = torch.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
        params = (Z, k.raw_lengthscale, k.raw_amplitude)

        def weighted_sum(k=k, Z=Z):
            Kuu, Kuf = k.inducing_covariances(Z, X)
            return (torch.cat((Kuu, Kuf), -1) * weights).sum()

        _assert_gradient_matches_central_differences(weighted_sum, params, rng)


# ---------------------------------------------------------------------- positive parameters stored as logs
@pytest.mark.parametrize("kind", ["ard", "polynomial"])
def test_log_stored_parameters_give_the_same_kernel_and_relative_adam_steps(kind):
    """positive="log" stores log l, log a, log n: the same kernel values as the softplus storage at the same
    parameters, and a gradient step in the raw value changes the lengthscale by a share of itself."""
    from alphagp.kernels import PolynomialKernel, kernel_from_spec
    gen = torch.Generator().manual_seed(0)
    ls, amp, noise = 0.5 + 30 * torch.rand(3, 4, generator=gen).double(), 0.3 + torch.rand(3, generator=gen).double(), 0.1
    make = (lambda p: ARDKernel(3, 4, lengthscale=ls, amplitude=amp, noise=noise, positive=p)) if kind == "ard" else \
        (lambda p: PolynomialKernel(3, 4, degree=3, lengthscale=ls, amplitude=amp, noise=noise, positive=p))
    soft, log = make("softplus"), make("log")
    A, B = torch.randn(5, 4, generator=gen).double(), torch.randn(3, 6, 4, generator=gen).double()
    torch.testing.assert_close(log.cross(B, A), soft.cross(B, A), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(log.prior_variance(A), soft.prior_variance(A), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(log.raw_lengthscale, torch.log(ls))
    # d l / d raw = l for log storage (relative steps), sigmoid(raw) ~ 1 for softplus at l >> 1 (absolute)
    grad_log = torch.autograd.grad(log.lengthscale.sum(), log.raw_lengthscale)[0]
    grad_soft = torch.autograd.grad(soft.lengthscale.sum(), soft.raw_lengthscale)[0]
    torch.testing.assert_close(grad_log, ls)
    assert torch.all(grad_soft <= 1.0)
    rebuilt = kernel_from_spec(log.spec(), 3, 4)
    rebuilt.load_state_dict(log.state_dict())
    torch.testing.assert_close(rebuilt.cross(B, A), log.cross(B, A))
    # a spec written before log storage (no "positive") reads as softplus
    assert kernel_from_spec({k: v for k, v in soft.spec().items() if k != "positive"}, 3, 4).positive == "softplus"
    with pytest.raises(ValueError, match="positive must be one of"):
        make("exp")


# ---------------------------------------------------------------------- the normalised polynomial kernel
def test_normalized_polynomial_kernel_is_the_cosine_form_positive_semidefinite_with_bounded_variance():
    from alphagp.kernels import PolynomialKernel
    gen = torch.Generator().manual_seed(1)
    ls = 1.0 + torch.rand(2, 5, generator=gen).double()
    plain = PolynomialKernel(2, 5, degree=9, lengthscale=ls, amplitude=0.7)
    normed = PolynomialKernel(2, 5, degree=9, lengthscale=ls, amplitude=0.7, normalized=True)
    X = torch.randn(30, 5, generator=gen).double() * torch.logspace(-1, 2, 30).double()[:, None]  # norms up to ~300
    Kp, Kn = plain.cross(X, X).detach(), normed.cross(X, X).detach()
    d = torch.diagonal(Kp, dim1=-2, dim2=-1)
    torch.testing.assert_close(Kn, 0.7 * Kp / torch.sqrt(d[:, :, None] * d[:, None, :]))
    torch.testing.assert_close(normed.prior_variance(X).detach(), torch.full((2, 30), 0.7).double())
    torch.testing.assert_close(torch.diagonal(Kn, dim1=-2, dim2=-1), torch.full((2, 30), 0.7).double())
    assert float(torch.linalg.eigvalsh(Kn).min()) > -1e-10
    assert float(plain.prior_variance(X).detach().max()) > 1e20                        # what the normalisation removes
    # per-latent inputs [C, n, D] against shared ones
    Z = torch.randn(2, 4, 5, generator=gen).double()
    Kuu, Kuf = normed.inducing_covariances(Z, X)
    torch.testing.assert_close(Kuf, torch.stack([normed.cross(Z[c], X)[c] for c in range(2)]))
    torch.testing.assert_close(Kuu, torch.stack([normed.cross(Z[c], Z[c])[c] for c in range(2)]))


# ---------------------------------------------------------------------- the linear term (issue 79)
@pytest.mark.parametrize("shared", [False, True])
def test_the_linear_term_is_scikit_learns_rbf_plus_dot_product(rng, shared):
    """With ``linear`` the kernel is a RBF + b x'x' (scikit-learn's ``DotProduct(sigma_0=0)`` times b):
    the cross covariances, the inducing covariances, the prior variances and the diagonal with
    the noise; without it, no parameter of it."""
    from sklearn.gaussian_process.kernels import DotProduct
    Z, X = rng.standard_normal((2, 4, 3)), rng.standard_normal((6, 3))
    ls, amp, lin = np.array([[0.5, 1.0, 2.0], [1.5, 0.7, 0.9]]), np.array([1.3, 0.4]), np.array([0.3, 0.05])
    if shared:
        ls, amp, lin = ls[:1], amp[:1], lin[:1]
    k = ARDKernel(2, 3, shared=shared, lengthscale=torch.tensor(ls), amplitude=torch.tensor(amp), noise=0.2,
                  linear=torch.tensor(lin))
    Kuu, Kuf = k.inducing_covariances(torch.tensor(Z), torch.tensor(X))
    K = k.cross(torch.tensor(X), torch.tensor(X))
    for c in range(2):
        g = 0 if shared else c
        ref = ConstantKernel(amp[g]) * RBF(ls[g]) + ConstantKernel(lin[g]) * DotProduct(sigma_0=0.0)
        assert np.allclose(Kuu[c].detach().numpy(), ref(Z[c]), atol=1e-12)
        assert np.allclose(Kuf[c].detach().numpy(), ref(Z[c], X), atol=1e-12)
        assert np.allclose(K[c].detach().numpy(), ref(X), atol=1e-12)
        assert np.allclose(k.prior_variance(torch.tensor(X))[c].detach().numpy(), np.diag(ref(X)), atol=1e-12)
        assert np.allclose(k.diag(torch.tensor(X))[c].detach().numpy(), np.diag(ref(X)) + 0.2, atol=1e-12)
    assert k.spec()["linear"] is True and ARDKernel(2, 3).raw_linear is None and "linear" not in ARDKernel(2, 3).spec()


def test_the_linear_terms_gradient_matches_finite_differences(rng):
    X = torch.tensor(rng.standard_normal((5, 3)))
    weights = torch.tensor(rng.standard_normal((2, 4, 9)))
    k = ARDKernel(2, 3, lengthscale=torch.tensor([0.7, 1.2, 2.0]), amplitude=1.5, linear=0.4)
    Z = torch.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    params = (Z, k.raw_lengthscale, k.raw_amplitude, k.raw_linear)

    def weighted_sum():
        Kuu, Kuf = k.inducing_covariances(Z, X)
        return (torch.cat((Kuu, Kuf), -1) * weights).sum() + k.prior_variance(X).sum()

    _assert_gradient_matches_central_differences(weighted_sum, params, rng)
