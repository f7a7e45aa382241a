import numpy as np
import pytest
import torch

torch.set_num_threads(2)


class Interrupt(Exception):
    """Raised by :func:`interrupt_at` to stop a fit as a crash would."""


def interrupt_at(epoch: int):
    """A training callback that raises :class:`Interrupt` after ``epoch``."""
    def stop(state):
        if state.epoch == epoch:
            raise Interrupt
    return stop


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def gp_prior_problem(n_train=400, n_test=400, n_classes=3, seed=0, lengthscale=1.0):
    """Section 4.2 of the scalable-EP paper: x uniform in [-2.5, 2.5]^2, latent functions drawn
    from the GP prior, labels by argmax. Returns X_train, y_train, X_test, y_test, F_test."""
    from sklearn.gaussian_process.kernels import RBF
    g = np.random.default_rng(seed)
    n = n_train + n_test
    X = g.uniform(-2.5, 2.5, (n, 2))
    K = RBF(lengthscale)(X) + 1e-8 * np.eye(n)
    F = np.linalg.cholesky(K) @ g.standard_normal((n, n_classes))
    y = F.argmax(1)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], F[n_train:]
