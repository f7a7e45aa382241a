"""The robust-max methods (REP, PEP, APEP, ARPEP, RPAPEP, VI) against independent computations:
EP where the likelihoods coincide, the VI bound (dense NumPy/SciPy) as alpha -> 0, PEP for
APEP with one data point, and finite differences for every objective."""

import numpy as np
import pytest
import torch

from alphagp import GPClassifier
from alphagp.estimators import model_selection
from alphagp.kernels import ARDKernel
from alphagp.methods import METHODS, build_method, n_latent
from alphagp.testing import dense_reference as ref

from conftest import Interrupt, interrupt_at

ROBUST = ["rep", "pep", "apep", "arpep", "rpapep", "vi"]


def _problem(n=12, C=3, M=4, seed=0):
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, 2))
    y = g.permutation(np.arange(n) % C)
    Z = np.stack([X[g.choice(n, M, replace=False)] + 0.1 * g.standard_normal((M, 2)) for _ in range(C)])
    return torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(Z)


def _build(name, Z, n, **config):
    kernel = ARDKernel(Z.shape[0], Z.shape[2], lengthscale=1.2, amplitude=1.5, noise=0.05)
    kernel.requires_grad_(False)
    model = build_method(name, Z, kernel, n_data=n, **config)
    model.inducing_points.requires_grad_(False)
    return model


def _blocks(model, X):
    k, C = model.kernel, model.n_classes
    with torch.no_grad():
        arrays = (k.lengthscale.expand(C, -1).numpy(), k.amplitude.expand(C).numpy(), k.noise.expand(C).numpy())
    return ref.kernel_blocks(model.inducing_points.detach().numpy(), X.numpy(), *arrays)


def _randomise_q(model, seed=1):
    """Move a gradient-fitted q away from the prior (a generic point to compare energies at)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                if p.dim() == 3:   # a Cholesky factor
                    p.copy_(torch.tril(0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))
                            + 0.7 * torch.eye(p.shape[-1], dtype=p.dtype))
                else:
                    p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))


def _u_space_q(model, name, blocks):
    """q(u^c) (mean, covariance) per class from the model's own parameters, via dense algebra."""
    out = []
    for c, (K, _, _) in enumerate(blocks):
        if name == "pep":
            out.append(ref.u_space_q_from_sites(K, model.site_precision[c].numpy(), model.site_natural[c].numpy()))
        elif name == "apep":
            R = np.tril(model.site_sqrt[c].detach().numpy())
            cov_w = np.linalg.inv(np.eye(len(R)) + R @ R.T)
            out.append(ref.u_space_q_from_whitened(K, cov_w @ model.site_natural[c].detach().numpy(), cov_w))
        else:
            R = np.tril(model.q_sqrt[c].detach().numpy())
            out.append(ref.u_space_q_from_whitened(K, model.q_mean[c].detach().numpy(), R @ R.T))
    return [m for m, _ in out], [S for _, S in out]


def _trainable(model):
    return [p for p in model.parameters() if p.requires_grad]


