"""The development panel of real tables (``real_tables.py``, issue 79): each table's test NLL and
training seconds per estimator, and the counts of issue 79's aims, printed from the rows of one run.

    python benchmarks/report.py realtables real_tables@<commit> [real_tables@<earlier commit>]
"""

from __future__ import annotations

import numpy as np

from report_common import load, markdown_table, provenance

DEFAULT = "alphagp GPClassifier()"
PEERS = ("HistGradientBoosting", "CatBoost", "LogisticRegression")
FREQUENCIES = "class frequencies"
#: issue 79's time aim: within this many times HGB's training seconds, or :data:`FLOOR_SECONDS`, on
#: tables of up to :data:`TIMED_ROWS` rows
TIME_RATIO, FLOOR_SECONDS, TIMED_ROWS = 5.0, 3.0, 5_000


def _rows(results: str) -> dict:
    """``{(table, estimator): row}``, the last row of each pair."""
    return {(r["dataset"], r["estimator"]): r for r in load(results)}


def _nll(row: dict | None) -> float:
    return np.nan if row is None or "error" in row else row["test_nll"]


def real_tables_report(results: str = "real_tables", earlier: str | None = None) -> None:
    """The panel's table and the counts of its aims; with ``earlier`` (the rows of another commit)
    the default's test NLL there beside."""
    rows = _rows(results)
    before = _rows(earlier) if earlier else {}
    tables = list(dict.fromkeys(d for d, _ in rows))
    names = [DEFAULT, *PEERS, FREQUENCIES]
    lines = []
    for d in tables:
        first = next(r for (dd, _), r in rows.items() if dd == d)
        cells = [f"{d} ({first['n_train']}, {first['n_classes']})"]
        for n in names:
            r = rows.get((d, n))
            cells.append("-" if r is None else "error" if "error" in r else
                         f"{r['test_nll']:.4f} ({r['train_seconds']:.1f} s)")
        if before:
            cells.append(f"{_nll(before.get((d, DEFAULT))):.4f}")
        cells.append(rows[(d, DEFAULT)].get("candidate") or "-" if (d, DEFAULT) in rows else "-")
        lines.append(cells)
    header = ["table (training rows, classes)", *names, *(["default at the earlier commit"] if before else []),
              "the default chose"]
    print(f"{provenance(list(rows.values()))}; one thread each, 70/30 stratified split, seed 0\n")
    markdown_table(header, lines)
    print("\ncells: test NLL (training seconds)\n")
    scored = [d for d in tables if (d, DEFAULT) in rows]
    crashed = [d for d in scored if "error" in rows[(d, DEFAULT)]]
    fitted = [d for d in scored if d not in crashed]
    best_peer = {d: min(_nll(rows.get((d, p))) for p in PEERS) for d in fitted}
    at_or_below = [d for d in fitted if _nll(rows[(d, DEFAULT)]) <= best_peer[d]]
    above_frequencies = [d for d in fitted if _nll(rows[(d, DEFAULT)]) > _nll(rows.get((d, FREQUENCIES)))]
    ratio = [_nll(rows[(d, DEFAULT)]) / _nll(rows[(d, "HistGradientBoosting")]) for d in fitted]
    timed = [d for d in fitted if rows[(d, DEFAULT)]["n_rows"] <= TIMED_ROWS]
    in_time = [d for d in timed if rows[(d, DEFAULT)]["train_seconds"]
               <= max(TIME_RATIO * rows[(d, "HistGradientBoosting")]["train_seconds"], FLOOR_SECONDS)]
    seconds_ratio = [rows[(d, DEFAULT)]["train_seconds"] / rows[(d, "HistGradientBoosting")]["train_seconds"]
                     for d in fitted]
    print(f"- the default refused or crashed on {len(crashed)} of {len(scored)} tables"
          + (f" ({', '.join(crashed)})" if crashed else ""))
    print(f"- at or below the lowest test NLL of HistGradientBoosting, CatBoost and LogisticRegression on "
          f"{len(at_or_below)} of {len(fitted)} tables (aim: at least half): {', '.join(at_or_below) or 'none'}")
    print(f"- above the class frequencies' test NLL on {len(above_frequencies)} of {len(fitted)} (aim: none)"
          + (f": {', '.join(above_frequencies)}" if above_frequencies else ""))
    print(f"- geometric mean of the default's test NLL over HistGradientBoosting's: "
          f"{float(np.exp(np.mean(np.log(ratio)))):.3f} (aim: at most 0.90)")
    print(f"- training seconds within {TIME_RATIO:g} times HistGradientBoosting's or {FLOOR_SECONDS:g} s on "
          f"{len(in_time)} of {len(timed)} tables of up to {TIMED_ROWS:,} rows (aim: all); the default's seconds over "
          f"HGB's: median {float(np.median(seconds_ratio)):.0f}, from {min(seconds_ratio):.0f} to "
          f"{max(seconds_ratio):.0f}")
    if before:
        both = [d for d in fitted if not np.isnan(_nll(before.get((d, DEFAULT))))]
        lower = [d for d in both if _nll(rows[(d, DEFAULT)]) < _nll(before[(d, DEFAULT)])]
        higher = [d for d in both if _nll(rows[(d, DEFAULT)]) > _nll(before[(d, DEFAULT)])]
        print(f"- against the default at {provenance([before[(d, DEFAULT)] for d in both]).split('commit ')[-1]}: "
              f"lower test NLL on {len(lower)} of {len(both)} tables, higher on {len(higher)}"
              + (f" ({', '.join(higher)})" if higher else ""))


REPORTS = {"realtables": real_tables_report}
