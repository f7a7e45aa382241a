"""The development panel of real tables (``real_tables.py``, issue 79): each table's test NLL and
training seconds per estimator, and the counts of issue 79's aims, printed from the rows of one run.

    python benchmarks/report.py realtables real_tables@<commit> [real_tables@<earlier commit> ...]
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
#: a test NLL "moved" against an earlier commit's by more than this share of it (below: the same fit
#: up to floating-point rounding)
MOVED = 1e-3


def _rows(results: str) -> dict:
    """``{(table, estimator): row}``, the last row of each pair."""
    return {(r["dataset"], r["estimator"]): r for r in load(results)}


def _nll(row: dict | None) -> float:
    return np.nan if row is None or "error" in row else row["test_nll"]


def real_tables_report(results: str = "real_tables", *earlier: str) -> None:
    """The panel's table and the counts of its aims; with ``earlier`` (the rows of other commits)
    the default's test NLL at each beside, and the count of tables where it moved against the first."""
    rows = _rows(results)
    befores = [_rows(e) for e in earlier]
    before = befores[0] if befores else {}
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
        cells += [f"{_nll(b.get((d, DEFAULT))):.4f}" for b in befores]
        cells.append(rows[(d, DEFAULT)].get("candidate") or "-" if (d, DEFAULT) in rows else "-")
        lines.append(cells)
    header = ["table (training rows, classes)", *names,
              *(f"the default at {e.partition('@')[2] or e}" for e in earlier), "the default chose"]
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
        lower = [d for d in both if _nll(rows[(d, DEFAULT)]) < (1 - MOVED) * _nll(before[(d, DEFAULT)])]
        higher = [d for d in both if _nll(rows[(d, DEFAULT)]) > (1 + MOVED) * _nll(before[(d, DEFAULT)])]
        print(f"- against the default at {provenance([before[(d, DEFAULT)] for d in both]).split('commit ')[-1]}: "
              f"lower test NLL by more than {MOVED:.1%} on {len(lower)} of {len(both)} tables, higher on {len(higher)}"
              + (f" ({', '.join(higher)})" if higher else ""))


REPORTS = {"realtables": real_tables_report}


def numeric_panel_report(results: str = "defaults_panel_79", panel: str = "defaults_panel_73") -> None:
    """Issue 79's numeric-panel aims: the default of these rows (``defaults_panel.py``, the default
    and HistGradientBoosting rerun on digits and the small and mid-sized sets) beside issue 73's
    panel (every estimator, one run), set by set: its test NLL against issue 73's default's (aim: no
    set more than 2 % above), whether it is the lowest of every classifier of issue 73's run, and on
    digits its seconds over HistGradientBoosting's of the same run (aim: within 5 times). Sets this
    run did not refit (the larger image subsets and Shuttle, from 2,000 training rows on, where the
    default's path did not change) count with issue 73's default."""
    from report_closed_form import DEFAULT as PANEL_DEFAULT
    from report_closed_form import LARGER, SMALL
    now = {(r["dataset"], r["estimator"]): r for r in load(results)}
    before = {(r["dataset"], r["estimator"]): r for r in load(panel)}
    sets = [d for d in SMALL + LARGER if (d, PANEL_DEFAULT) in before]
    print(f"{provenance(list(now.values()))} (this run); {provenance(list(before.values()))} (issue 73's panel)\n")
    lines, lowest, above, refitted = [], [], [], []
    for d in sets:
        old = before[(d, PANEL_DEFAULT)]["test_nll"]
        mine = now.get((d, PANEL_DEFAULT))
        nll = old if mine is None else mine["test_nll"]
        others = [r for (dd, n), r in before.items() if dd == d and not n.startswith("alphagp") and n != FREQUENCIES]
        best = min(others, key=lambda r: r["test_nll"])
        if nll < best["test_nll"]:
            lowest.append(d)
        if mine is not None:
            refitted.append(d)
            if nll > 1.02 * old:
                above.append(d)
        lines.append([d, f"{nll:.4f}" + ("" if mine else " (issue 73's row)"), f"{old:.4f}", f"{nll / old:.3f}",
                      f"{best['test_nll']:.4f} ({best['estimator']})", "-" if mine is None else
                      f"{mine['train_seconds']:.1f}", (mine or before[(d, PANEL_DEFAULT)]).get("candidate", "-")])
    markdown_table(["data set", "the default", "issue 73's default", "ratio", "lowest other classifier (issue 73's run)",
                    "training seconds", "the default chose"], lines)
    print()
    print(f"- lowest test NLL of every classifier on {len(lowest)} of {len(sets)} sets (aim: at least 11): "
          f"{', '.join(lowest)}")
    print(f"- more than 2 % above issue 73's default on {len(above)} of {len(refitted)} sets refitted (aim: none)"
          + (f": {', '.join(above)}" if above else ""))
    digits, hgb = now.get(("digits", PANEL_DEFAULT)), now.get(("digits", "HistGradientBoosting"))
    if digits and hgb:
        print(f"- digits: {digits['train_seconds'] / hgb['train_seconds']:.1f} times HistGradientBoosting's seconds in "
              "the same run (aim: within 5)")


