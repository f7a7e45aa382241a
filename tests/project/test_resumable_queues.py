"""The benchmark queues resume where they stopped: a script run with ``--skip-done`` a second time
adds no row for the runs whose clean row the results file already holds, and it still runs what
is missing. Checked end to end on tiny runs of ``uci.py`` and ``mnist.py`` (the commit and
dirty flag of the rows are pinned to a clean tree, as on CI's fresh clone)."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from alphagp.data import DataNotFoundError, data_dir

from conftest import REPO

BENCHMARKS = REPO / "benchmarks"


@pytest.fixture
def script(monkeypatch):
    """``load(name)``: benchmark script ``name`` as a module, with rows written as from a clean tree."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import common
    monkeypatch.setattr(common, "RUN_DIRTY", False)
    loaded = []

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        loaded.append(spec.name)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)


def _run(module, monkeypatch, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", [module.__file__, *argv])
    module.main()


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _require(name: str) -> None:
    try:
        (data_dir() / name).stat()
    except (DataNotFoundError, OSError) as err:
        pytest.skip(f"{name} absent from the benchmark data: {err}")


def test_uci_queue_skips_the_fits_it_holds(script, monkeypatch, tmp_path):
    _require("wine.tsv.gz")
    uci, out = script("uci"), tmp_path / "uci.jsonl"
    args = ["--threads", "1", "--datasets", "wine", "--fractions", "0.05", "--splits", "1", "--max-iter", "2",
            "--output", str(out), "--skip-done"]
    _run(uci, monkeypatch, *args, "--methods", "ep")
    assert [(r["method"], r["dirty"]) for r in _rows(out)] == [("EP", False)]
    _run(uci, monkeypatch, *args, "--methods", "ep", "vi")      # EP is held: only VI runs
    assert [r["method"] for r in _rows(out)] == ["EP", "VI"]
    _run(uci, monkeypatch, *args, "--methods", "vi", "ep", "--fractions", "0.1")  # another M: both run
    assert [(r["method"], r["M_fraction"]) for r in _rows(out)][2:] == [("VI", 0.1), ("EP", 0.1)]


def test_mnist_queue_skips_a_run_it_holds(script, monkeypatch, tmp_path):
    _require("mnist.npz")
    mnist, out = script("mnist"), tmp_path / "mnist.jsonl"
    args = ["--threads", "1", "--n-inducing", "5", "--max-epochs", "1", "--validation", "59000",
            "--output", str(out), "--skip-done"]
    _run(mnist, monkeypatch, *args, "--method", "vi")
    first = _rows(out)
    assert [r["phase"] for r in first] == ["eval", "selected"]
    _run(mnist, monkeypatch, *args, "--method", "vi")
    assert _rows(out) == first
    _run(mnist, monkeypatch, *args, "--method", "vi", "--seed", "1")   # another run: it runs
    assert [r["seed"] for r in _rows(out) if r["phase"] == "selected"] == [0, 1]
