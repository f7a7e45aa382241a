"""Every link with an anchor between the project's Markdown documents (the front pages, the user
guide, the benchmark documents) lands on a heading that exists (issue 75: one hop from a
headline to its section)."""

from __future__ import annotations

import re

from conftest import REPO

DOCUMENTS = [REPO / "README.md", REPO / "BENCHMARKS.md", REPO / "DESIGN.md",
             *sorted((REPO / "benchmarks" / "docs").glob("*.md")), *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\((?P<target>[^)\s#]*\.md)?#(?P<anchor>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens and underscores dropped,
    spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)     # no headings inside code
    return {slug(h) for h in HEADING.findall(text)}


def test_every_anchored_link_lands_on_a_heading():
    broken, checked = [], 0
    for doc in DOCUMENTS:
        for m in LINK.finditer(doc.read_text()):
            target = (doc.parent / m["target"]).resolve() if m["target"] else doc
            if not target.exists() or REPO not in target.parents:
                continue
            checked += 1
            if m["anchor"] not in anchors(target):
                broken.append(f"{doc.relative_to(REPO)} -> {target.relative_to(REPO)}#{m['anchor']}")
    assert checked > 20
    assert broken == [], "links to headings that do not exist:\n" + "\n".join(broken)
