"""Reports of issue 67, the GP classifier in closed form (``python report.py NAME ARGS``): the study
behind the default rebuilt around the Dirichlet GP (validation rows only)."""

from __future__ import annotations

import numpy as np

from common import read_rows

#: today's portfolio (issue 58) by its candidates' names in the study's rows
TODAY = ("sep_regression", "vi_regression", "rpapep_fixed", "pep_regression")
#: issue 44's four from the Dirichlet start's kernel
FROM_DIRICHLET = ("sep_dirichlet", "vi_dirichlet", "rpapep_dirichlet", "pep_dirichlet")


def grid(eps=(1e-1, 1e-2, 1e-3, 1e-4), scales=(1.0, 0.3, 0.1)) -> tuple[str, ...]:
    """The names of the Dirichlet grid's candidates (``defaults_study.CLOSED_FORM``)."""
    return tuple(f"dirichlet_{e:g}_{s:g}" for e in eps for s in scales)


def _race(splits, seconds, margin: float):
    """Racing replayed on recorded folds (``report._race``'s rule): the winner's index and the
    seconds of the fits made."""
    from alphagp.estimators.model_selection import behind
    leader, spent = None, 0.0
    for i, scores in enumerate(splits):
        done = 0
        for k in range(len(scores)):
            done, spent = k + 1, spent + seconds[i]
            if k + 1 < len(scores) and behind(scores[:k + 1], None if leader is None else splits[leader], margin):
                break
        if done == len(scores) and (leader is None or np.mean(scores) < np.mean(splits[leader])):
            leader = i
    return leader, spent


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
        pick, spent = _race(splits, seconds, margin)
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
    rows = read_rows(f"{results}.jsonl")
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}\n")
    sets = _sets(rows)
    groups = {"closed form (grid)": grid(), "EP family from its kernel": FROM_DIRICHLET, "today's portfolio": TODAY}
    print("| data set (training rows) | " + " | ".join(groups) + " | Dirichlet start (s) | lowest |\n|---|"
          + "---|" * (len(groups) + 2))
    lowest = dict.fromkeys(groups, 0)
    for name, info in sets.items():
        picks = {g: _choose(info, members, None) for g, members in groups.items()}
        best = min((g for g in groups if picks[g]), key=lambda g: picks[g][1])
        lowest[best] += 1
        cells = ["-" if picks[g] is None else f"{picks[g][1]:.4f} ({picks[g][0]})" for g in groups]
        print(f"| {name} ({info['n']}) | " + " | ".join(cells)
              + f" | {info['starts'].get('dirichlet', float('nan')):.1f} | {best} |")
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
    print("| grid point (alpha_eps, noise scale) | NLL over the set's best grid point (geometric mean) | best on |\n"
          "|---|---|---|")
    points = grid()
    ratios = {p: [] for p in points}
    for info in sets.values():
        best = min(info["candidates"][p][2] for p in points)
        for p in points:
            ratios[p].append(info["candidates"][p][2] / best)
    for p in sorted(points, key=lambda p: np.mean(np.log(ratios[p]))):
        eps, scale = p.split("_")[1:]
        print(f"| {eps}, {scale} | {np.exp(np.mean(np.log(ratios[p]))):.4f} | "
              f"{sum(r == 1.0 for r in ratios[p])} of {len(sets)} |")
    print()
    margin = float(margin)
    print("| portfolio | NLL over the best (geometric mean) | best on | seconds, every fit | seconds, racing "
          f"({margin:.0%}) |\n|---|---|---|---|---|")
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
        print(f"| {label} | {np.exp(np.mean(np.log(ratios))):.4f} | {hits} of {len(sets)} | {every:.0f} | {raced:.0f} |")


#: the reports by name (merged into ``report.REPORTS``)
REPORTS = {"closedform": closed_form_study}
