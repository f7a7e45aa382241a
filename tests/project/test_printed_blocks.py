"""Issue 61: the blocks of BENCHMARKS.md between "printed by" markers are what
``benchmarks/report.py`` prints from the committed results files now (``benchmarks/printed.py``
rewrites them; a block edited by hand, or left behind by new rows, fails here)."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO


def test_every_printed_block_is_what_its_rows_print():
    pytest.importorskip("matplotlib")                # report.py draws figures for other reports
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import printed
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    found = printed.blocks((REPO / "BENCHMARKS.md").read_text())
    assert len(found) >= 4
    stale = [args for args, text, now in found if text != now]
    assert stale == [], f"BENCHMARKS.md blocks that differ from their rows (python benchmarks/printed.py): {stale}"
