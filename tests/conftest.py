"""Shared fixtures and helpers. The tests mirror the package: ``tests/methods`` holds the tests of
``alphagp/methods``, ``tests/estimators`` of ``alphagp/estimators`` (and the model-file fixtures),
``tests/likelihoods``, ``tests/training`` and ``tests/data`` likewise; a top-level module's tests
sit at the top (``test_kernels.py`` for ``alphagp/kernels.py``), and ``tests/project`` checks the
repository around the package (README and documentation snippets, examples, benchmark scripts)."""

from pathlib import Path

import numpy as np
import pytest
import torch

torch.set_num_threads(2)

#: the repository's root (README, examples, benchmarks)
REPO = Path(__file__).resolve().parents[1]


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


@pytest.fixture(scope="session")
def thyroid():
    """The bundled New-thyroid set ``(X [215, 5], y [215])``, three classes."""
    from alphagp.data import load_bundled
    return load_bundled("new_thyroid")


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


def rewrite_model_header(raw: bytes, edit, keep_checksum: bool = True) -> bytes:
    """The bytes ``raw`` of an alphagp file with its JSON header passed through ``edit`` (called with
    the parsed header: ``kind``, ``format_version``, ``content``, ...); the stored checksum is kept
    as it was, or dropped (``keep_checksum=False``, as in files of format 1)."""
    import json
    import struct
    n = struct.unpack("<Q", raw[:8])[0]
    table = json.loads(raw[8:8 + n])
    meta = json.loads(table["__metadata__"]["alphagp"])
    edit(meta)
    table["__metadata__"]["alphagp"] = json.dumps(meta)
    if not keep_checksum:
        del table["__metadata__"]["alphagp_sha256"]
    blob = json.dumps(table).encode()
    blob += b" " * (-len(blob) % 8)
    return struct.pack("<Q", len(blob)) + blob + raw[8 + n:]
