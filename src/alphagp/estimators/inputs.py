"""The input stage of a fit (and of every prediction): what the estimators accept as features,
targets and weights, and what they refuse with a one-line error; functions of the estimator's
parameters.

:func:`validate` checks the features with scikit-learn's ``validate_data`` (float64, finite; non-numeric columns and
NaN or infinity named), or a mixed-type table through its encoding (``categorical_features``,
:mod:`alphagp.data.tables`), and resolves the rows' weights (``sample_weight`` times
``class_weight``, rows of weight 0 left out)."""

from __future__ import annotations

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted, validate_data


def non_numeric_columns(X) -> str | None:
    """What makes a DataFrame's columns unusable as numbers (``None`` where all are numeric, and
    for arrays): each such column named with its dtype, or with the missing values (``pd.NA``,
    ``None``) an object column of numbers holds."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(dtypes, "items"):
        return None
    import pandas as pd
    problems = []
    for column, dtype in dtypes.items():
        if pd.api.types.is_numeric_dtype(dtype):
            continue
        values = X[column]
        if dtype == object:
            numbers = pd.to_numeric(values, errors="coerce")
            text = values[numbers.isna() & values.notna()]
            if len(text) == 0 and not values.isna().any():
                continue                                          # numbers stored as objects
            if len(text) == 0:
                problems.append(f"column {column!r} holds missing values ({values.isna().sum()} of "
                                f"{len(values)}, e.g. {values[values.isna()].iloc[0]!r})")
                continue
            problems.append(f"column {column!r} holds text (e.g. {text.iloc[0]!r})")
        else:
            problems.append(f"column {column!r} has dtype {dtype}")
    if not problems:
        return None
    return ("; ".join(problems[:5]) + (f" and {len(problems) - 5} more" if len(problems) > 5 else "")
            + ": encode such columns as numbers, impute missing values, or drop them")


def non_finite_cells(X, chunk: int = 65536) -> str:
    """Where ``X`` ``[N, D]`` holds NaN or infinity: the columns (names where ``X`` has them) and
    the first row, read ``chunk`` rows at a time."""
    names = list(X.columns) if hasattr(X, "columns") else None
    values = X.to_numpy(dtype=np.float64, na_value=np.nan) if names is not None else X
    columns, first_row = np.zeros(values.shape[1], dtype=bool), None
    for start in range(0, len(values), chunk):
        bad = ~np.isfinite(np.asarray(values[start:start + chunk], dtype=np.float64))
        if first_row is None and bad.any():
            first_row = start + int(np.flatnonzero(bad.any(1))[0])
        columns |= bad.any(0)
    where = np.flatnonzero(columns)
    labels = [repr(names[j]) if names is not None else str(j) for j in where[:10]]
    more = f" and {len(where) - 10} more" if len(where) > 10 else ""
    kind = "columns" if len(where) > 1 else "column"
    return f"NaN or infinity in {kind} {', '.join(labels)}{more} (first in row {first_row}, counted from 0)"


#: the most the rows' weights may sum to: a weight w raises a row's likelihood to the power w (w
#: copies of the row), and float64 counts whole rows exactly up to about 9e15; measured, a single
#: weight of 1e17 among ones still fits and 1e20 does not (issue 60)
MAX_TOTAL_WEIGHT = 1e15


def check_rows_match(X, y) -> None:
    """A one-line ``ValueError`` unless ``X`` and ``y`` have as many rows."""
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)} values; give one target per row")


def encodes_table(X, reset: bool, categorical_features, encoding) -> bool:
    """Whether ``X`` goes through the table encoding (:func:`validate_table`): at ``fit``
    (``reset``), a pandas DataFrame with a column that is not a finite number (text, ``category``,
    boolean, datetime, or a missing value) under ``categorical_features="from_dtype"`` (the
    default; scikit-learn's ``HistGradientBoostingClassifier`` reads a DataFrame's dtypes the
    same way); after it, whenever the fit encoded its table (its ``encoding``, or ``None``). Arrays
    and numeric DataFrames without missing values are validated as numbers, exactly as with
    ``categorical_features=None``."""
    if not reset:
        return encoding is not None
    import pandas as pd
    if categorical_features is None or not isinstance(X, pd.DataFrame):
        return False
    numeric = all(pd.api.types.is_numeric_dtype(d) and not pd.api.types.is_bool_dtype(d) for d in X.dtypes)
    return not numeric or bool(X.isna().to_numpy().any())


def validate(est, X, y="no_validation", reset=False, **checks):
    """scikit-learn's validation (float64, finite; ``checks`` go to ``validate_data``), with
    one-line messages that name the columns: non-numeric ones (a DataFrame's strings,
    categories, datetimes, ``pd.NA``) and those holding NaN or infinity. A DataFrame of mixed
    types (:func:`encodes_table`) is validated and encoded as a table instead (:func:`validate_table`)."""
    name = type(est).__name__
    if y is not None and not (isinstance(y, str) and y == "no_validation") and is_classifier(est):
        from ..labels import describe_rows, missing_labels
        missing = missing_labels(y)
        if len(missing):
            raise ValueError(f"{name} needs a label for every row: y is missing {len(missing)} "
                             f"({describe_rows(missing)}, counted from 0); drop those rows or give them a label")
    if encodes_table(X, reset, getattr(est, "categorical_features", None), getattr(est, "table_encoding_", None)):
        return validate_table(est, X, y, reset)
    if reset:
        est.__dict__.pop("table_encoding_", None)           # an earlier fit's encoding
    problem = non_numeric_columns(X)
    if problem:
        hint = ("; categorical_features='from_dtype' (the default) one-hot encodes such columns of a DataFrame"
                if "categorical_features" in est.get_params() else "")
        raise ValueError(f"{name} needs numeric features: {problem}{hint}")
    if checks.get("y_numeric"):
        try:
            np.asarray(y, dtype=np.float64)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{name} needs numeric targets: {err}") from None
    try:
        return validate_data(est, X, y, reset=reset, dtype=np.float64, ensure_all_finite=True, **checks)
    except (ValueError, TypeError) as err:
        text = str(err)
        if "NaN" in text or "infinity" in text:
            raise ValueError(f"{name} needs finite features: X has {non_finite_cells(X)}; impute them "
                             "(e.g. sklearn.impute.SimpleImputer) or drop those rows") from None
        if "could not convert" in text:
            raise ValueError(f"{name} needs numeric features: {text}") from None
        raise

def validate_table(est, X, y="no_validation", reset=False):
    """:meth:`_validate` for a mixed-type table (``categorical_features="from_dtype"``): ``X`` a
    DataFrame whose columns ``fit`` records (``feature_names_in_``, ``n_features_in_``) and
    encodes (``table_encoding_``, :mod:`alphagp.data.tables`); returns the encoded float64
    features ``[N, width]`` (and ``y``)."""
    import pandas as pd
    from sklearn.utils import check_consistent_length, column_or_1d
    from sklearn.utils.validation import _check_feature_names, _check_n_features, check_array

    from ..data.tables import TableEncoding
    name = type(est).__name__
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"{name}(categorical_features='from_dtype') needs a pandas DataFrame, whose dtypes say "
                         f"which columns are categorical; got {type(X).__name__}")
    if not reset:
        check_is_fitted(est, "table_encoding_")
    _check_feature_names(est, X, reset=reset)
    _check_n_features(est, X, reset=reset)
    if reset:
        est.table_encoding_ = TableEncoding.fit(X)
    if len(X) == 0:
        raise ValueError(f"{name} needs at least one row; X has none")
    try:
        features = check_array(est.table_encoding_.transform(X), dtype=np.float64, ensure_all_finite=True)
    except ValueError as err:
        raise ValueError(f"{name} needs finite numeric features: {err}") from None
    if isinstance(y, str) and y == "no_validation":
        return features
    y = column_or_1d(y)
    check_consistent_length(features, y)
    return features, y

def table_content(encoding) -> dict:
    """The table ``encoding``'s part of a model file (``{}`` without one: ``None``)."""
    return {} if encoding is None else {"table_encoding": encoding.to_plain()}