def _maximise(model, params, X, y, idx, iterations, tolerance_grad):
    """Maximise ``model.objective`` over ``params`` with L-BFGS (strong-Wolfe line search)."""
    opt = torch.optim.LBFGS(params, max_iter=iterations, tolerance_grad=tolerance_grad, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = -model.objective(X, y, idx)
        loss.backward()
        return loss

    opt.step(closure)


def test_pep_at_alpha_one_is_ep_where_the_likelihoods_coincide():
    """With two classes the product-of-Phi factor is the exact Heaviside factor, so PEP with
    epsilon = 0 and alpha = 1 must reach EP's fixed point, energy and energy gradient."""
    X, y, Z = _problem(n=30, C=2, M=5)
    idx = torch.arange(len(y))
    ep, pep = _build("ep", Z, len(y)), _build("pep", Z, len(y), alpha=1.0, epsilon=0.0)
    for _ in range(150):
        ep.local_update(X, y, idx)
        pep.local_update(X, y, idx)
    for a, b in zip(ep.predict_f(X), pep.predict_f(X)):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)
    for m in (ep, pep):
        m.kernel.requires_grad_(True)
    e_ep, e_pep = ep.objective(X, y, idx), pep.objective(X, y, idx)
    assert e_pep.item() == pytest.approx(e_ep.item(), rel=1e-10)
    grads = [torch.autograd.grad(e, list(m.kernel.parameters())) for e, m in ((e_ep, ep), (e_pep, pep))]
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["pep", "apep", "arpep", "rpapep", "vi"])
def test_energy_tends_to_the_vi_bound_as_alpha_goes_to_zero(name):
    """alpha -> 0 limit of eq. 8, 9 and 10 (and VI itself) against the ELBO of the same q, computed
    densely with adaptive quadrature."""
    X, y, Z = _problem()
    idx = torch.arange(len(y))
    eps = 0.01
    if name == "pep":   # sites from a few power-EP updates, then the energy at alpha -> 0
        model = _build(name, Z, len(y), alpha=0.5, epsilon=eps)
        for _ in range(5):
            model.local_update(X, y, idx)
        model.alpha = 1e-5
    else:
        model = _build(name, Z, len(y), epsilon=eps, **({} if name == "vi" else {"alpha": 1e-5}))
        _randomise_q(model)
    blocks = _blocks(model, X)
    elbo = ref.robust_max_elbo(blocks, *_u_space_q(model, name, blocks), y.numpy(), eps)
    with torch.no_grad():
        energy = model.objective(X, y, idx).item()
    assert energy == pytest.approx(elbo, abs=2e-3 * abs(elbo))
    if name != "vi":  # and it is not the bound at alpha = 1 (the test can tell them apart)
        model.alpha = 1.0
        with torch.no_grad():
            assert abs(model.objective(X, y, idx).item() - elbo) > 0.02 * abs(elbo)


def test_apep_with_one_data_point_equals_pep():
    """With N = 1 the tied factor is the only factor: APEP's energy maximum is PEP's fixed point."""
    X, y, Z = _problem(n=5, C=3, M=2)
    X, y, idx = X[:1], y[:1], torch.arange(1)
    pep = _build("pep", Z, 1, alpha=0.5, epsilon=1e-3)
    for _ in range(300):
        pep.local_update(X, y, idx)
    apep = _build("apep", Z, 1, alpha=0.5, epsilon=1e-3)
    _maximise(apep, _trainable(apep), X, y, idx, iterations=500, tolerance_grad=1e-12)
    X_test = torch.as_tensor(np.random.default_rng(3).standard_normal((20, 2)))
    (m_pep, v_pep), (m_apep, v_apep) = pep.predict_f(X_test), apep.predict_f(X_test)
    torch.testing.assert_close(m_apep, m_pep, rtol=1e-5, atol=1e-6)
    # PEP's factor is rank one per class; APEP's R R' reaches it only as its second eigenvalue
    # tends to 0, slowly (1e-5 after L-BFGS converges in the energy to 1e-9): variances agree to 1e-4
    torch.testing.assert_close(v_apep, v_pep, rtol=0, atol=1e-4)
    with torch.no_grad():
        assert apep.objective(X, y, idx).item() == pytest.approx(pep.objective(X, y, idx).item(), abs=1e-8)


