"""File-system checks shared by the readers and writers: clear errors before any work is done."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def check_readable_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` as a ``Path``; a clear ``OSError`` when it is absent, a folder, or not a regular
    file (a pipe or a device). ``what`` names the expected file in the messages ("data file")."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a {what}")
    if not path.is_file():
        raise OSError(f"{path} is not a regular file (a pipe or a device?); give a {what}")
    return path


def check_writable(path: str | os.PathLike, example: str = "model.safetensors") -> Path:
    """Raise a clear ``OSError`` unless a file can be written at ``path`` (call before long work).

    ``path`` must not be a folder and its folder must exist and accept a new file (tried with a
    temporary file, removed at once). ``example``: a file name the message suggests for a folder.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file name, e.g. {path / example}")
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {folder} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise PermissionError(f"cannot write {path}: {err.strerror or err}") from None
    os.close(fd)
    os.unlink(probe)
    return path
