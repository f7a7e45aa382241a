"""Issues 61 and 68: the blocks of the benchmark documents (BENCHMARKS.md, docs/benchmarks/)
between "printed by" markers are what ``benchmarks/report.py`` prints from the committed results
files now (``benchmarks/printed.py`` rewrites them); a block edited by hand or left behind by new
rows fails here, and so do a known block whose markers were deleted and a report line pasted
outside the markers and edited. It reads only the committed rows (no data folder) and draws no
figure to disk; matplotlib, which the reports import, is a test dependency (``.[test]``)."""

from __future__ import annotations

import pytest

from conftest import REPO, benchmarks_module


@pytest.fixture(scope="module")
def printed():
    return benchmarks_module("printed")


@pytest.fixture(scope="module")
def outputs():
    """The reports' output by call, shared by the tests below."""
    return {}


def test_every_printed_block_is_what_its_rows_print(printed, outputs):
    assert len(printed.known()) >= 60
    found = printed.problems(outputs)
    assert found == [], "python benchmarks/printed.py rewrites the blocks:\n" + "\n".join(found)


def test_the_check_sees_lost_markers_and_edited_pasted_lines(printed, outputs, monkeypatch, tmp_path):
    """The ways around the markers, each made in a copy of the default's document: a block whose
    markers are deleted, and a line of a block's report pasted outside the markers with a count
    changed, alone or after a prefix (a bullet and a label; issue 74)."""
    name = "benchmarks/docs/defaults.md"
    text = (REPO / name).read_text()
    start = text.index("<!-- printed by: report.py panel defaults_panel@4f71c67,07bfdef,50dd1e4 -->")
    end = text.index("<!-- end of printed block -->", start) + len("<!-- end of printed block -->")
    body = text[start:end].split("\n")[1:-1]
    line = next(line for line in body if line.startswith("lowest test NLL of the GP peers on 6 of 16"))
    edited = text[:end] + "\n\n" + line.replace("6 of 16", "7 of 16") + "\n" + text[end:]
    prefixed = text[:end] + "\n\n- So: " + line.replace("6 of 16", "7 of 16") + ".\n" + text[end:]
    unmarked = text[:start] + "\n".join(body) + text[end:]
    copy = tmp_path / name
    copy.parent.mkdir(parents=True)
    known = {entry for entry in printed.known() if entry[0] == name}
    monkeypatch.setattr(printed, "DOCUMENTS", (copy,))
    monkeypatch.setattr(printed, "ROOT", tmp_path)
    monkeypatch.setattr(printed, "known", lambda: known)
    copy.write_text(text)
    assert printed.problems(outputs) == []
    copy.write_text(text[:end] + "\n\n- So: " + line + ".\n" + text[end:])        # pasted unchanged: no problem
    assert printed.problems(outputs) == []
    for changed, expected in ((edited, "outside its block differs"), (prefixed, "outside its block differs"),
                              (unmarked, "has lost its markers")):
        copy.write_text(changed)
        found = printed.problems(outputs)
        assert any(expected in problem for problem in found), found


def test_every_block_names_its_report_and_the_commands_of_its_rows(printed, outputs):
    """Issue 75: one hop from a block to its code and its run: its first lines name the report's
    function and, per results file it read, the commands that wrote the rows."""
    import re
    header = re.compile(r"<!-- report_\w+\.\w+; (rows of [\w.@,]+ by: python \S+\.py.*|reads no results file) -->$")
    for doc in printed.DOCUMENTS:
        for args, text, _ in printed.blocks(doc.read_text(), outputs):
            first = text.split("\n")[0]
            assert header.match(first), f"{doc.name}: the block of report.py {args} opens with {first[:120]!r}"
