"""Reports of issue 67, the GP classifier in closed form (``python report.py NAME ARGS``): the study
behind the default rebuilt around the Dirichlet GP (validation rows only)."""

from __future__ import annotations

import numpy as np
from report_common import MarkdownTable, panel_figure, panel_table
from report_defaults import replay_racing

from common import RESULTS, results_rows

#: today's portfolio (issue 58) by its candidates' names in the study's rows
TODAY = ("sep_regression", "vi_regression", "rpapep_fixed", "pep_regression")
#: issue 44's four from the Dirichlet start's kernel
FROM_DIRICHLET = ("sep_dirichlet", "vi_dirichlet", "rpapep_dirichlet", "pep_dirichlet")


def grid(eps=(1e-1, 1e-2, 1e-3, 1e-4), scales=(1.0, 0.3, 0.1)) -> tuple[str, ...]:
    """The names of the Dirichlet grid's candidates (``defaults_study.CLOSED_FORM``)."""
    return tuple(f"dirichlet_{e:g}_{s:g}" for e in eps for s in scales)


def _sets(rows) -> dict:
    """Per set: each candidate's fold scores and seconds per fit, and the starts' seconds."""
    sets = {}
    for r in rows:
        cv = r["cv_results"]
        folds = sorted(k for k in cv if k.startswith("split"))
        candidates = {c: ([cv[k][i] for k in folds], cv["mean_fit_time"][i], cv["mean_test_nll"][i])
                      for i, c in enumerate(cv["candidate"])}
        starts = {k: v["seconds"] for k, v in r.get("kernel_starts", {}).items()}
        sets[r["dataset"]] = {"n": r["n_train"], "scheme": r["scheme"], "candidates": candidates, "starts": starts}
    return sets


def _choose(info: dict, members, margin: float | None):
    """What a portfolio of ``members`` (in order; a member ``(name, min_rows, max_rows)`` runs at
    ``min_rows <= N < max_rows`` only) chooses on one set: ``(name, NLL, seconds)``, the
    seconds those of its fits (racing at ``margin``; ``None``: every fit) and of the starts its
    members need (a candidate named ``*_dirichlet`` or ``dirichlet_*`` the Dirichlet start, ``*_regression``
    the regression's)."""
    members = [m if isinstance(m, str) else m[0] for m in members
               if isinstance(m, str) or (m[1] <= info["n"] and (m[2] is None or info["n"] < m[2]))]
    present = [c for c in members if c in info["candidates"] and np.isfinite(info["candidates"][c][2])]
    if not present:
        return None
    splits = [info["candidates"][c][0] for c in present]
    seconds = [info["candidates"][c][1] for c in present]
    if margin is None:
        pick, spent = int(np.argmin([np.mean(s) for s in splits])), sum(s * len(f) for s, f in zip(seconds, splits))
    else:
        pick, spent = replay_racing(splits, seconds, margin)
    needs = {"dirichlet" for c in present if "dirichlet" in c} | {"regression" for c in present if "regression" in c}
    spent += sum(info["starts"].get(k, 0.0) for k in needs)
    return present[pick], float(np.mean(splits[pick])), spent


