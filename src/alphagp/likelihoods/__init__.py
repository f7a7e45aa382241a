"""Likelihoods: each knows its tilted moments or expectations and its predictive integral."""

from .gaussian import GaussianLikelihood
from .heaviside import HeavisideLikelihood
from .probit import ProbitLikelihood
from .robust_max import RobustMaxLikelihood
from .softmax import LogisticSoftmaxLikelihood, MonteCarloLikelihood, SoftmaxLikelihood

__all__ = ["GaussianLikelihood", "HeavisideLikelihood", "LogisticSoftmaxLikelihood", "MonteCarloLikelihood",
           "ProbitLikelihood", "RobustMaxLikelihood", "SoftmaxLikelihood"]
