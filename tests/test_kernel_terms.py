"""Kernel terms (issue 79, item 2): each term and composition against scikit-learn's kernels, the
gradients against central differences, the method-facing TermKernel against ARDKernel, the text and
JSON forms, and GPClassifier(kernel=...) against the default path and through a model file."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.gaussian_process import kernels as sk

from alphagp import GPClassifier
from alphagp.kernel_start import fit_kernel_start
from alphagp.kernel_terms import RBF, Linear, Product, Sum, parse_term, term_from_spec
from alphagp.kernels import ARDKernel, TermKernel

TERMS = {"rbf(one)": RBF("one"), "rbf(ard)": RBF("ard"), "linear": Linear(), "rbf(ard) + linear": RBF("ard") + Linear(),
         "rbf(one) * linear": RBF("one") * Linear(), "rbf(one) * (rbf(ard) + linear)": RBF("one") * (RBF("ard") + Linear())}


def _sklearn(term, theta: np.ndarray, d: int):
    """The same covariance as scikit-learn's kernels: ConstantKernel * RBF, ConstantKernel * DotProduct."""
    if isinstance(term, RBF):
        ls = np.exp(theta[1:])
        if term.lengthscales == "columns":
            ls = ls[list(term.groups)]
        return sk.ConstantKernel(np.exp(theta[0])) * sk.RBF(ls if len(ls) > 1 else float(ls[0]))
    if isinstance(term, Linear):
        return sk.ConstantKernel(np.exp(theta[0])) * sk.DotProduct(sigma_0=0.0)
    k = term.left.n_params(d)
    left, right = _sklearn(term.left, theta[:k], d), _sklearn(term.right, theta[k:], d)
    return left + right if isinstance(term, Sum) else left * right


@pytest.mark.parametrize("name", [*TERMS, "rbf(columns)"])
def test_each_term_is_scikit_learns_kernel_and_its_diagonal(rng, name):
    d = 4
    term = RBF("columns").bound([0, 1, 1, 2]) if name == "rbf(columns)" else TERMS[name]
    theta = rng.normal(scale=0.5, size=term.n_params(d))
    A, B = rng.standard_normal((6, d)), rng.standard_normal((5, d))
    K = term.matrix(torch.as_tensor(theta), torch.as_tensor(A), torch.as_tensor(B)).numpy()
    reference = _sklearn(term, theta, d)
    assert np.allclose(K, reference(A, B), rtol=1e-10, atol=1e-12)
    assert np.allclose(term.diagonal(torch.as_tensor(theta), torch.as_tensor(A)).numpy(), reference.diag(A), rtol=1e-10)


@pytest.mark.parametrize("name", [*TERMS, "rbf(columns)"])
def test_each_terms_gradient_in_theta_matches_central_differences(rng, name):
    d = 3
    term = RBF("columns").bound([0, 0, 1]) if name == "rbf(columns)" else TERMS[name]
    A = torch.as_tensor(rng.standard_normal((5, d)))
    B = torch.as_tensor(rng.standard_normal((4, d)))
    theta = torch.as_tensor(rng.normal(scale=0.3, size=term.n_params(d)), dtype=torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: term.matrix(t, A, B), (theta,), eps=1e-6, atol=1e-7)
    assert torch.autograd.gradcheck(lambda t: term.diagonal(t, A), (theta,), eps=1e-6, atol=1e-7)


def test_columns_lengthscales_tie_a_blocks_features_and_are_ard_without_groups(rng):
    term = RBF("columns").bound([0, 1, 1, 1])
    assert term.n_params(4) == 3
    theta = torch.tensor([0.2, -0.3, 0.5], dtype=torch.float64)
    assert term.lengthscale(theta, 4).tolist() == pytest.approx(np.exp([-0.3, 0.5, 0.5, 0.5]).tolist())
    ard = torch.tensor([0.2, -0.3, 0.5, 0.5, 0.5], dtype=torch.float64)
    A = torch.as_tensor(rng.standard_normal((5, 4)))
    assert torch.allclose(term.matrix(theta, A, A), RBF("ard").matrix(ard, A, A), rtol=1e-12)
    with pytest.raises(ValueError, match="without gaps"):
        RBF("columns").bound([0, 2])


