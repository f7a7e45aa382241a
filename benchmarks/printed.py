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
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS_MD = HERE.parent / "BENCHMARKS.md"
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
    ``ARGS`` ending in ``table K``, the K-th markdown table of it (from 1)."""
    if len(args) > 2 and args[-2] == "table":
        return tables(render(args[:-2]))[int(args[-1]) - 1]
    sys.path.insert(0, str(HERE))
    try:
        import report
    finally:
        sys.path.remove(str(HERE))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), _figures_not_saved():
        report.REPORTS[args[0]](*args[1:])
    return out.getvalue().strip("\n")


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


def blocks(text: str) -> list[tuple[str, str, str]]:
    """``(args, printed text, what the rows print now)`` for each marked block of ``text``."""
    return [(m["args"], m["body"].strip("\n"), render(m["args"].split())) for m in _BLOCK.finditer(text)]


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    text = BENCHMARKS_MD.read_text()
    stale = [args for args, printed, now in blocks(text) if printed != now]
    if check:
        for args in stale:
            print(f"BENCHMARKS.md: the block of `report.py {args}` differs from what its rows print now")
        return 1 if stale else 0
    new = _BLOCK.sub(lambda m: m.group(1) + render(m["args"].split()) + "\n" + m.group(4), text)
    BENCHMARKS_MD.write_text(new)
    print(f"rewrote {len(stale)} of {len(_BLOCK.findall(text))} printed blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
