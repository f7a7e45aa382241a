import numpy as np
import pytest

from alphagp.inducing import init_inducing_points


def test_random_init_picks_distinct_training_points_per_class(rng):
    X = rng.standard_normal((50, 3))
    Z = init_inducing_points(X, 4, 7, "random", rng=np.random.default_rng(1))
    assert Z.shape == (4, 7, 3)
    for c in range(4):
        rows = {tuple(z) for z in Z[c]}
        assert len(rows) == 7 and rows <= {tuple(x) for x in X}
    assert not np.array_equal(Z[0], Z[1])  # classes draw their own points


def test_shared_init_gives_one_set(rng):
    X = rng.standard_normal((30, 2))
    Z = init_inducing_points(X, 3, 5, "random", shared=True, rng=rng)
    assert Z.shape == (1, 5, 2) and all(any(np.array_equal(z, x) for x in X) for z in Z[0])


def test_kmeanspp_spreads_points_over_separated_clusters(rng):
    centers = np.array([[0, 0], [20, 0], [0, 20]])
    X = np.concatenate([c + rng.standard_normal((40, 2)) for c in centers])
    Z = init_inducing_points(X, 2, 3, "kmeans++", rng=rng)
    for c in range(2):
        nearest = np.argmin(((Z[c][:, None] - centers[None]) ** 2).sum(-1), axis=1)
        assert sorted(nearest) == [0, 1, 2]


def test_bad_arguments(rng):
    X = rng.standard_normal((5, 2))
    with pytest.raises(ValueError, match="exceeds"):
        init_inducing_points(X, 2, 6)
    with pytest.raises(ValueError, match="unknown inducing-point initialisation"):
        init_inducing_points(X, 2, 3, "grid")


def _shared_and_copied(method, rng, C=3, M=4, D=2, n=15):
    """The same model twice: one inducing set [1, M, D] shared by all classes, and C equal copies
    [C, M, D] of it, both with the shared kernel."""
    import torch

    from alphagp.kernels import ARDKernel
    from alphagp.methods import build_method
    X = torch.tensor(rng.standard_normal((n, D)))
    y = torch.tensor(np.arange(n) % C)
    Z = torch.tensor(rng.standard_normal((1, M, D)))
    models = [build_method(method, Zi, ARDKernel(C, D, shared=True, lengthscale=1.3, amplitude=1.2), n_data=n)
              for Zi in (Z, Z.expand(C, M, D).clone())]
    return models, X, y, torch.arange(n)


@pytest.mark.parametrize("method", ["sep", "ep", "vi"])
def test_one_shared_inducing_set_equals_equal_copies_per_class(rng, method):
    """Value and gradients: the shared set's gradient is the sum of the copies' gradients."""
    import torch
    (shared, copied), X, y, idx = _shared_and_copied(method, rng)
    with torch.no_grad():  # q away from the prior (where the predictive does not depend on Z), same in both
        for (name, p), q in zip(shared.named_parameters(), copied.parameters()):
            if name != "inducing_points" and not name.startswith("kernel."):
                p.copy_(0.3 * torch.tensor(rng.standard_normal(tuple(p.shape))))
                q.copy_(p)
    for _ in range(3):
        objectives = [m.local_update(X, y, idx).total(m.n_data, len(idx)) for m in (shared, copied)]
    assert objectives[0].item() == pytest.approx(objectives[1].item(), rel=1e-10)
    for m, objective in zip((shared, copied), objectives):
        m.zero_grad()
        objective.backward()
    torch.testing.assert_close(shared.inducing_points.grad, copied.inducing_points.grad.sum(0, keepdim=True),
                               rtol=1e-8, atol=1e-10)
    for (name, p), q in zip(shared.kernel.named_parameters(), copied.kernel.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-8, atol=1e-10, msg=name)
    Xs = torch.tensor(rng.standard_normal((6, 2)))
    torch.testing.assert_close(shared.predict_proba(Xs), copied.predict_proba(Xs), rtol=1e-10, atol=1e-12)


def test_one_shared_set_needs_the_shared_kernel():
    import torch

    from alphagp.kernels import ARDKernel
    from alphagp.methods import build_method
    with pytest.raises(ValueError, match="shared kernel"):
        build_method("sep", torch.zeros(1, 4, 2, dtype=torch.float64), ARDKernel(3, 2), n_data=10)
    with pytest.raises(ValueError, match=r"\[3, M, D\] or \[1, M, D\]"):
        build_method("sep", torch.zeros(2, 4, 2, dtype=torch.float64), ARDKernel(3, 2), n_data=10)
