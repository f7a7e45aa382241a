import warnings

import numpy as np
import pytest
import torch

from alphagp import GPClassifier
from alphagp.methods import METHODS, ordinal_methods
from alphagp.training import CheckpointResumed

from conftest import Interrupt, interrupt_at

FAST = dict(method="ep", n_inducing=10, max_iter=15, random_state=0)


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
    (lambda X, y: (X, np.where(np.arange(len(y)) == 0, np.nan, y.astype(float))), "missing 1 \\(row 0"),
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
        clf = GPClassifier(method="ep", n_inducing=100, max_iter=3, random_state=0).fit(X[::7][:30], y[::7][:30])
    assert clf.model_.inducing_points.shape[1] == 30


def test_fixed_inducing_points_and_hyperparameters_stay_fixed(thyroid):
    X, y = thyroid
    Z = X[:8]
    params = dict(lengthscale=2.0, amplitude=1.5, noise=0.2)
    clf = GPClassifier(method="ep", inducing_points=Z, kernel_params=params, optimize_hyperparameters=False,
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
    clf = GPClassifier(**{**FAST, "method": "sep"}).fit(X, y)
    clf.save(tmp_path / "model.safetensors")
    again = GPClassifier.load(tmp_path / "model.safetensors")
    assert np.array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_checkpoint_resume_reproduces_the_uninterrupted_fit(thyroid, tmp_path):
    X, y = thyroid
    params = dict(n_inducing=10, max_iter=12, batch_size=50, random_state=3)
    full = GPClassifier(**params).fit(X, y)
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Interrupt):
        GPClassifier(checkpoint=str(path), **params).fit(X, y, callbacks=[interrupt_at(5)])
    assert path.exists()
    with pytest.warns(CheckpointResumed, match="resuming the fit from epoch 4 of 12"):
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
    with pytest.warns(CheckpointResumed, match="resuming the fit from epoch 5 of 12"):
        resumed = GPClassifier(checkpoint=str(path), **params).fit(X, y)
    assert resumed.n_iter_ == 12
    assert np.allclose(resumed.predict_proba(X), full.predict_proba(X), atol=1e-12)


def test_early_stopped_fit_stays_finished_when_resumed(thyroid, tmp_path):
    X, y = thyroid
    params = dict(n_inducing=10, max_iter=500, tol=1e-3, n_iter_no_change=3, random_state=0,
                  checkpoint=str(tmp_path / "fit.ckpt"))
    first = GPClassifier(**params).fit(X, y)
    assert first.n_iter_ < 500
    with pytest.warns(CheckpointResumed, match="returning the finished fit"):
        again = GPClassifier(**params).fit(X, y)
    assert again.n_iter_ == first.n_iter_
    assert np.array_equal(again.predict_proba(X), first.predict_proba(X))


def test_metrics_recorder_logs_test_metrics_against_time(thyroid):
    from alphagp.training import MetricsRecorder
    X, y = thyroid
    clf = GPClassifier(**FAST)
    rec = MetricsRecorder(X, y, every=5)
    clf.fit(X, y, callbacks=[rec])
    assert [r["epoch"] for r in rec.rows] == [5, 10, 15]
    times = [r["train_seconds"] for r in rec.rows]
    assert times == sorted(times) and times[0] > 0
    assert "test_nll" in clf.history_[9]


def test_callbacks_predict_with_the_fit_so_far_and_the_estimator_is_written_when_fit_ends(thyroid):
    """Issue 81: a callback reads the model in training from ``state.fit_so_far`` (a copy of the
    estimator holding it), not from the estimator, which holds no model until the fit ends (a
    refit's old model is dropped as it starts); the last epoch's fit so far predicts what the fitted
    estimator does."""
    from alphagp.training import MetricsRecorder
    X, y = thyroid
    clf = GPClassifier(**FAST).fit(X, y)
    seen = []

    def look(state):
        seen.append((hasattr(clf, "model_"), state.fit_so_far is clf, state.fit_so_far.predict_proba(X)))
    clf.set_params(max_iter=4).fit(X, y, callbacks=[look])
    assert [s[:2] for s in seen] == [(False, False)] * 4
    np.testing.assert_allclose(seen[-1][2], clf.predict_proba(X), rtol=1e-12, atol=0)
    assert not np.allclose(seen[0][2], seen[-1][2])             # the model in training, not a snapshot
    with pytest.raises(TypeError, match="takes the held-out rows first"):
        MetricsRecorder(clf.predict_proba, X, y)


