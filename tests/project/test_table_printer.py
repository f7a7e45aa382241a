"""Issue 81, item 6: the reports print every markdown table through one printer
(``report_common.MarkdownTable``): no report of ``benchmarks/`` writes a table's separator line
itself, and the printer refuses a row whose cells would shift the columns."""

from __future__ import annotations

import ast
import contextlib
import io
import re

import pytest

from conftest import REPO, benchmarks_module

#: a markdown table's separator, as a report written by hand printed it (``|---|`` or ``| --- |``)
SEPARATOR = re.compile(r"\|\s*-{3}|-{3}\s*\|")


def _literals(path) -> list[tuple[int, str]]:
    """``(line, text)`` of every string constant of the module at ``path`` (f-strings' parts too)."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_report_prints_a_table_by_hand():
    reports = sorted((REPO / "benchmarks").glob("report*.py"))
    assert len(reports) >= 10
    by_hand = [f"{path.name}:{line}" for path in reports if path.name != "report_common.py"
               for line, text in _literals(path) if SEPARATOR.search(text)]
    assert by_hand == [], "print the table with report_common.MarkdownTable: " + ", ".join(by_hand)


def test_the_printer_writes_a_table_and_refuses_a_row_of_another_width():
    common = benchmarks_module("report_common")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        table = common.MarkdownTable(["a", "b"])
        table.row(1, "x")
        with pytest.raises(ValueError, match="a row of 3 cells in a table of 2 columns"):
            table.row(1, 2, 3)
    assert out.getvalue() == "| a | b |\n|---|---|\n| 1 | x |\n"