REPORTS["numeric79"] = numeric_panel_report


def loo_leak_report(results: str = "loo_leak") -> None:
    """``loo_leak.py``'s rows: the closed form's leave-one-out NLL with its kernel start fitted on
    every row, against each row predicted by a fit (start included) without it, the class
    frequencies' leave-one-out NLL and the test NLL, per problem; and how often the every-row
    score is the lower, and below the frequencies' where the honest one is not."""
    rows = {r["dataset"]: r for r in load(results)}
    print(f"{provenance(list(rows.values()))}\n")
    markdown_table(["problem (training rows)", "leave-one-out, start on every row", "leave-one-out, refitted without the row",
                    "class frequencies, leave-one-out", "test NLL"],
                   [[f"{d} ({r['n_train']})", f"{r['loo_every_row']:.4f}", f"{r['loo_refit']:.4f}",
                     f"{r['frequencies_loo']:.4f}", f"{r['test_nll']:.4f}"] for d, r in rows.items()])
    lower = [d for d, r in rows.items() if r["loo_every_row"] < r["loo_refit"]]
    fooled = [d for d, r in rows.items()
              if r["loo_every_row"] < r["frequencies_loo"] <= r["loo_refit"]]
    gaps = [r["loo_refit"] - r["loo_every_row"] for r in rows.values()]
    print(f"\n- the every-row leave-one-out is the lower on {len(lower)} of {len(rows)} problems, by "
          f"{min(gaps):.3f} to {max(gaps):.3f} nats; it ranks the closed form below the class frequencies where "
          f"the refitted one does not on {len(fooled)} of {len(rows)}" + (f" ({', '.join(fooled)})" if fooled else ""))


REPORTS["looleak"] = loo_leak_report


def closed_form_starts_report(results: str = "closed_form_starts") -> None:
    """``closed_form_starts.py``'s rows: per table, the closed form's test NLL from each start (the
    RBF alone and with the linear term) searched at each alpha_eps, its grid point chosen by its
    leave-one-out; and on how many tables each start is the lowest of the six."""
    rows = load(results)
    tables = list(dict.fromkeys(r["dataset"] for r in rows))
    settings = list(dict.fromkeys((r["start"], r["searched_at"]) for r in rows))
    by = {(r["dataset"], r["start"], r["searched_at"]): r for r in rows}
    print(f"{provenance(rows)}\n")
    markdown_table(["table (training rows)", *(f"{s} at {a:g}" for s, a in settings)],
                   [[f"{d} ({by[(d, *settings[0])]['n_train']})",
                     *(f"{by[(d, *k)]['test_nll']:.4f}" for k in settings)] for d in tables])
    print("\ncells: test NLL of the closed form at the grid point its leave-one-out chose\n")
    for k in settings:
        wins = [d for d in tables if by[(d, *k)]["test_nll"] <= min(by[(d, *o)]["test_nll"] for o in settings)]
        lower = [d for d in tables if by[(d, *k)]["test_nll"] < by[(d, "dirichlet", 1e-3)]["test_nll"]]
        print(f"- {k[0]} searched at {k[1]:g}: the lowest of the six on {len(wins)} of {len(tables)} tables, below "
              f"the RBF start at 0.001 (issue 73's) on {len(lower)}")


REPORTS["cfstarts"] = closed_form_starts_report


