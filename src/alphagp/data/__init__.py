"""Data loading: bundled sets, the shared benchmark folder, CSV/TSV and LIBSVM files.

The benchmark folder is ``$ALPHAGP_DATA`` when set, else ``../shared/data`` relative to the
working directory or to the repository this package was installed from.
"""

from __future__ import annotations

import gzip
import json
import os
import warnings
import zlib
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_svmlight_file

from ..paths import check_readable_file

_VOWEL_METADATA = ("Train or Test", "Speaker Number", "Sex")


class DataNotFoundError(FileNotFoundError):
    """The benchmark data folder or one of its files is missing."""


def data_dir() -> Path:
    """Folder of the benchmark data sets (raises :class:`DataNotFoundError` when absent)."""
    env = os.environ.get("ALPHAGP_DATA")
    if env:
        candidates = [Path(env)]
    else:
        candidates = [Path.cwd().parent / "shared" / "data"]
        checkout = Path(__file__).resolve().parents[3]          # src/alphagp/data/ -> the repository
        if (checkout / "pyproject.toml").exists():
            candidates.append(checkout.parent / "shared" / "data")
    for path in candidates:
        if (path / "MANIFEST.json").exists():
            return path.resolve()
    looked = " or ".join(str(p.resolve()) for p in dict.fromkeys(p.resolve() for p in candidates))
    where = f"ALPHAGP_DATA={env} has no MANIFEST.json" if env else f"no MANIFEST.json in {looked}"
    raise DataNotFoundError(
        f"benchmark data not found ({where}): set ALPHAGP_DATA to the folder holding the data sets and "
        "their MANIFEST.json. The library's own examples use the bundled sets and scikit-learn's, "
        "which need no download.")


def _is_row_index(column: pd.Series) -> bool:
    """Whether ``column`` holds row numbers as pandas writes its index: distinct non-negative
    integers (0..n-1 in order, or any subset of another table's rows in any order, as after
    ``train_test_split``)."""
    values = column.to_numpy()
    if not pd.api.types.is_integer_dtype(column) or len(values) == 0:
        return False
    return bool(values.min() >= 0 and len(np.unique(values)) == len(values))


#: rows parsed at a time by :func:`read_frame`
CSV_CHUNK_ROWS = 100_000


def separator(path) -> str:
    """The column separator of a CSV/TSV file by its name: a tab for ``.tsv``/``.tab`` (optionally
    ``.gz``), else a comma."""
    suffixes = [s for s in Path(path).suffixes if s != ".gz"]
    return "\t" if suffixes and suffixes[-1] in (".tsv", ".tab") else ","


