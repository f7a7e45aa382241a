"""Distributed training with gloo processes on the CPU equals the one-process fit with the same
global batch and seed, up to rounding, and every process ends with the same model: rows split
(``distributed="rows"``), classes split (``distributed=True``, 2 and 3 processes on 3 classes,
so blocks of 2 + 1 and 1 + 1 + 1) and both (4 processes: 2 class blocks x 2 row blocks)."""

import os
import sys
import tempfile

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from sklearn.datasets import make_classification

from alphagp import GPClassifier
from alphagp.distributed import Reducer, class_blocks_for
from alphagp.methods import METHODS
from alphagp.testing import methods_with

WORLD = 2


def _data():
    X, y = make_classification(n_samples=260, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=2)
    return X[:210], y[:210], X[210:]


def _params(method):
    # 210 rows in batches of 50: the last batch (10 rows) splits 5 + 5; 'arpep' and the batch-only
    # methods (the Dirichlet GP: its rows' sums added across processes) train in batch mode
    batch = method == "arpep" or not METHODS[method].cls.CAPABILITIES.mini_batches
    return dict(method=method, n_inducing=5, batch_size=None if batch else 50, max_iter=3,
                random_state=0, alpha=0.5 if method in ("arpep", "apep", "rpapep") else None)


def _join_group(init_file, rank, world):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)


def _leave_group():
    """End a worker that succeeded: wait for every process, tear the group down, then leave
    without the interpreter's finalisation. gloo's background threads can still be joinable
    when C++ static destructors run at a normal exit, and ``std::terminate`` then aborts the
    process ("terminate called without an active exception", SIGABRT; seen once in CI), which
    ``mp.spawn`` reports as a failure although the fit finished. A worker that raised skips this
    and its exception reaches ``mp.spawn`` as usual."""
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _worker(rank, init_file, method, out_dir, extra=None, world=WORLD, distributed=True):
    """Fit ``method`` (or each of a list of methods) in process ``rank`` of ``world``; saves the
    test predictions, the objective's history, the best epoch and how many times the marginals
    were gathered across a class split."""
    _join_group(init_file, rank, world)
    gathered = [0]
    original = Reducer.gather_classes

    def counting(self, local, n_classes):
        gathered[0] += self.class_blocks > 1
        return original(self, local, n_classes)

    Reducer.gather_classes = counting
    try:
        X, y, X_test = _data()
        for name in [method] if isinstance(method, str) else method:
            clf = GPClassifier(distributed=distributed, **{**_params(name), **(extra or {})}).fit(X, y)
            np.save(os.path.join(out_dir, f"{name}_proba{rank}.npy"), clf.predict_proba(X_test))
            np.save(os.path.join(out_dir, f"{name}_history{rank}.npy"), [h["objective"] for h in clf.history_])
            np.save(os.path.join(out_dir, f"{name}_best{rank}.npy"), [clf.best_iteration_ or 0])
            np.save(os.path.join(out_dir, f"{name}_gathered{rank}.npy"), [gathered[0]])
            np.save(os.path.join(out_dir, f"{name}_sites{rank}.npy"), _per_point_sites(clf))
            gathered[0] = 0
    finally:
        Reducer.gather_classes = original
    _leave_group()


def _per_point_sites(clf) -> np.ndarray:
    """The per-point site precisions of an EP-family fit (every process must hold all of them),
    or an empty array for methods without."""
    sites = getattr(clf.model_, "factor_c1", None)
    return np.empty(0) if sites is None else sites.numpy()


def _single(method):
    X, y, X_test = _data()
    single = GPClassifier(**_params(method)).fit(X, y)
    return single.predict_proba(X_test), [h["objective"] for h in single.history_], _per_point_sites(single)


#: (processes, the estimator's ``distributed``, class blocks expected with 3 classes)
GRIDS = {"rows, 2 processes": (2, "rows", 1), "classes, 2 processes": (2, True, 2),
         "classes, 3 processes": (3, True, 3), "2 class blocks x 2 row blocks": (4, True, 2)}