def kernel_terms_report(results: str = "kernel_terms_study") -> None:
    """``kernel_terms_study.py``'s rows: exact power EP's test NLL per table and kernel, the kernel each
    training-row measure chooses (the largest log evidence, the lowest cavity leave-one-out NLL), and
    how often each choice, and each kernel fixed, is below the default's one-lengthscale RBF."""
    rows = load(results)
    tables = list(dict.fromkeys(r["dataset"] for r in rows))
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    by = {(r["dataset"], r["kernel"]): r for r in rows}
    base = kernels[0]
    choices = {"evidence": lambda d: max(kernels, key=lambda k: by[(d, k)]["log_evidence_per_row"]),
               "leave-one-out": lambda d: min(kernels, key=lambda k: by[(d, k)]["loo_nll"])}
    print(f"{provenance(rows)}\n")
    markdown_table(["table (training rows, classes)", *kernels, *(f"by {c}" for c in choices)],
                   [[f"{d} ({by[(d, base)]['n_train']}, {by[(d, base)]['n_classes']})",
                     *(f"{by[(d, k)]['test_nll']:.4f}" for k in kernels),
                     *(f"{choose(d)}: {by[(d, choose(d))]['test_nll']:.4f}" for choose in choices.values())]
                    for d in tables])
    print("\ncells: exact power EP's test NLL with each kernel from its own start; the last columns: the kernel "
          "the training rows' measure chose and its test NLL\n")

    def versus(test) -> str:
        lower = [d for d in tables if test(d) < by[(d, base)]["test_nll"] - 1e-12]
        higher = [d for d in tables if test(d) > by[(d, base)]["test_nll"] + 1e-12]
        ratio = float(np.exp(np.mean([np.log(test(d) / by[(d, base)]["test_nll"]) for d in tables])))
        return (f"lower on {len(lower)} of {len(tables)} tables, higher on {len(higher)}; geometric mean of the test "
                f"NLL over {base}'s {ratio:.3f}")

    for k in kernels[1:]:
        print(f"- {k} fixed: {versus(lambda d, k=k: by[(d, k)]['test_nll'])}")
    for name, choose in choices.items():
        print(f"- chosen by {name}: {versus(lambda d, choose=choose: by[(d, choose(d))]['test_nll'])}")
    slow = [by[(d, k)]["train_seconds"] / by[(d, base)]["train_seconds"] for d in tables for k in kernels[1:]]
    print(f"- a kernel's fit over {base}'s seconds: median {np.median(slow):.1f}, from {min(slow):.1f} to "
          f"{max(slow):.1f}")


REPORTS["kernelterms"] = kernel_terms_report


def profile_report(results: str = "profile_default") -> None:
    """``profile_default.py``'s rows: per table, the default's fit seconds under the profiler and the
    share of them each stage took (cumulative seconds; the stages do not nest), with its calls; and on
    how many tables exact EP's searches take at least the closed-form starts' share."""
    rows = load(results)
    stages = list(rows[0]["stages"])
    print(f"{provenance(rows)}\n")
    markdown_table(["table (training rows)", "fit seconds (profiled)", *stages, "the default chose"],
                   [[f"{r['dataset']} ({r['n_train']})", f"{r['fit_seconds']:.1f}",
                     *(f"{r['stages'][s]['seconds'] / r['fit_seconds']:.0%} ({r['stages'][s]['calls']})" for s in stages),
                     r["candidate"]] for r in rows])
    print("\ncells: the stage's cumulative seconds as a share of the fit's (its calls)\n")
    searches = stages[0]
    top = [r["dataset"] for r in rows
           if r["stages"][searches]["seconds"] >= max(r["stages"][s]["seconds"] for s in stages[1:2])]
    shares = [r["stages"][searches]["seconds"] / r["fit_seconds"] for r in rows]
    print(f"- {searches}: at or above the closed-form starts' share on {len(top)} of {len(rows)} tables; their share of the "
          f"fit from {min(shares):.0%} to {max(shares):.0%} (median {np.median(shares):.0%})")


REPORTS["profile"] = profile_report


def closed_form_prediction_report(results: str = "closed_form_prediction") -> None:
    """``closed_form_prediction.py``'s rows: the exact closed form's fit and prediction seconds over N,
    the prediction split into its latent marginals and the softmax draws, and how the marginals'
    seconds grow with N (the exponent of a power law through the first and the last rows)."""
    rows = load(results)
    print(f"{provenance(rows)}; {rows[0]['n_test']:,} test rows of {rows[0]['n_classes']} classes\n")
    markdown_table(["training rows", "exact", "fit (s)", "the posterior's factors (s)", "latent marginals (s)",
                    "probabilities (s)", "the draws' share of the probabilities"],
                   [[f"{r['n_train']:,}", str(r["exact"]), f"{r['fit_seconds']:.1f}", f"{r['posterior_seconds']:.1f}",
                     f"{r['latent_seconds']:.1f}", f"{r['proba_seconds']:.1f}",
                     f"{max(r['proba_seconds'] - r['latent_seconds'], 0) / r['proba_seconds']:.0%}"] for r in rows])
    print()
    first, last = rows[0], rows[-1]
    span = np.log(last["n_train"] / first["n_train"])
    for name, key in (("the posterior's factors", "posterior_seconds"), ("the latent marginals", "latent_seconds")):
        slope = np.log(last[key] / first[key]) / span
        print(f"- {name}' seconds grow as N^{slope:.2f} from {first['n_train']:,} to {last['n_train']:,} training rows")


REPORTS["cfpredict"] = closed_form_prediction_report
