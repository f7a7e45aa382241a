"""Uncertainty beyond p (issue 46, item 2): the latent marginals are the ones the predictive
integrates, and the entropy decomposition adds up and agrees with the predictive's entropy."""

import numpy as np
import pytest
import torch

from alphagp import GPClassifier


@pytest.fixture(scope="module")
def fitted(thyroid_module):
    X, y = thyroid_module
    return GPClassifier(method="pep", n_inducing=10, max_iter=30, random_state=0).fit(X, y), X


@pytest.fixture(scope="module")
def thyroid_module():
    from alphagp.data import load_bundled
    return load_bundled("new_thyroid")


def test_predict_f_gives_the_marginals_predict_proba_integrates(fitted):
    clf, X = fitted
    mean, std = clf.predict_f(X[:40], return_std=True)
    assert mean.shape == std.shape == (40, 3) and np.all(std > 0)
    np.testing.assert_array_equal(clf.predict_f(X[:40]), mean)
    again = clf.model_.likelihood.predict_proba(torch.as_tensor(mean), torch.as_tensor(std**2)).numpy()
    np.testing.assert_allclose(again, clf.predict_proba(X[:40]), rtol=0, atol=1e-12)


def test_the_parts_add_up_and_the_total_is_the_predictives_entropy(fitted):
    clf, X = fitted
    parts = clf.predict_uncertainty(X[:60], n_samples=20_000, random_state=1)
    np.testing.assert_allclose(parts["aleatoric"] + parts["epistemic"], parts["total"], rtol=0, atol=1e-12)
    assert np.all(parts["epistemic"] >= 0)
    proba = clf.predict_proba(X[:60])
    entropy = -(proba * np.log(proba)).sum(1)
    # Monte Carlo over 20,000 draws against the quadrature of predict_proba (measured: at most
    # 0.008 nats apart on these rows at seed 1)
    np.testing.assert_allclose(parts["total"], entropy, rtol=0, atol=0.03)
    # the robust-max likelihood's own entropy is the same for every f (its labelling noise): the
    # largest class has probability a, each other b (epsilon / C added to every class)
    epsilon, C = clf.model_.likelihood.epsilon, 3
    a, b = 1 - epsilon + epsilon / C, epsilon / C
    np.testing.assert_allclose(parts["aleatoric"], -(a * np.log(a) + (C - 1) * b * np.log(b)), rtol=1e-9)


def test_epistemic_uncertainty_grows_far_from_the_data(fitted):
    clf, X = fitted
    far = X[:20] + 40 * X.std(0)
    assert clf.predict_uncertainty(far)["epistemic"].mean() > 5 * clf.predict_uncertainty(X[:20])["epistemic"].mean()


@pytest.mark.parametrize("bad", [1, 0, 2.5, True, "many"])
def test_a_bad_sample_count_is_a_clear_error(fitted, bad):
    clf, X = fitted
    with pytest.raises(ValueError, match="n_samples must be an integer"):
        clf.predict_uncertainty(X[:3], n_samples=bad)


@pytest.mark.parametrize("method", ["sep", "vi", "augmented", "vi_softmax"])
def test_every_likelihood_gives_finite_parts(thyroid_module, method):
    """The Heaviside likelihood of ep and sep labels by the arg-max: p(y | f) is 0 or 1, its entropy
    0 (0 log 0 = 0, not NaN), so all the uncertainty is epistemic; the others' are finite too."""
    X, y = thyroid_module
    clf = GPClassifier(method=method, n_inducing=10, max_iter=10, random_state=0).fit(X, y)
    parts = clf.predict_uncertainty(np.vstack([X[:20], X[:20] + 40 * X.std(0)]), n_samples=64)
    for name, values in parts.items():
        assert np.all(np.isfinite(values)), name
    if method == "sep":
        np.testing.assert_array_equal(parts["aleatoric"], 0.0)
        np.testing.assert_array_equal(parts["epistemic"], parts["total"])


@pytest.mark.parametrize("binary", [False, True])
def test_the_deep_gp_classifier_splits_its_uncertainty_too(thyroid_module, binary):
    """The parts add up exactly, the total is the entropy of predict_proba (Monte Carlo over 4,000
    draws per propagated sample against the likelihood's own predictive: measured within 0.003
    nats), for the robust-max (3 classes) and the probit (2 classes) likelihoods."""
    from alphagp import DeepGPClassifier
    X, y = thyroid_module
    y = (y == y[0]).astype(int) if binary else y
    clf = DeepGPClassifier(n_layers=2, n_inducing=10, max_iter=30, random_state=0).fit(X, y)
    rows = np.vstack([X[:10], X[:10] + 40 * X.std(0)])
    parts = clf.predict_uncertainty(rows, n_samples=4000, random_state=1)
    np.testing.assert_allclose(parts["aleatoric"] + parts["epistemic"], parts["total"], rtol=0, atol=1e-12)
    assert np.all(parts["epistemic"] >= 0)
    proba = clf.predict_proba(rows)
    np.testing.assert_allclose(parts["total"], -(proba * np.log(proba)).sum(1), rtol=0, atol=0.02)
    with pytest.raises(ValueError, match="n_samples must be an integer"):
        clf.predict_uncertainty(rows, n_samples=1)


def test_a_mixture_of_two_confident_components_is_all_epistemic():
    """Two equally weighted components, each sure of a different class (latent means 12 apart, tiny
    variances, the robust-max likelihood): the label is a coin flip (total log 2 up to the labelling
    noise), each component alone is certain (aleatoric: the labelling noise only), and the
    difference, the disagreement of the components, is the epistemic part."""
    from alphagp.likelihoods import RobustMaxLikelihood
    from alphagp.uncertainty import decompose
    likelihood = RobustMaxLikelihood(epsilon=1e-3)
    mean = torch.tensor([[[12.0, 0.0, 0.0]], [[0.0, 12.0, 0.0]]], dtype=torch.float64)   # [K=2, N=1, C=3]
    var = torch.full_like(mean, 1e-4)
    total, aleatoric, epistemic = decompose(likelihood, mean, var, 200, torch.Generator().manual_seed(0))[0]
    a, b = 1 - 1e-3 + 1e-3 / 3, 1e-3 / 3
    noise = -(a * np.log(a) + 2 * b * np.log(b))
    assert float(aleatoric) == pytest.approx(noise, rel=1e-6)
    mixed = np.array([(a + b) / 2, (a + b) / 2, b])
    assert float(total) == pytest.approx(-(mixed * np.log(mixed)).sum(), rel=1e-6)
    assert float(epistemic) == pytest.approx(float(total) - noise, rel=1e-6) and float(epistemic) > 0.6
    one = decompose(likelihood, mean[:1], var[:1], 200, torch.Generator().manual_seed(0))[0]
    assert float(one[2]) < 1e-6                                       # one component alone: nothing epistemic
