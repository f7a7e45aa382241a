"""Shared helpers for the benchmark scripts: result rows, git commit, thread setup."""

from __future__ import annotations

import argparse
import json
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from alphagp.data import load_benchmark

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
#: the command that runs, as typed from benchmarks/ (the script and its arguments): every row records it
RUN_COMMAND = shlex.join(["python", Path(sys.argv[0]).name, *sys.argv[1:]])


def row_threads(row: dict) -> str:
    """A result row's thread count: its ``threads`` field, or the torch threads its ``machine``
    records ("... 2 threads, torch ..."); "not recorded" for neither."""
    if "threads" in row:
        return str(row["threads"])
    found = re.search(r"(\d+) threads", row.get("machine", ""))
    return found.group(1) if found else "not recorded"


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


def read_rows(filename: str) -> list[dict]:
    """Every row of ``benchmarks/results/<filename>`` (one JSON object a line; blank lines skipped)."""
    with open(RESULTS / filename) as f:
        return [json.loads(line) for line in f if line.strip()]


def commands_of(filename: str) -> list[str]:
    """The commands that wrote results file ``filename``: its rows' ``command`` where every row has
    one, else ``results/COMMANDS.json``'s entry (the files written before rows recorded it)."""
    rows = read_rows(filename)
    if rows and all("command" in r for r in rows):
        return sorted({r["command"] for r in rows})
    manifest = json.loads((RESULTS / "COMMANDS.json").read_text())
    return list(manifest.get(filename, {}).get("commands", []))


def results_rows(name: str) -> list[dict]:
    """The rows a report reads: results file ``<name>.jsonl``, or with ``name`` written
    ``<file>@<commit>,<commit>...`` only its rows from those commits (a block of BENCHMARKS.md
    printed before later runs appended rows to the same file names the commits it was printed
    from, so that it still reprints from the rows)."""
    file, _, commits = name.partition("@")
    rows = read_rows(f"{file}.jsonl")
    return [r for r in rows if r.get("commit") in commits.split(",")] if commits else rows


def done_keys(filename: str, key) -> set:
    """``key(row)`` of every row of results file ``filename`` written from a clean tree (empty
    where the file does not exist yet): what a resumable queue's ``--skip-done`` leaves out."""
    if not (RESULTS / filename).exists():
        return set()
    return {key(r) for r in read_rows(filename) if r.get("dirty") is False}


def ran_whole_budget(row: dict) -> bool:
    """Whether a results row's fit ran all its ``epochs`` (``epochs_run``; rows without it come
    from scripts that always ran the whole budget)."""
    return row.get("epochs_run", row["epochs"]) == row["epochs"]


def base_row(benchmark: str, **fields) -> dict:
    """A result row: the benchmark's name, the commit at the start of the run and whether the
    tree was dirty then, the command that made it (script and arguments), the machine, and ``fields``."""
    return {"benchmark": benchmark, "library": "alphagp", "commit": RUN_COMMIT, "dirty": RUN_DIRTY,
            "command": RUN_COMMAND, "machine": machine(), **fields}


def class_index(y_test, y_train) -> np.ndarray:
    """Class indices of ``y_test`` in the sorted labels of ``y_train`` (the estimator's order)."""
    return np.searchsorted(np.unique(y_train), y_test)


def benchmark_parser(doc: str, *, threads: int | None = 1, output: str | None = None) -> argparse.ArgumentParser:
    """The argument parser every benchmark script starts from: its docstring as the description,
    ``--threads`` (PyTorch's threads in this process, and the fits' ``n_jobs``; ``None``: no such
    flag) and ``--output`` (the results file in benchmarks/results; ``None``: no such flag)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if threads is not None:
        parser.add_argument("--threads", type=int, default=threads,
                            help=f"PyTorch threads and the fits' n_jobs (default {threads}); set it explicitly")
    if output is not None:
        parser.add_argument("--output", default=output, help=f"results file in benchmarks/results (default {output})")
    return parser


def parse_benchmark_args(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """``parser``'s arguments, with PyTorch's thread count set to ``--threads`` where the parser has it."""
    args = parser.parse_args(argv)
    if getattr(args, "threads", None) is not None:
        torch.set_num_threads(args.threads)
    return args


#: the scalable-EP paper's UCI sets (Tables 2 and 3)
DATASETS = ["glass", "new_thyroid", "satimage", "svmguide2", "vehicle", "vowel", "waveform_21", "wine"]


def split(name: str, seed: int):
    """The scalable-EP paper's train/test split of UCI set ``name`` for seed ``seed``: 90 % for
    training (Satellite 20 %, Waveform 30 % of a 1,000-row draw, Shuttle 75 %), Vowel's first six classes."""
    X, y = load_benchmark(name)
    rng = np.random.default_rng(seed)
    if name == "vowel":
        keep = y < 6
        X, y = X[keep], y[keep]
    if name == "waveform_21":
        pick = rng.choice(len(y), 1000, replace=False)
        X, y = X[pick], y[pick]
    train_size = {"satimage": 0.2, "waveform_21": 0.3, "shuttle": 0.75}.get(name, 0.9)
    return train_test_split(X, y, train_size=train_size, random_state=seed)


def first_reaching(curve: list[dict], target: float) -> dict | None:
    """The first point of ``curve`` with ``test_nll <= target``."""
    return next((p for p in curve if p["test_nll"] <= target), None)


def fresh_process(saved: list[tuple[str, str, str]]) -> list[str]:
    """Load every ``(model file, features .npy, probabilities .npy)`` in one new Python process; the
    files whose loaded model predicts other probabilities (or fails to load)."""
    code = ("import sys, json, numpy as np\nfrom alphagp.cli import _load_model\nbad = []\n"
            "for model, X, p in json.loads(sys.argv[1]):\n"
            "    try:\n        same = np.array_equal(_load_model(model).predict_proba(np.load(X)), np.load(p))\n"
            "    except Exception:\n        same = False\n"
            "    if not same: bad.append(model)\nprint(json.dumps(bad))\n")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(saved)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def run_study(args, study, describe) -> None:
    """A study's loop over its tables (``args.tables``): each row of ``study(name)`` appended to
    ``args.output`` with the thread count, and said on one line (``describe(name, row)``)."""
    for name in args.tables:
        for row in study(name):
            append_row(args.output, base_row(Path(args.output).stem, threads=args.threads, **row))
            print(describe(name, row), flush=True)
