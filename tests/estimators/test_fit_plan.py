"""The fit plan (:mod:`alphagp.estimators.fit_plan`): every setting of a fit resolved once, and
``alpha`` decided in one place (:func:`alphagp.methods.resolve_alpha`)."""

from __future__ import annotations

import numpy as np
import pytest

from alphagp import GPClassifier, testing
from alphagp.methods import METHODS, constructor_parameters, resolve_alpha


@pytest.mark.parametrize("name", list(METHODS))
def test_the_plan_is_what_the_built_method_runs(name):
    X, y = testing.contract_problem()
    clf = GPClassifier(**testing.contract_settings(name)).fit(X, y)
    plan = clf.fit_plan_
    assert plan.method == name and plan.n_data == clf.model_.n_data
    assert plan.alpha == getattr(clf.model_, "alpha", None) == clf.alpha_
    assert plan.damping == getattr(clf.model_, "damping", None)
    assert plan.optimize_inducing == clf.model_.inducing_points.requires_grad == clf.optimize_inducing_
    assert plan.mini_batches == (clf.batch_size_ is not None and clf.batch_size_ < len(y))


def test_alpha_defaults_come_from_the_registry_then_the_constructor():
    assert resolve_alpha("pep", None) == 0.5          # MethodSpec.defaults
    assert resolve_alpha("rep", None) == 1.0          # MethodSpec.fixed
    assert resolve_alpha("ep", None) == 1.0           # EP's constructor
    assert resolve_alpha("apep", 0.25) == 0.25
    assert resolve_alpha("vi", None) is None
    with pytest.raises(ValueError, match="has alpha=1.0; got alpha=0.5"):
        resolve_alpha("rep", 0.5)
    with pytest.raises(ValueError, match="has no alpha"):
        resolve_alpha("label_regression", 0.5)
    assert all(resolve_alpha(n, None) is None for n in METHODS if "alpha" not in constructor_parameters(METHODS[n].cls))


def test_batch_and_mini_batch_plans():
    X, y = testing.contract_problem()
    batch = GPClassifier(method="ep", n_inducing=4, max_iter=2, random_state=0).fit(X, y).fit_plan_
    assert (batch.mini_batches, batch.optimizer, batch.learning_rate, batch.damping) == (False, "sign-adaptive", 1.0, 0.5)
    mini = GPClassifier(method="ep", n_inducing=4, max_iter=2, batch_size=10, random_state=0).fit(X, y).fit_plan_
    assert (mini.mini_batches, mini.optimizer, mini.learning_rate, mini.damping) == (True, "adam", 0.01, 1.0)
    assert mini.optimize_inducing is False                     # per-point sites on mini-batches
    assert "mini-batches of 10" in mini.describe() and "alpha=1" in mini.describe()
    with pytest.raises(ValueError, match="batch only"):
        GPClassifier(method="gfitc", n_inducing=4, max_iter=2, batch_size=10).fit(X, y)


def test_the_plan_travels_in_the_model_file(tmp_path):
    X, y = testing.contract_problem()
    clf = GPClassifier(method="pep", alpha=0.3, n_inducing=4, max_iter=2, random_state=0).fit(X, y)
    clf.save(tmp_path / "m.agp")
    loaded = GPClassifier.load(tmp_path / "m.agp")
    assert loaded.fit_plan_ == clf.fit_plan_ and loaded.fit_plan_.alpha == 0.3
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X))
