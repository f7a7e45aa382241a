"""DeepGPRegressor and DeepGPClassifier: fitting, bad input, model files, checkpoints, the command line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from alphagp import DeepGPClassifier, DeepGPRegressor
from alphagp.cli import main
from alphagp.serialization import ModelFileError
from alphagp.training import CheckpointResumed

SMALL = dict(n_layers=2, n_hidden=2, n_inducing=10, n_samples=5, n_predict_samples=30, batch_size=25,
             learning_rate=0.01, random_state=0)


@pytest.fixture
def regression(rng):
    X = rng.uniform(-3, 3, (120, 2))
    y = 5 * np.sin(X[:, 0]) + 0.3 * rng.standard_normal(120) + 20
    return X, y


@pytest.fixture
def classes(rng):
    X = rng.standard_normal((150, 2))
    return X, np.array(["low", "mid", "high"])[np.digitize(X[:, 0], [-0.5, 0.5])]


def test_regressor_learns_a_smooth_function_in_the_targets_units(regression):
    X, y = regression
    reg = DeepGPRegressor(**{**SMALL, "max_iter": 60}).fit(X[:100], y[:100])
    metrics = reg.evaluate(X[100:], y[100:])
    assert metrics["rmse"] < 0.3 * y.std()                      # a constant predictor scores y.std()
    mean, std = reg.predict(X[100:], return_std=True)
    assert np.all(std > 0) and mean.shape == std.shape == (20,)
    assert reg.score(X[100:], y[100:]) > 0.9


def test_classifier_with_string_labels_and_two_classes(classes):
    X, y = classes
    clf = DeepGPClassifier(**{**SMALL, "max_iter": 30}).fit(X, y)
    assert set(clf.predict(X)) <= set(y) and clf.evaluate(X, y)["error"] < 0.15
    two = DeepGPClassifier(**{**SMALL, "max_iter": 30}).fit(X, X[:, 1] > 0)
    assert two.model_.likelihood_name == "probit" and two.predict_proba(X).shape == (150, 2)
    assert two.evaluate(X, X[:, 1] > 0)["error"] < 0.15


def test_bad_input_gets_clear_errors(regression, classes):
    X, y = regression
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DeepGPRegressor(**SMALL).fit(bad, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        DeepGPRegressor(**SMALL).fit(X, y[:-1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        DeepGPClassifier(**SMALL).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="alpha"):
        DeepGPRegressor(**{**SMALL, "alpha": 0.0}).fit(X, y)
    Xc, yc = classes
    clf = DeepGPClassifier(**{**SMALL, "max_iter": 1}).fit(Xc, yc)
    with pytest.raises(ValueError, match="not seen during fit"):
        clf.evaluate(Xc, np.where(yc == "low", "other", yc))
    with pytest.raises(ValueError, match="features"):
        clf.predict_proba(Xc[:, :1])
    with pytest.warns(UserWarning, match="larger than the 8 training rows"):
        DeepGPRegressor(**{**SMALL, "max_iter": 1}).fit(X[:8], y[:8])


def test_model_files_round_trip_and_refuse_other_kinds(regression, classes, tmp_path):
    X, y = regression
    reg = DeepGPRegressor(**{**SMALL, "max_iter": 2}).fit(X, y)
    reg.save(tmp_path / "reg.safetensors")
    again = DeepGPRegressor.load(tmp_path / "reg.safetensors")
    np.testing.assert_array_equal(again.predict(X, return_std=True)[1], reg.predict(X, return_std=True)[1])
    np.testing.assert_array_equal(again.predict_log_density(X, y), reg.predict_log_density(X, y))
    Xc, yc = classes
    clf = DeepGPClassifier(**{**SMALL, "max_iter": 2}).fit(Xc, yc)
    clf.save(tmp_path / "clf.safetensors")
    np.testing.assert_array_equal(DeepGPClassifier.load(tmp_path / "clf.safetensors").predict_proba(Xc),
                                  clf.predict_proba(Xc))
    with pytest.raises(ModelFileError, match="not a 'alphagp.DeepGPRegressor'"):
        DeepGPRegressor.load(tmp_path / "clf.safetensors")


def test_an_interrupted_fit_resumes_from_its_checkpoint_to_the_same_model(regression, tmp_path):
    from conftest import Interrupt, interrupt_at
    X, y = regression
    path = str(tmp_path / "fit.ckpt")
    reference = DeepGPRegressor(**{**SMALL, "max_iter": 4}).fit(X, y)
    with pytest.raises(Interrupt):
        DeepGPRegressor(**{**SMALL, "max_iter": 4, "checkpoint": path}).fit(X, y, callbacks=[interrupt_at(2)])
    with pytest.warns(CheckpointResumed, match="resuming the fit from epoch 1"):
        resumed = DeepGPRegressor(**{**SMALL, "max_iter": 4, "checkpoint": path}).fit(X, y)
    np.testing.assert_allclose(resumed.predict(X), reference.predict(X), rtol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckpointResumed)
        with pytest.raises(ValueError, match="n_layers"):
            DeepGPRegressor(**{**SMALL, "max_iter": 4, "checkpoint": path, "n_layers": 3}).fit(X, y)


def test_command_line_fits_and_evaluates_a_deep_gp_regressor(regression, tmp_path, capsys):
    X, y = regression
    csv = tmp_path / "train.csv"
    np.savetxt(csv, np.column_stack([X, y]), delimiter=",", header="a,b,target", comments="")
    model = tmp_path / "m.safetensors"
    assert main(["fit", "--data", str(csv), "--model", str(model), "--regression", "--layers", "2",
                 "--n-inducing", "10", "--max-iter", "2", "--batch-size", "40", "--quiet"]) == 0
    assert main(["evaluate", "--model", str(model), "--data", str(csv), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"rmse"' in out and '"nll"' in out
    assert main(["predict", "--model", str(model), "--data", str(csv), "--target", "target",
                 "--output", str(tmp_path / "p.csv")]) == 0
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "prediction,std" and len(lines) == len(y) + 1


# check_regressors_train sets alpha = 0.01 (taking it for a ridge penalty): 100 epochs reach R^2 0.78 there
@pytest.mark.parametrize(("estimator", "epochs"), [(DeepGPRegressor, 100), (DeepGPClassifier, 30)])
def test_scikit_learn_check_estimator(estimator, epochs):
    from sklearn.utils.estimator_checks import check_estimator

    from alphagp.estimators.base import EXPECTED_FAILED_CHECKS
    fast = dict(n_inducing=5, n_samples=3, n_predict_samples=5, batch_size=None, max_iter=epochs, learning_rate=0.05,
                random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures = check_estimator(estimator(**fast), on_fail=None,
                                   expected_failed_checks=EXPECTED_FAILED_CHECKS)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in failures if r["status"] == "failed"]
    assert failed == []


def test_predictions_do_not_depend_on_the_chunks_rows_are_predicted_in(classes, regression, monkeypatch):
    import alphagp.estimators.deep_gp_family
    X, labels = classes
    clf = DeepGPClassifier(**{**SMALL, "max_iter": 5}).fit(X, labels)
    reg = DeepGPRegressor(**{**SMALL, "max_iter": 5}).fit(*regression)
    whole = (clf.predict_proba(X), reg.predict(regression[0], return_std=True),
             reg.predict_log_density(*regression))
    monkeypatch.setattr(alphagp.estimators.deep_gp_family, "_PREDICT_ROWS", 7 * SMALL["n_predict_samples"])    # 7 rows a chunk
    np.testing.assert_allclose(clf.predict_proba(X), whole[0], rtol=1e-12)
    np.testing.assert_allclose(reg.predict(regression[0], return_std=True), whole[1], rtol=1e-12)
    np.testing.assert_allclose(reg.predict_log_density(*regression), whole[2], rtol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(X[::-1]), whole[0][::-1], rtol=1e-12)


def test_held_out_rows_are_scored_from_a_lazy_view_as_from_the_array(classes, regression, tmp_path):
    """Early stopping scores a lazy view of the held-out rows of a memory-map, a chunk at a time:
    the same score as the rows copied into an array."""
    from alphagp.data.streaming import RowSubset
    from alphagp.estimators.deep_gp_family import DeepGPContext as Context
    rows = np.arange(3, 120, 4)
    for estimator, (X, y) in ((DeepGPClassifier, classes), (DeepGPRegressor, regression)):
        model = estimator(**{**SMALL, "max_iter": 3}).fit(X, y)
        target = np.searchsorted(model.classes_, y) if hasattr(model, "classes_") else (y - model.y_mean_) / model.y_scale_
        mapped = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", dtype=np.float64, shape=X.shape)
        mapped[:] = X
        context = Context(model.n_predict_samples, model.LIKELIHOOD_NOISE, len(getattr(model, "classes_", [])) or None)
        lazy = model.FAMILY.score(model._predictor(), RowSubset(mapped, rows), target[rows], None, context)
        assert np.isclose(lazy, model.FAMILY.score(model._predictor(), X[rows], target[rows], None, context), rtol=1e-12)
        assert np.isfinite(lazy)


def test_a_crafted_deep_gp_file_declaring_huge_layers_is_refused_before_allocating(regression, tmp_path):
    import resource

    from alphagp import serialization
    X, y = regression
    good = tmp_path / "reg.safetensors"
    DeepGPRegressor(**{**SMALL, "max_iter": 1}).fit(X, y).save(good)
    content = serialization.read(good, DeepGPRegressor.MODEL_KIND)
    content.pop("__file_bytes__")
    content["model"]["config"]["architecture"][0] = [2000, 2000, 2]       # [H, M, M] factors: 60 GiB
    crafted = tmp_path / "crafted.safetensors"
    serialization.write(crafted, DeepGPRegressor.MODEL_KIND, content)   # with a valid checksum
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ModelFileError, match="larger than the file can hold"):
        DeepGPRegressor.load(crafted)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 200


def test_deep_gp_classifier_matches_gp_classifier_at_the_edges(classes, tmp_path):
    """score refuses unseen labels, checkpoint takes a PathLike, MetricsRecorder takes labels."""
    from alphagp import GPClassifier
    from alphagp.training import MetricsRecorder
    X, y = classes
    deep = DeepGPClassifier(**{**SMALL, "max_iter": 2}, checkpoint=tmp_path / "deep.ckpt")
    recorder = MetricsRecorder(X[:40], y[:40])
    deep.fit(X, y, callbacks=[recorder])
    assert (tmp_path / "deep.ckpt").is_file() and len(recorder.rows) == 2
    for clf in (deep, GPClassifier(method="ep", n_inducing=8, max_iter=3).fit(X, y)):
        with pytest.raises(ValueError, match="not seen during fit"):
            clf.score(X[:5], np.array(["low", "mid", "high", "top", "low"]))
    gp = GPClassifier(method="ep", n_inducing=8, max_iter=3)
    recorder = MetricsRecorder(X[:40], y[:40])      # string labels, as evaluate takes
    gp.fit(X, y, callbacks=[recorder])
    assert len(recorder.rows) == 3
    np.testing.assert_allclose(recorder.rows[-1]["nll"], gp.evaluate(X[:40], y[:40])["nll"], rtol=1e-12)


def test_targets_and_features_of_extreme_magnitude_fit_as_their_unit_scale_twins(regression):
    X, y = regression
    ref = DeepGPRegressor(**{**SMALL, "max_iter": 3}).fit(X, y)
    for scale_x, scale_y in ((1e155, 1e160), (1e-162, 1e-160)):
        big = DeepGPRegressor(**{**SMALL, "max_iter": 3}).fit(X * scale_x, y * scale_y)
        mean, std = big.predict(X * scale_x, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
        np.testing.assert_allclose(mean / scale_y, ref.predict(X), rtol=1e-6)
        np.testing.assert_allclose(big.evaluate(X * scale_x, y * scale_y)["rmse"] / scale_y,
                                   ref.evaluate(X, y)["rmse"], rtol=1e-6)


def test_a_format_1_deep_gp_file_with_x_mean_still_loads(regression, tmp_path):
    """Deep-GP files of format 1 named the standardisation x_mean / x_scale and had no checksum."""
    from alphagp.serialization import UncheckedModelFileWarning

    from conftest import rewrite_model_header
    X, y = regression
    reg = DeepGPRegressor(**{**SMALL, "max_iter": 1}).fit(X, y)
    reg.save(tmp_path / "new.safetensors")
    raw = (tmp_path / "new.safetensors").read_bytes()

    def format_1(meta):
        meta["format_version"] = 1
        content = meta["content"]
        content["x_mean"], content["x_scale"] = content.pop("mean"), content.pop("scale")
    (tmp_path / "old.safetensors").write_bytes(rewrite_model_header(raw, format_1, keep_checksum=False))
    with pytest.warns(UncheckedModelFileWarning):
        old = DeepGPRegressor.load(tmp_path / "old.safetensors")
    np.testing.assert_array_equal(old.predict(X), reg.predict(X))


def test_standardize_false_keeps_the_features_and_hidden_means_start_at_random(regression):
    """``standardize=False`` trains on the features as given: the model equals one fitted with
    standardisation on data already standardised. ``hidden_mean_scale`` changes only the hidden
    layers' starting means."""
    X, y = regression
    Xs = (X - X.mean(0)) / X.std(0)
    plain = DeepGPRegressor(**{**SMALL, "max_iter": 2}, standardize=False).fit(Xs, y)
    assert np.array_equal(plain.mean_, np.zeros(2)) and np.array_equal(plain.scale_, np.ones(2))
    standard = DeepGPRegressor(**{**SMALL, "max_iter": 2}).fit(Xs, y)
    np.testing.assert_allclose(plain.predict(Xs), standard.predict(Xs), rtol=1e-6, atol=1e-8)
    start = DeepGPRegressor(**{**SMALL, "max_iter": 1, "hidden_mean_scale": 1.0}).fit(X, y)
    hidden, last = start.model_.layers
    assert float(hidden.whitened_mean.detach().abs().max()) > 0.5      # a draw, moved by one epoch at most 0.01 per step
    assert float(last.whitened_mean.detach().abs().max()) < 0.2