def table_encoding_of_file(content: dict, feature_names):
    """The table encoding a model file's ``content`` holds (``None``: none), checked against the
    model's input columns ``feature_names``."""
    if content.get("table_encoding") is None:
        return None
    from ..data.tables import TableEncoding
    encoding = TableEncoding.from_plain(content["table_encoding"])
    if [c["name"] for c in encoding.columns] != [str(n) for n in feature_names]:
        raise ValueError("the table encoding's columns are not the model's input columns")
    return encoding


def feature_groups(encoding, width: int) -> np.ndarray:
    """``[width]`` the table column of each feature the model sees (the table ``encoding``'s
    :meth:`~alphagp.data.tables.TableEncoding.feature_columns`; every feature its own without one,
    ``None``): what ``RBF("columns")`` ties its lengthscales by."""
    return np.arange(width) if encoding is None else np.asarray(encoding.feature_columns())


def input_width(n_features_in: int, encoding) -> int:
    """The number of features the model sees: the table ``encoding``'s where there is one, else the
    input columns ``n_features_in``."""
    return n_features_in if encoding is None else encoding.width

# ------------------------------------------------------------------ sample weights
def evaluation_weights(sample_weight, n_rows: int) -> np.ndarray:
    """``sample_weight`` of an evaluation of ``n_rows`` rows as ``[N]`` float64: non-negative, finite,
    one per row and not all zero (``ValueError`` otherwise)."""
    from sklearn.utils.validation import _check_sample_weight
    weight = _check_sample_weight(sample_weight, np.empty((n_rows, 0)), dtype=np.float64, ensure_non_negative=True)
    if not np.all(np.isfinite(weight)) or not weight.sum() > 0:
        raise ValueError("sample_weight must be finite with at least one positive weight")
    return weight


