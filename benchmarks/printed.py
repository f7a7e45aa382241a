"""The blocks of BENCHMARKS.md that ``benchmarks/report.py`` prints from the committed results
files, kept between markers that name the report and its arguments::

    <!-- printed by: report.py levers defaults_levers -->
    ...what `python report.py levers defaults_levers` prints...
    <!-- end of printed block -->

A block may hold one table of what the report prints: ``<!-- printed by: report.py fittime table
2 -->`` keeps the second markdown table of its output (the tables of a report that prints
several often sit in different places of the text).

``python benchmarks/printed.py`` rewrites every marked block from the rows;
``python benchmarks/printed.py --check`` rewrites nothing and exits 1 naming the blocks whose
text differs from what the rows print now (``tests/project/test_printed_blocks.py`` runs it), so
a table, count or range written by hand, or left behind by new rows, is caught. A report that
also draws a figure is run with saving turned off: a block takes the printed text only.

Two more checks close the ways around the markers: every block of :data:`KNOWN`
(``printed_blocks.txt``, one ``document: args`` a line; a rewrite adds new blocks to it) must still
be in its document, so deleting a block's markers fails; and a line outside the blocks that has
the shape of a line some block's report prints (its numbers replaced by ``#``) must be one of the
lines the reports print, so a report line pasted outside the markers and edited ("8 of 16" to
"9 of 16") fails too. Each block opens with a comment line per results file its report read,
naming the report's function and the commands that wrote the rows (one hop to the code and the run). A results file's name may carry ``@<commit>,...`` (``common.results_rows``):
a block printed before later runs appended to the file reads the rows of its commits.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: the documents whose blocks are printed from the rows (BENCHMARKS.md and benchmarks/docs/)
DOCUMENTS = (ROOT / "BENCHMARKS.md", *sorted((HERE / "docs").glob("*.md")))
#: every block the documents have held: ``<document relative to the root>: <args>`` a line
KNOWN = HERE / "printed_blocks.txt"
#: a line's shape: its numbers (signs, thousands commas, decimals, exponents) replaced by ``#``
_NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?")
_BLOCK = re.compile(r"(<!-- printed by: report\.py (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- end of printed block -->)",
                    re.DOTALL)


def tables(text: str) -> list[str]:
    """The markdown tables of ``text`` (runs of lines that start with ``|``), in order."""
    found, current = [], []
    for line in [*text.split("\n"), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            found.append("\n".join(current))
            current = []
    return found


def render(args: list[str]) -> str:
    """What ``python report.py ARGS`` prints (trailing space removed), run in this process; with
    ``ARGS`` ending in ``table K``, the K-th markdown table of it (from 1), in ``tail K`` its last K lines."""
    return _rendered(args)[0] if args == _full(args) else _select(_rendered(_full(args))[0], args[-2], int(args[-1]))


def _rendered(args: list[str]) -> tuple[str, str]:
    """``(output, header)`` of ``python report.py ARGS``: what it prints, and one comment line a
    results file it read naming the report's function (module and name) and the commands that
    wrote those rows (:func:`common.commands_of`): one hop from a block to its code and its run."""
    sys.path.insert(0, str(HERE))
    try:
        import common
        import report
    finally:
        sys.path.remove(str(HERE))
    function, read = report.REPORTS[args[0]], []
    original = common.read_rows

    def recording(filename: str) -> list[dict]:
        read.append(filename)
        return original(filename)

    users = [m for m in list(sys.modules.values()) if getattr(m, "read_rows", None) is original]
    out = io.StringIO()
    for module in users:
        module.read_rows = recording
    try:
        with contextlib.redirect_stdout(out), _figures_not_saved():
            function(*args[1:])
    finally:
        for module in users:
            module.read_rows = original
    where = f"{function.__module__}.{function.__name__}"
    header = "\n".join(f"<!-- {where}; rows of {name} by: {' ; '.join(common.commands_of(name)) or 'no command kept'} -->"
                       for name in dict.fromkeys(read)) or f"<!-- {where}; reads no results file -->"
    return out.getvalue().strip("\n"), header


def _not_saved(*_args, **_kwargs) -> None:
    """``Figure.savefig`` while a block is rendered."""


@contextlib.contextmanager
def _figures_not_saved():
    """matplotlib's ``savefig`` does nothing inside (and its figures are closed after)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    saved = Figure.savefig
    Figure.savefig = _not_saved
    try:
        yield
    finally:
        Figure.savefig = saved
        plt.close("all")


def _select(out: str, how: str, k: int) -> str:
    """Of a report's output ``out``: its ``k``-th markdown table (``how="table"``, from 1) or its
    last ``k`` lines (``"tail"``)."""
    return tables(out)[k - 1] if how == "table" else "\n".join(out.split("\n")[-k:]).strip("\n")


