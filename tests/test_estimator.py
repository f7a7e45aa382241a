import warnings

import numpy as np
import pytest
import torch

from alphagp import GPClassifier
from alphagp.data import load_bundled

FAST = dict(n_inducing=10, max_iter=15, random_state=0)


@pytest.fixture(scope="module")
def thyroid():
    X, y = load_bundled("new_thyroid")
    return X, y


def test_string_labels_and_probabilities(thyroid):
    X, y = thyroid
    labels = np.array(["hyper", "normal", "hypo"])[y - 1]
    clf = GPClassifier(**FAST).fit(X, labels)
    assert list(clf.classes_) == ["hyper", "hypo", "normal"]
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3)
    assert np.allclose(proba.sum(1), 1.0)
    assert set(clf.predict(X)) <= set(clf.classes_)
    assert clf.score(X, labels) > 0.8


def test_two_classes(thyroid):
    X, y = thyroid
    clf = GPClassifier(**FAST).fit(X, y == 1)
    assert clf.predict_proba(X).shape == (len(X), 2)
    assert clf.score(X, y == 1) > 0.85


@pytest.mark.parametrize("bad, message", [
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), y), "NaN"),
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X), y), "infinity"),
    (lambda X, y: (X, y[:-1]), "inconsistent numbers of samples"),
    (lambda X, y: (X, np.ones_like(y)), "at least 2 classes"),
    (lambda X, y: (X[:0], y[:0]), "0 sample"),
    (lambda X, y: (X, np.where(np.arange(len(y)) == 0, np.nan, y.astype(float))), "NaN"),
])
def test_bad_training_input_gets_a_clear_error(thyroid, bad, message):
    X, y = bad(*thyroid)
    with pytest.raises(ValueError, match=message):
        GPClassifier(**FAST).fit(X, y)


def test_non_numeric_features_get_a_clear_error(thyroid):
    X, y = thyroid
    Xs = X.astype(object)
    Xs[0, 0] = "high"
    with pytest.raises(ValueError, match="numeric"):
        GPClassifier(**FAST).fit(Xs, y)


def test_predict_time_errors(thyroid):
    X, y = thyroid
    clf = GPClassifier(**FAST).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        clf.predict_proba(np.full((2, X.shape[1]), np.nan))
    with pytest.raises(ValueError, match=r"labels \[7\] were not seen"):
        clf.evaluate(X[:3], np.array([1, 2, 7]))
    with pytest.raises(ValueError, match="not seen"):
        clf.score(X[:3], np.array([1, 2, 7]))


def test_fewer_rows_than_inducing_points_clips_with_a_warning(thyroid):
    X, y = thyroid
    with pytest.warns(UserWarning, match="using M=30"):
        clf = GPClassifier(n_inducing=100, max_iter=3, random_state=0).fit(X[::7][:30], y[::7][:30])
    assert clf.model_.inducing_points.shape[1] == 30


def test_fixed_inducing_points_and_hyperparameters_stay_fixed(thyroid):
    X, y = thyroid
    Z = X[:8]
    params = dict(lengthscale=2.0, amplitude=1.5, noise=0.2)
    clf = GPClassifier(inducing_points=Z, kernel_params=params, optimize_hyperparameters=False,
                       optimize_inducing=False, max_iter=20, random_state=0).fit(X, y)
    Zs = clf.model_.inducing_points.detach().numpy() * clf.scale_ + clf.mean_
    assert np.allclose(Zs, np.broadcast_to(Z, Zs.shape))
    k = clf.model_.kernel
    assert torch.allclose(k.lengthscale, torch.full_like(k.lengthscale, 2.0))
    assert torch.allclose(k.amplitude, torch.full_like(k.amplitude, 1.5))
    # the EP approximation itself was still fitted
    assert clf.score(X, y) > 0.8


def test_learnt_hyperparameters_change(thyroid):
    X, y = thyroid
    clf = GPClassifier(**FAST).fit(X, y)
    assert not torch.allclose(clf.model_.kernel.lengthscale,
                              torch.full_like(clf.model_.kernel.lengthscale, np.sqrt(X.shape[1])))


