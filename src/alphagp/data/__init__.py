"""Data loading: bundled sets, the shared benchmark folder, CSV/TSV and LIBSVM files.

The benchmark folder is ``$ALPHAGP_DATA`` when set, else ``../shared/data`` relative to the
working directory or to the repository this package was installed from.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_svmlight_file

_VOWEL_METADATA = ("Train or Test", "Speaker Number", "Sex")


class DataNotFoundError(FileNotFoundError):
    """The benchmark data folder or one of its files is missing."""


def data_dir() -> Path:
    """Folder of the benchmark data sets (raises :class:`DataNotFoundError` when absent)."""
    env = os.environ.get("ALPHAGP_DATA")
    candidates = [Path(env)] if env else [Path.cwd() / ".." / "shared" / "data",
                                          Path(__file__).resolve().parents[4] / "shared" / "data"]
    for path in candidates:
        if (path / "MANIFEST.json").exists():
            return path.resolve()
    raise DataNotFoundError(
        "benchmark data not found: set ALPHAGP_DATA to the folder holding MANIFEST.json "
        f"(looked in {', '.join(str(p) for p in candidates)})")


def read_table(path, target: str | None = "target",
               drop: tuple[str, ...] = ()) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a CSV/TSV file (optionally gzipped) with a header row.

    Returns ``X`` (float64 ``[N, D]``, every column but ``target`` and ``drop``) and the
    raw labels ``y`` ``[N]`` (``None`` when ``target`` is ``None``: an unlabelled file).
    Raises ``ValueError`` naming non-numeric feature columns.
    """
    path = Path(path)
    suffixes = [s for s in path.suffixes if s != ".gz"]
    sep = "\t" if suffixes and suffixes[-1] in (".tsv", ".tab") else ","
    frame = pd.read_csv(path, sep=sep)
    if target is not None and target not in frame.columns:
        raise ValueError(f"target column {target!r} not in {path.name}; columns are {list(frame.columns)}")
    y = frame.pop(target).to_numpy() if target is not None else None
    features = frame.drop(columns=[c for c in drop if c in frame.columns])
    bad = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if bad:
        raise ValueError(f"non-numeric feature columns in {path.name}: {bad}; encode them as numbers first")
    return features.to_numpy(dtype=np.float64), y


def read_libsvm(path) -> tuple[np.ndarray, np.ndarray]:
    """Read a LIBSVM/svmlight file into a dense ``X`` ``[N, D]`` and labels ``y`` ``[N]``."""
    X, y = load_svmlight_file(str(path))
    return X.toarray(), y


def read_file(path, target: str | None = "target") -> tuple[np.ndarray, np.ndarray | None]:
    """Dispatch on the extension: ``.libsvm``/``.svm``/``.svmlight`` or CSV/TSV (``target=None``
    reads an unlabelled CSV/TSV file)."""
    if Path(path).suffix.lower() in (".libsvm", ".svm", ".svmlight"):
        return read_libsvm(path)
    return read_table(path, target)


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
