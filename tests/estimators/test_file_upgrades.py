"""Files in the layouts of earlier versions load through :mod:`alphagp.estimators.file_upgrades`
and predict what the file they were made from predicts (each old layout written by editing a
new file's header back, as those versions wrote it: format 1, no checksum)."""

from __future__ import annotations

import numpy as np
import pytest

from alphagp import GPClassifier, testing
from alphagp.serialization import ModelFileError, UncheckedModelFileWarning

from conftest import rewrite_model_header


def _old_file(clf, tmp_path, edit):
    """The file ``clf`` saves, as an older version wrote it: format 1, no checksum, the method's
    arguments also in the method's config (every version before issue 68), then ``edit``."""
    from alphagp.methods import method_config
    clf.save(tmp_path / "new.safetensors")

    def as_before(meta):
        meta["format_version"] = 1
        meta["content"]["method"]["config"] = method_config(clf.method_, clf.model_)
        edit(meta["content"])
    (tmp_path / "old.safetensors").write_bytes(
        rewrite_model_header((tmp_path / "new.safetensors").read_bytes(), as_before, keep_checksum=False))
    with pytest.warns(UncheckedModelFileWarning):
        return GPClassifier.load(tmp_path / "old.safetensors")


@pytest.fixture(scope="module")
def data():
    return testing.contract_problem()


def test_a_file_before_the_auto_settings_and_validated_early_stopping(data, tmp_path):
    X, y = data
    clf = GPClassifier(method="sep", n_inducing=4, max_iter=3, batch_size=20, inducing_init="random",
                       early_stopping=False, random_state=0).fit(X, y)

    def before(content):
        for key in ("validation_scores", "best_iteration", "fit_plan"):
            del content[key]
        content["optimize_inducing"] = True
    old = _old_file(clf, tmp_path, before)
    np.testing.assert_array_equal(old.predict_proba(X), clf.predict_proba(X))
    assert old.batch_size_ == clf.batch_size == 20 and old.validation_scores_ is None
    # the plan built from the parameters and the method's configuration is the one the fit made
    assert old.fit_plan_ == clf.fit_plan_


def test_a_file_before_the_fit_plan_was_its_one_record(data, tmp_path):
    """Files that kept the decisions in "settings" and "optimize_inducing" beside (or without) a
    plan: the plan built from them equals the fit's, and the old records are gone."""
    X, y = data
    clf = GPClassifier(method="ep", n_inducing=5, max_iter=3, early_stopping=True, random_state=0).fit(X, y)
    plan = clf.fit_plan_

    def before(content):
        del content["fit_plan"]
        content["settings"] = {"batch_size": None, "inducing_init": "random", "early_stopping": True}
        content["optimize_inducing"] = plan.optimize_inducing
    old = _old_file(clf, tmp_path, before)
    np.testing.assert_array_equal(old.predict_proba(X), clf.predict_proba(X))
    assert old.fit_plan_ == plan and old.early_stopping_ is True and old.n_inducing_ == 5


def test_a_deep_gp_file_before_the_fit_plan(data, tmp_path):
    from alphagp import DeepGPClassifier
    X, y = data
    clf = DeepGPClassifier(n_layers=2, n_inducing=6, n_samples=2, max_iter=2, batch_size=16, early_stopping=True,
                           random_state=0).fit(X, y)
    clf.save(tmp_path / "new.safetensors")

    def as_before(meta):
        meta["format_version"] = 1
        del meta["content"]["fit_plan"]
    (tmp_path / "old.safetensors").write_bytes(
        rewrite_model_header((tmp_path / "new.safetensors").read_bytes(), as_before, keep_checksum=False))
    with pytest.warns(UncheckedModelFileWarning):
        old = DeepGPClassifier.load(tmp_path / "old.safetensors")
    assert old.fit_plan_ == clf.fit_plan_
    np.testing.assert_array_equal(old.predict_proba(X), clf.predict_proba(X))


def test_a_vi_file_before_the_likelihood_registry(data, tmp_path):
    X, y = data
    clf = GPClassifier(method="vi", n_inducing=4, max_iter=3, random_state=0).fit(X, y)

    def before(content):
        content["method"]["config"].update(likelihood="robust_max", n_mc_samples=8, seed=0)
    old = _old_file(clf, tmp_path, before)
    np.testing.assert_array_equal(old.predict_proba(X), clf.predict_proba(X))

    def another_likelihood(content):
        content["method"]["config"]["likelihood"] = "softmax"
    with pytest.raises(ModelFileError, match="the file names 'softmax'"):
        _old_file(clf, tmp_path, another_likelihood)


def test_a_file_with_alpha_scores_keeps_them_as_the_selections_record(data, tmp_path):
    """Files before alpha="auto" joined the one selection (issue 68) kept its mean held-out
    log-likelihood per alpha in "alpha_scores": they load with the same scores as ``cv_results_``
    (negated: NLL), the chosen alpha ranked first, and predict as before."""
    X, y = data
    clf = GPClassifier(method="pep", alpha=0.5, n_inducing=4, max_iter=3, random_state=0).fit(X, y)

    def before(content):
        content["alpha_scores"] = {"0.25": -0.41, "0.5": -0.37, "1.0": -0.52}
        content["selection"] = None
    old = _old_file(clf, tmp_path, before)
    np.testing.assert_array_equal(old.predict_proba(X), clf.predict_proba(X))
    assert old.cv_results_["candidate"] == ["pep(alpha=0.25)", "pep(alpha=0.5)", "pep(alpha=1)"]
    assert old.cv_results_["mean_test_nll"] == [0.41, 0.37, 0.52] and old.cv_results_["rank_test_nll"] == [2, 1, 3]
    assert old.candidate_ == "pep(alpha=0.5)" and not hasattr(old, "alpha_scores_")
