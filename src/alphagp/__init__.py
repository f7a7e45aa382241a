"""alphagp: scalable Gaussian-process classification with calibrated probabilities.

The estimators are imported when first used (PEP 562), so that ``alphagp --version`` and other
work that needs no model do not import PyTorch and scikit-learn."""

from .version import __version__

__all__ = ["DeepGPClassifier", "DeepGPRegressor", "GPClassifier", "GPOrdinalClassifier", "__version__"]


def __getattr__(name: str):
    if name in ("DeepGPClassifier", "DeepGPRegressor", "GPClassifier", "GPOrdinalClassifier"):
        from . import estimators
        return getattr(estimators, name)
    raise AttributeError(f"module 'alphagp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