def closed_form_study(results: str = "defaults_closed_form", margin: str = "0.1") -> None:
    """Issue 67's study (validation rows only): per set, the best of the Dirichlet grid (the kernel
    held at the shared Dirichlet start), of issue 44's methods from that start's kernel and of
    today's portfolio; then the portfolios the default could be, each replayed on the recorded folds
    (racing at ``margin``): the geometric mean over the sets of the chosen candidate's held-out NLL
    over the best candidate's, the sets where it chooses the best, and its seconds (fits and
    starts) summed over the sets."""
    rows = results_rows(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}\n")
    sets = _sets(rows)
    groups = {"closed form (grid)": grid(), "EP family from its kernel": FROM_DIRICHLET, "today's portfolio": TODAY}
    table = MarkdownTable(["data set (training rows)", *groups, "Dirichlet start (s)", "lowest"])
    lowest = dict.fromkeys(groups, 0)
    for name, info in sets.items():
        picks = {g: _choose(info, members, None) for g, members in groups.items()}
        best = min((g for g in groups if picks[g]), key=lambda g: picks[g][1])
        lowest[best] += 1
        cells = ["-" if picks[g] is None else f"{picks[g][1]:.4f} ({picks[g][0]})" for g in groups]
        table.row(f"{name} ({info['n']})", *cells, f"{info['starts'].get('dirichlet', float('nan')):.1f}", best)
    print()
    for g in groups:
        print(f"{g}: lowest held-out NLL on {lowest[g]} of {len(sets)} sets")
    print()
    cf, cf6, cf3 = grid(), grid(scales=(1.0, 0.1), eps=(1e-2, 1e-3, 1e-4)), grid(scales=(1.0,), eps=(1e-2, 1e-3, 1e-4))
    portfolios = {
        "closed form, 12 grid points": cf,
        "closed form, 6 grid points (alpha_eps 1e-2, 1e-3, 1e-4; noise scale 1, 0.1)": cf6,
        "closed form, 3 grid points (alpha_eps 1e-2, 1e-3, 1e-4; the paper's noise)": cf3,
        "closed form, alpha_eps 1e-3 only": grid(eps=(1e-3,), scales=(1.0,)),
        "today's portfolio": TODAY,
        "closed form (6) + today's portfolio": cf6 + TODAY,
        **{f"closed form (6) + {m}": cf6 + (m,) for m in TODAY + FROM_DIRICHLET},
        "closed form (6) + rpapep_fixed + pep_regression": cf6 + ("rpapep_fixed", "pep_regression"),
        "closed form (6) + sep_regression + pep_regression": cf6 + ("sep_regression", "pep_regression"),
        "closed form (6) + the EP family from its kernel": cf6 + FROM_DIRICHLET,
        "the new default: closed form (6) + sep_regression (below 1,000 and from 2,000 rows) + pep_regression "
        "(below 1,000)": cf6 + (("sep_regression", 0, 1000), ("sep_regression", 2000, None), ("pep_regression", 0, 1000)),
        "every candidate": cf + FROM_DIRICHLET + TODAY,
    }
    table = MarkdownTable(["grid point (alpha_eps, noise scale)", "NLL over the set's best grid point (geometric mean)",
                           "best on"])
    points = grid()
    ratios = {p: [] for p in points}
    for info in sets.values():
        best = min(info["candidates"][p][2] for p in points)
        for p in points:
            ratios[p].append(info["candidates"][p][2] / best)
    for p in sorted(points, key=lambda p: np.mean(np.log(ratios[p]))):
        eps, scale = p.split("_")[1:]
        table.row(f"{eps}, {scale}", f"{np.exp(np.mean(np.log(ratios[p]))):.4f}",
                  f"{sum(r == 1.0 for r in ratios[p])} of {len(sets)}")
    print()
    margin = float(margin)
    table = MarkdownTable(["portfolio", "NLL over the best (geometric mean)", "best on", "seconds, every fit",
                           f"seconds, racing ({margin:.0%})"])
    for label, members in portfolios.items():
        ratios, hits, every, raced = [], 0, 0.0, 0.0
        for info in sets.values():
            best = min(v[2] for v in info["candidates"].values() if np.isfinite(v[2]))
            full = _choose(info, members, None)
            if full is None:
                full = _choose(info, cf, None)
            ratios.append(full[1] / best)
            hits += full[1] == best
            every += full[2]
            raced += (_choose(info, members, margin) or _choose(info, cf, margin))[2]
        table.row(label, f"{np.exp(np.mean(np.log(ratios))):.4f}", f"{hits} of {len(sets)}", f"{every:.0f}",
                  f"{raced:.0f}")


#: the panel's estimators (``defaults_panel.py``) as issue 67's aims name them
DEFAULT, DIRICHLET, PEER_DIRICHLET = ("alphagp GPClassifier()", "alphagp GPClassifier(method='dirichlet')",
                                      "GPyTorch Dirichlet GP")
GP_PEERS = (PEER_DIRICHLET, "GPflow SVGP", "GPyTorch SVGP", "scikit-learn GPC")
#: the panel's small sets (the study's 16) and its larger ones
SMALL = ("glass", "new_thyroid", "wine", "crabs", "sonar", "ionosphere", "svmguide2", "breast_cancer", "australian",
         "pima", "vehicle", "vowel", "banknote", "waveform_21", "satimage", "digits")
LARGER = ("shuttle", "mnist_5000", "fashion_mnist_5000", "mnist_20000", "fashion_mnist_20000")


def _seconds_to(curve: list[dict], nll: float) -> float:
    """The first training seconds of ``curve`` at which its test NLL is at most ``nll`` (inf: never)."""
    return next((p["train_seconds"] for p in curve if p["test_nll"] <= nll), float("inf"))


