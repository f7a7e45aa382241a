"""Issue 68: BENCHMARKS.md is a front page over one document per paper and per study
(benchmarks/docs/); every relative link of those documents reaches a file that exists and, where it
names a section, a heading of that file (GitHub's anchors), and every document is linked from the
front page."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

DOCS = REPO / "benchmarks" / "docs"
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of ``path``'s headings (outside code blocks): lower case, punctuation
    other than hyphens and underscores dropped, spaces to hyphens."""
    found, fence = set(), False
    for line in path.read_text().splitlines():
        fence ^= line.startswith("```")
        heading = None if fence else re.match(r"^#+ (.*)$", line)
        if heading:
            found.add(re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-"))
    return found


def test_every_link_of_the_benchmark_documents_resolves():
    documents = [REPO / "BENCHMARKS.md", *sorted(DOCS.glob("*.md"))]
    assert len(documents) >= 9
    broken = []
    for doc in documents:
        for target in _LINK.findall(doc.read_text()):
            if "://" in target:
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            if not path.exists():
                broken.append(f"{doc.name}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert broken == []
    front = (REPO / "BENCHMARKS.md").read_text()
    assert [d.name for d in DOCS.glob("*.md") if f"benchmarks/docs/{d.name}" not in front] == []
