"""``GPClassifier(device=...)``: errors, model files and checkpoints across devices. That every
registered method's fit on a device agrees with the CPU's is a contract check
(``tests/methods/test_contracts.py``). CI has only the CPU; on a machine with CUDA the same tests run there too."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from alphagp import GPClassifier

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _data():
    X, y = make_classification(n_samples=300, n_features=5, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=1)
    return X[:200], y[:200], X[200:], y[200:]


def test_an_unusable_device_is_a_clear_error(monkeypatch):
    X, y, _, _ = _data()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="sees no CUDA device"):
        GPClassifier(method="ep", device="cuda", max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="must name a torch device"):
        GPClassifier(method="ep", device="abacus", max_iter=1).fit(X, y)


@pytest.mark.parametrize("device", DEVICES)
def test_a_saved_model_loads_onto_another_device(tmp_path, device):
    X, y, X_test, _ = _data()
    clf = GPClassifier(method="sep", n_inducing=6, batch_size=50, max_iter=2, device=device, random_state=0).fit(X, y)
    clf.save(tmp_path / "m.alphagp")
    loaded = GPClassifier.load(tmp_path / "m.alphagp", device="cpu")
    assert loaded.model_.inducing_points.device.type == "cpu"
    np.testing.assert_allclose(loaded.predict_proba(X_test), clf.predict_proba(X_test), atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_a_checkpointed_fit_resumes_on_the_device(tmp_path, device):
    X, y, X_test, _ = _data()
    params = dict(method="sep", n_inducing=6, batch_size=50, random_state=0, checkpoint=str(tmp_path / "fit.ckpt"))
    GPClassifier(max_iter=2, device="cpu", **params).fit(X, y)
    with pytest.warns(UserWarning, match="resuming"):
        resumed = GPClassifier(max_iter=4, device=device, **params).fit(X, y)
    straight = GPClassifier(max_iter=4, device=device, **{**params, "checkpoint": None}).fit(X, y)
    np.testing.assert_allclose(resumed.predict_proba(X_test), straight.predict_proba(X_test), atol=1e-8)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("family", ["regressor", "classifier"])
def test_deep_gps_fit_on_a_device_as_on_the_cpu(tmp_path, device, family):
    """The deep-GP estimators take ``device`` as GPClassifier does: tensors there, the CPU's
    predictions (draws are made on the CPU), a model file that loads onto the CPU."""
    from alphagp import DeepGPClassifier, DeepGPRegressor
    X, y, X_test, _ = _data()
    cls, target = (DeepGPRegressor, X[:, 0] - X[:, 1]) if family == "regressor" else (DeepGPClassifier, y)
    params = dict(n_layers=2, n_inducing=6, n_samples=3, n_predict_samples=10, batch_size=50, max_iter=2,
                  random_state=0)
    fitted = cls(device=device, **params).fit(X[:, 2:], target)
    assert {t.device.type for t in fitted.model_.parameters()} == {torch.device(device).type}
    reference = cls(**params).fit(X[:, 2:], target)
    predict = (lambda m: m.predict(X_test[:, 2:])) if family == "regressor" else (lambda m: m.predict_proba(X_test[:, 2:]))
    np.testing.assert_allclose(predict(fitted), predict(reference), atol=1e-6)
    fitted.save(tmp_path / "m.alphagp")
    loaded = cls.load(tmp_path / "m.alphagp", device="cpu")
    assert loaded.model_.layers[0].inducing_points.device.type == "cpu"
    np.testing.assert_allclose(predict(loaded), predict(fitted), atol=1e-10)
    with pytest.raises(ValueError, match="must name a torch device"):
        cls(device="abacus", **params).fit(X[:, 2:], target)