def _full(args: list[str]) -> list[str]:
    """The report call of block ``args`` without its ``table K`` or ``tail K`` selection."""
    return args[:-2] if len(args) > 2 and args[-2] in ("table", "tail") else args


def blocks(text: str, cache: dict | None = None) -> list[tuple[str, str, str]]:
    """``(args, printed text, what the rows print now)`` for each marked block of ``text``
    (``cache``: the reports' output by call, filled and reused)."""
    cache = {} if cache is None else cache
    found = []
    for m in _BLOCK.finditer(text):
        args = m["args"].split()
        full = " ".join(_full(args))
        if full not in cache:
            cache[full], cache[f"{full} header"] = _rendered(full.split())
        now = cache[full] if full == m["args"] else _select(cache[full], args[-2], int(args[-1]))
        found.append((m["args"], m["body"].strip("\n"), cache[f"{full} header"] + "\n" + now))
    return found


def shape(line: str) -> str:
    """``line`` with its numbers replaced by ``#``."""
    return _NUMBER.sub("#", line)


def _tails(line: str) -> list[str]:
    """``line`` and, for a line of prose (not a table's row), every ending of it that starts a word
    (a report line pasted after a bullet, a label or a sentence), each also without a final full
    stop."""
    if line.lstrip().startswith("|"):
        return [line]
    ends = [line[i:] for i in range(len(line)) if i == 0 or line[i - 1] == " "]
    return ends + [end[:-1] for end in ends if end.endswith(".")]


def pasted_lines(text: str, cache: dict) -> list[str]:
    """The lines of ``text`` outside its blocks that hold, whole or after a prefix, the shape of a
    line a report of ``cache`` prints but none of the lines of that shape (a report line edited
    by hand)."""
    printed: dict[str, set[str]] = {}
    for key, out in cache.items():
        if key.endswith(" header"):
            continue
        for line in out.split("\n"):
            if any(c.isdigit() for c in line):
                printed.setdefault(shape(line), set()).add(line)
    found = []
    for line in _BLOCK.sub("", text).split("\n"):
        if not any(c.isdigit() for c in line):
            continue
        tails = [end for end in _tails(line) if shape(end) in printed]
        if tails and not any(end in printed[shape(end)] for end in tails):
            found.append(line)
    return found


def known() -> set[tuple[str, str]]:
    """The blocks of :data:`KNOWN`: ``(document, args)``."""
    if not KNOWN.exists():
        return set()
    return {tuple(part.strip() for part in line.split(":", 1)) for line in KNOWN.read_text().splitlines()
            if line.strip()}


def problems(cache: dict | None = None) -> list[str]:
    """What the check finds, one sentence each: blocks that differ from their rows, blocks of
    :data:`KNOWN` whose markers are gone, and report lines outside the blocks edited by hand
    (``cache``: the reports' output by call, as :func:`blocks`)."""
    found, cache, present = [], {} if cache is None else cache, set()
    texts = {doc: doc.read_text() for doc in DOCUMENTS}
    for doc, text in texts.items():
        name = doc.relative_to(ROOT).as_posix()
        for args, text_now, rows_now in blocks(text, cache):
            present.add((name, args))
            if text_now != rows_now:
                found.append(f"{name}: the block of `report.py {args}` differs from what its rows print now")
    for name, args in sorted(known() - present):
        found.append(f"{name}: the block of `report.py {args}` ({KNOWN.name}) has lost its markers")
    for doc, text in texts.items():
        for line in pasted_lines(text, cache):
            found.append(f"{doc.relative_to(ROOT).as_posix()}: a report's line outside its block differs from "
                         f"what the reports print now: {line[:120]}")
    return found


def _rewritten(text: str, now: dict[str, str]) -> str:
    """``text`` with each block's body replaced by ``now[its args]``."""
    return _BLOCK.sub(lambda m: m.group(1) + now[m["args"]] + "\n" + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    if check:
        found = problems()
        for problem in found:
            print(problem)
        return 1 if found else 0
    cache, entries = {}, known()
    for doc in DOCUMENTS:
        text = doc.read_text()
        found = blocks(text, cache)
        stale = [args for args, text_now, rows_now in found if text_now != rows_now]
        doc.write_text(_rewritten(text, {args: rows_now for args, _, rows_now in found}))
        entries |= {(doc.relative_to(ROOT).as_posix(), m["args"]) for m in _BLOCK.finditer(text)}
        print(f"{doc.relative_to(ROOT)}: rewrote {len(stale)} of {len(_BLOCK.findall(text))} printed blocks")
    KNOWN.write_text("".join(f"{name}: {args}\n" for name, args in sorted(entries)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