def closed_form_panel(results: str = "defaults_panel_67") -> None:
    """Issue 67's panel (``defaults_panel.py``, 70/30 split, seed 0, test split scored once): every
    estimator's test NLL and seconds per set, then the issue's aims counted from the rows: lowest
    test NLL of the GP peers (GPyTorch's Dirichlet GP included) on the small sets and on the larger
    ones, lowest of every classifier, training time at most GPflow's recipe's, ``method="dirichlet"``
    against GPyTorch's Dirichlet GP (its seconds to reach our test NLL on its curve), digits
    against HistGradientBoosting, what the default chose, and ``method="dirichlet"`` alone against
    GPflow's seconds and the default's test NLL."""
    rows = {}
    for r in results_rows(results):
        rows[(r["dataset"], r["estimator"])] = r
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}; "
          f"{sorted({r['machine'] for r in rows.values()})}\n")
    names = list(dict.fromkeys(n for _, n in rows))
    sets = [d for d in SMALL + LARGER if any(k[0] == d for k in rows)]
    panel_table(rows, sets, names)
    counts = {k: [0, 0] for k in ("gp_small", "gp_larger", "all", "time", "peer", "alone_time", "alone_nll")}
    wins: dict[str, list[str]] = {"speed": [], "quality": []}
    table = MarkdownTable(["data set", "default", "lowest GP peer", "lowest other classifier",
                           "default's seconds / GPflow's", "dirichlet: NLL (s)",
                           "GPyTorch Dirichlet: s to that NLL (final NLL)", "default chose"])
    for d in sets:
        mine = rows.get((d, DEFAULT))
        if mine is None:
            continue
        peers = [rows[(d, n)] for n in GP_PEERS if (d, n) in rows]
        others = [r for (dd, n), r in rows.items() if dd == d and not n.startswith("alphagp")]
        best_peer = min(peers, key=lambda r: r["test_nll"]) if peers else None
        best_other = min(others, key=lambda r: r["test_nll"]) if others else None
        if best_peer:
            key = "gp_small" if d in SMALL else "gp_larger"
            counts[key][0] += mine["test_nll"] < best_peer["test_nll"]
            counts[key][1] += 1
        if best_other:
            counts["all"][0] += mine["test_nll"] < best_other["test_nll"]
            counts["all"][1] += 1
        gpflow = rows.get((d, "GPflow SVGP"))
        ratio = mine["train_seconds"] / gpflow["train_seconds"] if gpflow else float("nan")
        if gpflow and d in SMALL:
            counts["time"][0] += ratio <= 1.0
            counts["time"][1] += 1
        ours, peer = rows.get((d, DIRICHLET)), rows.get((d, PEER_DIRICHLET))
        if ours and gpflow and d in SMALL:
            counts["alone_time"][0] += ours["train_seconds"] <= gpflow["train_seconds"]
            counts["alone_time"][1] += 1
            counts["alone_nll"][0] += ours["test_nll"] <= mine["test_nll"]
            counts["alone_nll"][1] += 1
        peer_cell = "-"
        if ours and peer:
            reach = _seconds_to(peer.get("curve") or [peer], ours["test_nll"])
            counts["peer"][0] += ours["train_seconds"] <= reach
            counts["peer"][1] += 1
            if ours["train_seconds"] <= reach:      # a speed win where GPyTorch gets there, else a final-NLL one
                wins["speed" if np.isfinite(reach) else "quality"].append(d)
            peer_cell = f"{reach:.1f} ({peer['test_nll']:.4f})" if np.isfinite(reach) else f"never ({peer['test_nll']:.4f})"
        ours_cell = f"{ours['test_nll']:.4f} ({ours['train_seconds']:.1f})" if ours else "-"
        table.row(d, f"{mine['test_nll']:.4f}",
                  f"{best_peer['test_nll']:.4f} ({best_peer['estimator']})" if best_peer else "-",
                  f"{best_other['test_nll']:.4f} ({best_other['estimator']})" if best_other else "-",
                  f"{ratio:.2f}", ours_cell, peer_cell, mine.get("candidate", "-"))
    print()
    print(f"the default: lowest test NLL of the GP peers on {counts['gp_small'][0]} of {counts['gp_small'][1]} small "
          f"sets (aim: 14 of 16) and on {counts['gp_larger'][0]} of {counts['gp_larger'][1]} larger ones (aim: every); "
          f"lowest of every classifier on {counts['all'][0]} of {counts['all'][1]} (aim: 10 of 21); training time at "
          f"most GPflow's on {counts['time'][0]} of {counts['time'][1]} small sets (aim: 12 of 16)")
    print(f"method='dirichlet' in at most the seconds GPyTorch's Dirichlet GP takes to reach its test NLL (or "
          f"GPyTorch never reaches it) on {counts['peer'][0]} of {counts['peer'][1]} sets both ran (aim: every)")
    print(f"of those, faster to the same NLL (GPyTorch reaches it later) on {len(wins['speed'])}: "
          f"{', '.join(wins['speed']) or '-'}; a lower final NLL (GPyTorch never reaches it) on "
          f"{len(wins['quality'])}: {', '.join(wins['quality']) or '-'}")
    if (("digits", DEFAULT) in rows) and (("digits", "HistGradientBoosting") in rows):
        mine, hgb = rows[("digits", DEFAULT)], rows[("digits", "HistGradientBoosting")]
        print(f"digits: the default's test NLL {mine['test_nll']:.4f} (aim: at most 0.035) in {mine['train_seconds']:.1f} s, "
              f"{mine['train_seconds'] / hgb['train_seconds']:.1f} times HistGradientBoosting's {hgb['train_seconds']:.1f} s "
              f"in the same run (aim: at most 10)")
    chosen = {}
    for d in sets:
        if (d, DEFAULT) in rows:
            c = rows[(d, DEFAULT)].get("candidate", "-")
            chosen[c.split("(")[0]] = chosen.get(c.split("(")[0], 0) + 1
    print("the default chose: " + ", ".join(f"{c} on {k}" for c, k in sorted(chosen.items(), key=lambda kv: -kv[1])))
    print(f"method='dirichlet' alone: training time at most GPflow's on {counts['alone_time'][0]} of "
          f"{counts['alone_time'][1]} small sets, test NLL at most the default's on {counts['alone_nll'][0]} of "
          f"{counts['alone_nll'][1]}")
    panel_figure(rows, sets, names, RESULTS / f"{results}.png", log_nll=True)


