"""Helpers the report modules share: the results rows, means with standard errors, provenance lines,
curves averaged over splits and drawn, and the papers' transcribed tables (``paper_tables/``)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from common import RESULTS, results_rows, row_threads

NAMES = {"glass": "Glass", "new_thyroid": "New-thyroid", "satimage": "Satellite", "svmguide2": "Svmguide2",
         "vehicle": "Vehicle", "vowel": "Vowel", "waveform_21": "Waveform", "wine": "Wine"}


PAPER_TABLES = Path(__file__).resolve().parent / "paper_tables"


def paper_table(name: str, quantity: str) -> dict:
    """``{fraction: {dataset: (one value per method)}}`` (or ``{fraction: (...)}`` for times) of
    ``paper_tables/<name>.json``; the methods are the file's ``methods``."""
    table = json.loads((PAPER_TABLES / f"{name}.json").read_text())[quantity]
    return {float(f): ({d: tuple(v) for d, v in row.items()} if isinstance(row, dict) else tuple(row))
            for f, row in table.items()}


def load(name: str) -> list[dict]:
    """The rows of results file ``<name>.jsonl`` (``<name>@<commits>``: of those commits; common.results_rows)."""
    return results_rows(name)


def mean_se(values, digits: int = 2) -> str:
    """Mean ± standard error; the mean alone for a single value (no standard error to give)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1) / np.sqrt(len(v)):.{digits}f}"


def mean_curve(rows: list[dict]) -> list[dict]:
    """The evaluations of ``rows`` (one per split, evaluated at the same iterations) averaged
    point by point, up to the shortest curve."""
    n = min(len(r["curve"]) for r in rows)
    return [{"iteration": rows[0]["curve"][i]["iteration"],
             **{f: float(np.mean([r["curve"][i][f] for r in rows]))
                for f in ("train_seconds", "test_nll", "test_error")}}
            for i in range(n)]


def curves_report(rows: list[dict], line: str, panel: str, png: str, title: str, metric: str = "test_nll") -> dict:
    """Split-averaged ``metric`` (test NLL, or ``"test_error"``) against training time, one line
    per value of ``line`` and one panel per value of ``panel``, saved to benchmarks/results/<png>;
    prints the final values and returns the mean curves by (panel value, line value)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = defaultdict(list)
    for r in rows:
        groups[(r[panel], r[line])].append(r)
    curves = {key: mean_curve(rs) for key, rs in groups.items()}
    panels = sorted({k[0] for k in groups})
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}\n")
    table = MarkdownTable([panel, line, "splits", "iterations", "training seconds", "final test NLL",
                           "final test error"])
    ncols = min(4, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, p in zip(axes.flat, panels):
        for name in sorted({k[1] for k in curves if k[0] == p}):
            curve = curves[(p, name)]
            ax.plot([c["train_seconds"] for c in curve], [c[metric] for c in curve], label=str(name))
            last = curve[-1]
            table.row(p, name, len(groups[p, name]), last["iteration"], f"{last['train_seconds']:.1f}",
                      f"{last['test_nll']:.3f}", f"{last['test_error']:.3f}")
        ax.set(xscale="log", xlabel="training seconds", ylabel="test NLL" if metric == "test_nll" else "test error",
               title=f"{title}, {panel} = {p}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / png, dpi=110)
    print(f"\nfigure: benchmarks/results/{png}")
    return curves


def _machine_label(row: dict) -> str:
    """Short name of the machine of a row: the lent GPU machine's CPUs or this one's."""
    if row.get("device", "cpu").startswith("cuda"):
        return "lent device's GPU (H100)"
    return "lent device's CPUs (16-core Xeon)" if "+cu" in row["machine"] else "this machine (2-core)"


def _epoch_curve(evaluations: list[dict]) -> list[dict]:
    """An ``mnist.py`` run's evaluation rows as a :func:`curves_report` curve (one point an epoch)."""
    return [{"iteration": e["epoch"], "train_seconds": e["train_seconds"], "test_nll": e["test_nll"],
             "test_error": e["test_error"]} for e in evaluations]


def deep_gp_paper() -> dict:
    """The deep-GP paper's transcribed tables (``paper_tables/deep-gps-ijar2022.json``, a copy of
    ``../shared/papers/tables/``'s, so that the reports need only the repository)."""
    return json.loads((PAPER_TABLES / "deep-gps-ijar2022.json").read_text())


def _ranks(values: list[float]) -> np.ndarray:
    """Rank 1 for the smallest value, ties sharing their mean rank."""
    from scipy.stats import rankdata
    return rankdata(values)


def _optional(value: float | None) -> str:
    """A number to three decimals, or '-' where a row has none (older rows, or no such test rows)."""
    return "-" if value is None else f"{value:.3f}"


def provenance_threads(rows: list[dict]) -> str:
    commits = sorted({f"{r['commit']} ({r['dirty']})" for r in rows})
    threads = sorted({row_threads(r) for r in rows})
    return f"{len(rows)} rows, commit (dirty) {', '.join(commits)}, threads {', '.join(threads)}"


def _first_reaching(curve: list[dict], target: float) -> dict | None:
    return next((c for c in curve if c["log_zq"] >= target), None)


def _at_seconds(curve: list[dict], seconds: float) -> float:
    """log Z_q / N of the last point of ``curve`` at or before ``seconds`` (NaN before the first)."""
    done = [c["log_zq"] for c in curve if c["seconds"] <= seconds]
    return done[-1] if done else float("nan")


def provenance(rows: list[dict]) -> str:
    commits = sorted({f"{r['commit']}{' (dirty)' if r.get('dirty') else ''}" for r in rows})
    return f"{len(rows)} rows, commit {', '.join(commits)}"


def panel_figure(rows: dict, sets: list[str], names: list[str], path, *, log_nll: bool = False,
                 xlabel: str = "training seconds (log)") -> None:
    """A panel's test NLL against training seconds, one axes per set of ``sets``, one line per
    estimator of ``names`` (its ``curve`` where the row has one, else its one point), from ``rows``
    ``{(set, estimator): row}``; saved to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ncols = 4
    nrows = int(np.ceil(len(sets) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(14, 3 * nrows), squeeze=False)
    for ax, d in zip(axes.ravel(), sets):
        for i, n in enumerate(names):
            r = rows.get((d, n))
            if r is None:
                continue
            curve = r.get("curve") or [r]
            ax.plot([p["train_seconds"] for p in curve], [p["test_nll"] for p in curve], marker="o", markersize=3,
                    color=f"C{i % 10}", label=n)
        ax.set_xscale("log")
        if log_nll:
            ax.set_yscale("log")
        ax.set_title(d, fontsize=9)
    for ax in axes.ravel()[len(sets):]:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7, bbox_to_anchor=(0.5, 0.0))
    fig.supxlabel(xlabel, y=0.045)
    fig.supylabel("test NLL (log)" if log_nll else "test NLL")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=80)
    plt.close(fig)


class MarkdownTable:
    """The reports' one table printer: the ``header``'s cells and the separator line when made, then
    a line per :meth:`row` as it comes (a report's other lines may sit between its rows). A row of
    another width than the header's is an error (a cell holding ``" | "`` would shift the columns)."""

    def __init__(self, header: list):
        self.width = len(header)
        print("| " + " | ".join(map(str, header)) + " |\n|" + "---|" * self.width)

    def row(self, *cells) -> None:
        """Print one line of ``cells`` (each as ``str`` gives it)."""
        if len(cells) != self.width:
            raise ValueError(f"a row of {len(cells)} cells in a table of {self.width} columns: {cells}")
        print("| " + " | ".join(map(str, cells)) + " |")


def markdown_table(header: list[str], rows: list[list[str]]) -> None:
    """A :class:`MarkdownTable` of ``header`` with a line per row of cells in ``rows``."""
    table = MarkdownTable(header)
    for cells in rows:
        table.row(*cells)


def phase_table(rows: list[dict], phase: str, header: list[str], cells) -> None:
    """:func:`markdown_table` of the ``rows`` of one ``phase`` (their ``"phase"`` field), a line of
    ``cells(row)`` each under ``header``: the reports whose results file holds several phases."""
    markdown_table(header, [cells(r) for r in rows if r["phase"] == phase])


def panel_table(rows: dict, sets: list[str], names: list[str]) -> None:
    """The panels' table: a line per data set of ``sets`` (with its training rows), a column per
    estimator of ``names``, each cell ``rows[(set, estimator)]``'s test NLL (training seconds)."""
    lines = []
    for d in sets:
        n_train = next(r["n_train"] for (dd, _), r in rows.items() if dd == d)
        lines.append([f"{d} ({n_train})", *(f"{rows[(d, n)]['test_nll']:.4f} ({rows[(d, n)]['train_seconds']:.1f} s)"
                                             if (d, n) in rows else "-" for n in names)])
    markdown_table(["data set (training rows)", *names], lines)
    print("\ncells: test NLL (training seconds)\n")