@pytest.mark.parametrize("name", [name for name, spec in METHODS.items() if spec.cls.CAPABILITIES.exact_gradient])
def test_objective_gradients_match_finite_differences(name):
    """Directional derivatives of every objective (kernel, inducing points, q), sites held fixed,
    for every registered method whose gradient is exact (GFITC's, whose site constants are held
    too, is checked against its re-converged EP estimate in test_gfitc.py)."""
    X, y, Z = _problem()
    idx = torch.arange(len(y))
    model = _build(name, Z[:n_latent(name, Z.shape[0])], len(y), n_classes=Z.shape[0])  # a likelihood's cut points too
    if hasattr(model, "factor_c1") or hasattr(model, "site_precision"):
        for _ in range(4):   # EP methods: move the sites off zero first
            model.local_update(X, y, idx)
    else:
        _randomise_q(model)
    model.kernel.requires_grad_(True)
    model.inducing_points.requires_grad_(True)
    params = _trainable(model)
    value = model.objective(X, y, idx)
    # an objective no parameter moves (the class frequencies) has the gradient 0, checked as any other
    grads = torch.autograd.grad(value, params) if value.requires_grad else [torch.zeros_like(p) for p in params]
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        direction = [torch.randn(p.shape, generator=g, dtype=p.dtype) for p in params]
        analytic = sum((gr * d).sum() for gr, d in zip(grads, direction)).item()
        h = 1e-5
        values = []
        for sign in (1.0, -1.0):
            with torch.no_grad():
                for p, d in zip(params, direction):
                    p.add_(sign * h * d)
                values.append(model.objective(X, y, idx).item())
                for p, d in zip(params, direction):
                    p.sub_(sign * h * d)
        numeric = (values[0] - values[1]) / (2 * h)
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6)


# ---------------------------------------------------------------- through the estimator
@pytest.mark.parametrize("name", ROBUST)
def test_every_robust_method_fits_end_to_end_and_round_trips(thyroid, tmp_path, name):
    from sklearn.model_selection import train_test_split
    X, y = thyroid
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    # EP methods refine q in closed form; the others move it by Adam steps of 0.01 and need more epochs
    max_iter = 40 if name in ("rep", "pep") else 200
    clf = GPClassifier(method=name, n_inducing=8, max_iter=max_iter, random_state=0).fit(Xtr, ytr)
    metrics = clf.evaluate(Xte, yte)
    assert metrics["error"] < 0.1 and metrics["nll"] < 0.35, metrics
    assert clf.n_improper_cavities_ == 0
    clf.save(tmp_path / "m")
    again = GPClassifier.load(tmp_path / "m")
    assert np.array_equal(again.predict_proba(Xte), clf.predict_proba(Xte))


@pytest.mark.parametrize("params, message", [
    (dict(method="rep", alpha=0.5), "rep.*alpha=1.0.*pep"),
    (dict(method="vi", alpha=0.5), "alpha -> 0 limit"),
    (dict(method="ep", epsilon=0.01), "no labelling-error probability"),
    (dict(method="vi", damping=0.5), "no EP updates to damp"),
    (dict(method="vi", epsilon=0.0), "VI needs epsilon > 0"),
    (dict(method="pep", epsilon=1.0), "epsilon"),
])
def test_method_and_option_mismatches_get_clear_errors(thyroid, params, message):
    X, y = thyroid
    with pytest.raises(ValueError, match=message):
        GPClassifier(n_inducing=5, max_iter=2, **params).fit(X, y)


@pytest.mark.parametrize("name, batch_size", [("pep", 50), ("vi", None), ("apep", 50)])
def test_resume_reproduces_the_uninterrupted_fit(thyroid, tmp_path, name, batch_size):
    """Checkpoints hold each method's state and its optimiser's (Adam's moments included)."""
    X, y = thyroid
    params = dict(method=name, n_inducing=6, max_iter=8, batch_size=batch_size, random_state=3)
    full = GPClassifier(**params).fit(X, y)
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Interrupt):
        GPClassifier(checkpoint=str(path), **params).fit(X, y, callbacks=[interrupt_at(4)])
    with pytest.warns(UserWarning, match="resuming"):
        resumed = GPClassifier(checkpoint=str(path), **params).fit(X, y)
    np.testing.assert_allclose(resumed.predict_proba(X), full.predict_proba(X), atol=1e-10)


