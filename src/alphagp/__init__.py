"""alphagp: scalable Gaussian-process classification with calibrated probabilities."""

from .estimator import GPClassifier

__version__ = "0.1.0"
__all__ = ["GPClassifier", "__version__"]
