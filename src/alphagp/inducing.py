"""Initial locations of the per-class inducing points ``Z`` with shape ``[C, M, D]``."""

from __future__ import annotations

import numpy as np
from sklearn.cluster import MiniBatchKMeans, kmeans_plusplus

#: k-means reads at most this many rows (a random subsample), so it costs seconds on MNIST
KMEANS_ROWS = 20_000


def init_inducing_points(X: np.ndarray, n_latent: int, n_inducing: int, method: str = "random",
                         shared: bool = False, rng: np.random.Generator | None = None) -> np.ndarray:
    """Choose inducing points from the training inputs.

    Parameters
    ----------
    X
        ``[N, D]`` training inputs as the model sees them (any object supporting
        ``X[rows]``; k-means++ reads it whole).
    n_latent
        C, the number of latent functions.
    n_inducing
        M <= N.
    method
        ``"random"`` picks M distinct training points (the papers' choice);
        ``"kmeans++"`` uses k-means++ seeding (scikit-learn), which spreads them out;
        ``"kmeans"`` the centres of scikit-learn's ``MiniBatchKMeans`` on at most
        ``KMEANS_ROWS`` random rows (GPflow's recipe), one clustering for all latent functions.
    shared
        one set of M points for all latent functions.
    rng
        NumPy generator for reproducibility.

    Returns
    -------
    ``[C, M, D]`` array, or ``[1, M, D]`` when ``shared``.
    """
    rng = np.random.default_rng() if rng is None else rng
    n = X.shape[0]
    if n_inducing > n:
        raise ValueError(f"n_inducing={n_inducing} exceeds the number of training points {n}")
    draws = 1 if shared else n_latent
    if method == "kmeans":
        rows = np.sort(rng.choice(n, size=min(n, max(KMEANS_ROWS, n_inducing)), replace=False))
        sample = np.asarray(X[rows], dtype=np.float64)
        km = MiniBatchKMeans(n_inducing, n_init=3, random_state=int(rng.integers(2**31 - 1)),
                             batch_size=min(len(sample), 4096)).fit(sample)
        return np.broadcast_to(km.cluster_centers_, (draws, n_inducing, X.shape[1])).copy()
    out = []
    for _ in range(draws):
        if method == "random":
            out.append(X[np.sort(rng.choice(n, size=n_inducing, replace=False))])
        elif method == "kmeans++":
            centers, _ = kmeans_plusplus(np.asarray(X), n_inducing,
                                         random_state=int(rng.integers(2**31 - 1)))
            out.append(centers)
        else:
            raise ValueError(f"unknown inducing-point initialisation {method!r}; use 'random', 'kmeans' or 'kmeans++'")
    return np.stack(out)
