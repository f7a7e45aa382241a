"""Likelihoods: each knows its tilted moments or expectations and its predictive integral."""

from .heaviside import HeavisideLikelihood
from .robust_max import RobustMaxLikelihood
from .softmax import LogisticSoftmaxLikelihood, MonteCarloLikelihood, SoftmaxLikelihood

__all__ = ["HeavisideLikelihood", "LogisticSoftmaxLikelihood", "MonteCarloLikelihood", "RobustMaxLikelihood",
           "SoftmaxLikelihood"]
