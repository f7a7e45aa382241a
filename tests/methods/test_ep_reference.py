"""The EP/SEP implementation against the independent dense algebra of ``dense_reference``."""

import numpy as np
import pytest
import torch

from alphagp import GPClassifier
from alphagp.data import load_bundled
from alphagp.kernels import ARDKernel
from alphagp.likelihoods import HeavisideLikelihood
from alphagp.methods import EP, SEP
from alphagp.testing import dense_reference as ref


def _kernel_arrays(model):
    k = model.kernel
    C = model.n_classes
    with torch.no_grad():
        return (k.lengthscale.expand(C, -1).numpy(), k.amplitude.expand(C).numpy(), k.noise.expand(C).numpy())


@pytest.mark.parametrize("method", ["ep", "sep"])
def test_fitted_predictions_match_a_dense_computation_from_the_stored_sites(method):
    X, y = load_bundled("new_thyroid")
    clf = GPClassifier(method=method, n_inducing=10, max_iter=25, random_state=0).fit(X, y)
    model = clf.model_
    Xs = ((X - clf.mean_) / clf.scale_)[::7]
    blocks = ref.kernel_blocks(model.inducing_points.detach().numpy(), Xs, *_kernel_arrays(model))
    mean, var = ref.latent_marginals(blocks, model.site_precision.numpy(), model.site_natural.numpy())
    got_mean, got_var = model.predict_f(torch.as_tensor(Xs))
    np.testing.assert_allclose(got_mean.numpy().T, mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_var.numpy().T, var, rtol=1e-6, atol=1e-8)
    expected = np.array([ref.class_probabilities(mean[:, i], var[:, i]) for i in range(len(Xs))])
    np.testing.assert_allclose(clf.predict_proba(X[::7]), expected, atol=1e-6)


def _tiny_problem(n=8, C=3, M=None, seed=0, tied=False, alpha=1.0, damping=0.5):
    """Inducing points on the data when M is None; kernel held fixed."""
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, 2))
    y = np.arange(n) % C
    Z = np.broadcast_to(X, (C, n, 2)).copy() if M is None else g.standard_normal((C, M, 2))
    kernel = ARDKernel(C, 2, lengthscale=g.uniform(0.7, 1.5, (C, 2)), amplitude=g.uniform(1.0, 2.0, C),
                       noise=g.uniform(0.1, 0.3, C))
    kernel.requires_grad_(False)
    model = (SEP if tied else EP)(torch.tensor(Z), kernel, HeavisideLikelihood(), n_data=n, alpha=alpha, damping=damping)
    model.inducing_points.requires_grad_(False)
    return model, X, y


def _run(model, X, y, iterations):
    Xt, yt, idx = torch.tensor(X), torch.tensor(y), torch.arange(len(y))
    for _ in range(iterations):
        model.local_update(Xt, yt, idx)
    return Xt, yt, idx


def _factors(y, C):
    return [(i, k) for i in range(len(y)) for k in range(C) if k != y[i]]


def test_log_zq_equals_a_dense_evaluation_of_eq_9_at_alpha_1():
    """Inducing points on the data, alpha = 1: log Z_q = g(q) - g(prior) + sum over factors of
    log Z_ik + g(cavity) - g(q), every term from full u-space matrices."""
    model, X, y = _tiny_problem()
    Xt, yt, idx = _run(model, X, y, 40)
    C = model.n_classes
    blocks = ref.kernel_blocks(model.inducing_points.numpy(), X, *_kernel_arrays(model))
    Kinv = [np.linalg.inv(K) for K, _, _ in blocks]
    v = [Kinv[c] @ blocks[c][1] for c in range(C)]                          # v_i^c = K^{-1} k(Z, x_i)
    c1, c2 = model.factor_c1.numpy(), model.factor_c2.numpy()
    P = [Kinv[c].copy() for c in range(C)]
    eta = [np.zeros(len(Kinv[c])) for c in range(C)]
    for i, k in _factors(y, C):
        for side, c in ((0, y[i]), (1, k)):
            P[c] += c1[i, k, side] * np.outer(v[c][:, i], v[c][:, i])
            eta[c] += c2[i, k, side] * v[c][:, i]
    g_q = [ref.log_normaliser(P[c], eta[c]) for c in range(C)]
    energy = sum(g_q[c] - ref.log_normaliser(Kinv[c], np.zeros(len(P[c]))) for c in range(C))
    for i, k in _factors(y, C):
        marginals = []
        for side, c in ((0, y[i]), (1, k)):
            vi = v[c][:, i]
            P_cav = P[c] - c1[i, k, side] * np.outer(vi, vi)
            eta_cav = eta[c] - c2[i, k, side] * vi
            energy += ref.log_normaliser(P_cav, eta_cav) - g_q[c]
            S = np.linalg.inv(P_cav)
            marginals += [vi @ S @ eta_cav, vi @ S @ vi]
        _, log_z = ref.tilted_site(*marginals, blocks[y[i]][2][i] + blocks[k][2][i])
        energy += log_z
    assert model.objective(Xt, yt, idx).item() == pytest.approx(energy, rel=1e-8, abs=1e-8)