def test_early_stopping_stops_where_the_objective_flattened(thyroid):
    X, y = thyroid
    tol, patience = 1e-3, 3
    clf = GPClassifier(method="ep", n_inducing=10, max_iter=500, tol=tol, n_iter_no_change=patience,
                       random_state=0).fit(X, y)
    objective = np.array([h["objective"] for h in clf.history_])
    assert patience < clf.n_iter_ < 500
    best_before = objective[:-patience].max()
    assert np.all(objective[-patience:] <= best_before + tol * abs(best_before))
    # and it did not stop at a point where it was still rising by more than tol
    best = np.maximum.accumulate(objective)
    assert best[patience] > best[0] + tol * abs(best[0])


@pytest.mark.parametrize("params, message", [
    (dict(learning_rate=0), "'learning_rate' parameter"),
    (dict(learning_rate=-1.0), "'learning_rate' parameter"),
    (dict(alpha=0.0), "'alpha' parameter"),
    (dict(alpha=1.5), "'alpha' parameter"),
    (dict(damping=0.0), "'damping' parameter"),
    (dict(damping=2.0), "'damping' parameter"),
    (dict(tol=-1e-3), "'tol' parameter"),
    (dict(n_iter_no_change=0), "'n_iter_no_change' parameter"),
    (dict(learning_rate_decay=0.0), "'learning_rate_decay' parameter"),
    (dict(method="hmc"), "'method' parameter"),
    (dict(inducing_init="grid"), "'inducing_init' parameter"),
    (dict(dtype="float16"), "'dtype' parameter"),
    (dict(n_inducing=0), "'n_inducing' parameter"),
    (dict(batch_size=0), "'batch_size' parameter"),
    (dict(n_jobs=0), "n_jobs must not be 0"),
    (dict(kernel_params={"lengthscale": -1.0}), "finite and positive"),
    (dict(kernel_params={"lengthscale": [1.0, 2.0]}), r"lengthscale'\] must have shape"),
    (dict(kernel_params={"amplitude": 0.0}), "finite and positive"),
    (dict(kernel_params={"noise": [0.1, 0.1]}), r"noise'\] must have shape"),
    (dict(kernel_params={"lengthscales": 1.0}), "unknown keys"),
    (dict(inducing_points=np.zeros((4, 3))), "inducing_points must have shape"),
    (dict(inducing_points=np.zeros((2, 4, 5))), "inducing_points must have shape"),
    (dict(inducing_points=np.full((4, 5), np.nan)), "NaN or inf"),
    (dict(method_params={"foo": 1}), r"unknown key\(s\) \['foo'\] for method='ep'; its parameters are: none"),
    (dict(method="gibbs", method_params={"n_sample": 5}), r"\['n_sample'\].*n_samples \(default 1000\)"),
    (dict(method="pep", method_params={"alpha": 0.5}), r"may not set \['alpha'\].*GPClassifier parameters"),
    (dict(method="laplace", method_params={"newton_iterations": -1}), "'newton_iterations' parameter"),
    (dict(method="gfitc", method_params={"ep_iterations": 0}), "'ep_iterations' parameter"),
    (dict(method="vi_softmax", method_params={"n_mc_samples": 2.5}), "'n_mc_samples' parameter"),
    # robust-max VI has no Monte Carlo draws: the count is refused, not ignored
    (dict(method="vi", method_params={"n_mc_samples": 10}), r"unknown key\(s\) \['n_mc_samples'\] for method='vi'"),
])
def test_bad_parameters_get_a_clear_error_at_fit(thyroid, params, message):
    X, y = thyroid
    clf = GPClassifier(**{**FAST, **params})  # scikit-learn style: constructing never fails
    with pytest.raises(ValueError, match=message):
        clf.fit(X, y)


def test_alpha_auto_with_a_class_smaller_than_the_folds_says_so(thyroid):
    """A one-row class leaves no held-out rows: the first alpha is fitted, with a warning naming
    it; a class of two rows takes two folds, as method="auto" does."""
    X, y = thyroid
    y = y.copy()
    y[0] = 9                                            # a one-row class
    with pytest.warns(UserWarning, match=r"a class has a single row.*pep\(alpha=0.5\)"):
        clf = GPClassifier(alpha="auto", alpha_grid=[0.5, 1.0], **{**FAST, "method": "pep", "max_iter": 2}).fit(X, y)
    assert clf.selection_scheme_ == "none" and clf.alpha_ == 0.5
    two = np.flatnonzero(y == 1)[:1]
    y[two] = 9                                          # two rows: two folds
    clf = GPClassifier(alpha="auto", alpha_grid=[0.5, 1.0], **{**FAST, "method": "pep", "max_iter": 2}).fit(X, y)
    assert clf.selection_scheme_ == "cv" and len([k for k in clf.cv_results_ if k.startswith("split")]) == 2


