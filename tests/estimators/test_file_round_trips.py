"""Every estimator, method, dtype and route (a fit, or a stream of two calls with weights, one of
them 0) writes a model file that loads and predicts as the model that wrote it (issue 74: a
Dirichlet stream with a row of weight 0 and every float32 ordinal model wrote files their load
refused as damaged)."""

import warnings

import numpy as np
import pytest

from alphagp import DeepGPClassifier, DeepGPRegressor, GPClassifier, GPOrdinalClassifier
from alphagp.estimators.streams import streams_with
from alphagp.methods import METHODS, ordinal_methods
from alphagp.testing import contract_problem, contract_settings, methods_with

WEIGHTED = set(methods_with("sample_weight"))
ORDINAL = set(ordinal_methods())
ROUTES = [(m, route) for m in sorted(METHODS) for route in ("fit", "stream") if route == "fit" or streams_with(m)]


def _weights(method: str, n: int) -> np.ndarray | None:
    if method not in WEIGHTED:
        return None
    w = np.random.default_rng(1).uniform(0.5, 2.0, n)
    w[[3, 40]] = 0.0                            # a row of weight 0 in each of the stream's calls
    return w


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method, route", ROUTES)
def test_the_file_of_every_method_dtype_and_route_loads_and_predicts_the_same(method, route, dtype, tmp_path):
    X, y = contract_problem()
    w = _weights(method, len(y))
    cls = GPOrdinalClassifier if method in ORDINAL else GPClassifier
    settings = contract_settings(method, dtype=dtype)
    if route == "stream":
        settings.update(batch_size=None, n_inducing=6)
    model = cls(**settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if route == "fit":
            model.fit(X, y, sample_weight=w)
        else:
            for rows in (slice(0, 30), slice(30, None)):
                model.partial_fit(X[rows], y[rows], classes=np.unique(y),
                                  sample_weight=None if w is None else w[rows])
    model.save(tmp_path / "m.agp")
    again = cls.load(tmp_path / "m.agp")
    np.testing.assert_array_equal(again.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cls", [DeepGPRegressor, DeepGPClassifier])
def test_the_deep_gps_files_load_in_either_dtype(cls, dtype, tmp_path):
    X, y = contract_problem()
    target = X[:, 0] + 0.1 * X[:, 1] if cls is DeepGPRegressor else y
    model = cls(dtype=dtype, n_inducing=6, max_iter=3, random_state=0).fit(X, target)
    model.save(tmp_path / "m.agp")
    predict = "predict" if cls is DeepGPRegressor else "predict_proba"
    np.testing.assert_array_equal(getattr(cls.load(tmp_path / "m.agp"), predict)(X), getattr(model, predict)(X))
