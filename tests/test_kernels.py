import numpy as np
import torch
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from alphagp.kernels import ARDKernel


def test_ard_kernel_matches_scikit_learn(rng):
    A, B = rng.standard_normal((7, 3)), rng.standard_normal((5, 3))
    ls = np.array([[0.5, 1.0, 2.0], [1.5, 0.7, 0.9]])
    k = ARDKernel(2, 3, lengthscale=torch.tensor(ls), amplitude=torch.tensor([1.3, 0.4]), noise=0.2)
    K = k.cross(torch.tensor(A), torch.tensor(B)).detach().numpy()
    for c, amp in enumerate([1.3, 0.4]):
        ref = (ConstantKernel(amp) * RBF(ls[c]))(A, B)
        assert np.allclose(K[c], ref, atol=1e-12)
    assert np.allclose(k.diag(4).detach().numpy(), np.array([[1.5] * 4, [0.6] * 4]))


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

        grads = torch.autograd.grad(weighted_sum(), params)
        eps = 1e-6
        with torch.no_grad():
            for p, g in zip(params, grads):
                direction = torch.tensor(rng.standard_normal(p.shape))
                p += eps * direction
                up = weighted_sum()
                p -= 2 * eps * direction
                down = weighted_sum()
                p += eps * direction
                assert np.isclose(float((up - down) / (2 * eps)), float((g * direction).sum()), rtol=1e-6, atol=1e-8)
