"""``dgp_uci.py``'s per-point test record: the test rows that repeat a training row (features and
target both) are found and left out of the duplicate-free mean, checked against a hand count on a
small table and a stand-in model whose log-densities are known."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from conftest import REPO

BENCHMARKS = REPO / "benchmarks"


@pytest.fixture
def dgp_uci(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("benchmark_dgp_uci", BENCHMARKS / "dgp_uci.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


class _KnownModel:
    """Predicts mean 0 and sd 1 everywhere and log-density ``-(index + 1)`` for test row ``index``."""

    def predict(self, X, return_std=False):
        return np.zeros(len(X)), np.ones(len(X))

    def predict_log_density(self, X, y):
        return -np.arange(1.0, len(X) + 1.0)


def test_repeated_test_rows_are_left_out_of_the_duplicate_free_mean(dgp_uci):
    X_tr = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    y_tr = np.array([1.0, 2.0, 3.0])
    X_te = np.array([[2.0, 3.0],     # repeats training row 1, target too: a duplicate
                     [0.0, 1.0],     # repeats training row 0: a duplicate
                     [4.0, 5.0],     # training row 2's features with another target: not one
                     [9.0, 9.0]])    # new
    y_te = np.array([2.0, 1.0, 7.0, 1.0])
    scores = dgp_uci.point_scores(_KnownModel(), X_tr, y_tr, X_te, y_te)
    assert scores["n_test_duplicates"] == 2
    assert scores["test_loglik_without_duplicates"] == pytest.approx((-3.0 - 4.0) / 2)
    assert scores["test_loglik_median"] == pytest.approx(-2.5)
    assert [p["index"] for p in scores["lowest_test_points"]] == [3, 2, 1]


def test_a_test_set_of_repeats_only_has_no_duplicate_free_mean(dgp_uci):
    X = np.array([[0.0], [1.0]])
    y = np.array([0.0, 1.0])
    scores = dgp_uci.point_scores(_KnownModel(), X, y, X, y)
    assert scores["n_test_duplicates"] == 2 and scores["test_loglik_without_duplicates"] is None
