"""Data-parallel training (``distributed=True``) with two gloo processes on the CPU equals the
one-process fit with the same global batch and seed, up to rounding, and every process ends
with the same model."""

import os
import tempfile

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from sklearn.datasets import make_classification

from alphagp import GPClassifier

WORLD = 2


def _data():
    X, y = make_classification(n_samples=260, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=2)
    return X[:210], y[:210], X[210:]


def _params(method):
    # 210 rows in batches of 50: the last batch (10 rows) splits 5 + 5; 'arpep' trains in batch mode
    return dict(method=method, n_inducing=5, batch_size=None if method == "arpep" else 50, max_iter=3,
                random_state=0, alpha=0.5 if method in ("arpep", "apep", "rpapep") else None)


def _worker(rank, init_file, method, out_dir, extra=None):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        X, y, X_test = _data()
        clf = GPClassifier(distributed=True, **{**_params(method), **(extra or {})}).fit(X, y)
        np.save(os.path.join(out_dir, f"proba{rank}.npy"), clf.predict_proba(X_test))
        np.save(os.path.join(out_dir, f"history{rank}.npy"), [h["objective"] for h in clf.history_])
        np.save(os.path.join(out_dir, f"best{rank}.npy"), [clf.best_iteration_ or 0])
    finally:
        dist.destroy_process_group()


def _data_parallel_methods() -> list[str]:
    """The registered methods whose built instance (default arguments) can split a step."""
    from alphagp.kernels import ARDKernel
    from alphagp.methods import METHODS, build_method
    Z = torch.zeros(3, 4, 2, dtype=torch.float64)
    return [name for name in METHODS
            if build_method(name, Z, ARDKernel(3, 2), n_data=10).capabilities.data_parallel]


@pytest.mark.parametrize("method", _data_parallel_methods())
def test_two_processes_equal_one(tmp_path, method):
    mp.spawn(_worker, args=(str(tmp_path / "init"), method, str(tmp_path)), nprocs=WORLD, join=True)
    X, y, X_test = _data()
    single = GPClassifier(**_params(method)).fit(X, y)
    expected = single.predict_proba(X_test)
    for rank in range(WORLD):
        np.testing.assert_allclose(np.load(tmp_path / f"proba{rank}.npy"), expected, rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.load(tmp_path / f"history{rank}.npy"),
                                   [h["objective"] for h in single.history_], rtol=1e-9)


def test_methods_with_per_point_sites_refuse(monkeypatch):
    from alphagp.distributed import Reducer
    monkeypatch.setattr(Reducer, "from_process_group", classmethod(lambda cls: cls(2, 0)))
    monkeypatch.setattr("alphagp.estimators.base.ensure_process_group", lambda device: None)
    monkeypatch.setattr("alphagp.estimators.base.broadcast_state", lambda module: None)
    monkeypatch.setattr(torch.distributed, "broadcast", lambda tensor, src: None)
    X, y, _ = _data()
    with pytest.raises(ValueError, match="per-point sites are not sharded"):
        GPClassifier(method="ep", batch_size=50, max_iter=1, distributed=True).fit(X, y)


def test_distributed_without_a_process_group_is_a_clear_error(monkeypatch):
    for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    X, y, _ = _data()
    with pytest.raises(RuntimeError, match="torchrun"):
        GPClassifier(method="sep", batch_size=50, max_iter=1, distributed=True).fit(X, y)


def test_after_a_fit_the_objective_is_the_one_process_objective():
    X, y, _ = _data()
    clf = GPClassifier(method="sep", n_inducing=5, batch_size=50, max_iter=1, random_state=0).fit(X, y)
    model = clf.model_
    Xs = torch.as_tensor((X - clf.mean_) / clf.scale_)
    idx = torch.arange(len(y))
    full = model.objective(Xs, torch.as_tensor(y), idx).item()
    halves = [model.objective(Xs[i], torch.as_tensor(y)[i], i).item() for i in torch.tensor_split(idx, 2)]
    # each half's estimate scales its rows by N / |half|: their mean is the full-batch value
    assert np.isclose(np.mean(halves), full, rtol=1e-10)


def _deep_worker(rank, init_file, family, out_dir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        cls, X, target, X_test = _deep_problem(family)
        model = cls(distributed=True, **_DEEP).fit(X, target)
        np.save(os.path.join(out_dir, f"predict{rank}.npy"), _deep_predict(model, X_test))
        np.save(os.path.join(out_dir, f"history{rank}.npy"), [h["objective"] for h in model.history_])
    finally:
        dist.destroy_process_group()


_DEEP = dict(n_layers=2, n_inducing=5, n_samples=3, n_predict_samples=10, batch_size=50, max_iter=3, random_state=0)


def _deep_problem(family):
    from alphagp import DeepGPClassifier, DeepGPRegressor
    X, y, X_test = _data()
    return (DeepGPRegressor, X, X[:, 0] * X[:, 1], X_test) if family == "regressor" else (DeepGPClassifier, X, y, X_test)


def _deep_predict(model, X_test):
    return model.predict(X_test) if hasattr(model, "y_mean_") else model.predict_proba(X_test)


@pytest.mark.parametrize("family", ["regressor", "classifier"])
def test_deep_gps_on_two_processes_equal_one(tmp_path, family):
    """Each process propagates its share of a batch with those rows' draws of the global batch."""
    mp.spawn(_deep_worker, args=(str(tmp_path / "init"), family, str(tmp_path)), nprocs=WORLD, join=True)
    cls, X, target, X_test = _deep_problem(family)
    single = cls(**_DEEP).fit(X, target)
    for rank in range(WORLD):
        np.testing.assert_allclose(np.load(tmp_path / f"predict{rank}.npy"), _deep_predict(single, X_test),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.load(tmp_path / f"history{rank}.npy"),
                                   [h["objective"] for h in single.history_], rtol=1e-9)


def test_two_processes_validate_and_stop_as_one():
    """Every process scores the same held-out rows, so they stop at the same epoch and keep the
    same best state as a one-process fit."""
    extra = {"early_stopping": True, "n_iter_no_change": 2, "max_iter": 8, "learning_rate": 0.1}
    with tempfile.TemporaryDirectory() as out:
        mp.spawn(_worker, args=(os.path.join(out, "init"), "sep", out, extra), nprocs=WORLD, join=True)
        X, y, X_test = _data()
        single = GPClassifier(**{**_params("sep"), **extra}).fit(X, y)
        for rank in range(WORLD):
            assert int(np.load(os.path.join(out, f"best{rank}.npy"))[0]) == single.best_iteration_
            np.testing.assert_allclose(np.load(os.path.join(out, f"proba{rank}.npy")), single.predict_proba(X_test),
                                       rtol=0, atol=1e-9)
            assert len(np.load(os.path.join(out, f"history{rank}.npy"))) == single.n_iter_
