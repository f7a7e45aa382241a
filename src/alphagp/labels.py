"""Labels and plain data for the estimators: class encoding (memory-map friendly), the classes'
form in model files, and NumPy values made JSON-ready."""

from __future__ import annotations

import os
import warnings

import numpy as np
import torch
from sklearn.utils.multiclass import check_classification_targets


def plain(value):
    """NumPy arrays and scalars inside ``value`` as lists and Python scalars, a kernel term as
    ``{"term": its spec}`` (JSON-ready; :func:`params_from_plain` reads a term back)."""
    from .kernel_terms import Term
    if isinstance(value, Term):
        return {"term": value.spec()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):               # element by element: ragged lists, None, dicts
        return [plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, torch.device):
        return str(value)
    return value.item() if isinstance(value, np.generic) else value


def missing_labels(y) -> np.ndarray:
    """The rows ``[k]`` of labels ``y`` ``[N]`` that are missing: ``None``, NaN or ``pd.NA``."""
    import pandas as pd
    values = np.asarray(y)
    if values.dtype.kind in "iub":                   # integer and boolean labels cannot be missing
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(pd.isna(values))


def describe_rows(rows, limit: int = 5) -> str:
    """``"rows 3, 7 and 2 more"``: the first ``limit`` of ``rows`` (0-based indices, as Python
    indexes an array; every message, the command line's too, says "counted from 0") for a message."""
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"row{'s' if len(rows) > 1 else ''} {shown}{more}"


