"""Likelihoods: each knows its tilted moments and its predictive integral."""

from .heaviside import HeavisideLikelihood

__all__ = ["HeavisideLikelihood"]
