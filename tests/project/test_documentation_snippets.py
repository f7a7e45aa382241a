"""The README's and the documentation pages' Python snippets run as written.

Every ```python block of README.md and docs/*.md runs in a fresh namespace in an empty folder,
so a snippet that uses a name it does not define (an ``X_train`` from nowhere) fails here. A
block preceded by a ``<!-- readme-test: compile only ... -->`` line (one that needs the benchmark
data or half an hour) is compiled, not run.
"""

from __future__ import annotations

import re

import matplotlib
import pytest

from conftest import REPO

ROOT = REPO
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?P<marker><!-- readme-test: compile only[^>]*-->\n)?```python\n(?P<code>.*?)```", re.DOTALL)


def _section_of(text: str, offset: int) -> str:
    """The slug of the last heading above ``offset`` outside code fences ("top" before any)."""
    heading, fenced = "top", False
    for line in text[:offset].splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            heading = re.sub(r"[^a-z0-9]+", "-", line.lstrip("#").strip().lower()).strip("-")
    return heading


def snippets() -> list:
    """Each block with an id ``page#section`` (``-2``, ``-3`` for later blocks of one section), which
    an edit elsewhere on the page leaves unchanged (the slow list in conftest.py names them)."""
    found = []
    for page in PAGES:
        text = page.read_text()
        seen: dict[str, int] = {}
        for match in BLOCK.finditer(text):
            section = _section_of(text, match.start())
            seen[section] = seen.get(section, 0) + 1
            suffix = f"-{seen[section]}" if seen[section] > 1 else ""
            found.append(pytest.param(match["code"], bool(match["marker"]), id=f"{page.name}#{section}{suffix}"))
    return found


def test_snippets_are_found():
    """The pattern finds the README's and the user guide's snippets (a changed fence would otherwise
    skip them all)."""
    found = snippets()
    assert any(p.id.startswith("README.md") for p in found)
    guide = [p for p in found if p.id.startswith("guide.md")]
    assert len(guide) >= 5
    assert sum(p.values[1] for p in guide) >= 1           # the MNIST recipe is compile-only


@pytest.mark.parametrize("code, compile_only", snippets())
def test_snippet_runs(code, compile_only, tmp_path, monkeypatch):
    compiled = compile(code, "<snippet>", "exec")
    if compile_only:
        return
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    exec(compiled, {"__name__": "__snippet__"})  # noqa: S102 -- the snippets are this repository's own text
