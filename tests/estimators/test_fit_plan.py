"""The fit plan (:mod:`alphagp.estimators.fit_plan`): every setting of a fit resolved once, and
``alpha`` decided in one place (:func:`alphagp.methods.resolve_alpha`)."""

from __future__ import annotations

import dataclasses

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
    assert plan.n_inducing == clf.n_inducing_ == clf.model_.inducing_points.shape[1]


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


def test_the_plan_is_immutable_all_the_way_down():
    X, y = testing.contract_problem()
    plan = GPClassifier(method="pep", n_inducing=4, max_iter=2, random_state=0,
                        kernel_params={"noise": [0.2]}).fit(X, y).fit_plan_
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.n_inducing = 5
    with pytest.raises(TypeError):
        plan.kernel_params["noise"] = 1.0
    assert isinstance(plan.kernel_params["noise"], tuple)
    assert hash(plan) == hash(dataclasses.replace(plan))


@pytest.mark.parametrize("name", list(METHODS))
def test_the_registry_answers_which_arguments_a_method_takes_as_building_it_does(name):
    """``takes`` (no model built) against building the method with the same arguments, and
    ``free_alpha`` (alpha="auto"'s candidates) against building it at two alphas."""
    import torch

    from alphagp.kernels import ARDKernel
    from alphagp.methods import build_method, free_alpha, n_latent, takes

    def builds(**given) -> bool:
        try:
            G = n_latent(name, 2)
            build_method(name, torch.zeros(G, 1, 1, dtype=torch.float64), ARDKernel(G, 1), n_data=1, n_classes=2,
                         **given)
        except ValueError:
            return False
        return True

    for given in ({"alpha": 0.5}, {"alpha": 1.0}, {"epsilon": 0.01}, {"damping": 0.3}, {"alpha": 0.5, "epsilon": 0.01}):
        assert takes(name, **given) == builds(**given), given
    assert free_alpha(name) == (builds(alpha=0.5) and builds(alpha=1.0))


def test_selection_fits_clones_and_never_changes_the_users_parameters(monkeypatch):
    """``method="auto"`` plans the winner's fit from its settings: the fitted estimator's own
    ``set_params`` is never called and its parameters are those the user gave."""
    X, y = testing.contract_problem()
    clf = GPClassifier(max_iter=3, random_state=0, n_inducing=4)
    calls = []
    original = GPClassifier.set_params

    def recording(self, **params):
        if self is clf:
            calls.append(params)
        return original(self, **params)
    monkeypatch.setattr(GPClassifier, "set_params", recording)
    before = clf.get_params()
    clf.fit(X, y)
    assert calls == [] and clf.get_params() == before
    assert clf.method_ == clf.fit_plan_.method != "auto" and clf.n_inducing_ == clf.fit_plan_.n_inducing == 4


@pytest.mark.parametrize("early_stopping", [False, True])
def test_the_deep_gp_plan_is_what_the_model_runs(early_stopping):
    from alphagp import DeepGPClassifier
    X, y = testing.contract_problem()
    clf = DeepGPClassifier(n_layers=2, n_inducing=7, n_samples=2, max_iter=2, batch_size=16,
                           early_stopping=early_stopping, random_state=0).fit(X, y)
    plan = clf.fit_plan_
    assert plan.n_data == clf.model_.n_data == len(y) - (early_stopping and len(y) - round(0.9 * len(y)))
    assert plan.n_inducing == clf.model_.layers[0].shape[1] == 7
    assert plan.n_hidden == min(X.shape[1], 30) and plan.mini_batches and plan.early_stopping == early_stopping
    assert (plan.likelihood, plan.n_outputs) == (("probit", 1) if len(np.unique(y)) == 2
                                                 else ("robust_max", len(np.unique(y))))