def test_save_and_load_round_trip(thyroid, tmp_path):
    X, y = thyroid
    clf = GPClassifier(method="sep", **FAST).fit(X, y)
    clf.save(tmp_path / "model.joblib")
    again = GPClassifier.load(tmp_path / "model.joblib")
    assert np.array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_checkpoint_resume_reproduces_the_uninterrupted_fit(thyroid, tmp_path):
    X, y = thyroid
    params = dict(n_inducing=10, max_iter=12, batch_size=50, random_state=3)
    full = GPClassifier(**params).fit(X, y)

    class Interrupt(Exception):
        pass

    def stop_after_five(state):
        if state.epoch == 5:
            raise Interrupt

    path = tmp_path / "fit.ckpt"
    with pytest.raises(Interrupt):
        GPClassifier(checkpoint=str(path), **params).fit(X, y, callbacks=[stop_after_five])
    assert path.exists()
    resumed = GPClassifier(checkpoint=str(path), **params).fit(X, y)
    assert resumed.n_iter_ == 12
    assert np.allclose(resumed.predict_proba(X), full.predict_proba(X), atol=1e-12)
    assert [h["objective"] for h in resumed.history_] == pytest.approx([h["objective"] for h in full.history_])


def test_fit_stopped_by_a_callback_continues_from_its_checkpoint(thyroid, tmp_path):
    X, y = thyroid
    params = dict(n_inducing=10, max_iter=12, batch_size=50, random_state=3)
    full = GPClassifier(**params).fit(X, y)

    def budget_of_five_epochs(state):
        state.stop = state.stop or state.epoch >= 5

    path = tmp_path / "fit.ckpt"
    first = GPClassifier(checkpoint=str(path), **params).fit(X, y, callbacks=[budget_of_five_epochs])
    assert first.n_iter_ == 5
    resumed = GPClassifier(checkpoint=str(path), **params).fit(X, y)
    assert resumed.n_iter_ == 12
    assert np.allclose(resumed.predict_proba(X), full.predict_proba(X), atol=1e-12)


def test_early_stopped_fit_stays_finished_when_resumed(thyroid, tmp_path):
    X, y = thyroid
    params = dict(n_inducing=10, max_iter=500, tol=1e-3, n_iter_no_change=3, random_state=0,
                  checkpoint=str(tmp_path / "fit.ckpt"))
    first = GPClassifier(**params).fit(X, y)
    assert first.n_iter_ < 500
    again = GPClassifier(**params).fit(X, y)
    assert again.n_iter_ == first.n_iter_
    assert np.array_equal(again.predict_proba(X), first.predict_proba(X))


def test_metrics_recorder_logs_test_metrics_against_time(thyroid):
    from alphagp.training import MetricsRecorder
    X, y = thyroid
    clf = GPClassifier(**FAST)
    rec = MetricsRecorder(lambda Xt: clf.predict_proba(Xt), X, np.searchsorted([1, 2, 3], y), every=5)
    clf.fit(X, y, callbacks=[rec])
    assert [r["epoch"] for r in rec.rows] == [5, 10, 15]
    times = [r["train_seconds"] for r in rec.rows]
    assert times == sorted(times) and times[0] > 0
    assert "test_nll" in clf.history_[9]


def test_early_stopping_stops_before_max_iter(thyroid):
    X, y = thyroid
    clf = GPClassifier(n_inducing=10, max_iter=500, tol=1e-3, n_iter_no_change=3,
                       random_state=0).fit(X, y)
    assert clf.n_iter_ < 500


def test_float32_option(thyroid):
    X, y = thyroid
    clf = GPClassifier(dtype="float32", **FAST).fit(X, y)
    assert clf.model_.site_precision.dtype == torch.float32
    assert clf.score(X, y) > 0.8


def test_scikit_learn_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures = check_estimator(GPClassifier(n_inducing=5, max_iter=5, random_state=0),
                                   on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in failures if r["status"] == "failed"]
    assert failed == []