@pytest.mark.parametrize("estimator", ["DeepGPClassifier", "DeepGPRegressor"])
def test_deep_gps_take_mixed_type_tables(estimator, tmp_path):
    """Issue 60, item 19: categorical_features="from_dtype" on the deep GPs: the features they fit
    are the table's encoding (alphagp.data.tables, as GPClassifier's), kept in the model file."""
    import pandas as pd

    import alphagp
    from alphagp.data.tables import TableEncoding
    r = np.random.default_rng(0)
    frame = pd.DataFrame({"x": r.normal(size=80), "c": pd.Series(["a", "b", None, "c"] * 20),
                          "n": np.where(np.arange(80) % 7 == 0, np.nan, r.normal(size=80))})
    y = (frame["x"] > 0).astype(int).to_numpy() if estimator == "DeepGPClassifier" else frame["x"].to_numpy()
    kw = dict(n_layers=2, n_inducing=5, n_samples=2, n_predict_samples=4, max_iter=2, random_state=0)
    model = getattr(alphagp, estimator)(categorical_features="from_dtype", **kw).fit(frame, y)
    encoding = TableEncoding.fit(frame)
    assert model.table_encoding_ == encoding and model.model_.layers[0].shape[2] == encoding.width
    numeric = getattr(alphagp, estimator)(**kw).fit(encoding.transform(frame), y)
    predict = "predict_proba" if estimator == "DeepGPClassifier" else "predict"
    np.testing.assert_allclose(getattr(model, predict)(frame), getattr(numeric, predict)(encoding.transform(frame)))
    model.save(tmp_path / "m.agp")
    loaded = getattr(alphagp, estimator).load(tmp_path / "m.agp")
    np.testing.assert_array_equal(getattr(loaded, predict)(frame), getattr(model, predict)(frame))
