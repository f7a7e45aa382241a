"""Likelihoods (the contract: :mod:`alphagp.likelihoods.base`) and their registry.

A new likelihood is one module with a :class:`~alphagp.likelihoods.base.Likelihood` subclass and
one line in :data:`LIKELIHOODS`; a method registry entry names it (``MethodSpec.likelihood``), and
the contract tests check it without edits.
"""

from __future__ import annotations

from .base import CategoricalLikelihood, Likelihood
from .gaussian import GaussianLikelihood
from .heaviside import HeavisideLikelihood
from .ordinal import OrdinalLikelihood
from .probit import ProbitLikelihood
from .robust_max import DEFAULT_EPSILON, RobustMaxLikelihood
from .softmax import LogisticSoftmaxLikelihood, MonteCarloLikelihood, SoftmaxLikelihood

#: name -> likelihood class; the names that method registry entries and deep GPs use
LIKELIHOODS: dict[str, type[Likelihood]] = {
    "heaviside": HeavisideLikelihood,
    "robust_max": RobustMaxLikelihood,
    "softmax": SoftmaxLikelihood,
    "logistic_softmax": LogisticSoftmaxLikelihood,
    "probit": ProbitLikelihood,
    "ordinal": OrdinalLikelihood,
    "gaussian": GaussianLikelihood,
}


def likelihood_class(name: str) -> type[Likelihood]:
    """The class registered as ``name``; ``ValueError`` naming the registered ones."""
    try:
        return LIKELIHOODS[name]
    except KeyError:
        raise ValueError(f"likelihood must be one of {tuple(LIKELIHOODS)}, got {name!r}") from None


__all__ = ["DEFAULT_EPSILON", "LIKELIHOODS", "CategoricalLikelihood", "GaussianLikelihood", "HeavisideLikelihood",
           "Likelihood", "LogisticSoftmaxLikelihood", "MonteCarloLikelihood", "OrdinalLikelihood", "ProbitLikelihood",
           "RobustMaxLikelihood", "SoftmaxLikelihood", "likelihood_class"]
