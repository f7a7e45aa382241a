"""EP's step written once (:mod:`alphagp.methods.ep_step`): the cavity and the validated, counted,
damped update against their definitions, and a method built on the step in one module (storage and
tilted moments only) that keeps every contract and equals EP, whose tilted moments are closed form."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from examples_of_methods.pair_ep_autodiff import PairEPAutodiff

from alphagp import GPClassifier, testing
from alphagp.gaussians import gaussian_log_normaliser
from alphagp.methods import METHODS, MethodSpec
from alphagp.methods.ep_step import accepted, damped, remove_sites


def test_the_cavity_takes_alpha_times_the_sites_out_and_flags_improper_ones():
    f64 = torch.float64
    tau, nu = torch.tensor([[2.0, 3.0], [1.0, 4.0]], dtype=f64), torch.tensor([[0.5, -1.0], [2.0, 0.0]], dtype=f64)
    prec, nat = torch.tensor([[1.0, 1.0], [3.0, 0.5]], dtype=f64), torch.tensor([[0.2, 0.1], [0.3, -0.4]], dtype=f64)
    cav = remove_sites(tau, nu, prec, nat, 0.5, torch.zeros(2, 2, dtype=f64))
    np.testing.assert_allclose(cav.var[0], 1 / (tau[0] - 0.5 * prec[0]))
    np.testing.assert_allclose(cav.mean[0], (nu[0] - 0.5 * nat[0]) / (tau[0] - 0.5 * prec[0]))
    assert cav.improper.tolist() == [False, True]               # 1 - 0.5 * 3 < 0 in the second factor
    g = gaussian_log_normaliser
    expected = (g(tau[0] - 0.5 * prec[0], nu[0] - 0.5 * nat[0]) - g(tau[0], nu[0])).sum()
    np.testing.assert_allclose(cav.g_diff[0], expected, rtol=1e-14)


def test_only_proper_valid_factors_are_updated_and_the_rest_are_counted():
    f64 = torch.float64
    cav = remove_sites(torch.ones(4, 2, dtype=f64), torch.zeros(4, 2, dtype=f64),
                       torch.tensor([[0.0, 0], [2, 0], [0, 0], [0, 0]], dtype=f64), torch.zeros(4, 2, dtype=f64), 1.0,
                       torch.zeros(4, 2, dtype=f64))
    ok = torch.tensor([True, True, False, True])
    keep, n_improper, n_skipped = accepted(cav, ok, is_factor=torch.tensor([True, True, True, False]))
    assert keep.tolist() == [True, False, False, False]
    assert (int(n_improper), int(n_skipped)) == (1, 1)
    new, old = torch.full((4,), 3.0, dtype=f64), torch.ones(4, dtype=f64)
    np.testing.assert_allclose(damped(new, old, keep, 0.25), [1.5, 1.0, 1.0, 1.0])


@pytest.fixture
def registered(monkeypatch):
    """The example's registry line."""
    monkeypatch.setitem(METHODS, "pair_ep_autodiff", MethodSpec(
        PairEPAutodiff, "EP's pairwise factors, autodiff tilted moments (example)", "heaviside",
        fixed={"alpha": 1.0}))
    return "pair_ep_autodiff"


def test_a_method_on_eps_step_in_one_module_keeps_every_contract(registered, tmp_path):
    testing.check_fit_predict(registered)
    testing.check_round_trip(registered, tmp_path)
    (tmp_path / "resume").mkdir()
    testing.check_resume(registered, tmp_path / "resume")
    testing.check_objective_gradient(registered)
    testing.check_trainable(registered)
    testing.check_bad_input(registered)
    testing.check_capabilities_before_build(registered)


@pytest.mark.parametrize("batch_size", [None, 20])
def test_the_one_module_method_equals_ep(registered, batch_size):
    X, y = testing.contract_problem()
    fits = [GPClassifier(method=name, n_inducing=5, max_iter=4, batch_size=batch_size, random_state=0).fit(X, y)
            for name in ("ep", registered)]
    np.testing.assert_allclose(fits[1].predict_proba(X), fits[0].predict_proba(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fits[1].model_.factor_c1.numpy(), fits[0].model_.factor_c1.numpy(), rtol=1e-8,
                               atol=1e-10)