@pytest.mark.parametrize("shared", [True, False])
def test_a_term_kernel_of_rbf_and_linear_is_the_ard_kernel_with_its_linear_term(rng, shared):
    C, d = 3, 4
    groups = 1 if shared else C
    ls = np.exp(rng.normal(scale=0.3, size=(groups, d)))
    amp, noise, b = np.exp(rng.normal(size=groups)), np.exp(rng.normal(size=groups)), np.exp(rng.normal(size=groups))
    ard = ARDKernel(C, d, shared=shared, lengthscale=ls, amplitude=amp, noise=noise, linear=b)
    theta = np.concatenate([np.log(amp)[:, None], np.log(ls), np.log(b)[:, None]], axis=1)
    term = TermKernel(RBF("ard") + Linear(), C, d, shared=shared, theta=theta, noise=noise)
    X = torch.as_tensor(rng.standard_normal((6, d)))
    Z = torch.as_tensor(rng.standard_normal((1 if shared else C, 5, d)))
    assert torch.allclose(term.cross(X, X), ard.cross(X, X), rtol=1e-12)
    for ours, theirs in zip(term.inducing_covariances(Z, X), ard.inducing_covariances(Z, X)):
        assert torch.allclose(ours, theirs, rtol=1e-12)
    classes = torch.tensor([2, 0])
    for ours, theirs in zip(term.inducing_covariances(Z if shared else Z[classes], X, classes=classes),
                            ard.inducing_covariances(Z if shared else Z[classes], X, classes=classes)):
        assert torch.allclose(ours, theirs, rtol=1e-12)
    assert torch.allclose(term.diag(X), ard.diag(X), rtol=1e-12)
    assert torch.allclose(term.diag(X, classes), ard.diag(X, classes), rtol=1e-12)
    assert torch.allclose(term.prior_variance(X), ard.prior_variance(X), rtol=1e-12)


@given(st.recursive(st.sampled_from([RBF("one"), RBF("ard"), RBF("columns"), Linear()]),
                    lambda inner: st.builds(Sum, inner, inner) | st.builds(Product, inner, inner), max_leaves=5))
@settings(max_examples=40, deadline=None)
def test_the_text_and_json_forms_read_back_as_the_same_term(term):
    assert parse_term(repr(term)) == term
    assert term_from_spec(json.loads(json.dumps(term.spec()))) == term


@pytest.mark.parametrize("text, message", [("rbf(all)", "cannot read"), ("rbf +", "ends where"),
                                           ("(rbf + linear", "not closed"), ("rbf linear", "unexpected")])
def test_a_kernel_text_that_is_no_term_is_refused_with_where(text, message):
    with pytest.raises(ValueError, match=message):
        parse_term(text)


@pytest.mark.parametrize("spec", [{"type": "matern"}, {"type": "sum", "left": {"type": "rbf"}}, "rbf", None])
def test_a_damaged_kernel_description_is_refused(spec):
    with pytest.raises(ValueError, match="damaged"):
        term_from_spec(spec)


def _problem(rng, n=120):
    X = rng.standard_normal((n, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(n) > 0.4).astype(int)
    return X, y


def test_the_dirichlet_start_of_the_ard_rbf_term_is_the_default_start(rng):
    X, y = _problem(rng)
    default = fit_kernel_start(X, y, 2, surrogate="dirichlet", alpha_eps=0.01)
    termed = fit_kernel_start(X, y, 2, surrogate="dirichlet", alpha_eps=0.01, term=RBF("ard"))
    assert termed.log_marginal_likelihood == pytest.approx(default.log_marginal_likelihood, rel=1e-9)
    assert np.allclose(termed.lengthscale, default.lengthscale, rtol=1e-6)
    assert termed.kernel_params().keys() == {"theta", "noise"}


def test_exact_ep_with_the_one_lengthscale_rbf_term_is_the_default_fit(rng):
    X, y = _problem(rng)
    default = GPClassifier(method="exact_ep", random_state=0).fit(X, y)
    termed = GPClassifier(method="exact_ep", kernel=RBF("one"), random_state=0).fit(X, y)
    assert isinstance(termed.model_.kernel, TermKernel) and isinstance(default.model_.kernel, ARDKernel)
    assert np.allclose(termed.predict_proba(X), default.predict_proba(X), atol=1e-9)


def test_a_table_fit_with_a_composed_kernel_reads_back_from_its_model_file(rng, tmp_path):
    n = 90
    frame = pd.DataFrame({"x": rng.standard_normal(n), "kind": rng.choice(["a", "b", "c"], n),
                          "z": rng.standard_normal(n)})
    y = (frame["x"] + (frame["kind"] == "a") + 0.3 * rng.standard_normal(n) > 0.5).astype(int)
    kernel = RBF("columns") + Linear()
    model = GPClassifier(method="exact_pep", kernel=kernel, random_state=0).fit(frame, y)
    assert model.fit_plan_.kernel["left"]["groups"] == (0, 1, 1, 1, 2)
    assert model.kernel is kernel
    path = tmp_path / "model.agp"
    model.save(path)
    loaded = GPClassifier.load(path)
    assert loaded.kernel == kernel
    assert np.array_equal(loaded.predict_proba(frame), model.predict_proba(frame))


def test_kernel_params_other_than_the_noise_are_refused_with_a_kernel_term(rng):
    X, y = _problem(rng, 40)
    with pytest.raises(ValueError, match="noise"):
        GPClassifier(method="vi", kernel=RBF(), kernel_params={"lengthscale": 1.0}).fit(X, y)
    fitted = GPClassifier(method="vi", kernel=RBF(), kernel_params={"noise": 0.05}, max_iter=2).fit(X, y)
    assert torch.allclose(fitted.model_.kernel.noise, torch.tensor(0.05, dtype=torch.float64), rtol=0.5)