@pytest.mark.parametrize("grid", GRIDS)
def test_split_fits_equal_one_process(tmp_path, grid):
    """Every data-parallel method, in one process group per grid; the class-parallel ones split
    their classes where the grid has class blocks (checked: the marginals were gathered)."""
    world, distributed, class_blocks = GRIDS[grid]
    methods = methods_with("data_parallel")
    class_parallel = set(methods_with("class_parallel"))
    assert {"sep", "vi", "arpep", "apep", "rpapep"} <= class_parallel
    mp.spawn(_worker, args=(str(tmp_path / "init"), methods, str(tmp_path), None, world, distributed),
             nprocs=world, join=True)
    for method in methods:
        expected, history, sites = _single(method)
        for rank in range(world):
            np.testing.assert_allclose(np.load(tmp_path / f"{method}_sites{rank}.npy"), sites, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(np.load(tmp_path / f"{method}_proba{rank}.npy"), expected, rtol=0, atol=1e-9)
            np.testing.assert_allclose(np.load(tmp_path / f"{method}_history{rank}.npy"), history, rtol=1e-9)
            split = class_blocks > 1 and method in class_parallel
            assert bool(np.load(tmp_path / f"{method}_gathered{rank}.npy")[0]) == split


def test_full_batch_ep_on_two_processes_equals_one(tmp_path):
    """Batch EP (every row in every step) keeps no per-point directions; the processes still
    exchange their rows' sites, so each holds all of them."""
    extra = {"batch_size": None}
    mp.spawn(_worker, args=(str(tmp_path / "init"), "ep", str(tmp_path), extra, WORLD, "rows"), nprocs=WORLD, join=True)
    X, y, X_test = _data()
    single = GPClassifier(**{**_params("ep"), **extra}).fit(X, y)
    for rank in range(WORLD):
        np.testing.assert_allclose(np.load(tmp_path / f"ep_proba{rank}.npy"), single.predict_proba(X_test),
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.load(tmp_path / f"ep_history{rank}.npy"),
                                   [h["objective"] for h in single.history_], rtol=1e-9)
        np.testing.assert_allclose(np.load(tmp_path / f"ep_sites{rank}.npy"), _per_point_sites(single),
                                   rtol=1e-9, atol=1e-12)


def test_the_grid_gives_every_process_a_class():
    assert [class_blocks_for(w, 10) for w in (1, 2, 3, 4, 6, 12)] == [1, 2, 3, 4, 6, 6]
    assert [class_blocks_for(w, 3) for w in (2, 3, 4, 6)] == [2, 3, 2, 3]
    blocks = [Reducer(4, r, class_blocks=4).class_slice(10) for r in range(4)]
    assert [(b.start, b.stop) for b in blocks] == [(0, 3), (3, 6), (6, 8), (8, 10)]
    grid = Reducer(6, 4, class_blocks=3)               # rank 4: class block 1, row block 1
    assert (grid.class_rank, grid.row_rank, grid.row_blocks) == (1, 1, 2)


def test_batch_only_methods_refuse(monkeypatch):
    from alphagp.distributed import Reducer
    monkeypatch.setattr(Reducer, "from_process_group", classmethod(lambda cls, class_blocks=1: cls(2, 0)))
    monkeypatch.setattr("alphagp.estimators.run.ensure_process_group", lambda device: None)
    monkeypatch.setattr("alphagp.estimators.run.broadcast_state", lambda module: None)
    monkeypatch.setattr(torch.distributed, "broadcast", lambda tensor, src: None)
    X, y, _ = _data()
    with pytest.raises(ValueError, match="GFITC cannot split a step across processes"):
        GPClassifier(method="gfitc", max_iter=1, distributed=True).fit(X, y)


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


def _deep_worker(rank, init_file, family, out_dir, variance_floor=None):
    if variance_floor is not None:
        import alphagp.methods.dgp
        alphagp.methods.dgp.MIN_VARIANCE = variance_floor
    _join_group(init_file, rank, WORLD)
    cls, X, target, X_test = _deep_problem(family)
    model = cls(distributed=True, **_DEEP).fit(X, target)
    np.save(os.path.join(out_dir, f"predict{rank}.npy"), _deep_predict(model, X_test))
    np.save(os.path.join(out_dir, f"history{rank}.npy"), [h["objective"] for h in model.history_])
    np.save(os.path.join(out_dir, f"clamped{rank}.npy"), [model.diagnostics_["n_clamped_variances"]])
    _leave_group()


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


def test_deep_gp_clamp_count_sums_over_processes(tmp_path, monkeypatch):
    """With a floor above every propagated variance, each training pass clamps all of them, so
    the count is the number of variances propagated: every process must report the one-process
    fit's count, not its own rows' share."""
    import alphagp.methods.dgp
    floor = 1e6
    mp.spawn(_deep_worker, args=(str(tmp_path / "init"), "regressor", str(tmp_path), floor), nprocs=WORLD, join=True)
    monkeypatch.setattr(alphagp.methods.dgp, "MIN_VARIANCE", floor)
    cls, X, target, _ = _deep_problem("regressor")
    expected = cls(**_DEEP).fit(X, target).diagnostics_["n_clamped_variances"]
    assert expected > 0
    for rank in range(WORLD):
        assert int(np.load(tmp_path / f"clamped{rank}.npy")[0]) == expected


def _broadcast_worker(rank, init_file, out_dir):
    """Rank 0 holds zeros in one buffer and values in the others; rank 1 holds other values everywhere."""
    from alphagp.distributed import broadcast_state
    _join_group(init_file, rank, WORLD)
    module = torch.nn.Linear(3, 2)
    module.register_buffer("sites", torch.zeros(4, 3) if rank == 0 else torch.full((4, 3), 7.0))
    module.register_buffer("count", torch.tensor(5 + rank))
    if rank == 1:
        module.weight.data += 1.0
    broadcast_state(module)
    np.save(os.path.join(out_dir, f"state{rank}.npy"),
            np.concatenate([t.detach().numpy().ravel() for t in module.state_dict().values()]))
    _leave_group()


def test_broadcast_state_gives_every_process_the_first_ones_state(tmp_path):
    """Tensors all zero on the first process are zeroed on the others without being sent; the
    rest are copied: every process ends with exactly the first process's state."""
    mp.spawn(_broadcast_worker, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=WORLD, join=True)
    first = np.load(tmp_path / "state0.npy")
    assert np.count_nonzero(first[-13:-1]) == 0 and first[-1] == 5   # the zero sites, rank 0's count
    np.testing.assert_array_equal(np.load(tmp_path / "state1.npy"), first)


def test_two_processes_validate_and_stop_as_one():
    """Every process scores the same held-out rows, so they stop at the same epoch and keep the
    same best state as a one-process fit."""
    extra = {"early_stopping": True, "n_iter_no_change": 2, "max_iter": 8, "learning_rate": 0.1}
    with tempfile.TemporaryDirectory() as out:
        mp.spawn(_worker, args=(os.path.join(out, "init"), "sep", out, extra), nprocs=WORLD, join=True)
        X, y, X_test = _data()
        single = GPClassifier(**{**_params("sep"), **extra}).fit(X, y)
        for rank in range(WORLD):
            assert int(np.load(os.path.join(out, f"sep_best{rank}.npy"))[0]) == single.best_iteration_
            np.testing.assert_allclose(np.load(os.path.join(out, f"sep_proba{rank}.npy")),
                                       single.predict_proba(X_test), rtol=0, atol=1e-9)
            assert len(np.load(os.path.join(out, f"sep_history{rank}.npy"))) == single.n_iter_
