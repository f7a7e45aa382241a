"""Model files and checkpoints that hold data only: tensors in safetensors, everything else in JSON.

A file is one safetensors file. Its tensors are the leaves of a nested structure (state dicts,
optimiser state, generator state); the rest of the structure, with each tensor replaced by a
reference ``{"__tensor__": name}``, is plain JSON stored in the safetensors metadata under
``"alphagp"`` together with ``kind`` (what the file holds), ``format_version`` and the library
version. Reading never unpickles and never imports or calls anything named in the file, so a
crafted file cannot run code; a file that is not such a file, is truncated, holds another
kind, or was written by a newer format version gets :class:`ModelFileError`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

FORMAT_VERSION = 1
_HEADER_KEY = "alphagp"
_TENSOR_REF = "__tensor__"


class ModelFileError(ValueError):
    """A model or checkpoint file that cannot be read: wrong kind, damaged, or from a newer version."""


def _split(obj: Any, tensors: dict[str, torch.Tensor], path: str) -> Any:
    """``obj`` with every tensor moved into ``tensors`` (under its path) and replaced by a reference."""
    if isinstance(obj, torch.Tensor):
        tensors[path] = obj.detach().contiguous().cpu()
        return {_TENSOR_REF: path}
    if isinstance(obj, dict):
        for key in obj:
            if not isinstance(key, str):
                raise TypeError(f"only string keys can be stored, got {key!r} at {path or 'the top level'}")
        return {key: _split(value, tensors, f"{path}.{key}" if path else key) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_split(value, tensors, f"{path}.{i}") for i, value in enumerate(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} at {path or 'the top level'}: only tensors and "
                    "plain data (dict, list, str, number, bool, None) go into a model file")


def _join(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of :func:`_split`."""
    if isinstance(obj, dict):
        if set(obj) == {_TENSOR_REF}:
            try:
                return tensors[obj[_TENSOR_REF]]
            except KeyError:
                raise ModelFileError(f"the file refers to a tensor {obj[_TENSOR_REF]!r} it does not hold") from None
        return {key: _join(value, tensors) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_join(value, tensors) for value in obj]
    return obj


def write(path: str | os.PathLike, kind: str, content: dict) -> None:
    """Write ``content`` (nested dicts/lists of tensors and plain data) as a file of ``kind``.

    The file is written next to ``path`` and moved into place, so a crash never leaves a
    half-written file under ``path``.
    """
    from . import __version__
    path = Path(path)
    tensors: dict[str, torch.Tensor] = {}
    body = _split(content, tensors, "")
    header = {"kind": kind, "format_version": FORMAT_VERSION, "library_version": __version__, "content": body}
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata={_HEADER_KEY: json.dumps(header)})
    os.replace(tmp, path)


def file_kind(path: str | os.PathLike) -> str:
    """The ``kind`` a file written by :func:`write` declares (reads the header only); raises
    :class:`ModelFileError` for any other file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            return str(json.loads((f.metadata() or {})[_HEADER_KEY])["kind"])
    except (SafetensorError, OSError, ValueError, RuntimeError, KeyError, TypeError) as err:
        raise ModelFileError(f"{path} is not an alphagp file (or it is damaged or truncated): {err}") from None


def read(path: str | os.PathLike, kind: str) -> dict:
    """Read a file written by :func:`write` with the same ``kind``; raises :class:`ModelFileError`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 (not a dict)
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise ModelFileError(f"{path} is not an alphagp {kind} file (or it is damaged or truncated): {err}") from None
    if _HEADER_KEY not in metadata:
        raise ModelFileError(f"{path} is a safetensors file but not an alphagp {kind} file")
    try:
        header = json.loads(metadata[_HEADER_KEY])
        version, found_kind = int(header["format_version"]), header["kind"]
    except (ValueError, KeyError, TypeError) as err:
        raise ModelFileError(f"{path} has a damaged alphagp header: {err}") from None
    if found_kind != kind:
        raise ModelFileError(f"{path} holds a {found_kind!r}, not a {kind!r}")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"{path} was written by alphagp {header.get('library_version', '?')} in file format "
                             f"{version}; this alphagp reads formats up to {FORMAT_VERSION}: upgrade alphagp")
    return _join(header["content"], tensors)