def read_frame(path, target: str | None = "target", drop: tuple[str, ...] = (),
               mixed: bool = False, text_labels: bool = False,
               labels_used: bool = True) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Read a CSV/TSV file (optionally gzipped) with a header row, keeping the column names.

    Returns the feature columns (every column but ``target`` and ``drop``) as a float64
    ``DataFrame`` ``[N, D]`` (``mixed=True``: each column with the dtype pandas reads, strings and
    missing values included, for ``GPClassifier(categorical_features="from_dtype")``) and the raw
    labels ``y`` ``[N]`` (``None`` when ``target`` is
    ``None``: an unlabelled file). A first column without a name that holds row numbers (the
    index pandas writes by default, in order or shuffled) is dropped with a warning; another
    column without a name, a file without data rows, and non-numeric feature columns are
    ``ValueError``. The file is parsed ``CSV_CHUNK_ROWS`` rows at a time, each chunk's features
    kept as float64, so the peak memory is about twice the features' float64 size (BENCHMARKS.md,
    "Trust at the edges"), not the four to five times of parsing it whole.

    Labels pandas reads as missing (empty cells, and text such as ``None`` or ``NA``) are a
    ``ValueError`` that names the target column and the rows; ``text_labels=True`` reads the
    target column as text, so that such strings are labels (an empty cell stays missing).
    ``labels_used=False``: the labels are only dropped (a prediction), so none is checked.
    """
    path = Path(path)
    check_readable_file(path, "data file")
    sep = separator(path)
    try:
        columns = list(pd.read_csv(path, sep=sep, nrows=0).columns)
        if target is not None and target not in columns:
            raise ValueError(f"target column {target!r} not in {path.name}; columns are {columns}")
        first = columns[0] if columns and columns[0] != target else None
        index_column = first if first is not None and str(first).startswith("Unnamed: ") else None
        names = [c for c in columns if c not in (target, index_column) and c not in drop]
        unnamed = [c for c in names if str(c).startswith("Unnamed: ")]
        if unnamed:
            raise ValueError(f"{path.name} has feature columns without a name (positions "
                             f"{[columns.index(c) + 1 for c in unnamed]}); give every column a name")
        chunks = list(_chunks(path, sep, names, target, index_column, mixed))
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise ValueError(f"{path.name} is not a readable gzip file (damaged or truncated?): {err}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not a text CSV/TSV file") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path.name} is empty: a header row and data rows are needed") from None
    if not chunks or sum(len(c[0]) for c in chunks) == 0:
        raise ValueError(f"{path.name} has a header row but no data rows")
    if index_column is not None:
        if not _is_row_index(pd.concat([c[2] for c in chunks], ignore_index=True)):
            raise ValueError(f"{path.name} has feature columns without a name (positions [1]); give every column "
                             "a name")
        warnings.warn(f"{path.name}: dropped the unnamed first column, which holds the row numbers "
                      "(an index written by pandas); write the file with index=False to avoid this", UserWarning,
                      stacklevel=2)
    y = None if target is None else np.concatenate([c[1] for c in chunks])
    if y is not None and labels_used:
        y = _labels_checked(path, sep, target, y, text_labels)
    if mixed:
        return pd.concat([c[0] for c in chunks], ignore_index=True), y
    X = chunks[0][0] if len(chunks) == 1 else np.concatenate([c[0] for c in chunks])
    return pd.DataFrame(X, columns=names, copy=False), y


def _labels_checked(path: Path, sep: str, target: str, y: np.ndarray, text_labels: bool) -> np.ndarray:
    """The labels ``y`` of the target column, read again as text where ``text_labels``; a one-line
    ``ValueError`` naming the column and the data rows (counted from 0, the first below the header) where
    labels are missing."""
    from ..labels import missing_labels
    if text_labels:
        y = pd.read_csv(path, sep=sep, usecols=[target], dtype=str, keep_default_na=False)[target].to_numpy()
        missing = np.flatnonzero(y == "")
    else:
        missing = missing_labels(y)
    if len(missing):
        rows = ", ".join(str(r) for r in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        hint = ("" if text_labels else "; or, where a label is text pandas reads as missing ('None', 'NA', 'null'), "
                "read the labels as text (--text-labels on the command line)")
        raise ValueError(f"the target column {target!r} of {path.name} has {len(missing)} missing label"
                         f"{'s' if len(missing) > 1 else ''} (row{'s' if len(missing) > 1 else ''} {rows}, counted from 0, the "
                         "first below the header, as every row number alphagp prints): "
                         f"drop those rows or give them a label{hint}")
    return y


def _chunks(path: Path, sep: str, names: list, target: str | None, index_column, mixed: bool = False):
    """``(features [n, D] float64, labels [n] or None, the unnamed first column or None)`` for each
    chunk of ``CSV_CHUNK_ROWS`` rows of the file; a non-numeric feature column is a ``ValueError``
    (``mixed``: the features are the chunk's columns as pandas read them)."""
    for chunk in pd.read_csv(path, sep=sep, chunksize=CSV_CHUNK_ROWS):
        if len(chunk) == 0:
            continue
        features = chunk[names]
        bad = [] if mixed else [c for c in names if not pd.api.types.is_numeric_dtype(features[c])]
        if bad:
            hint = (f"; if {bad[0]!r} holds the labels, name it as the target column (--target {bad[0]} on the "
                    "command line)" if target is None and len(bad) == 1 else
                    " (or --categorical-features from_dtype on the command line, categorical_features='from_dtype' "
                    "in Python, the defaults, to one-hot encode them)")
            raise ValueError(f"non-numeric feature columns in {path.name}: {bad}; encode them as numbers first{hint}")
        yield (features if mixed else features.to_numpy(dtype=np.float64),
               None if target is None else chunk[target].to_numpy(),
               None if index_column is None else chunk[index_column])


def read_table(path, target: str | None = "target",
               drop: tuple[str, ...] = ()) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`read_frame` with the features as a float64 array ``[N, D]``."""
    frame, y = read_frame(path, target, drop)
    return frame.to_numpy(dtype=np.float64), y


#: the peak memory of reading a LIBSVM file and checking it for a fit, over its dense size (measured:
#: 3.48 GiB for a 2.24 GiB dense file of 60 rows and 5,000,000 features; BENCHMARKS.md, "Trust at the edges")
LIBSVM_PEAK_FACTOR = 1.6


def physical_memory_bytes() -> int:
    """Physical memory of this machine (a large number where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**50


def read_libsvm(path, n_features: int | None = None, zero_based: bool = False, dense: bool = True):
    """Read a LIBSVM/svmlight file into a dense ``X`` ``[N, D]`` and labels ``y`` ``[N]``.

    Features are numbered from 1, as LIBSVM writes them; ``zero_based=True`` reads files numbered
    from 0 (what scikit-learn's ``dump_svmlight_file`` writes by default). ``n_features``: the
    width of ``X`` (a model's feature count: a test file whose last features are zero in every row
    has fewer columns otherwise); a larger index is an error. A feature index 0 in a file numbered
    from 1, or a width whose dense array would take more than half this machine's memory, is a
    ``ValueError``. ``dense=False``: ``X`` as the sparse matrix the file gives (nothing checked of
    its dense size), to check what a fit on it would need first.
    """
    path = Path(path)
    check_readable_file(path, "data file")
    try:
        X, y = load_svmlight_file(str(path), n_features=n_features, zero_based=zero_based)
    except ValueError as err:
        if "Invalid index 0" in str(err):
            raise ValueError(f"{path.name} has a feature index 0, but LIBSVM files number features from 1; if "
                             "this file numbers them from 0 (scikit-learn's dump_svmlight_file does by default), "
                             "say so (--zero-based, or zero_based=True)") from None
        if n_features is not None and "n_features was set" in str(err):
            raise ValueError(f"{path.name} has a feature index beyond the model's {n_features} features") from None
        raise ValueError(f"{path.name} is not a valid LIBSVM file: {err}") from None
    size = X.shape[0] * X.shape[1] * 8
    if size * LIBSVM_PEAK_FACTOR > physical_memory_bytes() // 2:
        raise ValueError(f"{path.name}: its largest feature index is {X.shape[1] - int(zero_based)}, so the dense "
                         f"[{X.shape[0]}, {X.shape[1]}] features would take {size / 2**30:.1f} GiB and reading "
                         f"and checking them {LIBSVM_PEAK_FACTOR:g} times that, more than half this machine's "
                         "memory; check the indices")
    return X.toarray() if dense else X, y


def read_file(path, target: str | None = "target", n_features: int | None = None,
              zero_based: bool = False, mixed: bool = False, text_labels: bool = False,
              labels_used: bool = True) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Features (a float64 ``DataFrame`` ``[N, D]``) and labels of a data file, by its extension.

    ``.libsvm``/``.svm``/``.svmlight``: :func:`read_libsvm` (``n_features``, ``zero_based`` as
    there); its columns are named by the feature numbers as the file writes them ("1", "2", ...,
    or "0", "1", ... with ``zero_based``), so a model fitted on one numbering refuses the other.
    Anything else: :func:`read_frame` (``target=None`` reads an unlabelled file; ``mixed`` and
    ``text_labels``, ``labels_used`` as there).
    """
    if Path(path).suffix.lower() in (".libsvm", ".svm", ".svmlight"):
        X, y = read_libsvm(path, n_features, zero_based)
        first = 0 if zero_based else 1
        return pd.DataFrame(X, columns=[str(first + j) for j in range(X.shape[1])]), y
    return read_frame(path, target, mixed=mixed, text_labels=text_labels, labels_used=labels_used)


def align_columns(X, feature_names, path) -> pd.DataFrame | np.ndarray:
    """``X`` with its columns in the order of ``feature_names`` (the names a model was fitted on).

    A ``DataFrame`` is matched by column name: columns in another order are reordered; a missing
    or an unknown column is a ``ValueError`` naming it. An array (no names), or a model fitted
    without names (``feature_names=None``), is returned as it is, to be checked by its width.
    """
    if feature_names is None or not isinstance(X, pd.DataFrame):
        return X.to_numpy() if isinstance(X, pd.DataFrame) else X
    names = [str(n) for n in feature_names]
    missing = [n for n in names if n not in X.columns]
    unknown = [c for c in X.columns if c not in names]
    name = Path(path).name
    if missing:
        hint = ""
        if Path(path).suffix.lower() in (".libsvm", ".svm", ".svmlight"):
            hint = " (a LIBSVM file: was one of the two read with --zero-based and the other not?)"
        raise ValueError(f"{name} lacks the column(s) {missing[:10]} that the model was fitted on{hint}")
    if unknown:
        raise ValueError(f"{name} has column(s) {unknown[:10]} that the model was not fitted on (a label column? "
                         "name it with --target; row weights: --weight-column, for fit and update)")
    return X[names]


def load_bundled(name: str = "vehicle") -> tuple[np.ndarray, np.ndarray]:
    """A data set shipped with the package: ``"vehicle"`` or ``"new_thyroid"``."""
    ref = resources.files(__package__) / "bundled" / f"{name}.tsv.gz"
    if not ref.is_file():
        raise ValueError(f"no bundled data set {name!r}; choose 'vehicle' or 'new_thyroid'")
    with resources.as_file(ref) as path:
        return read_table(path)


def manifest() -> dict:
    """The benchmark folder's MANIFEST.json as a dict ``name -> entry``."""
    entries = json.loads((data_dir() / "MANIFEST.json").read_text())["datasets"]
    return {d["name"]: d for d in entries}


def load_benchmark(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A tabular classification set from the benchmark folder, e.g. ``"satimage"``."""
    entry = manifest().get(name)
    if entry is None:
        raise DataNotFoundError(f"{name!r} is not in the benchmark MANIFEST")
    drop = _VOWEL_METADATA if name == "vowel" else ()
    return read_table(data_dir() / entry["file"], drop=drop)


def load_mnist(name: str = "mnist") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MNIST-like image set: ``X_train, y_train, X_test, y_test`` with pixels scaled to [0, 1]."""
    with np.load(data_dir() / f"{name}.npz") as d:
        return (d["X_train"] / 255.0, d["y_train"].astype(np.int64),
                d["X_test"] / 255.0, d["y_test"].astype(np.int64))
