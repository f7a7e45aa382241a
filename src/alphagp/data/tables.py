"""Mixed-type tables: categorical columns one-hot encoded, missing numbers imputed with an indicator
(``GPClassifier(categorical_features="from_dtype")``).

scikit-learn's transformers learn the encoding: ``OneHotEncoder`` the categories of each column
whose dtype is a string, object, pandas ``category`` or boolean, ``SimpleImputer`` the mean of each
numeric column and, with ``MissingIndicator``, which of them had missing values. What they learnt
is kept as plain data (:meth:`TableEncoding.to_plain`: a model file stores it as JSON, never a
pickle) and the transform is a ``ColumnTransformer`` rebuilt from that data, so a fitted and a
loaded encoding are the same transform:

* a categorical column -> one 0/1 column per category seen in ``fit`` (in sorted order); a
  category not seen in ``fit`` is all zeros (scikit-learn's ``handle_unknown="ignore"``); a
  missing value (``None``, ``NaN``, ``pd.NA``) is a category of its own when ``fit`` saw one;
* a numeric column -> itself with missing values replaced by its ``fit`` mean, followed, where
  ``fit`` saw missing values in it, by a 0/1 column that marks them;
* a datetime column -> the days since 1970-01-01, a timedelta column -> its days, then as a
  numeric column (one feature, not one per distinct value).

A categorical column none of whose values was seen in ``fit`` (string codes at ``fit``, integers
at ``predict``) encodes as all zeros with a warning that names it.

A column with no value at all in ``fit`` is an error (it carries nothing to encode).
"""

from __future__ import annotations

import datetime
import itertools
import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: a category that stands for a missing value in the plain data (JSON has no NaN)
_MISSING = {"missing": True}


def _time_kind(dtype) -> str | None:
    """``"datetime"`` or ``"timedelta"`` for those dtypes, else ``None``."""
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    return "timedelta" if pd.api.types.is_timedelta64_dtype(dtype) else None


def _is_categorical(dtype) -> bool:
    return _time_kind(dtype) is None and (not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))


def _as_days(values: pd.Series, kind: str) -> pd.Series:
    """A datetime column as float days since 1970-01-01 (UTC where it has a time zone), a timedelta
    column as float days; NaT as NaN."""
    if kind == "datetime":
        values = values.dt.tz_convert("UTC").dt.tz_localize(None) if values.dt.tz is not None else values
    # in microseconds (years up to 294,000 either side, where nanoseconds end in 2262) as floats
    days = values.dt.as_unit("us").astype("int64").astype(np.float64) / 86_400e6
    return days.where(values.notna())


_DATE_TEXT = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?$")


def _warn_if_dates(values: pd.Series, name) -> None:
    """A warning where a categorical column holds dates (Python ``date``/``datetime`` objects, or
    ISO date text): as categories each date is its own feature, which says nothing about the
    dates between them; ``pd.to_datetime`` makes them a datetime column, encoded as days."""
    present = values[values.notna()]
    sample = present.iloc[:1000]
    if len(sample) == 0:
        return
    objects = sample.map(lambda v: isinstance(v, (datetime.date, datetime.datetime))).all()
    text = not objects and sample.map(lambda v: isinstance(v, str) and bool(_DATE_TEXT.match(v.strip()))).all()
    if objects or text:
        held = "date objects" if objects else "dates as text"
        warnings.warn(f"column {name!r} holds {held}: encoded as categories, each of its "
                      f"{present.nunique()} distinct dates is a feature of its own and a date not seen in fit "
                      f"is all zeros; convert it with pd.to_datetime(frame[{name!r}]) to use it as days",
                      UserWarning, stacklevel=5)


