"""Shared helpers for the benchmark scripts: result rows, git commit, thread setup."""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def git_commit() -> str:
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"],
                                       cwd=Path(__file__).parent, text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> str:
    return f"{platform.machine()} {torch.get_num_threads()} threads, torch {torch.__version__}"


def append_row(filename: str, row: dict) -> None:
    """Append one JSON line to ``benchmarks/results/<filename>``."""
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / filename, "a") as f:
        f.write(json.dumps(row) + "\n")


def base_row(benchmark: str, **fields) -> dict:
    return {"benchmark": benchmark, "library": "alphagp", "commit": git_commit(),
            "machine": machine(), **fields}
