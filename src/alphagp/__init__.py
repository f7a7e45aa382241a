"""alphagp: scalable Gaussian-process classification with calibrated probabilities."""

from .estimators import DeepGPClassifier, DeepGPRegressor, GPClassifier

__version__ = "0.1.0"
__all__ = ["DeepGPClassifier", "DeepGPRegressor", "GPClassifier", "__version__"]
