"""The Dirichlet-based GP classifier (``method="dirichlet"``) against independent references:
scikit-learn's GP regression per class, the sparse posterior with the rows as inducing inputs,
repeated rows for integer weights, a batch fit for a stream, and a Monte Carlo estimate of the
predictive."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from alphagp import GPClassifier
from alphagp.conjugate import transformed_labels
from alphagp.kernels import ARDKernel
from alphagp.methods import build_method

KERNEL = {"lengthscale": [1.0, 1.5, 2.0], "amplitude": 4.0, "noise": 1e-4}


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(0)
    X = g.standard_normal((150, 3))
    y = (X[:, 0] + 0.3 * g.standard_normal(150) > 0).astype(int) + (X[:, 1] > 0.5)
    return X, y


def _fixed(**params):
    """A Dirichlet GP at the kernel :data:`KERNEL`, unstandardised features (a fixed posterior)."""
    return GPClassifier(**{"method": "dirichlet", "kernel_params": KERNEL, "optimize_hyperparameters": False,
                           "standardize": False, "random_state": 0, **params})


def test_the_exact_fit_is_scikit_learns_gp_regression_of_each_class(data):
    """Each latent function is scikit-learn's GP regression of the class's transformed labels
    (minus the profiled mean) with the Dirichlet noise plus the kernel's additive noise as
    ``alpha`` (an observation noise: the latent functions are noise-free)."""
    X, y = data
    eps = 0.01
    clf = _fixed(method_params={"alpha_eps": eps}).fit(X, y)
    assert clf.fit_plan_.exact and clf.n_iter_ == 1
    X_new = np.random.default_rng(1).standard_normal((9, 3))
    mean, sd = clf.predict_f(X_new, return_std=True)
    labels = transformed_labels(eps)
    means = clf.model_.means.numpy()
    for c in range(3):
        own = y == c
        kernel = ConstantKernel(KERNEL["amplitude"], "fixed") * RBF(KERNEL["lengthscale"], "fixed")
        gpr = GaussianProcessRegressor(kernel, optimizer=None,
                                       alpha=np.where(own, labels["s_own"], labels["s_other"]) + KERNEL["noise"])
        gpr.fit(X, np.where(own, labels["t_own"], labels["t_other"]) - means[c])
        m, s = gpr.predict(X_new, return_std=True)
        np.testing.assert_allclose(mean[:, c], m + means[c], rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(sd[:, c], s, rtol=1e-7, atol=1e-9)


def test_the_sparse_posterior_with_the_rows_as_inducing_inputs_is_the_exact_one(data):
    X, y = data
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    outputs = []
    for exact in (True, False):
        kernel = ARDKernel(3, 3, shared=True, lengthscale=1.3, amplitude=3.0, noise=1e-3)
        model = build_method("dirichlet", Xt[None].clone(), kernel, n_data=len(y), n_classes=3, exact=exact)
        model.local_update(Xt, yt, torch.arange(len(y)))
        outputs.append(model.predict_f(Xt[:20] + 0.1))
    for a, b in zip(*outputs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)   # K_uu + 1e-6 a I (the sparse jitter)


@pytest.mark.parametrize("n_inducing", [None, 20])
def test_integer_weights_are_repeated_rows(data, n_inducing):
    """A weight w divides the row's noise by w: the posterior of the row repeated w times (exact,
    and sparse at given inducing inputs)."""
    X, y = data
    w = np.random.default_rng(2).integers(1, 4, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    inducing = {} if n_inducing is None else {"inducing_points": X[:n_inducing], "optimize_inducing": False}
    weighted = _fixed(**inducing).fit(X, y, sample_weight=w)
    repeated = _fixed(**inducing).fit(X[rows], y[rows])
    assert weighted.fit_plan_.exact is (n_inducing is None)
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), rtol=0, atol=1e-10)


def test_a_streams_sums_equal_the_batch_fit(data):
    """``partial_fit`` adds each call's rows' sums: after the last call the posterior is the batch
    fit's at the same kernel and inducing inputs, weighted or not."""
    X, y = data
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    settings = {"inducing_points": X[:15], "optimize_inducing": False}
    for weight in (None, w):
        batch = _fixed(**settings).fit(X, y, sample_weight=weight)
        stream = _fixed(**settings)
        for start in range(0, len(y), 40):
            rows = slice(start, start + 40)
            stream.partial_fit(X[rows], y[rows], classes=[0, 1, 2],
                               sample_weight=None if weight is None else weight[rows])
        np.testing.assert_allclose(stream.predict_proba(X), batch.predict_proba(X), rtol=0, atol=1e-12)
    assert stream._stream_seen == (len(y), pytest.approx(w.sum()))


def test_an_exact_model_refuses_a_stream_saying_what_to_do(data):
    X, y = data
    clf = _fixed().fit(X, y)
    with pytest.raises(ValueError, match="exact posterior of its 150 training rows.*fewer inducing points"):
        clf.partial_fit(X[:5], y[:5])


