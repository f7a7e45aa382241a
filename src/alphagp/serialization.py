"""Model files and checkpoints that hold data only: tensors in safetensors, everything else in JSON.

A file is one safetensors file. Its tensors are the leaves of a nested structure (state dicts,
optimiser state, generator state); the rest of the structure, with each tensor replaced by a
reference ``{"__tensor__": name}``, is plain JSON stored in the safetensors metadata under
``"alphagp"`` together with ``kind`` (what the file holds), ``format_version`` and the library
version. A SHA-256 checksum of that header text and of every tensor (name, dtype, shape and
bytes) is stored beside it under ``"alphagp_sha256"``.

Reading first checks the header length the file's first 8 bytes declare against its size (a
large file of another kind is refused without reading it), then takes the file's bytes in one
read (so a concurrent :func:`write` to the same path yields the old file or the new one, never
a mix), checks the declared sizes against the file's length, the format version against the
versions that exist, then the checksum, and only then builds anything. It never unpickles and never
imports or calls anything named in the file, so a crafted file cannot run code; a file that is
not such a file, is truncated, damaged or edited, holds another kind, or was written by a newer
format version gets :class:`ModelFileError`. :func:`allocation_limit` bounds what building a
model from a file's declared sizes may allocate.

Writing goes to a uniquely named temporary file in the target's folder (its name carries the
writing process's id), which is then moved into place: a crash never leaves a half-written
file, two processes writing the same path at once both succeed (the last one wins), and the
next write to a path removes the temporaries that killed writers of it left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import tempfile
import time
import warnings
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .paths import check_readable_file, check_writable
from .version import __version__

#: 2 added the checksum; files of format 1 are still read, with a warning. 3: deep GPs store q whitened
#: (their format-2 factor form is converted on reading, DeepGP.load_state_dict)
FORMAT_VERSION = 3
#: the format versions that exist (any other is refused: a relabelled version must not skip the checksum)
FORMAT_VERSIONS = (1, 2, 3)
_HEADER_KEY = "alphagp"
_CHECKSUM_KEY = "alphagp_sha256"
_TENSOR_REF = "__tensor__"
#: a safetensors header (tensor table and metadata) longer than this is refused before it is parsed
_MAX_HEADER_BYTES = 100 * 2**20


class ModelFileError(ValueError):
    """A model or checkpoint file that cannot be read: wrong kind, damaged, or from a newer version."""


class UncheckedModelFileWarning(UserWarning):
    """A file of format 1, written before files carried a checksum: damage to it cannot be detected."""


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
            except (KeyError, TypeError):
                raise ModelFileError(f"the file refers to a tensor {obj[_TENSOR_REF]!r} it does not hold") from None
        return {key: _join(value, tensors) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_join(value, tensors) for value in obj]
    return obj


def checksum(header_text: str, tensors: dict[str, torch.Tensor]) -> str:
    """SHA-256 of the header text and of each tensor's name, dtype, shape and bytes (in name order)."""
    digest = hashlib.sha256(header_text.encode())
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        digest.update(f"\0{name}\0{t.dtype}\0{list(t.shape)}\0".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def write(path: str | os.PathLike, kind: str, content: dict, example: str = "model.safetensors") -> None:
    """Write ``content`` (nested dicts/lists of tensors and plain data) as a file of ``kind``.

    The bytes go to a temporary file of a unique name next to ``path``, which then replaces
    ``path`` in one step: readers see the old file or the new one, a crash leaves no half-written
    file, and concurrent writers to one path do not collide.
    """
    path = check_writable(path, example)
    tensors: dict[str, torch.Tensor] = {}
    body = _split(content, tensors, "")
    header = json.dumps({"kind": kind, "format_version": FORMAT_VERSION, "library_version": __version__,
                         "content": body})
    data = save_tensors(tensors, metadata={_HEADER_KEY: header, _CHECKSUM_KEY: checksum(header, tensors)})
    _remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _remove_stale_temporaries(path: Path) -> None:
    """Remove the temporary files of writes to ``path`` that a killed process left: their names
    carry the writing process's id, and only those whose process no longer runs on this machine
    go (a concurrent writer's file stays). Temporaries named before the id was added go after an
    hour."""
    prefix = f".{path.name}."
    for tmp in path.parent.glob(f"{glob_escape(prefix)}*.tmp"):
        owner = tmp.name[len(prefix):].split(".", 1)[0]
        try:
            stale = not _process_runs(int(owner)) if owner.isdigit() else time.time() - tmp.stat().st_mtime > 3600
            if stale:
                tmp.unlink()
        except OSError:          # gone meanwhile, or not ours to remove
            continue


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # another user's process
        return True
    return True


def _check_header(path: Path, kind: str) -> None:
    """Refuse, before the file is read whole (a large CSV, or a file of zeros, passed as a model
    file is not read into memory), a file whose first 8 bytes (a safetensors file's header length)
    do not fit its size or declare an empty header, or whose header is not an alphagp one."""
    with open(path, "rb") as f:
        head, size = f.read(8), os.fstat(f.fileno()).st_size
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else None
        if n is not None and 2 <= n <= min(size - 8, _MAX_HEADER_BYTES):
            table = head + f.read(n)
            _metadata(table, path, kind)      # parsed and checked from the header's bytes alone
            body = _declared_body(table)
            if body is not None and 8 + n + body != size:
                raise ModelFileError(f"{path} is not an alphagp {kind} file (or it is damaged or truncated): its "
                                     f"tensor table declares {8 + n + body} bytes, the file has {size}")
            return
    raise ModelFileError(f"{path} is not an alphagp {kind} file (or it is damaged or truncated): "
                         + (f"only {len(head)} bytes" if n is None else
                            f"its first 8 bytes declare a header of {n} bytes, the file has {size - 8}"))


def _declared_body(table: bytes) -> int | None:
    """The bytes of tensor data a safetensors header ``table`` (its 8-byte length and JSON)
    declares: the largest end of its tensors' ``data_offsets`` (``None`` where the JSON does not
    say; reading the file then says what is wrong)."""
    try:
        entries = json.loads(table[8:])
        return max((int(e["data_offsets"][1]) for k, e in entries.items() if k != "__metadata__"), default=0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _metadata(data: bytes, path: Path, kind: str) -> dict:
    """The safetensors metadata of ``data``, after checking the header's declared length."""
    not_ours = f"{path} is not an alphagp {kind} file (or it is damaged or truncated)"
    if len(data) < 8:
        raise ModelFileError(f"{not_ours}: only {len(data)} bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n > min(len(data) - 8, _MAX_HEADER_BYTES):
        raise ModelFileError(f"{not_ours}: its header declares {n} bytes, the file has {len(data) - 8}")
    try:
        table = json.loads(data[8:8 + n])
        metadata = table.get("__metadata__") or {}
    except (ValueError, AttributeError) as err:
        raise ModelFileError(f"{not_ours}: {err}") from None
    if not isinstance(metadata, dict) or _HEADER_KEY not in metadata:
        raise ModelFileError(f"{path} is a safetensors file but not an alphagp {kind} file")
    return metadata


def _read(path: str | os.PathLike, kind: str | tuple[str, ...] | None, what_file: str = "model file") -> tuple[dict, int]:
    """The checked header and tensors of the file at ``path`` and its length; ``kind``: the kind
    it must hold, or a tuple of the kinds it may hold, or ``None`` (any kind)."""
    path = Path(path)
    what = kind.removeprefix("alphagp.") if isinstance(kind, str) else "model"      # "a GPClassifier file"
    _check_header(check_readable_file(path, what_file), what)
    data = path.read_bytes()
    metadata = _metadata(data, path, what)
    try:
        header = json.loads(metadata[_HEADER_KEY])
        version, found_kind = int(header["format_version"]), str(header["kind"])
    except (ValueError, KeyError, TypeError) as err:
        raise ModelFileError(f"{path} has a damaged alphagp header: {err}") from None
    if isinstance(kind, str) and found_kind != kind:
        raise ModelFileError(f"{path} holds a {found_kind!r}, not a {kind!r}")
    if isinstance(kind, tuple) and found_kind not in kind:
        raise ModelFileError(f"{path} holds a {found_kind!r}, not an alphagp model (one of {list(kind)})")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"{path} was written by alphagp {header.get('library_version', '?')} in file format "
                             f"{version}; this alphagp reads formats up to {FORMAT_VERSION}: upgrade alphagp")
    if version not in FORMAT_VERSIONS or isinstance(header["format_version"], bool) \
            or header["format_version"] != version:
        raise ModelFileError(f"{path} declares file format {header['format_version']!r}, which never existed "
                             f"(formats are {list(FORMAT_VERSIONS)}): the file is damaged or was edited")
    try:
        tensors = load_tensors(data)
    except (SafetensorError, ValueError, RuntimeError, OSError) as err:
        raise ModelFileError(f"{path} is not an alphagp {what} file (or it is damaged or truncated): {err}") from None
    if version >= 2 or _CHECKSUM_KEY in metadata:      # a file that carries a checksum is checked, whatever it claims
        if checksum(metadata[_HEADER_KEY], tensors) != metadata.get(_CHECKSUM_KEY):
            raise ModelFileError(f"{path} is damaged or was edited: its checksum does not match its content")
    else:
        warnings.warn(f"{path} was written in file format {version}, before files carried a checksum, so damage "
                      "to it cannot be detected; save it again to add one", UncheckedModelFileWarning, stacklevel=3)
    header["tensors"] = tensors
    return header, len(data)


def read(path: str | os.PathLike, kind: str | tuple[str, ...], what_file: str = "model file") -> dict:
    """Read a file written by :func:`write` with the same ``kind`` (or one of a tuple of kinds), in
    one read of the file; raises :class:`ModelFileError`.

    The returned content has two more keys: ``"__file_bytes__"``, the file's length (the budget
    of :func:`allocation_limit` when a model is built from the content), and ``"__kind__"``, the
    kind the file holds.
    """
    header, size = _read(path, kind, what_file)
    if "content" not in header:
        raise ModelFileError(f"{path} has a damaged alphagp header: it holds no content")
    content = _join(header["content"], header["tensors"])
    if not isinstance(content, dict):
        raise ModelFileError(f"{path} has a damaged alphagp header: its content is not a mapping")
    return {**content, "__file_bytes__": size, "__kind__": header["kind"]}


class _AllocationLimit(TorchDispatchMode):
    """Runs every PyTorch operation first on the ``meta`` device (shapes only, no memory) to learn
    the bytes its outputs take, adds them up, and raises :class:`ModelFileError` before the real
    operation runs once the total would pass ``limit``."""

    def __init__(self, limit: int, source: str):
        super().__init__()
        self.limit, self.source, self.total = limit, source, 0

    @staticmethod
    def _output_bytes(func, args, kwargs) -> int:
        def to_meta(value):
            if isinstance(value, torch.Tensor):
                return value.to("meta")
            return torch.device("meta") if isinstance(value, torch.device) else value
        meta_args, meta_kwargs = tree_map(to_meta, (args, kwargs))
        if "device" in meta_kwargs:
            meta_kwargs["device"] = torch.device("meta")
        try:
            out = func(*meta_args, **meta_kwargs)
        except Exception:  # noqa: BLE001 - data-dependent ops (item, nonzero) have no meta shape; their
            return 0       # outputs are bounded by their inputs, which were counted when made
        return sum(t.numel() * t.element_size() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not func.is_view:
            self.total += self._output_bytes(func, args, kwargs)
            if self.total > self.limit:
                raise ModelFileError(f"{self.source} declares a model larger than the file can hold (building it "
                                     f"would take more than {self.limit / 2**20:.0f} MiB); the file is damaged "
                                     "or was crafted")
        return func(*args, **kwargs)


def allocation_limit(file_bytes: int, source: str):
    """Context that refuses (with :class:`ModelFileError`) to allocate more than 8 times
    ``file_bytes`` plus 64 MiB: building a model from a file's header needs about as much memory
    as the file's tensors (per-row training state is built only when the file holds it), so a
    small file that declares a huge model is refused before the memory is taken."""
    return _AllocationLimit(8 * int(file_bytes) + 64 * 2**20, str(source))
