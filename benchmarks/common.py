"""Shared helpers for the benchmark scripts: result rows, git commit, thread setup."""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).resolve().parent / "results"


def _git(*args: str) -> str:
    return subprocess.check_output(["git", *args], cwd=Path(__file__).parent, text=True).strip()


def git_commit() -> str:
    """Short hash of HEAD, or ``"unknown"`` outside a git checkout."""
    try:
        return _git("rev-parse", "--short", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def git_dirty() -> bool | None:
    """Whether tracked files other than the results in benchmarks/results differ from HEAD (a
    run appending rows to a results file does not make the code of the next run dirty);
    ``None`` outside a git checkout."""
    try:
        return bool(_git("status", "--porcelain", "--untracked-files=no", "--", ":/",
                         ":(top,exclude)benchmarks/results"))
    except (OSError, subprocess.CalledProcessError):
        return None


# Read once, when a benchmark script imports this module: the state of the tree at the start of
# the run, even if files are edited while it runs.
RUN_COMMIT, RUN_DIRTY = git_commit(), git_dirty()


def machine() -> str:
    """Processor, thread count and torch build, e.g. to tell this machine's rows from a lent one's."""
    return f"{_cpu_model()} ({platform.machine()}) {torch.get_num_threads()} threads, torch {torch.__version__}"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "cpu")
    except OSError:
        return platform.processor() or "cpu"


def append_row(filename: str, row: dict) -> None:
    """Append one JSON line to ``benchmarks/results/<filename>``."""
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / filename, "a") as f:
        f.write(json.dumps(row) + "\n")


def base_row(benchmark: str, **fields) -> dict:
    """A result row: the benchmark's name, the commit at the start of the run and whether the
    tree was dirty then, the machine, and ``fields``."""
    return {"benchmark": benchmark, "library": "alphagp", "commit": RUN_COMMIT, "dirty": RUN_DIRTY,
            "machine": machine(), **fields}


def class_index(y_test, y_train) -> np.ndarray:
    """Class indices of ``y_test`` in the sorted labels of ``y_train`` (the estimator's order)."""
    return np.searchsorted(np.unique(y_train), y_test)