def test_float32_failures_with_unscaled_features_name_the_likely_cause(thyroid):
    from alphagp.numerics import CholeskyError
    X, y = thyroid
    X = X * 10.0 ** np.random.default_rng(1).uniform(-3, 4, X.shape[1])       # columns from 1e-3 to 1e4
    with pytest.raises((CholeskyError, FloatingPointError), match="Likely cause: float32 with unstandardised"), \
            pytest.warns(UserWarning, match="wrong scale"):
        GPClassifier(method="ep", standardize=False, dtype="float32", n_inducing=20, max_iter=20, random_state=0).fit(X, y)
    GPClassifier(method="ep", standardize=True, dtype="float32", n_inducing=20, max_iter=20, random_state=0).fit(X, y)


@pytest.mark.parametrize("scale", [1e155, 1e-162, 1e300])
def test_features_of_extreme_magnitude_fit_as_their_unit_scale_twin(thyroid, scale):
    """Standardising scales each column before squaring it, so neither overflow (1e155 squared) nor
    underflow (1e-162 squared) leaves a constant model."""
    X, y = thyroid
    ref = GPClassifier(**FAST).fit(X, y).predict_proba(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # no overflow warning either
        proba = GPClassifier(**FAST).fit(X * scale, y).predict_proba(X * scale)
    np.testing.assert_allclose(proba, ref, atol=1e-6)


def test_good_kernel_parameter_shapes_are_accepted(thyroid):
    X, y = thyroid
    for params in ({"lengthscale": np.ones(5), "amplitude": [1.0, 2.0, 3.0]},
                   {"lengthscale": np.ones((3, 5)), "noise": 0.05}):
        GPClassifier(method="ep", kernel_params=params, n_inducing=5, max_iter=1).fit(X, y)


def test_n_jobs_sets_the_threads_inside_fit_and_restores_them(thyroid):
    X, y = thyroid
    seen = []
    before = torch.get_num_threads()
    GPClassifier(n_jobs=1, **FAST).fit(X, y, callbacks=[lambda state: seen.append(torch.get_num_threads())])
    assert set(seen) == {1}
    assert torch.get_num_threads() == before


def test_unstandardised_features_far_from_the_kernel_scale_warn(thyroid):
    X, y = thyroid
    with pytest.warns(UserWarning, match="wrong scale"):
        GPClassifier(standardize=False, **FAST).fit(X * 1e6, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GPClassifier(standardize=False, **FAST).fit((X - X.mean(0)) / X.std(0), y)


def brief_settings(method: str) -> dict:
    """A fit of a few steps: five iterations, five inducing points where the method has them, and
    a sampler's chains short."""
    from alphagp.methods import METHODS, method_parameters
    settings = dict(method=method, max_iter=5, random_state=0)
    if method == "auto" or METHODS[method].cls.CAPABILITIES.sparse:
        settings["n_inducing"] = 5
    own = {} if method == "auto" else method_parameters(method)
    if "n_samples" in own:
        settings["method_params"] = {"n_samples": 40, "burn_in": 20}
    return settings


@pytest.mark.slow        # a few dozen fits each (every method: tests/conftest.py, SLOW)
@pytest.mark.parametrize("method", ["auto", *[m for m in METHODS if m not in ordinal_methods()]])
def test_scikit_learn_check_estimator(method):
    """Issue 80: every registered method at brief settings passes scikit-learn's checks, but for the
    ones it fails by design (``expected_failed_checks``, each with its reason)."""
    from sklearn.utils.estimator_checks import check_estimator

    from alphagp.estimators.base import EXPECTED_FAILED_CHECKS, expected_failed_checks
    expected = EXPECTED_FAILED_CHECKS if method == "auto" else expected_failed_checks(method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures = check_estimator(GPClassifier(**brief_settings(method)), on_fail=None,
                                   expected_failed_checks=expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in failures if r["status"] == "failed"]
    assert failed == []


@pytest.mark.slow
def test_scikit_learns_class_weight_check_passes_for_ep_at_the_default_settings():
    """Issue 80: ``check_class_weight_classifiers`` (one class weighted 1,000, the others 1e-4) on
    ``GPClassifier(method="ep")`` at its default settings raised a CholeskyError: one sign-adaptive
    step took a lengthscale's softplus argument from 1.3 to -34 (now at most max_step a step)."""
    from sklearn.utils.estimator_checks import check_class_weight_classifiers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_class_weight_classifiers("GPClassifier", GPClassifier(method="ep", random_state=0))


@pytest.mark.parametrize("params", [
    dict(alpha=0.5), dict(method="sep", alpha=0.5), dict(shared_hyperparameters=True),
    dict(inducing_init="kmeans++"), dict(method="sep", batch_size=40, inducing_init="kmeans++"),
])
def test_end_to_end_fits_of_the_main_options(thyroid, params):
    from sklearn.model_selection import train_test_split
    X, y = thyroid
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    clf = GPClassifier(**{**FAST, "max_iter": 40, **params}).fit(Xtr, ytr)
    metrics = clf.evaluate(Xte, yte)
    # measured: test error 4.6-6.2% (3-4 of 65 rows) and NLL 0.13-0.19 for these options
    assert metrics["error"] < 0.1 and metrics["nll"] < 0.3
    assert clf.n_skipped_updates_ == 0 and clf.n_improper_cavities_ == 0


def test_shared_hyperparameters_fit_one_inducing_set_and_keep_it_in_model_files(thyroid, tmp_path):
    X, y = thyroid
    clf = GPClassifier(shared_hyperparameters=True, **{**FAST, "method": "sep"}).fit(X, y)
    assert tuple(clf.model_.inducing_points.shape) == (1, 10, X.shape[1])
    clf.save(tmp_path / "m.alphagp")
    loaded = GPClassifier.load(tmp_path / "m.alphagp")
    assert tuple(loaded.model_.inducing_points.shape) == (1, 10, X.shape[1])
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X), rtol=1e-12)
    per_class = np.repeat(clf.model_.inducing_points.detach().numpy(), 3, axis=0) * clf.scale_ + clf.mean_
    clf_c = GPClassifier(shared_hyperparameters=True, inducing_points=per_class, **{**FAST, "method": "sep"}).fit(X, y)
    assert tuple(clf_c.model_.inducing_points.shape) == (3, 10, X.shape[1])  # [C, M, D] keeps a set per class


def test_float32_reaches_the_float64_fit(thyroid):
    X, y = thyroid
    fits = {dtype: GPClassifier(dtype=dtype, **{**FAST, "max_iter": 40}).fit(X, y) for dtype in ("float32", "float64")}
    p32, p64 = (fits[d].predict_proba(X) for d in ("float32", "float64"))
    assert fits["float32"].model_.site_precision.dtype == torch.float32
    assert np.abs(p32 - p64).max() < 1e-3                 # measured: 5e-5
    assert abs(fits["float32"].evaluate(X, y)["nll"] - fits["float64"].evaluate(X, y)["nll"]) < 1e-3


@pytest.mark.parametrize("labels", [np.array(["b", "a", "c", "a", "b", "c", "c"]), np.array([7, 3, 3, 9, 7, 9, 3])])
def test_labels_are_encoded_chunk_by_chunk_as_label_encoder_does(tmp_path, labels):
    from sklearn.preprocessing import LabelEncoder

    from alphagp.labels import encode_labels
    y = np.tile(labels, 5)
    if y.dtype.kind == "i":  # a memory-mapped label file, as for 10^7 rows
        y = np.lib.format.open_memmap(tmp_path / "y.npy", mode="w+", dtype=y.dtype, shape=y.shape)
        y[:] = np.tile(labels, 5)
    encoder = LabelEncoder().fit(y)
    classes, y_idx = encode_labels(y, chunk=4)   # chunks that miss some classes
    np.testing.assert_array_equal(classes, encoder.classes_)
    np.testing.assert_array_equal(y_idx, encoder.transform(y))
    assert y_idx.dtype == np.uint8
    with pytest.raises(ValueError, match="Unknown label type"):
        encode_labels(np.r_[np.zeros(8), 0.5], chunk=4)   # continuous values in the last chunk only


def test_constructor_arguments_are_keyword_only():
    import inspect

    from alphagp import DeepGPClassifier, DeepGPRegressor
    for cls in (GPClassifier, DeepGPClassifier, DeepGPRegressor):
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert parameters and all(p.kind is p.KEYWORD_ONLY for p in parameters), cls
        with pytest.raises(TypeError):
            cls(2)
