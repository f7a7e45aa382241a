"""Reports of issue 73, the gold standard in seconds and capacity that grows (``python report.py NAME
ARGS``), printed into ``docs/defaults.md``: exact EP beside scikit-learn's GPC (``exact_ep.py``), the
closed form's held-out NLL against M and seconds (``closed_form_capacity.py``)."""

from __future__ import annotations

from report_closed_form import DEFAULT, GP_PEERS, LARGER, SMALL
from report_common import MarkdownTable, load, panel_figure, panel_table

from common import RESULTS

#: the binary sets issue 73's aim names (its table: pima, breast_cancer, australian, sonar, ionosphere)
AIM_SETS = ("pima", "breast_cancer", "australian", "sonar", "ionosphere")
#: the aim: at most this many times scikit-learn GPC's seconds, at its test NLL or lower
AIM_RATIO = 3.0


def exact_ep_report(results: str = "exact_ep") -> None:
    """Exact EP (one lengthscale, ARD) beside scikit-learn's GPC and logistic regression, test NLL
    and training seconds in the same run, one row per set; then the aim's counts."""
    rows = load(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{sorted({r['machine'] for r in rows})}\n")
    latest = {}
    for r in rows:                                   # the latest row of each (set, estimator)
        latest[(r["dataset"], r["estimator"])] = r
    names = list(dict.fromkeys(r["estimator"] for r in rows))
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    table = MarkdownTable(["data set (training rows, classes)", *names, "exact EP (one) s / GPC s"])
    below = within = 0
    for d in sets:
        cells = {n: latest.get((d, n)) for n in names}
        first = next(r for r in cells.values() if r is not None)
        one, gpc = cells.get("exact EP (one lengthscale)"), cells.get("scikit-learn GPC")
        ratio = "-" if one is None or gpc is None else f"{one['train_seconds'] / gpc['train_seconds']:.1f}"
        table.row(f"{d} ({first['n_train']}, {first['n_classes']})",
                  *("-" if r is None else f"{r['test_nll']:.4f} ({r['train_seconds']:.2f} s)" for r in cells.values()),
                  ratio)
        if d in AIM_SETS and one is not None and gpc is not None:
            below += one["test_nll"] <= gpc["test_nll"]
            within += one["train_seconds"] <= AIM_RATIO * gpc["train_seconds"]
    print("\ncells: test NLL (training seconds), the panel's 70/30 split, one thread, one run")
    print(f"\nexact EP (one lengthscale) on the aim's {len(AIM_SETS)} binary sets: test NLL at or below scikit-learn "
          f"GPC's on {below} of {len(AIM_SETS)}, training seconds at most {AIM_RATIO:g} times GPC's on {within} of "
          f"{len(AIM_SETS)}")


def capacity_report(results: str = "closed_form_capacity") -> None:
    """The closed form's held-out NLL and seconds at each M and inducing inputs, per set, beside
    HistGradientBoosting's on the same rows (its held-out NLL, and the fit's seconds over its)."""
    rows = load(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{sorted({r['machine'] for r in rows})}\n")
    latest = {}
    for r in rows:
        latest[(r["dataset"], r["asked"], r["inducing_init"], r.get("kernel", "start"))] = r
    table = MarkdownTable(["data set (fit rows)", "M (asked)", "inducing inputs", "kernel", "held-out NLL",
                           "held-out error", "seconds", "seconds / HGB's"])
    for d in dict.fromkeys(r["dataset"] for r in rows):
        hgb = latest.get((d, "hgb", "-", "start"))
        fits = sorted((r for (s, a, *_), r in latest.items() if s == d and a != "hgb"),
                      key=lambda r: (r["n_inducing"], r["inducing_init"], r.get("kernel", "start")))
        for r in fits:
            exact = " (exact)" if r.get("exact") else ""
            ratio = "-" if hgb is None else f"{r['seconds'] / hgb['seconds']:.1f}"
            table.row(f"{d} ({r['n_fit']})", f"{r['n_inducing']}{exact} ({r['asked']})", r["inducing_init"],
                      r.get("kernel", "start"), f"{r['held_nll']:.4f}", f"{r['held_error']:.4f}", f"{r['seconds']:.1f}",
                      ratio)
        if hgb is not None:
            table.row(f"{d} ({hgb['n_fit']})", "HistGradientBoosting", "-", "-", f"{hgb['held_nll']:.4f}",
                      f"{hgb['held_error']:.4f}", f"{hgb['seconds']:.1f}", "1.0")
    print()
    def nll(d, asked, kernel="start"):
        r = latest.get((d, asked, "random", kernel))
        return None if r is None else r["held_nll"]

    for d in dict.fromkeys(r["dataset"] for r in rows):
        own, thousand, bound = nll(d, "auto"), nll(d, "1000"), nll(d, "1000", "bound(20)")
        hgb = latest.get((d, "hgb", "-", "start"))
        if own is None or thousand is None:
            continue
        words = "lower" if own < thousand else "higher"
        print(f"{d}: the method's own count {words} than 1,000 random rows ({own:.4f} against {thousand:.4f})"
              + ("" if bound is None else f"; the kernel learnt for M = 1,000 on the bound "
                 f"{'lower' if bound < thousand else 'higher'} than its start ({bound:.4f})")
              + ("" if hgb is None else f"; HistGradientBoosting {hgb['held_nll']:.4f} "
                 f"({'below' if hgb['held_nll'] < min(own, thousand) else 'above'} both)"))
    print("\nheld-out: a stratified 10 % of the training rows, which no fit reads; one thread, one run per commit; "
          "kernel: the closed form's start on 1,000 rows, or bound(K): then K L-BFGS iterations on Titsias' bound "
          "over every fit row with the inducing inputs held (the seconds include the start's)")


#: the panel's two-class sets, and the bar: the class frequencies
BINARY = ("crabs", "sonar", "ionosphere", "breast_cancer", "australian", "pima", "banknote")
FREQUENCIES = "class frequencies"


def _met(value: bool) -> str:
    return "met" if value else "missed"


#: the panel of issue 67, the default before issue 73
BEFORE = "defaults_panel_67"


def panel_73(results: str = "defaults_panel_73") -> None:
    """Issue 73's panel (``defaults_panel.py``, 70/30 split, seed 0, test split scored once, one
    run): every estimator's test NLL and seconds per set, then the issue's aims counted from the rows:
    the default's lowest test NLL of the GP peers on the small sets, of every classifier, its seconds
    against GPflow's, the binary sets against the lower of scikit-learn's GPC and logistic
    regression, the class frequencies' test NLL as a floor, Satimage against CatBoost, digits and
    the sets up to 5,000 rows against HistGradientBoosting's seconds, and what the default chose."""
    rows = {}
    for r in load(results):
        rows[(r["dataset"], r["estimator"])] = r
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}; "
          f"{sorted({r['machine'] for r in rows.values()})}\n")
    names = [n for n in dict.fromkeys(n for _, n in rows) if n != FREQUENCIES]
    sets = [d for d in SMALL + LARGER if any(k[0] == d for k in rows)]
    panel_table(rows, sets, names)
    counts = {k: [0, 0] for k in ("gp_small", "all", "time", "binary", "floor", "size")}
    behind = {"gp_small": [], "all": []}
    table = MarkdownTable(["data set", "default", "lowest GP peer", "lowest other classifier", "class frequencies",
                           "default's seconds / GPflow's", "/ HistGradientBoosting's", "default chose"])
    for d in sets:
        mine = rows.get((d, DEFAULT))
        if mine is None:
            continue
        peers = [rows[(d, n)] for n in GP_PEERS if (d, n) in rows]
        others = [r for (dd, n), r in rows.items() if dd == d and not n.startswith("alphagp") and n != FREQUENCIES]
        best_peer = min(peers, key=lambda r: r["test_nll"]) if peers else None
        best_other = min(others, key=lambda r: r["test_nll"]) if others else None
        if best_peer and d in SMALL:
            counts["gp_small"][0] += mine["test_nll"] < best_peer["test_nll"]
            counts["gp_small"][1] += 1
            if mine["test_nll"] >= best_peer["test_nll"]:
                behind["gp_small"].append(f"{d} ({best_peer['estimator']})")
        if best_other:
            counts["all"][0] += mine["test_nll"] < best_other["test_nll"]
            counts["all"][1] += 1
            if mine["test_nll"] >= best_other["test_nll"]:
                behind["all"].append(f"{d} ({best_other['estimator']})")
        gpflow, hgb = rows.get((d, "GPflow SVGP")), rows.get((d, "HistGradientBoosting"))
        ratio = mine["train_seconds"] / gpflow["train_seconds"] if gpflow else float("nan")
        if gpflow and d in SMALL:
            counts["time"][0] += ratio <= 1.0
            counts["time"][1] += 1
        hgb_ratio = mine["train_seconds"] / hgb["train_seconds"] if hgb else float("nan")
        if hgb and mine["n_train"] <= 5000:
            counts["size"][0] += mine["train_seconds"] <= max(10 * hgb["train_seconds"], 5.0)
            counts["size"][1] += 1
        bars = [rows[(d, n)]["test_nll"] for n in ("scikit-learn GPC", "LogisticRegression") if (d, n) in rows]
        if d in BINARY and bars:
            counts["binary"][0] += mine["test_nll"] <= min(bars)
            counts["binary"][1] += 1
        floor = rows.get((d, FREQUENCIES))
        if floor:
            counts["floor"][0] += mine["test_nll"] <= floor["test_nll"]
            counts["floor"][1] += 1
        table.row(d, f"{mine['test_nll']:.4f}",
                  f"{best_peer['test_nll']:.4f} ({best_peer['estimator']})" if best_peer else "-",
                  f"{best_other['test_nll']:.4f} ({best_other['estimator']})" if best_other else "-",
                  f"{floor['test_nll']:.4f}" if floor else "-", f"{ratio:.2f}", f"{hgb_ratio:.1f}",
                  mine.get("candidate", "-"))
    print()
    print(f"the default: lowest test NLL of the GP peers on {counts['gp_small'][0]} of {counts['gp_small'][1]} small "
          f"sets (aim: 14 of 16, {_met(counts['gp_small'][0] >= 14)}); lowest of every classifier on "
          f"{counts['all'][0]} of {counts['all'][1]} (aim: 9 of 21, {_met(counts['all'][0] >= 9)}); training time at "
          f"most GPflow's on {counts['time'][0]} of {counts['time'][1]} small sets (aim: 12 of 16, "
          f"{_met(counts['time'][0] >= 12)})")
    print("behind a GP peer on the small sets: " + (", ".join(behind["gp_small"]) or "none")
          + "; behind some classifier: " + (", ".join(behind["all"]) or "none"))
    before = {r["dataset"]: r for r in load(BEFORE) if r["estimator"] == DEFAULT}
    paired = [(d, rows[(d, DEFAULT)]["test_nll"], before[d]["test_nll"]) for d in sets
              if (d, DEFAULT) in rows and d in before]
    if paired:
        lower = [d for d, now, then in paired if now < then]
        print(f"against issue 67's default ({BEFORE}): a lower test NLL on {len(lower)} of {len(paired)} sets "
              f"({', '.join(lower)}); higher on " + (", ".join(f"{d} ({now:.4f} against {then:.4f})"
                                                            for d, now, then in paired if now > then) or "none"))
    print(f"the default at or below the lower of scikit-learn GPC's and LogisticRegression's test NLL on "
          f"{counts['binary'][0]} of {counts['binary'][1]} binary sets (aim: every, "
          f"{_met(counts['binary'][0] == counts['binary'][1])}); at or below the class frequencies' on "
          f"{counts['floor'][0]} of {counts['floor'][1]} sets (aim: every, {_met(counts['floor'][0] == counts['floor'][1])})")
    print(f"sets up to 5,000 training rows in at most 10 times HistGradientBoosting's seconds or 5 s: {counts['size'][0]} "
          f"of {counts['size'][1]} (aim: every, {_met(counts['size'][0] == counts['size'][1])})")
    for d, aim in (("satimage", 0.226),):
        if (d, DEFAULT) in rows:
            nll = rows[(d, DEFAULT)]["test_nll"]
            print(f"{d}: the default's test NLL {nll:.4f} (aim: at most {aim}, {_met(nll <= aim)})")
    if (("digits", DEFAULT) in rows) and (("digits", "HistGradientBoosting") in rows):
        mine, hgb = rows[("digits", DEFAULT)], rows[("digits", "HistGradientBoosting")]
        times = mine["train_seconds"] / hgb["train_seconds"]
        print(f"digits: the default's test NLL {mine['test_nll']:.4f} (aim: at most 0.035) in {mine['train_seconds']:.1f} s, "
              f"{times:.1f} times HistGradientBoosting's {hgb['train_seconds']:.1f} s in the same run (aim: at most 5; "
              f"{_met(mine['test_nll'] <= 0.035 and times <= 5)})")
    every = [n for n in dict.fromkeys(n for _, n in rows) if n != "scikit-learn GPC"]
    missing = {d: [n for n in every if (d, n) not in rows] for d in sets}
    print("estimators without a row (scikit-learn's GPC runs up to 600 training rows only): "
          + ("; ".join(f"{d}: {', '.join(ns)}" for d, ns in missing.items() if ns) or "none"))
    chosen = {}
    for d in sets:
        if (d, DEFAULT) in rows:
            c = rows[(d, DEFAULT)].get("candidate") or "-"
            chosen[c.split("(")[0]] = chosen.get(c.split("(")[0], 0) + 1
    print("the default chose: " + ", ".join(f"{c} on {k}" for c, k in sorted(chosen.items(), key=lambda kv: -kv[1])))
    panel_figure({k: v for k, v in rows.items() if k[1] != FREQUENCIES}, sets, names, RESULTS / f"{results}.png",
                 log_nll=True)


REPORTS = {"exactep": exact_ep_report, "capacity": capacity_report, "panel73": panel_73}