def encode_labels(y, chunk: int = 1_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Sorted classes and class indices ``[N]`` of labels ``y`` (any NumPy array, memory-maps
    included), read ``chunk`` labels at a time, with scikit-learn's target checks on each chunk.

    The indices are one byte each up to 256 classes (int64 beyond), so
    10^7 labels cost 10 MB instead of the 80 MB of int64 and no full-length temporary is made
    (scikit-learn's LabelEncoder sorts a copy of all labels and returns int64).
    """
    n = len(y)
    classes = None
    for start in range(0, n, chunk):
        part = np.asarray(y[start:start + chunk])
        try:
            check_classification_targets(part)
        except ValueError as err:
            if "continuous" not in str(err):
                raise
            raise ValueError(f"{str(err).rstrip('.')}; labels in half steps or other ordered grades are "
                             "GPOrdinalClassifier(grades=[...])'s, listed lowest first") from None
        found = np.unique(part)
        classes = found if classes is None else np.union1d(classes, found)
    y_idx = np.empty(n, dtype=np.uint8 if len(classes) <= 256 else np.int64)
    for start in range(0, n, chunk):
        y_idx[start:start + chunk] = np.searchsorted(classes, np.asarray(y[start:start + chunk]))
    return classes, y_idx


def encode_known_labels(y, classes: np.ndarray) -> np.ndarray:
    """Class indices of ``y`` in ``classes`` (sorted, or the grades of an ordinal classifier in their
    order); raises ``ValueError`` naming labels not among them."""
    y, classes = np.asarray(y), np.asarray(classes)
    unseen = np.setdiff1d(np.unique(y), classes)
    if unseen.size:
        raise ValueError(f"labels {unseen.tolist()} were not seen during fit; known classes are {classes.tolist()}")
    order = np.argsort(classes, kind="stable")
    return order[np.searchsorted(classes[order], y)]


def check_grades(grades) -> list:
    """``grades`` (an ordinal classifier's labels in their order, lowest first) as a list, after
    checking that it is one: a list, tuple, array or pandas index of at least 2 distinct labels,
    none of them missing (``None`` or NaN). A string, a set or a mapping is refused: none of them
    gives an order of labels. Raises ``ValueError`` saying what to give."""
    example = "e.g. grades=['low', 'mid', 'high'] or grades=[1, 2, 3]"
    if isinstance(grades, (str, bytes)):      # a parameter's value: scikit-learn's ValueError, as the others
        raise ValueError(  # noqa: TRY004
            f"grades must list the grades in their order, lowest first, not one string ({grades!r}); "
                         + example)
    if isinstance(grades, (set, frozenset, dict)) or not hasattr(grades, "__iter__"):
        raise ValueError(f"grades must list the grades in their order, lowest first (a list, tuple or array), not "
                         f"a {type(grades).__name__}, which has no order of its own; " + example)
    values = list(grades)
    if len(values) < 2:
        raise ValueError(f"grades must list at least 2 grades, lowest first; got {values}")
    missing = [v for v in values if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))]
    if missing:
        raise ValueError(f"grades must be labels, not missing values; got {values}")
    if len(set(values)) != len(values):
        raise ValueError(f"the grades must be distinct, got {values}")
    return list(np.asarray(values))


def grade_order(y, grades=None) -> list:
    """The order of the grades of labels ``y``: ``grades`` where given (:func:`check_grades`), else
    the categories of a pandas ordered categorical ``y``, else the sorted distinct labels (text
    labels sorted by their characters, with a warning that asks for ``grades``)."""
    if grades is not None:
        return check_grades(grades)
    dtype = getattr(y, "dtype", None)
    if getattr(dtype, "ordered", False):                     # pandas CategoricalDtype(ordered=True)
        return list(np.asarray(dtype.categories))
    labels = np.unique(np.asarray(y))
    if any(isinstance(v, (str, bytes)) for v in labels.tolist()):   # '1' < '10' < '2', 'high' < 'low' < 'mid'
        warnings.warn(f"the grades {labels.tolist()[:6]}{' ...' if len(labels) > 6 else ''} are text, taken in "
                      "the order of their characters, which is rarely theirs; give the order: grades=[lowest, ..., "
                      "highest] (--grades on the command line), or y as a pandas Categorical with ordered=True",
                      UserWarning, stacklevel=3)
    return list(labels)


def encode_ordered_labels(y, grades, declared: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, indices [N])`` of labels ``y`` whose order is ``grades`` (distinct labels, lowest
    first): ``classes`` is ``grades`` as an array, and a label of ``y`` outside it is a
    ``ValueError`` naming it. ``declared``: the user listed the grades, so any labels among them
    are grades (half steps such as star ratings included); otherwise labels that look continuous
    are refused with the ``grades=`` to give."""
    classes = np.asarray(grades)
    if classes.ndim != 1 or len(classes) < 2:
        raise ValueError(f"the grades must be a list of at least 2 labels, got {classes.tolist()}")
    if len(np.unique(classes)) != len(classes):
        raise ValueError(f"the grades must be distinct, got {classes.tolist()}")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"the grades of the rows must be one label a row, got an array of shape {y.shape}")
    if declared:        # the labels are matched to the grades themselves: half steps (0.5, 1.0, 1.5) are grades
        known = set(classes.tolist())
        unknown = np.array([v for v in dict.fromkeys(y.tolist()) if v not in known], dtype=object)
    else:
        try:
            check_classification_targets(y)
        except ValueError as err:
            raise ValueError(f"{str(err).rstrip('.')}; if these values are grades, list them in their order: "
                             f"grades={np.unique(y)[:6].tolist()}{'...' if len(np.unique(y)) > 6 else ''}") from None
        unknown = np.setdiff1d(np.unique(y), classes)
    if unknown.size:
        raise ValueError(f"labels {unknown.tolist()} are not among the grades {classes.tolist()}")
    return classes, encode_known_labels(y, classes)


def classes_to_plain(classes: np.ndarray) -> dict:
    """The class labels as JSON-ready values and their dtype (model files); ``"ordered": true``
    where they are not sorted (an ordinal classifier's grades, lowest first)."""
    content = {"values": classes.tolist(), "dtype": "object" if classes.dtype.kind == "O" else classes.dtype.str}
    return content if np.array_equal(np.unique(classes), classes) else {**content, "ordered": True}


def classes_from_plain(content: dict) -> np.ndarray:
    """The inverse of :func:`classes_to_plain`. The stored dtype must be a plain one (bool, number,
    object or string) no wider than the values need, so a file cannot ask for a huge array."""
    values = np.array(content["values"])
    if values.ndim != 1:
        raise ValueError(f"the classes must be a flat list, got shape {list(values.shape)}")
    dtype = np.dtype(content["dtype"])
    if dtype.kind not in "biufUO" or dtype.fields is not None or dtype.subdtype is not None or (
            dtype.kind == "U" and dtype.itemsize > max(values.dtype.itemsize, 4)) or (
            dtype.kind in "biuf" and dtype.itemsize > 16):
        raise ValueError(f"the classes' dtype {content['dtype']!r} does not fit their values")
    classes = values.astype(dtype)
    if len(np.unique(classes)) != len(classes):
        raise ValueError(f"the classes must be distinct; got {classes.tolist()}")
    if not content.get("ordered", False) and not np.array_equal(np.unique(classes), classes):
        raise ValueError(f"the classes must be sorted, as fitting stores them (grades in their order are marked "
                         f"'ordered'); got {classes.tolist()}")
    return classes


def params_to_plain(params: dict) -> dict:
    """An estimator's parameters (``get_params()``) as JSON-ready data; a ``class_weight`` dict as
    ``[[label, weight], ...]`` (JSON's keys are strings, labels need not be), a kernel term
    (``kernel``) as ``{"term": its spec}`` (:func:`params_from_plain` undoes both)."""
    params = dict(params)
    has_class_weight = "class_weight" in params
    class_weight = params.pop("class_weight", None)
    params = plain(params)
    if has_class_weight:
        params["class_weight"] = ([[plain(label), float(w)] for label, w in class_weight.items()]
                                  if isinstance(class_weight, dict) else class_weight)
    return params


def params_from_plain(params: dict) -> dict:
    """The estimator parameters of :func:`params_to_plain`'s data (a damaged kernel description is a
    ``ValueError``)."""
    from .kernel_terms import term_from_spec
    if isinstance(params.get("kernel"), dict):
        params = {**params, "kernel": term_from_spec(params["kernel"].get("term"))}
    if isinstance(params.get("class_weight"), list):
        return {**params, "class_weight": {label: w for label, w in params["class_weight"]}}
    return params