def fit_weights(sample_weight, X, y, class_weight=None, refusal: str | None = None,
                classes=None) -> np.ndarray | None:
    """The weights ``[N]`` of the training rows: ``sample_weight`` (validated: non-negative,
    finite, not all 0) times the class weights of ``class_weight`` where given (scikit-learn's
    semantics; ``y`` the labels), or ``None`` when neither is given. ``classes``: the labels a
    ``class_weight`` dict may name (default: those of ``y``; a stream's calls name all of its
    classes). ``refusal``: why the method takes no weights (a ``ValueError`` where weights are
    given; ``None``: it takes them). Raises ``ValueError`` too for a ``class_weight`` naming another
    class or giving one a weight that is not a finite non-negative number, and for weights summing
    to more than :data:`MAX_TOTAL_WEIGHT` (named by the largest)."""
    if sample_weight is None and class_weight is None:
        return None
    from sklearn.utils.class_weight import compute_sample_weight
    from sklearn.utils.validation import _check_sample_weight
    if refusal is not None:
        raise ValueError(refusal)
    weight = (np.ones(len(y)) if sample_weight is None else
              _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True, copy=True))
    if isinstance(class_weight, dict):
        known = set((np.unique(y) if classes is None else classes).tolist())
        unseen = [c for c in class_weight if c not in known]
        if unseen:
            raise ValueError(f"class_weight names classes not in y: {unseen}; the classes are {sorted(known)}")
        bad = {c: w for c, w in class_weight.items()
               if isinstance(w, bool) or not isinstance(w, (int, float, np.number)) or not 0 <= w < np.inf}
        if bad:
            raise ValueError(f"class_weight must give each class a finite non-negative number; got {bad}")
        weight *= np.array([float(class_weight.get(label, 1.0)) for label in np.asarray(y).tolist()])
    elif class_weight is not None:
        weight *= compute_sample_weight(class_weight, y)
    total = float(weight.sum())
    if not total <= MAX_TOTAL_WEIGHT:
        row = int(np.argmax(weight))
        raise ValueError(f"the rows' weights (sample_weight times class_weight) sum to {total:.3g}, more than "
                         f"{MAX_TOTAL_WEIGHT:.0e}: a weight counts as repeated rows, and row {row}'s (counted from 0) "
                         f"{weight[row]:.3g} would count as more rows than a fit can represent; scale the "
                         "weights down (which also lowers how many rows they stand for)")
    return weight

def positive_weight_rows(X, y, weight, classifier: bool):
    """``(X, y, weight)`` without the rows of weight 0 (such a row is left out, exactly: the
    standardisation, the inducing inputs and the held-out splits never see it). Raises
    ``ValueError`` when a class of a ``classifier`` keeps no row."""
    if weight is None or (weight > 0).all():
        return X, y, weight
    kept = weight > 0
    if classifier:
        lost = np.setdiff1d(np.unique(y), y[kept])
        if len(lost):
            raise ValueError(f"every row of class {lost.tolist()} has weight 0 (sample_weight times class_weight); "
                             "give them a positive weight or leave the class out of y")
    rows = np.flatnonzero(kept)
    return np.asarray(X[rows]), y[rows], weight[rows]


def prepare(est, X, y, sample_weight, refusal: str | None = None, **checks):
    """``(X, y, weight)``: the validated features ``[N, D]`` (float64; a table encoded) and targets
    ``[N]`` of ``fit`` (``checks`` go to :func:`validate`), the rows' weights (:func:`fit_weights`,
    or ``None``; ``refusal``: why the estimator's method takes none, or ``None``), rows of weight 0
    left out (:func:`positive_weight_rows`)."""
    X, y = validate(est, X, y, reset=True, **checks)
    weight = fit_weights(sample_weight, X, y, getattr(est, "class_weight", None), refusal)
    return positive_weight_rows(X, y, weight, is_classifier(est))