def _plain_category(value):
    """A category as JSON data: Python scalars, with a missing value as :data:`_MISSING`."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return _MISSING
    return value.item() if isinstance(value, np.generic) else value


def _as_fitted(categories) -> bool:
    """Whether ``categories`` (plain data) are what :meth:`TableEncoding.fit` learns: at least one,
    distinct, strictly increasing values of one type (text, or numbers and booleans), with a missing
    value only last (the order of scikit-learn's ``OneHotEncoder``)."""
    if not isinstance(categories, list) or not categories:
        return False
    values = categories[:-1] if categories[-1] == _MISSING else categories
    text = [isinstance(v, str) for v in values]
    if _MISSING in values or (any(text) and not all(text)):
        return False
    if not all(text) and not all(isinstance(v, (int, float)) and np.isfinite(v) for v in values):
        return False
    return all(a < b for a, b in itertools.pairwise(values))


def _warn_if_all_unseen(column: dict, values: pd.Series) -> None:
    """Warn, naming ``column``, where rows hold values of it and none was seen in ``fit``."""
    import warnings
    present = values[values.notna()]
    if len(present) == 0:
        return
    seen = {repr(v) for v in column["categories"] if v != _MISSING}
    if not any(repr(v) in seen or v in column["categories"] for v in present.unique()[:1000]):
        warnings.warn(f"column {column['name']!r}: none of its values was seen in fit (e.g. {present.iloc[0]!r}; fit "
                      f"saw {column['categories'][:5]}), so it encodes as all zeros; check its type and spelling",
                      UserWarning, stacklevel=4)


def _category(value):
    """The inverse of :func:`_plain_category`."""
    return np.nan if value == _MISSING else value


@dataclass(frozen=True)
class TableEncoding:
    """The encoding of a table's columns (module docstring): ``columns`` in input order, each a
    dict ``{"name", "kind": "categorical", "categories": [...]}`` or ``{"name", "kind": "numeric",
    "mean": float, "indicator": bool}``."""

    columns: tuple[dict, ...]

    @classmethod
    def fit(cls, X: pd.DataFrame) -> TableEncoding:
        """Learn the encoding of ``X`` ``[N, D]`` (a DataFrame; its column names are kept)."""
        from sklearn.impute import MissingIndicator, SimpleImputer
        from sklearn.preprocessing import OneHotEncoder
        empty = [str(c) for c in X.columns if X[c].isna().all()]
        if empty:
            raise ValueError(f"column(s) {empty} hold no value at all; drop them (categorical_features='from_dtype' "
                             "encodes the values a column has)")
        columns = []
        for name in X.columns:
            values = X[[name]]
            time = _time_kind(values.dtypes.iloc[0])
            if time is not None:
                values = _as_days(values[name], time).to_frame()
            if _is_categorical(values.dtypes.iloc[0]):
                _warn_if_dates(values[name], name)
                frame = values.astype(object).where(values.notna(), np.nan)
                try:
                    categories = OneHotEncoder(handle_unknown="ignore").fit(frame).categories_[0]
                except TypeError:            # scikit-learn's encoders take text or numbers, not both
                    present = values[name][values[name].notna()]
                    kinds = sorted({type(v).__name__ for v in present})
                    raise ValueError(f"column {name!r} mixes value types {kinds} (e.g. "
                                     f"{[present[present.map(lambda v, k=k: type(v).__name__ == k)].iloc[0] for k in kinds]}); "
                                     "make it one type, e.g. frame[column].astype(str)") from None
                columns.append({"name": str(name), "kind": "categorical",
                                "categories": [_plain_category(v) for v in categories]})
            else:
                numbers = values.astype(np.float64)
                mean = float(SimpleImputer(strategy="mean").fit(numbers).statistics_[0])
                flagged = len(MissingIndicator(features="missing-only").fit(numbers).features_) > 0
                columns.append({"name": str(name), "kind": "numeric", "mean": mean, "indicator": flagged,
                                **({"time": time} if time else {})})
        return cls(tuple(columns))

    @property
    def width(self) -> int:
        """The number of encoded features."""
        return sum(len(c["categories"]) if c["kind"] == "categorical" else 1 + c["indicator"] for c in self.columns)

    def feature_columns(self) -> list[int]:
        """``[width]`` the column of each encoded feature (its position in :attr:`columns`); a numeric
        column's missing-value indicator counts as a column of its own (another kind of value)."""
        groups, index = [], 0
        for c in self.columns:
            if c["kind"] == "categorical":
                groups += [index] * len(c["categories"])
                index += 1
            else:
                groups += list(range(index, index + 1 + c["indicator"]))
                index += 1 + c["indicator"]
        return groups

    def feature_names(self) -> list[str]:
        """The encoded features' names: ``column=category``, ``column`` and ``column (missing)``."""
        names = []
        for c in self.columns:
            if c["kind"] == "categorical":
                names += [f"{c['name']}={'(missing)' if v == _MISSING else v}" for v in c["categories"]]
            else:
                names += [c["name"]] + ([f"{c['name']} (missing)"] if c["indicator"] else [])
        return names

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        """``[N, width]`` float64 features of ``X`` (a DataFrame with the fitted columns, in any order)."""
        if len(X) == 0:
            raise ValueError("X has no rows; give at least one")
        transformer = self._transformer()
        by_name = {str(column): column for column in X.columns}        # fit keeps names as text (0 -> "0")
        frame = X[[by_name.get(c["name"], c["name"]) for c in self.columns]].copy()
        frame.columns = [c["name"] for c in self.columns]
        for c in self.columns:                  # item assignment: any column name (``self`` included)
            name = c["name"]
            if c["kind"] == "categorical":
                frame[name] = frame[name].astype(object).where(frame[name].notna(), np.nan)
                _warn_if_all_unseen(c, frame[name])
            elif c.get("time") is not None:
                if _time_kind(frame[name].dtype) != c["time"]:
                    raise ValueError(f"column {name!r} held {c['time']} values in fit but holds "
                                     f"{frame[name].dtype} values now")
                frame[name] = _as_days(frame[name], c["time"])
            elif _is_categorical(frame[name].dtype) or _time_kind(frame[name].dtype):
                raise ValueError(f"column {name!r} was numeric in fit but holds {frame[name].dtype} values now")
            else:
                frame[name] = frame[name].astype(np.float64)
        return np.asarray(transformer.transform(frame), dtype=np.float64)

    def _transformer(self):
        """The ``ColumnTransformer`` of this encoding, rebuilt from its plain data (fitted on one row,
        from which every part takes nothing: the categories and the means are given)."""
        from sklearn.compose import ColumnTransformer
        from sklearn.impute import MissingIndicator, SimpleImputer
        from sklearn.pipeline import make_union
        from sklearn.preprocessing import OneHotEncoder
        parts, first = [], {}
        for j, c in enumerate(self.columns):
            if c["kind"] == "categorical":
                categories = [_category(v) for v in c["categories"]]
                parts.append((f"c{j}", OneHotEncoder(categories=[np.array(categories, dtype=object)],
                                                     handle_unknown="ignore", sparse_output=False), [c["name"]]))
                first[c["name"]] = [categories[0]]
            else:
                fill = SimpleImputer(strategy="constant", fill_value=c["mean"], keep_empty_features=True)
                part = make_union(fill, MissingIndicator(features="all")) if c["indicator"] else fill
                parts.append((f"n{j}", part, [c["name"]]))
                first[c["name"]] = [float(c["mean"])]
        # categorical columns as objects, as transform passes them: an encoder fitted on a bool or
        # integer column would cast its categories to that dtype, and a missing category with them
        kinds = {c["name"]: c["kind"] for c in self.columns}
        one_row = pd.DataFrame({name: pd.Series(value, dtype=object if kinds[name] == "categorical" else None)
                                for name, value in first.items()})
        return ColumnTransformer(parts, sparse_threshold=0.0).fit(one_row)

    def to_plain(self) -> list[dict]:
        """JSON-ready data (:meth:`from_plain` reads it back)."""
        return [dict(c) for c in self.columns]

    @classmethod
    def from_plain(cls, data: list[dict]) -> TableEncoding:
        """The encoding of :meth:`to_plain`'s data; a ``ValueError`` for data of another shape."""
        kinds = {"categorical": {"name", "kind", "categories"}, "numeric": {"name", "kind", "mean", "indicator"}}
        if not isinstance(data, list) or not all(
                isinstance(c, dict) and set(c) - {"time"} == kinds.get(c.get("kind"), ())
                and c.get("time", "datetime") in ("datetime", "timedelta") for c in data):
            raise ValueError("the table encoding is damaged: expected a list of column descriptions")
        for c in data:
            if c["kind"] == "categorical" and not _as_fitted(c["categories"]):
                raise ValueError(f"the table encoding is damaged: column {c['name']!r}'s categories "
                                 f"{c['categories'][:10]} are not the distinct, sorted values of one type that fit "
                                 "learns (the missing one last)")
        return cls(tuple(dict(c) for c in data))
