"""Every registered likelihood keeps the contract of :mod:`alphagp.testing.likelihood_contract`
(a likelihood added to the registry is covered here without an edit)."""

import inspect

import pytest

from alphagp import likelihoods
from alphagp.likelihoods import LIKELIHOODS, Likelihood
from alphagp.testing import likelihood_contract as contract

NAMES = list(LIKELIHOODS)
CHECKS = [contract.check_log_expected_power, contract.check_expected_log_lik, contract.check_tilted_derivatives,
          contract.check_predict_proba, contract.check_config_round_trip]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", NAMES)
def test_likelihood_contract(name, check):
    check(name, LIKELIHOODS[name]())


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_likelihood_class_is_registered():
    """A likelihood class of the package that is not in the registry escapes the contract tests."""
    concrete = {cls for cls in _subclasses(Likelihood)
                if not inspect.isabstract(cls) and cls.__module__.startswith(likelihoods.__name__)}
    assert concrete <= set(LIKELIHOODS.values()), f"not registered: {concrete - set(LIKELIHOODS.values())}"
