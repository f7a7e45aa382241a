"""Model files and checkpoints written before a refactor still load and predict the same (issue 47's
guard): the fixtures in ``tests/estimators/fixtures/models`` were written by ``make_model_fixtures.py`` at the
commit ``predictions.json`` names, with the probabilities they gave then."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from alphagp import GPClassifier
from alphagp.cli import _load_model
from alphagp.methods import METHODS

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MODELS = FIXTURES / "models"
RECORDED = json.loads((MODELS / "predictions.json").read_text())["models"]


def _rows():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_model_fixtures", FIXTURES / "make_model_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKER = _rows()


def test_every_registered_method_has_its_fixtures():
    for method in METHODS:
        assert (MODELS / f"{method}.safetensors").exists() and (MODELS / f"{method}.ckpt").exists(), method


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_model_file_of_before_predicts_as_it_did(name):
    _, _, X_new = MAKER.rows()
    est = _load_model(MODELS / name)
    if name == "deep_gp_regressor.safetensors":
        out = np.stack(est.predict(X_new[:, 1:], return_std=True), 1)
    else:
        out = est.predict_proba(X_new)
    # a float32 file's cut points, written as float64 then, are float32 now: float32's rounding
    rtol, atol = (1e-5, 1e-7) if "float32" in name else (1e-10, 1e-13)
    np.testing.assert_allclose(out, np.array(RECORDED[name]), rtol=rtol, atol=atol)


@pytest.mark.parametrize("method", list(METHODS))
def test_a_checkpoint_of_before_returns_its_finished_fit(method, tmp_path):
    X, y, X_new = MAKER.rows()
    ckpt = tmp_path / "fit.ckpt"
    shutil.copy(MODELS / f"{method}.ckpt", ckpt)
    clf = GPClassifier(**MAKER.brief_settings(method), checkpoint=str(ckpt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                       # CheckpointResumed: the finished fit stored there
        clf.fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X_new), np.array(RECORDED[f"{method}.safetensors"]),
                               rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("method", list(METHODS))
def test_a_brief_fit_gives_the_probabilities_recorded_with_the_fixtures(method):
    """The refactor guard of issue 47: the same brief fit, today, gives what it gave when the fixtures
    were written (a deliberate change of a method's numbers rewrites predictions.json, saying why
    in its commit)."""
    X, y, X_new = MAKER.rows()
    clf = GPClassifier(**MAKER.brief_settings(method)).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X_new), np.array(RECORDED[f"{method}.safetensors"]),
                               rtol=1e-10, atol=1e-13)
