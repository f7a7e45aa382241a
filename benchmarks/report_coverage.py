"""How much of each paper's experiment the coverage tables' rows cover, counted from the rows
(``python report.py coverage``): the counts the papers' documents quote in their coverage rows
("Where this paper's experiments stand"), so that none is typed by hand (issue 74, item 20)."""

from __future__ import annotations

from collections import defaultdict

from common import results_rows


def _seeds(rows, keys) -> dict[tuple, set]:
    """The seeds of each cell (the values of ``keys``) of ``rows``."""
    cells: dict[tuple, set] = defaultdict(set)
    for r in rows:
        cells[tuple(r.get(k) for k in keys)].add(r.get("seed"))
    return cells


def _spread(cells: dict[tuple, set]) -> str:
    """``"5 seeds in each of 96 cells"`` or the count of cells at each number of seeds."""
    by_count: dict[int, int] = defaultdict(int)
    for seeds in cells.values():
        by_count[len(seeds)] += 1
    return ", ".join(f"{n} seed{'s' if n > 1 else ''} in {k} of {len(cells)} cells" for n, k in sorted(by_count.items()))


def coverage() -> None:
    """One line per coverage row that quotes a count."""
    uci = results_rows("uci_table2")
    cells = _seeds(uci, ("dataset", "M_fraction", "method"))
    sets = sorted({c[0] for c in cells})
    satellite = [len(s) for c, s in cells.items() if c[0] == "satimage" and c[1] == 0.2]
    print(f"EP paper Tables 2 and 3 (uci_table2): {len(sets)} sets, {len({c[2] for c in cells})} methods, "
          f"{_spread(cells)} (the paper: 20 repetitions); Satellite at M = 20 %: {min(satellite, default=0)} seeds")
    alpha = _seeds(results_rows("uci_alpha"), ("dataset", "method", "alpha"))
    alpha_sets = sorted({c[0] for c in alpha})
    satellite_alpha = _seeds(results_rows("uci_alpha_satellite"), ("method", "alpha", "M_fraction"))
    print(f"alpha paper Fig. 1 / D.8 (uci_alpha): {len(alpha_sets)} of the paper's 8 sets ({', '.join(alpha_sets)}), "
          f"{_spread(alpha)}; Satellite apart (uci_alpha_satellite): {_spread(satellite_alpha)}")
    placement = [r for r in results_rows("inducing_placement") if r.get("figure") == "inducing_placement_alpha.png"]
    methods = sorted({r["method"] for r in placement})
    alphas = sorted({r["alpha"] for r in placement})
    print(f"alpha paper Fig. 2 (inducing_placement, M = {', '.join(str(m) for m in sorted({r['M'] for r in placement}))}): "
          f"{len(methods)} methods "
          f"({', '.join(methods)}) at {len(alphas)} values of alpha ({', '.join(f'{a:g}' for a in alphas)}), "
          f"{len(placement)} fits, one each")
    baselines = _seeds(results_rows("uci_baselines"), ("dataset", "method", "M_fraction"))
    b_sets, b_methods, b_fractions = ({c[k] for c in baselines} for k in range(3))
    full = len(b_sets) * len(b_methods) * len(b_fractions)
    missing = sorted({(d, f) for d in b_sets for f in b_fractions} - {(c[0], c[2]) for c in baselines})
    print(f"alpha paper Tables C.3 and C.4 (uci_baselines): {len(baselines)} of {full} cells ({len(b_sets)} sets x "
          f"{len(b_methods)} methods x {len(b_fractions)} values of M), {_spread(baselines)}; missing: "
          + (", ".join(f"{d} at M = {f:.0%}" for d, f in missing) or "none"))
    synthetic = [r for name in ("dgp_synthetic", "dgp_synthetic_seeds") for r in results_rows(name)
                 if not r.get("hidden_mean_scale")]
    deep = _seeds(synthetic, ("problem", "alpha"))
    for problem in sorted({c[0] for c in deep}):
        mine = {c[1]: len(s) for c, s in deep.items() if c[0] == problem}
        most = max(mine.values())
        print(f"deep-GP paper Table 1 / C.6, {problem} (dgp_synthetic, dgp_synthetic_seeds): {len(mine)} values of "
              f"alpha; {most} seeds at {sum(n == most for n in mine.values())} of them "
              f"({', '.join(f'{a:g}' for a, n in sorted(mine.items()) if n == most)}), "
              f"{_spread({a: set(range(n)) for a, n in mine.items() if n != most}) or 'none other'}")


REPORTS = {"coverage": coverage}
