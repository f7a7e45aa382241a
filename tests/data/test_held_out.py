"""The early-stopping split (:mod:`alphagp.data.held_out`) against scikit-learn's
``train_test_split``, and its memory against the rows it splits."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import train_test_split

from alphagp.data.held_out import class_counts, held_out_rows


def _sklearn(y, fraction, stratify, seed):
    try:
        fit, held = train_test_split(np.arange(len(y)), test_size=fraction, stratify=y if stratify else None,
                                     random_state=seed)
    except ValueError:
        return None
    return np.sort(fit), np.sort(held)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 400), n_classes=st.integers(1, 6), fraction=st.sampled_from([0.05, 0.1, 0.25, 0.5, 0.9]),
       stratify=st.booleans(), seed=st.integers(0, 2**31 - 1), skew=st.floats(0.0, 3.0))
def test_the_same_rows_as_train_test_split(n, n_classes, fraction, stratify, seed, skew):
    """Same rows, or an error exactly where scikit-learn raises one (classes of one row, too few
    rows on a side), for any class sizes (``skew`` makes some classes rare)."""
    rng = np.random.default_rng(seed)
    weights = np.exp(-skew * np.arange(n_classes))
    y = rng.choice(n_classes, size=n, p=weights / weights.sum()).astype(np.uint8)
    expected = _sklearn(y, fraction, stratify, seed)
    if expected is None:
        with pytest.raises(ValueError):
            held_out_rows(y, fraction, stratify, seed)
        return
    fit, held = held_out_rows(y, fraction, stratify, seed)
    np.testing.assert_array_equal(fit, expected[0])
    np.testing.assert_array_equal(held, expected[1])


def test_class_counts_cross_chunks(monkeypatch):
    monkeypatch.setattr("alphagp.data.held_out._CHUNK", 7)
    y = np.random.default_rng(0).integers(0, 5, size=100)
    np.testing.assert_array_equal(class_counts(y), np.bincount(y))


def test_a_stratified_split_of_a_million_rows_allocates_a_few_bytes_a_row():
    """scikit-learn's split of 10^6 rows allocates about 72 bytes a row at its peak (a Python
    list with one NumPy scalar per row); this one a mask, one class's rows and its permutation
    and the int32 results: at most 16 bytes a row with 4 equal classes (measured: about 8)."""
    n = 1_000_000
    y = np.random.default_rng(0).integers(0, 4, size=n).astype(np.uint8)
    tracemalloc.start()
    try:
        fit, held = held_out_rows(y, 0.1, True, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(fit) + len(held) == n and fit.dtype == np.int32
    assert peak < 16 * n


def test_a_memory_mapped_fit_scores_the_same_held_out_rows(tmp_path):
    """The held-out rows are scored through a lazy view of the training rows: a fit on a
    memory-map gives the validation scores of the same fit on the array in memory."""
    from sklearn.datasets import make_classification

    from alphagp import DeepGPClassifier, GPClassifier
    X, y = make_classification(n_samples=300, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=0)
    np.save(tmp_path / "X.npy", X)
    X_map = np.load(tmp_path / "X.npy", mmap_mode="r")
    for make in (lambda: GPClassifier(method="sep", n_inducing=5, batch_size=50, max_iter=3, random_state=0,
                                      early_stopping=True, n_iter_no_change=5),
                 lambda: DeepGPClassifier(n_layers=2, n_inducing=5, n_samples=2, n_predict_samples=5, batch_size=50,
                                          max_iter=2, random_state=0, early_stopping=True, n_iter_no_change=5)):
        in_memory, mapped = make().fit(X, y), make().fit(X_map, y)
        assert len(in_memory.validation_scores_) == in_memory.n_iter_
        np.testing.assert_allclose(mapped.validation_scores_, in_memory.validation_scores_, rtol=1e-12)
