"""The benchmark scripts still import against the library: they are not run by the suite, so a
renamed or removed name of ``alphagp`` would otherwise break them silently (as it once broke
``speed.py``). Each script is imported as a module; its ``__main__`` block does not run."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from conftest import REPO

BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if p.name != "common.py")


@pytest.fixture(autouse=True)
def _benchmarks_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_script_imports(script):
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
