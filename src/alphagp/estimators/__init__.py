"""The scikit-learn estimators: :class:`GPClassifier` (every method of the registry), its
ordered-classes form :class:`GPOrdinalClassifier`, and the deep-GP estimators, on one shared
base (:mod:`.base`)."""

from .deep_gp import DeepGPClassifier, DeepGPRegressor
from .gp_classifier import GPClassifier
from .gp_ordinal import GPOrdinalClassifier

__all__ = ["DeepGPClassifier", "DeepGPRegressor", "GPClassifier", "GPOrdinalClassifier"]
