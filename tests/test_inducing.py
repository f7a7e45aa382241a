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


def test_shared_init_repeats_one_set(rng):
    Z = init_inducing_points(rng.standard_normal((30, 2)), 3, 5, "random", shared=True, rng=rng)
    assert np.array_equal(Z[0], Z[2])


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