def ep_exact_study(results: str = "defaults_ep_exact") -> None:
    """Issue 67, item 3 on small data (``defaults_study.py --portfolio ep_exact``, validation rows
    only): EP and PEP on the exact GP (inducing inputs at every training row) from the Dirichlet
    start's kernel and from the regression's, beside the closed form at alpha_eps 1e-3 and the
    default's sparse PEP; per set the held-out NLL of each and the seconds of one fit, then the
    counts of sets where the exact EP family beats the closed form and the sparse PEP."""
    rows = results_rows(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{sorted({r['machine'] for r in rows})}\n")
    names = list(dict.fromkeys(c for r in rows for c in r["cv_results"]["candidate"]))
    table = MarkdownTable(["data set (training rows)", *names])
    exact = [n for n in names if "_exact_" in n]
    beats = {"dirichlet_0.001_1": 0, "pep_regression": 0}
    for r in sorted(rows, key=lambda r: r["n_train"]):
        cv = r["cv_results"]
        nll = dict(zip(cv["candidate"], cv["mean_test_nll"]))
        fit = dict(zip(cv["candidate"], cv["mean_fit_time"]))
        table.row(f"{r['dataset']} ({r['n_train']})",
                  *(f"{nll[n]:.4f} ({fit[n]:.1f} s)" if n in nll else "-" for n in names))
        best_exact = min(nll[n] for n in exact if n in nll)
        for other in beats:
            beats[other] += best_exact < nll[other]
    print(f"\ncells: held-out NLL, mean over the folds (seconds of one fit)\n\nthe best exact EP-family candidate "
          f"below the closed form on {beats['dirichlet_0.001_1']} of {len(rows)} sets, below the sparse PEP from the "
          f"regression start on {beats['pep_regression']} of {len(rows)}")


def closed_form_levers(results: str = "closed_form_levers") -> None:
    """Issue 67's item-1 levers (``closed_form_levers.py``, digits' training rows only): seconds of
    one evaluation with its gradient by C factors and by the Woodbury form, and the start's rows
    and float type against the validation NLL of ``GPClassifier(method="dirichlet")``."""
    rows = results_rows(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{sorted({r['machine'] for r in rows})}\n")
    table = MarkdownTable(["rows", "float", "C factors (s)", "Woodbury (s)", "C factors / Woodbury",
                           "relative difference of the values"])
    for r in (r for r in rows if r["part"] == "evidence"):
        table.row(r["n"], r["dtype"], f"{r['c_factors_seconds']:.3f}", f"{r['woodbury_seconds']:.3f}",
                  f"{r['c_factors_seconds'] / r['woodbury_seconds']:.1f}", f"{r['relative_difference']:.1e}")
    print()
    table = MarkdownTable(["start rows", "float", "validation NLL", "error", "fit seconds",
                           "start: evaluations, seconds", "fit seconds / HistGradientBoosting's",
                           "HistGradientBoosting's NLL"])
    for r in (r for r in rows if r["part"] == "start"):
        table.row(f"{r['start_rows']} of {r['fit_rows']}", r["dtype"], f"{r['val_nll']:.4f}", f"{r['val_error']:.3f}",
                  f"{r['seconds']:.1f}", f"{r['start_evaluations']}, {r['start_seconds']:.1f}",
                  f"{r['seconds'] / r['hgb_seconds']:.2f}", f"{r['hgb_val_nll']:.4f}")


#: the reports by name (merged into ``report.REPORTS``)
REPORTS = {"closedform": closed_form_study, "closedformpanel": closed_form_panel,
           "epexact": ep_exact_study,
           "closedformlevers": closed_form_levers}