def test_alpha_auto_picks_the_best_cross_validated_log_likelihood(thyroid, tmp_path):
    """alpha="auto" is the one selection engine's: each alpha of the grid a candidate, scored on
    the engine's folds (independently refitted here), the best refitted and its scores kept in
    ``cv_results_`` and in model files."""
    from sklearn.model_selection import StratifiedKFold
    X, y = thyroid
    params = dict(method="pep", n_inducing=6, max_iter=15, random_state=0)
    clf = GPClassifier(alpha="auto", alpha_grid=[0.1, 1.0], cv=2, **params).fit(X, y)
    seed = int(np.random.default_rng(0).integers(2**31 - 1))
    folds = {a: [GPClassifier(**{**params, "alpha": a, "random_state": seed}).fit(X[tr], y[tr])
                 .evaluate(X[te], y[te])["nll"] for tr, te in StratifiedKFold(2, shuffle=True, random_state=seed)
                 .split(X, y)] for a in (0.1, 1.0)}          # the same folds, scored independently
    results = clf.cv_results_
    assert results["candidate"] == ["pep(alpha=0.1)", "pep(alpha=1)"] and clf.selection_scheme_ == "cv"
    np.testing.assert_allclose(results["split0_test_nll"], [folds[0.1][0], folds[1.0][0]], rtol=1e-9)
    raced = (len(y) // 2 >= model_selection.RACE_ROWS                # the engine's racing, replayed
             and model_selection.behind(folds[1.0][:1], folds[0.1]))
    np.testing.assert_allclose(results["mean_test_nll"], [np.mean(folds[0.1]), np.nan if raced else np.mean(folds[1.0])],
                               rtol=1e-9)
    expected = {0.1: np.mean(folds[0.1]), **({} if raced else {1.0: np.mean(folds[1.0])})}
    assert clf.alpha_ == min(expected, key=expected.get) == clf.model_.alpha
    assert clf.candidate_ == f"pep(alpha={clf.alpha_:g})"
    clf.save(tmp_path / "m")
    np.testing.assert_array_equal(GPClassifier.load(tmp_path / "m").cv_results_["mean_test_nll"],
                                  results["mean_test_nll"])
    with pytest.raises(ValueError, match="alpha -> 0 limit"):
        GPClassifier(method="vi", alpha="auto", alpha_grid=[0.5], cv=2, n_inducing=4, max_iter=2).fit(X, y)


def test_active_learning_picks_the_pool_point_of_highest_entropy(thyroid):
    from scipy.stats import entropy

    from alphagp.active import most_uncertain, predictive_entropy
    X, y = thyroid
    clf = GPClassifier(method="ep", n_inducing=6, max_iter=10, random_state=0).fit(X[::3], y[::3])
    pool = X[1::3]
    proba = clf.predict_proba(pool)
    h = [entropy(p) for p in proba]
    np.testing.assert_allclose(predictive_entropy(proba), h)
    assert list(most_uncertain(clf, pool, n=3)) == list(np.argsort(h)[::-1][:3])


def test_vi_natural_gradient_steps_reach_a_stationary_point_of_the_elbo():
    """With the kernel fixed, natural-gradient steps on q stop where the ELBO's gradient in q's
    parameters vanishes, and at the ELBO plain gradient ascent reaches."""
    X, y, Z = _problem(n=20)
    idx = torch.arange(len(y))
    natural = _build("vi", Z, len(y), natural_gradient_rate=0.5)
    for _ in range(400):   # the likelihood is not conjugate: the steps converge linearly
        natural.local_update(X, y, idx)
    q = [natural.q_mean, natural.q_sqrt]
    for p in q:
        p.requires_grad_(True)
    elbo = natural.objective(X, y, idx)
    grads = torch.autograd.grad(elbo, q)
    assert max(g.abs().max().item() for g in grads) < 1e-4
    plain = _build("vi", Z, len(y))
    _maximise(plain, [plain.q_mean, plain.q_sqrt], X, y, idx, iterations=2000, tolerance_grad=1e-10)
    assert elbo.item() == pytest.approx(plain.objective(X, y, idx).item(), abs=1e-6)
