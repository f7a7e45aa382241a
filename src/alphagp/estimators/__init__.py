"""The scikit-learn estimators: :class:`GPClassifier` (every method of the registry) and the
deep-GP estimators, on one shared base (:mod:`.base`)."""

from .deep_gp import DeepGPClassifier, DeepGPRegressor
from .gp_classifier import GPClassifier

__all__ = ["DeepGPClassifier", "DeepGPRegressor", "GPClassifier"]
