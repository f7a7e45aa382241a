"""Issue 80, item 7: every number and every "met" or "missed" in the prose of README.md,
BENCHMARKS.md and benchmarks/docs/ is traced to a printed block (``printed.py``: what a report
prints from the committed rows), or is listed in ``prose_ledger.txt`` with its reason.

The prose is the documents' text outside their printed blocks, fenced code, HTML comments,
headings and the registry's table of methods (``alphagp methods --markdown`` prints it, and a test
keeps the two the same), cut into units: a table row, or a sentence. In a unit these are not
numbers of the text: inline code (commands, parameters, identifiers), links (a page's or a
section's title, and its address), commit hashes, a citation's year and the names that carry a
number (issue 80, item 3, Table 2, eq. 25, section 3.2, the alpha paper 3.1, Appendix C, Figures
1 and 4). A number is
*quoted* where a printed block of the same document holds it: a decimal, a number with a
thousands comma or a percent sign, or one of 100 or more, as it stands; a smaller whole number
followed by the same two words ("6 of 18", "18 tables (aim"; one word where the block's line ends
after it), since a bare small number is in every block. A
"met" or "missed" is quoted where a block of the same document holds it after the same three
words ("at most 0.90, met"). A unit with a number or such a word that is not quoted is *untraced*,
and must be a line of the ledger::

    <document> | <reason> | <the unit's text>

with one of the reasons of :data:`REASONS`. So a count restated in prose and then changed, a
"missed" turned into "met", or a number pasted from another document's block is untraced (it is
no longer the ledger's text either); and a ledger line whose unit is gone from its document is
stale, so the ledger only holds what the documents say.

    python benchmarks/prose_numbers.py           # the untraced units not in the ledger, and stale lines
    python benchmarks/prose_numbers.py --check   # exit 1 where either is found (tests/project/test_prose_numbers.py)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the documents whose prose is checked
DOCUMENTS = (ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((HERE / "docs").glob("*.md")))
LEDGER = HERE / "prose_ledger.txt"
#: why a unit's number may stand without a printed block
REASONS = {
    "paper": "a value or a setting of one of the papers (its text or its tables)",
    "setting": "a setting the text states: of a run (rows, seeds, threads, epochs, budgets), of the code "
               "(defaults, limits) or of a data set (its rows, features, classes)",
    "aim": "an issue's aim or an earlier number the text compares with, as the issue gave it",
    "unprinted": "a measurement written before this check, from the results files the section names; "
                 "to be printed from its rows (issue 80 left these as they stood)",
}
_BLOCK = re.compile(r"<!-- printed by: report\.py [^>]*? -->\n(?P<body>.*?)<!-- end of printed block -->", re.DOTALL)
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CODE = re.compile(r"`[^`]*`")
_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_NAMES = re.compile(r"\b([Ii]ssues?|[Ii]tems?|Tables?|Figures?|Fig\.|eqs?\.|equations?|[Ss]ections?|Appendix|Alg\.|"
                    r"Algorithm|stops?|sessions?|paper|thesis|Williams)\s+(\d[\w.]*|[A-Z]\b)"
                    r"((,|, and| and| or| to|-|/)\s*(\d[\w.]*|[A-Z]\b))*")
#: a year after an author or a venue (a citation)
_YEAR = re.compile(r"(?<=[A-Za-z.&]\s)(19|20)\d\d\b")
#: a link's text (a title of a page or a section) and its target
_LINKED = re.compile(r"\[[^\]]*\]\([^)]*\)")
#: the registry's table, which ``alphagp methods --markdown`` prints and a test keeps the same
_REGISTRY = re.compile(r"<!-- the registry's table[^>]*-->\n(\|.*\n)+")
_NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?%?")
_TOKEN = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?|[A-Za-z][\w'-]*")
_VERDICT = re.compile(r"^(met|missed)$")


def units(text: str) -> list[str]:
    """The prose units of a document (module docstring), each on one line with its spaces collapsed."""
    text = _COMMENT.sub("", _REGISTRY.sub("\n", _FENCE.sub("\n\n", _BLOCK.sub("\n\n", text))))
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in paragraph.split("\n") if line.strip() and not line.startswith("#")]
        if any(line.startswith("|") for line in lines):
            found += lines
            continue
        joined = " ".join(lines)
        found += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*(\[`-])", joined) if s]
    return [re.sub(r"\s+", " ", u) for u in found]


def _tokens(text: str) -> list[str]:
    return [t.rstrip(",") for t in _TOKEN.findall(text)]


def _is_number(token: str) -> bool:
    return bool(_NUMBER.fullmatch(token))


def _specific(token: str) -> bool:
    """A number that stands on its own: a decimal, a thousands comma, a percent, or 100 or more."""
    digits = token.lstrip("+-").rstrip("%")
    return any(c in token for c in ".,%e") or (digits.isdigit() and int(digits) >= 100)


class Quotes:
    """What the printed blocks of one document hold: their numbers, each number with the two words
    after it, and the three words before each "met" or "missed"."""

    def __init__(self, text: str):
        bodies = [m["body"] for m in _BLOCK.finditer(text)]
        self.numbers, self.pairs, self.verdicts = set(), set(), set()
        for body in bodies:
            for line in body.split("\n"):
                tokens = _tokens(line)
                for i, token in enumerate(tokens):
                    if _is_number(token):
                        self.numbers.add(token)
                        self.pairs.add(tuple(tokens[i:i + 3]))
                    elif _VERDICT.match(token):
                        self.verdicts.add(tuple(tokens[max(i - 3, 0):i + 1]))

    def untraced(self, unit: str) -> list[str]:
        """The numbers and verdict words of ``unit`` that no block of the document holds."""
        cleaned = _YEAR.sub(" ", _NAMES.sub(" ", _HASH.sub(" ", _LINKED.sub(" ", _CODE.sub(" ", unit)))))
        tokens = _tokens(cleaned)
        missing = []
        for i, token in enumerate(tokens):
            if _is_number(token):
                quoted = token in self.numbers if _specific(token) else any(
                    tuple(tokens[i:i + k]) in self.pairs for k in (3, 2))     # two: at a block line's end
                if not quoted:
                    missing.append(token)
            elif _VERDICT.match(token) and tuple(tokens[max(i - 3, 0):i + 1]) not in self.verdicts:
                missing.append(token)
        return missing


def documents() -> dict[str, str]:
    """The checked documents' texts by their paths from the repository's root."""
    return {doc.relative_to(ROOT).as_posix(): doc.read_text() for doc in DOCUMENTS}


def untraced_units(texts: dict[str, str]) -> list[tuple[str, str]]:
    """``(document, unit)`` for every unit of the documents ``texts`` (name -> text) with an untraced
    number or verdict word."""
    found = []
    for name, text in texts.items():
        quotes = Quotes(text)
        found += [(name, unit) for unit in dict.fromkeys(units(text)) if quotes.untraced(unit)]
    return found


def ledger(path: Path = LEDGER) -> dict[tuple[str, str], str]:
    """The ledger's lines: ``(document, unit) -> reason``; a line with an unknown reason raises."""
    entries = {}
    if not path.exists():
        return entries
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        document, reason, unit = (part.strip() for part in line.split(" | ", 2))
        if reason not in REASONS:
            raise ValueError(f"{path.name} line {number}: reason {reason!r} is not one of {sorted(REASONS)}")
        entries[document, unit] = reason
    return entries


def problems(texts: dict[str, str] | None = None, path: Path = LEDGER) -> list[str]:
    """Untraced units of the documents ``texts`` (default: :func:`documents`) the ledger does not list,
    and ledger lines whose unit is no longer untraced in its document (gone, or quoted from a block
    now), one sentence each."""
    texts = documents() if texts is None else texts
    listed = ledger(path)
    found = untraced_units(texts)
    out = [f"{doc}: untraced, not in {path.name}: {unit}" for doc, unit in found if (doc, unit) not in listed]
    present = set(found)
    out += [f"{path.name}: stale (no such untraced unit in {doc}): {unit}" for (doc, unit) in listed
            if doc in texts and (doc, unit) not in present]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 where an untraced unit or a stale line is found")
    args = parser.parse_args()
    found = problems()
    print("\n".join(found) if found else "every number and verdict of the prose is quoted from a block or listed")
    if args.check and found:
        sys.exit(1)


if __name__ == "__main__":
    main()