def test_sep_fixed_point_satisfies_the_tied_moment_matching_condition():
    """At SEP's fixed point the tied factor is the average of the site updates of all factors,
    each computed from the cavity q / (tied factor) (section 2.3.1): the sum of the new sites
    equals the stored sum n x tied factor. Dense u-space algebra and closed-form moments."""
    model, X, y = _tiny_problem(n=12, C=3, M=5, tied=True)
    _run(model, X, y, 400)
    C, n = model.n_classes, model._n_factors
    blocks = ref.kernel_blocks(model.inducing_points.numpy(), X, *_kernel_arrays(model))
    Lam, eta = model.site_precision.numpy(), model.site_natural.numpy()
    cav = []
    for c, (K, Kx, s) in enumerate(blocks):
        P = np.linalg.inv(K) + Lam[c] * (1 - 1 / n)
        S = np.linalg.inv(P)
        v = np.linalg.solve(K, Kx)
        cav.append((v, v.T @ S @ (eta[c] * (1 - 1 / n)), np.einsum("mn,mk,kn->n", v, S, v), s))
    new_prec, new_nat = np.zeros_like(Lam), np.zeros_like(eta)
    for i, k in _factors(y, C):
        (vw, mw, vvw, sw), (vl, ml, vvl, sl) = cav[y[i]], cav[k]
        sites, _ = ref.tilted_site(mw[i], vvw[i], ml[i], vvl[i], sw[i] + sl[i])
        for (tau, nu), c, vc in zip(sites, (y[i], k), (vw, vl)):
            new_prec[c] += tau * np.outer(vc[:, i], vc[:, i])
            new_nat[c] += nu * vc[:, i]
    np.testing.assert_allclose(Lam, new_prec, rtol=1e-6, atol=1e-8 * np.abs(Lam).max())
    np.testing.assert_allclose(eta, new_nat, rtol=1e-6, atol=1e-8 * np.abs(eta).max())


def test_sep_predictions_come_close_to_eps():
    ep, X, y = _tiny_problem(n=30, C=3, M=6, seed=1)
    sep, _, _ = _tiny_problem(n=30, C=3, M=6, seed=1, tied=True)
    _run(ep, X, y, 200), _run(sep, X, y, 200)
    grid = torch.tensor(np.random.default_rng(2).uniform(-2, 2, (200, 2)))
    diff = (ep.predict_proba(grid) - sep.predict_proba(grid)).abs()
    assert diff.max().item() < 0.05       # measured: 0.035
    assert diff.mean().item() < 0.015     # measured: 0.008


def test_converged_ep_has_only_proper_cavities_and_site_updates():
    model, X, y = _tiny_problem(n=30, C=4, M=5, damping=1.0, seed=3)
    _run(model, X, y, 30)
    assert int(model.n_improper_cavities) == 0
    assert int(model.n_skipped_updates) == 0


def test_improper_cavities_are_counted_and_their_sites_left_alone():
    """Mini-batch EP keeps q as the running sum; a stored site larger than what q holds along
    its direction leaves a cavity with negative precision."""
    model, X, y = _tiny_problem(n=12, C=3, M=4)
    Xt, yt = torch.tensor(X), torch.tensor(y)
    batches = [torch.arange(b, b + 4) for b in (0, 4, 8)]
    for _ in range(5):
        for b in batches:
            model.local_update(Xt[b], yt[b], b)
    assert int(model.n_improper_cavities) == 0
    model.factor_c1[0] *= 1e6
    before = model.factor_c1[0].clone()
    b = batches[0]
    model.local_update(Xt[b], yt[b], b)
    assert int(model.n_improper_cavities) == model.n_classes - 1           # the factors of point 0
    assert torch.equal(model.factor_c1[0], before)
    assert int(model.n_skipped_updates) == 0
