"""partial_fit (issue 46, item 5): the calls over the batches of an epoch are that epoch of ``fit``
with the same batches and seed, for every method that streams; a saved model streams on as the
unsaved one does; the first call's and a later call's bad input are clear errors, on the command
line too."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

from alphagp import GPClassifier
from alphagp.methods import METHODS
from alphagp.training import Trainer

STREAMING = [name for name, spec in METHODS.items() if spec.cls.CAPABILITIES.streaming]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    return X[order], y[order]


@pytest.mark.parametrize("method", list(METHODS))
def test_a_method_streams_when_its_state_does_not_grow_with_the_rows(method):
    """The capability's contract: a method that streams trains on mini-batches, keeps no per-point
    training state and has no second stage after the epochs (a sampler's); partial_fit is offered
    exactly for those (scikit-learn's available_if)."""
    from alphagp.methods.base import SparseGPMethod
    cls = METHODS[method].cls
    if cls.CAPABILITIES.streaming:        # Adam steps on mini-batches, or a closed form's sums (its absorb)
        assert (cls.CAPABILITIES.mini_batches or hasattr(cls, "absorb")) and cls.TRAINING_STATE == ()
        assert cls.after_fit is SparseGPMethod.after_fit
    assert hasattr(GPClassifier(method=method), "partial_fit") == cls.CAPABILITIES.streaming


def test_the_default_and_the_main_methods_stream():
    assert {"sep", "vi", "augmented"} <= set(STREAMING)
    assert hasattr(GPClassifier(), "partial_fit") and not hasattr(GPClassifier(method="ep"), "partial_fit")


@pytest.mark.parametrize("method", [m for m in STREAMING if METHODS[m].cls.CAPABILITIES.mini_batches])
def test_partial_fit_over_an_epochs_batches_is_that_epoch_of_fit(iris, method, monkeypatch):
    """A stream of Adam steps (the closed form's sums: tests/methods/test_dirichlet.py)."""
    X, y = iris
    kw = dict(method=method, batch_size=25, standardize=False, inducing_points=X[:8], early_stopping=False,
              random_state=0)
    batches, real = [], Trainer._batches

    def recorded(self, n):
        for idx in real(self, n):
            batches.append(idx.numpy().copy())
            yield idx

    monkeypatch.setattr(Trainer, "_batches", recorded)
    fitted = GPClassifier(max_iter=1, **kw).fit(X, y)
    monkeypatch.undo()
    assert len(batches) == 6 and sorted(np.concatenate(batches)) == list(range(len(y)))   # shuffled batches
    streamed = GPClassifier(**kw)
    for idx in batches:
        streamed.partial_fit(X[idx], y[idx], classes=[0, 1, 2], n_rows=len(y))
    np.testing.assert_allclose(streamed.predict_proba(X), fitted.predict_proba(X), rtol=0, atol=1e-12)
    assert streamed.n_iter_ == 6
    # and the calls moved the model: the first batch alone leaves it elsewhere
    first = GPClassifier(**kw).partial_fit(X[batches[0]], y[batches[0]], classes=[0, 1, 2], n_rows=len(y))
    assert np.abs(first.predict_proba(X) - fitted.predict_proba(X)).max() > 1e-4


def test_a_saved_stream_continues_as_the_unsaved_one(iris, tmp_path):
    X, y = iris
    clf = GPClassifier(method="vi", batch_size=30, random_state=0)
    for start in range(0, 150, 50):
        clf.partial_fit(X[start:start + 50], y[start:start + 50], classes=[0, 1, 2], n_rows=150)
    clf.save(tmp_path / "stream.safetensors")
    loaded = GPClassifier.load(tmp_path / "stream.safetensors")
    for model in (clf, loaded):
        model.partial_fit(X[:50], y[:50])
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    fresh_optimizer = GPClassifier.load(tmp_path / "stream.safetensors")
    fresh_optimizer._stream_optimizer = None                    # what a file without the optimiser would give
    fresh_optimizer.partial_fit(X[:50], y[:50])
    assert np.abs(fresh_optimizer.predict_proba(X) - clf.predict_proba(X)).max() > 1e-8


def test_auto_streams_with_the_closed_form(iris):
    """method="auto" streams with the portfolio's first streaming candidate, the sparse Dirichlet GP
    (each call's rows join its sums)."""
    X, y = iris
    clf = GPClassifier(random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    assert (clf.method_, clf.fit_plan_.exact, clf.early_stopping_) == ("dirichlet", False, False)


def test_bad_stream_input_is_a_clear_error(iris):
    X, y = iris
    with pytest.raises(ValueError, match="the first call of partial_fit needs classes="):
        GPClassifier(method="sep").partial_fit(X, y)
    with pytest.raises(ValueError, match="n_rows must be an integer at least the first call's 150 rows"):
        GPClassifier(method="sep").partial_fit(X, y, classes=[0, 1, 2], n_rows=10)
    clf = GPClassifier(method="sep", n_inducing=5).partial_fit(X[y < 2], y[y < 2], classes=[0, 1])
    with pytest.raises(ValueError, match=r"labels \[2\] were not seen"):
        clf.partial_fit(X, y)
    with pytest.raises(ValueError, match=r"differ from the classes the stream started with"):
        clf.partial_fit(X[y < 2], y[y < 2], classes=[0, 1, 2])
    batch_fitted = GPClassifier(method="sep", n_inducing=5, max_iter=2).fit(X, y)
    batch_fitted.set_params(method="vi")                         # partial_fit is offered; the fitted model is sep
    batch_fitted.partial_fit(X[:20], y[:20])                     # sep streams: a fitted model continues
    pep = GPClassifier(method="pep", n_inducing=5, max_iter=2).fit(X, y).set_params(method="sep")
    with pytest.raises(ValueError, match="the fitted method 'pep' fits in batch and cannot continue on a stream"):
        pep.partial_fit(X[:20], y[:20])


def test_the_command_line_updates_a_model_with_new_rows(iris, tmp_path, capsys):
    import pandas as pd

    from alphagp.cli import main
    X, y = iris
    frame = pd.DataFrame(X, columns=list("abcd")).assign(label=y)
    first, more, model = tmp_path / "first.csv", tmp_path / "more.csv", tmp_path / "m.safetensors"
    frame[:100].to_csv(first, index=False)
    frame[100:].to_csv(more, index=False)
    assert main(["--quiet", "fit", "--data", str(first), "--target", "label", "--model", str(model),
                 "--method", "sep", "--batch-size", "25", "--max-iter", "5"]) == 0
    before = GPClassifier.load(model)
    assert main(["--quiet", "update", "--data", str(more), "--target", "label", "--model", str(model)]) == 0
    after = GPClassifier.load(model)
    before.partial_fit(frame[100:][list("abcd")], y[100:])
    np.testing.assert_array_equal(after.predict_proba(frame[list("abcd")]), before.predict_proba(frame[list("abcd")]))
    frame.assign(label=np.where(np.arange(150) == 0, 7, y)).to_csv(more, index=False)
    capsys.readouterr()
    assert main(["--quiet", "update", "--data", str(more), "--target", "label", "--model", str(model)]) == 2
    assert "labels [7] were not seen" in capsys.readouterr().err


def test_a_stream_takes_an_explicit_alpha_and_refuses_auto(iris):
    X, y = iris
    clf = GPClassifier(method="sep", alpha=0.5, n_inducing=5).partial_fit(X, y, classes=[0, 1, 2])
    assert clf.alpha_ == 0.5 == clf.model_.alpha
    with pytest.raises(ValueError, match="alpha='auto' chooses alpha on held-out training rows"):
        GPClassifier(method="sep", alpha="auto").partial_fit(X, y, classes=[0, 1, 2])


def test_a_stream_without_n_rows_counts_the_rows_its_calls_bring(iris, tmp_path):
    """Issue 60, item 2: N is the rows seen so far, so a later call larger than the first is fine
    (it used to fail in a factorisation), and a saved stream goes on counting."""
    r = np.random.default_rng(0)
    X = r.normal(size=(1000, 4))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    clf = GPClassifier(random_state=0).partial_fit(X[:100], y[:100], classes=[0, 1, 2])
    assert clf.model_.n_data == 100 and clf.fit_plan_.n_data_grows
    clf.partial_fit(X[600:800], y[600:800])
    assert clf.model_.n_data == 300 and clf.score(X, y) > 0.8
    clf.save(tmp_path / "s.agp")
    loaded = GPClassifier.load(tmp_path / "s.agp")
    for model in (clf, loaded):
        model.partial_fit(X[800:850], y[800:850])
    assert loaded.model_.n_data == clf.model_.n_data == 350
    np.testing.assert_array_equal(loaded.predict_proba(X[:20]), clf.predict_proba(X[:20]))
    given = GPClassifier(random_state=0).partial_fit(X[:100], y[:100], classes=[0, 1, 2], n_rows=1000)
    given.partial_fit(X[600:800], y[600:800])
    assert given.model_.n_data == 1000 and not given.fit_plan_.n_data_grows


@pytest.mark.parametrize("how", ["sample_weight", "class_weight"])
def test_integer_weights_in_a_stream_are_the_rows_repeated(iris, how):
    """Issue 60, item 5: a stream takes weights; a row of weight 2 is that row twice (the tied
    factor counts the stream's running total of weight), for sample_weight and a class_weight dict.
    Each call holds the same share of the weighted class, so that N / |B| (rows) is the same
    for the weighted and the repeated stream."""
    X, y = iris
    kw = dict(method="sep", standardize=False, inducing_points=X[:6], random_state=0)
    weight = np.where(y == 1, 2.0, 1.0)
    weighted = GPClassifier(**kw, class_weight={1: 2.0} if how == "class_weight" else None)
    repeated = GPClassifier(**kw)
    by_class = [np.flatnonzero(y == c) for c in range(3)]
    calls = [np.sort(np.concatenate([rows[:20] for rows in by_class])),
             np.sort(np.concatenate([rows[20:] for rows in by_class]))]
    for rows in calls:
        twice = np.concatenate([rows, rows[y[rows] == 1]])
        weighted.partial_fit(X[rows], y[rows], classes=[0, 1, 2],
                             sample_weight=weight[rows] if how == "sample_weight" else None)
        repeated.partial_fit(X[twice], y[twice], classes=[0, 1, 2])
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), rtol=0, atol=1e-9)
    unweighted = GPClassifier(**kw)
    for rows in calls:
        unweighted.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
    assert np.abs(unweighted.predict_proba(X) - weighted.predict_proba(X)).max() > 1e-4


def test_balanced_class_weights_are_refused_by_a_stream_before_it_starts(iris):
    X, y = iris
    clf = GPClassifier(method="sep", class_weight="balanced")
    with pytest.raises(ValueError, match="class_weight='balanced' .* a stream gives a call at a time"):
        clf.partial_fit(X, y, classes=[0, 1, 2])
    assert not hasattr(clf, "model_")


def test_a_long_declared_stream_is_sized_by_its_calls_rows(iris, monkeypatch):
    """Issue 60, item 9: n_rows=10**7 on mini-batches is not refused as if its rows were in memory
    (the memory check counts a call's rows); a call too large for memory still is."""
    from alphagp import data
    X, y = iris
    monkeypatch.setattr(data, "physical_memory_bytes", lambda: 2**24)
    GPClassifier(method="sep", batch_size=100, n_inducing=5).partial_fit(X, y, classes=[0, 1, 2], n_rows=10**7)
    big = np.random.default_rng(0).normal(size=(1_000_000, 4))
    with pytest.raises(ValueError, match="more than half of this machine's memory"):
        GPClassifier(method="sep", batch_size=100, n_inducing=5).partial_fit(big, np.arange(len(big)) % 3,
                                                                             classes=[0, 1, 2])


def test_a_closed_form_stream_warns_where_its_first_call_fixes_too_little(iris):
    """Issue 74: a Dirichlet stream keeps the kernel and inducing inputs of its first call, so a
    first call of one class, or of one row under n_inducing='auto' (M = 1), is said; a first call
    with every class and 60 rows is not."""
    import warnings
    X, y = iris
    order = np.argsort(y, kind="stable")
    with pytest.warns(UserWarning, match=r"holds no row of class\(es\) \[1, 2\]"):
        GPClassifier(method="dirichlet").partial_fit(X[order][:50], y[order][:50], classes=[0, 1, 2])
    with pytest.warns(UserWarning, match="its M = 1 inducing inputs are its first call's 1 rows"):
        GPClassifier(method="sep").partial_fit(X[:1], y[:1], classes=[0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GPClassifier(method="dirichlet").partial_fit(X[:60], y[:60], classes=[0, 1, 2])
        GPClassifier(method="sep").partial_fit(X[order][:50], y[order][:50], classes=[0, 1, 2])


def test_the_defaults_fitted_model_says_what_continues_it_and_what_does_not(iris):
    """Issue 74: a default fit on 150 rows is an exact posterior (exact EP or the Dirichlet GP), which
    a stream cannot extend (said, with what to do); a default stream sums its rows, where n_rows
    changes nothing (said)."""
    X, y = iris
    fitted = GPClassifier(random_state=0).fit(X, y)
    assert fitted.fit_plan_.exact
    with pytest.raises(ValueError, match="exact posterior of its 150 training rows.*fit again on the old and new"):
        fitted.partial_fit(X[:5], y[:5])
    with pytest.warns(UserWarning, match="n_rows=1000 changes nothing in a 'dirichlet' stream"):
        GPClassifier().partial_fit(X[:60], y[:60], classes=[0, 1, 2], n_rows=1000)


def test_a_float32_streams_failed_factorisation_names_float32_as_fit_does(iris, monkeypatch):
    """Issue 74's fuzz: a float32 ``augmented`` stream's failed factorisation came without the likely
    cause that fit adds; a stream's steps now say it too."""
    from alphagp.numerics import CholeskyError
    X, y = iris

    def failing(*args, **kwargs):
        raise CholeskyError("Cholesky factorisation failed")

    clf = GPClassifier(method="sep", dtype="float32", n_inducing=5)
    monkeypatch.setattr(Trainer, "partial_fit", failing)
    with pytest.raises(CholeskyError, match="Likely cause: float32"):
        clf.partial_fit(X[:60], y[:60], classes=[0, 1, 2])
