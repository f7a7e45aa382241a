"""Likelihoods: each knows its tilted moments and its predictive integral."""

from .heaviside import HeavisideLikelihood
from .robust_max import RobustMaxLikelihood

__all__ = ["HeavisideLikelihood", "RobustMaxLikelihood"]