def test_the_predictive_is_the_mean_of_the_softmax_of_the_latent_posterior(data):
    """The class probabilities are E[softmax(f)] under the latent marginals (the paper's eq. 8):
    against plain Monte Carlo with 200,000 draws."""
    X, y = data
    clf = _fixed(method_params={"alpha_eps": 1e-3}).fit(X, y)
    mean, sd = clf.predict_f(X[:12], return_std=True)
    draws = mean + sd * np.random.default_rng(4).standard_normal((200_000, *mean.shape))
    e = np.exp(draws - draws.max(-1, keepdims=True))
    np.testing.assert_allclose(clf.predict_proba(X[:12]), (e / e.sum(-1, keepdims=True)).mean(0), atol=3e-3)


def test_the_default_learns_its_kernel_by_its_own_start_and_predicts_the_labels(data):
    X, y = data
    clf = GPClassifier(method="dirichlet", random_state=0).fit(X, y)
    assert clf.kernel_start_.surrogate == "dirichlet" and clf.n_iter_ == 1 and clf.fit_plan_.exact
    np.testing.assert_allclose(clf.model_.kernel.lengthscale.detach().numpy(), clf.kernel_start_.lengthscale)
    assert clf.score(X, y) > 0.9


def test_the_kernel_learnt_by_the_trainer_from_the_fixed_start_raises_the_marginal_likelihood(data):
    """With ``kernel_init="fixed"`` the trainer's L-BFGS learns the kernel on every row: the log
    marginal likelihood never falls from one iteration to the next (the line search's Armijo rule)."""
    X, y = data
    clf = GPClassifier(method="dirichlet", kernel_init="fixed", max_iter=30, random_state=0).fit(X, y)
    objective = [h["objective"] for h in clf.history_]
    assert clf.n_iter_ > 1 and all(b >= a - 1e-9 * abs(a) for a, b in itertools.pairwise(objective))
    assert objective[-1] > objective[0]


def test_an_exact_model_file_predicts_as_the_fitted_model(data, tmp_path):
    X, y = data
    clf = GPClassifier(method="dirichlet", random_state=0).fit(X, y)
    clf.save(tmp_path / "model.safetensors")
    loaded = GPClassifier.load(tmp_path / "model.safetensors")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_the_dirichlets_own_parameters_are_checked(data):
    X, y = data
    for bad in ({"alpha_eps": 0.0}, {"alpha_eps": 1.5}, {"noise_scale": -1.0}):
        with pytest.raises(ValueError):
            GPClassifier(method="dirichlet", method_params=bad).fit(X, y)
    with pytest.raises(ValueError, match="has no alpha"):
        GPClassifier(method="dirichlet", alpha=0.5).fit(X, y)


@pytest.mark.parametrize("weighted", [False, True])
def test_leave_one_out_probabilities_equal_refits_without_each_row(data, weighted):
    """Issue 79 item 3: the exact model's leave-one-out class probabilities of every training row
    equal a fit on the other rows with the kernel fixed, predicting that row (1e-8); a weighted row
    is left out with all its weight."""
    X, y = data[0][:40], data[1][:40]
    weight = np.random.default_rng(1).integers(1, 4, len(y)).astype(float) if weighted else None
    model = _fixed().fit(X, y, sample_weight=weight).model_
    proba, y_held, w_held = (t.numpy() for t in model.leave_one_out())
    order = np.argsort(y, kind="stable")                  # the model holds its rows sorted by class
    np.testing.assert_array_equal(y_held, y[order])
    np.testing.assert_array_equal(w_held, np.ones(len(y)) if weight is None else weight[order])
    for position, j in enumerate(order):
        rest = np.delete(np.arange(len(y)), j)
        refit = _fixed().fit(X[rest], y[rest], sample_weight=None if weight is None else weight[rest])
        np.testing.assert_allclose(proba[position], refit.predict_proba(X[j:j + 1])[0], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("params", [dict(kernel_init="dirichlet_linear"),
                                    dict(n_inducing=20, kernel_init="dirichlet_linear"),
                                    dict(method="sep", n_inducing=10, max_iter=5, kernel_params={"linear": 0.5})])
def test_a_kernel_with_a_linear_term_fits_and_its_file_predicts_the_same(data, tmp_path, params):
    """Issue 79: the RBF-and-linear start gives the closed form (exact and sparse) a kernel with a
    linear term, as ``kernel_params={"linear": ...}`` gives any method one; its model file names
    the term and predicts as the fitted model."""
    X, y = data
    clf = GPClassifier(**{"method": "dirichlet", "random_state": 0, **params}).fit(X, y)
    assert clf.model_.kernel.linear is not None and float(clf.model_.kernel.linear.min()) > 0
    proba = clf.predict_proba(X[:20])
    assert np.all(np.isfinite(proba)) and clf.score(X, y) > 0.6
    clf.save(tmp_path / "m.safetensors")
    np.testing.assert_allclose(GPClassifier.load(tmp_path / "m.safetensors").predict_proba(X[:20]), proba, rtol=1e-12)
