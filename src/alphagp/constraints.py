"""scikit-learn's parameter constraints, the one place alphagp imports them from.

The estimators, methods and likelihoods declare their parameters' ranges with scikit-learn's
``Interval`` and ``StrOptions`` and check them with its validation, as scikit-learn's own
estimators do. They live in a private scikit-learn module (``sklearn.utils._param_validation``,
with no public path in scikit-learn 1.9); importing them here alone keeps that dependency on a
private name to one line to change.
"""

from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = ["Interval", "InvalidParameterError", "StrOptions", "validate_parameter_constraints"]
