"""Reports of the alpha paper (``benchmarks/docs/alpha-paper.md``): Appendix C, the ranks of alpha
(Figure 1), Satellite and MNIST per alpha (Figures 3 and 4), active learning (Figures 6 and 7) and
the papers' optimiser."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from report_common import (
    NAMES,
    MarkdownTable,
    _epoch_curve,
    curves_report,
    load,
    paper_table,
    provenance,
    provenance_threads,
)
from report_ep_paper import ours_over_paper_table, uci_groups

from common import RESULTS, read_rows, results_rows

# Alpha paper, Appendix C (Table C.3: test errors, C.4: negative test log-likelihoods, and times; see
# the file's ``source``): {fraction: {dataset: (MCMC, Laplace, label regression, PEP alpha -> 0, PEP 0.5, PEP 1)}}
BASELINES = ("GIBBS", "LAPLACE", "LABEL_REGRESSION", "PEP:0.001", "PEP:0.5", "PEP:1")


PAPER_C_NLL = paper_table("alpha_appendix_c", "test_nll")


PAPER_C_ERROR = paper_table("alpha_appendix_c", "test_error")


PAPER_C_TIME = paper_table("alpha_appendix_c", "training_seconds")


def baselines_tables(results: str = "uci_baselines") -> None:
    """Appendix C of the alpha paper: MCMC, Laplace, label regression and PEP at three alphas."""
    groups = uci_groups(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for rows in groups.values() for r in rows})}")
    for metric, title, paper in (("test_nll", "negative test log-likelihood: ours / paper (Table C.4)", PAPER_C_NLL),
                                 ("test_error", "test error: ours / paper (Table C.3)", PAPER_C_ERROR)):
        print(f"\n#### {title}\n")
        ours_over_paper_table(groups, BASELINES, metric, paper)
    print("\n#### seconds per fit (whole fit: for gibbs and laplace the EP fit of the hyper-parameters "
          "included), averaged over the data sets run; paper beside\n")
    table = MarkdownTable(["M", "data sets", *BASELINES])
    for frac in sorted(PAPER_C_TIME):
        done = [ds for ds in NAMES if all(groups.get((frac, ds, m)) for m in BASELINES)]
        if not done:
            continue
        cells = [f"{np.mean([np.mean([r['train_seconds'] for r in groups[(frac, ds, m)]]) for ds in done]):.3g}"
                 f" / {t:g}" for m, t in zip(BASELINES, PAPER_C_TIME[frac])]
        table.row(f"{int(frac * 100)}%", len(done), *cells)


def _alpha_rank_cases(results: str, fraction: str | None):
    """The rows of ``results`` (of one M when ``fraction`` is given) grouped into (data set, split,
    M) cases; returns the cases that have every (method, alpha), the methods, the alphas (as
    written in the rows) and the rows."""
    rows = [r for r in load(results) if fraction is None or r["M_fraction"] == float(fraction)]
    configs = sorted({r["method"] for r in rows})
    cases = defaultdict(dict)
    for r in rows:
        cases[(r["dataset"], r["seed"], r["M_fraction"])][r["method"]] = r
    complete = [c for c in cases.values() if len(c) == len(configs)]
    paper_order = ["PEP", "APEP", "ARPEP", "RPAPEP"]
    methods = sorted({c.split(":")[0] for c in configs},
                     key=lambda m: (paper_order.index(m) if m in paper_order else len(paper_order), m))
    alphas = sorted({c.split(":")[1] for c in configs if ":" in c}, key=float)
    return complete, methods, alphas, rows


def _alpha_ranks(complete, methods, alphas, metric):
    """Per (method, alpha): the ranks of the alpha within its method and of the method at that
    alpha, one per case (1 = best)."""
    from scipy.stats import rankdata
    over_alpha, over_method = defaultdict(list), defaultdict(list)
    for case in complete:
        for m in methods:
            for a, rank in zip(alphas, rankdata([case[f"{m}:{a}"][metric] for a in alphas])):
                over_alpha[(m, a)].append(rank)
        for a in alphas:
            for m, rank in zip(methods, rankdata([case[f"{m}:{a}"][metric] for m in methods])):
                over_method[(m, a)].append(rank)
    return over_alpha, over_method


def alpha_ranks(results: str = "uci_alpha", fraction: str | None = None) -> None:
    """Figure 1 of the alpha paper (and its Appendix D for the error). Within each (data set,
    split, M) case: for a fixed method, the rank (1 = best) of each alpha among that method's
    alphas (the figure's points); for a fixed alpha, the rank of each method among the four (the
    figure's colours). Averages over the cases that have every (method, alpha), pooled over M as
    the paper does; ``fraction`` (e.g. ``0.05``) keeps the rows of one M."""
    complete, methods, alphas, rows = _alpha_rank_cases(results, fraction)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{len(complete)} complete (data set, split, M) cases")
    for metric in ("test_nll", "test_error"):
        over_alpha, over_method = _alpha_ranks(complete, methods, alphas, metric)
        name = metric.replace("_", " ")
        for title, ranks in ((f"rank of each alpha within its method, by {name} (1 to {len(alphas)})", over_alpha),
                             (f"rank of each method at a fixed alpha, by {name} (1 to {len(methods)})", over_method)):
            print(f"\n#### average {title}; lower is better\n")
            table = MarkdownTable(["method", *(f'alpha={a}' for a in alphas)])
            for m in methods:
                table.row(m, *(f'{np.mean(ranks[m, a]):.2f}' for a in alphas))
        means = {(m, a): np.mean([case[f"{m}:{a}"][metric] for case in complete]) for m in methods for a in alphas}
        print(f"\n#### mean {name} over the cases\n")
        table = MarkdownTable(["method", *(f'alpha={a}' for a in alphas)])
        for m in methods:
            table.row(m, *(f'{means[m, a]:.3f}' for a in alphas))


def alpha_figure(results: str = "uci_alpha", fraction: str | None = None) -> None:
    """Figure 1 of the alpha paper drawn from ``results``: for each method, the average test-NLL
    rank of each alpha within the method (the points, joined), coloured by the average rank of
    the method among the four at that alpha (blue best, red worst), as the paper's figure.
    Written to ``results/<results>_ranks.png``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    complete, methods, alphas, _ = _alpha_rank_cases(results, fraction)
    over_alpha, over_method = _alpha_ranks(complete, methods, alphas, "test_nll")
    x = [float(a) for a in alphas]
    fig, axes = plt.subplots(1, len(methods), figsize=(3.2 * len(methods), 3.4), sharey=True)
    for ax, m in zip(np.atleast_1d(axes), methods):
        within = [np.mean(over_alpha[(m, a)]) for a in alphas]
        among = [np.mean(over_method[(m, a)]) for a in alphas]
        ax.plot(x, within, color="0.6", zorder=1)
        points = ax.scatter(x, within, c=among, cmap="coolwarm", vmin=1, vmax=len(methods), zorder=2,
                            edgecolors="k", linewidths=0.4)
        ax.set_title(m)
        ax.set_xlabel("alpha")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel(f"average rank of alpha (1 to {len(alphas)})")
    fig.colorbar(points, ax=axes, label=f"rank among the {len(methods)} methods", shrink=0.85)
    share = "all M" if fraction is None else f"M = {float(fraction):.0%}"
    fig.suptitle(f"Test NLL ranks over {len(complete)} (data set, split, M) cases, {share}", y=1.02)
    name = f"{results}_ranks.png" if fraction is None else f"{results}_ranks_{fraction}.png"
    fig.savefig(RESULTS / name, dpi=200, bbox_inches="tight")
    print(f"wrote {RESULTS / name}")


def satellite_alpha_figure(results: str = "satellite_alpha_time", metric: str = "test_nll") -> None:
    """Alpha paper Figure 3: test NLL against training time on Satellite, one panel per method and
    M, one line per alpha, VI (the alpha -> 0 limit's own method) in every panel (split-averaged);
    ``metric="test_error"``: Figure D.9, the test error of the same runs."""
    rows = load(results)
    vi = [r for r in rows if r["method"] == "VI"]
    panelled = [{**r, "panel": f"{r['method']}, M={r['M']}", "alpha_line": f"alpha={r['alpha']:g}"}
                for r in rows if r["method"] != "VI"]
    panelled += [{**r, "panel": f"{m}, M={r['M']}", "alpha_line": "VI"}
                 for r in vi for m in sorted({q["method"] for q in rows if q["method"] != "VI"})]
    png = "satellite_alpha_time.png" if metric == "test_nll" else "satellite_alpha_time_error.png"
    curves_report(panelled, "alpha_line", "panel", png, "Satellite", metric=metric)


def satellite_alpha_error_figure(results: str = "satellite_alpha_time") -> None:
    """Alpha paper Figure D.9: :func:`satellite_alpha_figure` in test error."""
    satellite_alpha_figure(results, "test_error")


def method_gap_table(results: str = "satellite_alpha_time", method: str = "RPAPEP", other: str = "ARPEP") -> None:
    """The final test NLL of ``method`` minus ``other``'s (split-averaged) at every alpha and M of
    the alpha paper's Figure 3 runs, and their range (what a "within X of" sentence cites)."""
    rows = load(results)
    final: dict = defaultdict(list)
    for r in rows:
        final[(r["method"], r["alpha"], r["M"])].append(r["final_test_nll"])
    keys = sorted({(a, m) for (name, a, m) in final if name == method and (other, a, m) in final})
    print(f"<!-- {len(rows)} rows, commit {', '.join(sorted({r['commit'] for r in rows}))} -->")
    table = MarkdownTable(["alpha", "M", method, other, "difference"])
    gaps = []
    for a, m in keys:
        mine, theirs = np.mean(final[(method, a, m)]), np.mean(final[(other, a, m)])
        gaps.append(mine - theirs)
        table.row(f"{a:g}", m, f"{mine:.4f}", f"{theirs:.4f}", f"{mine - theirs:+.4f}")
    print(f"\n{method} minus {other}: from {min(gaps):+.4f} to {max(gaps):+.4f} over {len(gaps)} (alpha, M); "
          f"within 0.004 on {sum(abs(g) <= 0.004 for g in gaps)} of them")


def mnist_alpha_figure(results: str = "mnist_alpha") -> None:
    """Alpha paper Figure 4 / D.10: MNIST test NLL against training time, one panel per method and
    one line per alpha, VI (the alpha -> 0 limit's own method) in every panel; and each run's
    validation-selected row."""
    evals, selected = defaultdict(list), []
    for r in load(results):
        (evals[r["method"]].append(r) if r["phase"] == "eval" else selected.append(r))
    families = sorted({m.partition(":")[0] for m in evals if m != "VI"})
    rows = [{"panel": family, "alpha_line": f"alpha={rs[0]['alpha']:g}" if m != "VI" else "VI",
             "commit": rs[0]["commit"], "dirty": rs[0]["dirty"],
             "curve": _epoch_curve(rs)}
            for m, rs in evals.items() for family in (families if m == "VI" else [m.partition(":")[0]])]
    curves_report(rows, "alpha_line", "panel", f"{results}.png", "MNIST")
    print()
    table = MarkdownTable(["commit (dirty)", "method", "alpha", "epochs run", "selected epoch", "its training s",
                           "validation NLL", "test error (%)", "test NLL", "refused site updates"])
    for r in sorted(selected, key=lambda r: (r["method"].partition(":")[0], r["alpha"] or 0)):
        table.row(f"{r['commit']} ({r['dirty']})", r["method"].partition(":")[0], r["alpha"], r["epochs_run"],
                  r["epoch"], f"{r['train_seconds']:.0f}", f"{r['val_nll']:.4f}", f"{100 * r['test_error']:.2f}",
                  f"{r['test_nll']:.4f}", r.get("diagnostics", {}).get("n_skipped_updates", "-"))


def satellite_first_table(part: str = "all", results: str = "satellite_alpha_time") -> None:
    """The alpha paper's Fig. 3, the curves' first evaluation (iteration 5): the test NLL averaged
    over the splits per method, alpha and M (``part="all"``), and its range over alpha >= 0.3 per
    method group (both parts; ``part="ranges"`` prints only these)."""
    rows = read_rows(f"{results}.jsonl")
    print(f"<!-- {provenance_threads(rows)} -->")
    first = defaultdict(list)
    for r in rows:
        first[r["method"], r["alpha"], r["M"]].append(r["curve"][0])
    if part == "all":
        table = MarkdownTable(["method", "alpha", "M", "splits", "first evaluation: iteration", "seconds", "test NLL"])
        for (method, alpha, M), points in sorted(first.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0, kv[0][2])):
            table.row(method, "-" if alpha is None else format(alpha, "g"), M, len(points), points[0]["iteration"],
                      f"{np.mean([p['train_seconds'] for p in points]):.2f}",
                      f"{np.mean([p['test_nll'] for p in points]):.3f}")
        print()
    for M in sorted({k[2] for k in first}):
        for label, methods in (("PEP", {"PEP"}), ("APEP, ARPEP, RPAPEP", {"APEP", "ARPEP", "RPAPEP"})):
            values = [np.mean([p["test_nll"] for p in pts]) for (m, a, MM), pts in first.items()
                      if m in methods and MM == M and a is not None and a >= 0.3]
            if values:
                print(f"M = {M}, {label}, alpha >= 0.3: first-evaluation NLL {min(values):.2f} to {max(values):.2f}")


def quasi_newton_table(*methods: str) -> None:
    """L-BFGS against the library's batch scheme per set and method, for the methods named (all by
    default; rows before the ``method`` field ran ``pep`` at alpha 0.5 with the sign-adaptive rule,
    the script's only setting then); then, over the (set, method) pairs, on how many L-BFGS's last
    step ends with the higher energy and the lower validation NLL than the library's last row."""
    rows = [r for r in read_rows("quasi_newton.jsonl") if not methods or r.get("method", "pep") in methods]
    print(f"<!-- {provenance(rows)} -->")
    table = MarkdownTable(["set", "method", "scheme", "step", "evaluations", "seconds", "energy / N (higher is better)",
                           "validation NLL"])

    def method(r) -> str:
        return f"{r.get('method', 'pep')} {r.get('alpha', 0.5):g}"

    higher = lower = pairs = 0
    for dataset, name in dict.fromkeys((r["dataset"], method(r)) for r in rows):
        ends = {}
        for scheme in ("sign-adaptive", "lbfgs"):
            own = [r for r in rows if r["dataset"] == dataset and method(r) == name and r["scheme"] == scheme]
            if not own:
                continue
            ends[scheme] = own[-1]
            picks = [own[0], *[r for r in own if r["step"] in (250,)], own[-1]] if scheme == "sign-adaptive" \
                else [own[0], *[r for r in own if r["step"] in (5, 10)], own[-1]]
            label = "L-BFGS" if scheme == "lbfgs" else own[0].get("optimizer", "sign-adaptive")
            for r in dict.fromkeys(id(p) for p in picks):
                r = next(p for p in picks if id(p) == r)
                table.row(dataset, name, label, r["step"], r["evaluations"], f"{r['seconds']:.1f}",
                          f"{r['energy_per_row']:.4f}", f"{r['validation_nll']:.4f}")
        if len(ends) == 2:
            pairs += 1
            higher += int(ends["lbfgs"]["energy_per_row"] > ends["sign-adaptive"]["energy_per_row"])
            lower += int(ends["lbfgs"]["validation_nll"] < ends["sign-adaptive"]["validation_nll"])
    print(f"\nL-BFGS's last step against the library's last row: higher energy on {higher} of {pairs} (set, method), "
          f"lower validation NLL on {lower} of {pairs}.")


def _active_curves(results: str) -> tuple[list[dict], dict]:
    """The rows and their test-error curves ``[101]`` grouped by (method, alpha, selection)."""
    rows = results_rows(results)
    groups = defaultdict(list)
    for r in rows:
        groups[(r["method"], r["alpha"], r["selection"])].append(np.array(r["test_error"]))
    return rows, groups


def active_learning_table(results: str = "active_learning") -> None:
    """Alpha paper Figs. 6-7 in numbers: per method and alpha, the repetitions, the start and end
    test errors averaged over them, the reductions (Fig. 7), and at how many of the curve's points
    (the start and each of the additions) the entropy curve is below the random one; then the
    counts over the runs."""
    rows, groups = _active_curves(results)
    print(f"<!-- {provenance(rows)} -->")
    table = MarkdownTable(["method", "alpha", "repetitions", "start error", "end, by entropy", "end, at random",
                           "reduction by entropy", "reduction at random", "points where entropy is below random"])
    lower_at_end, most, runs = 0, 0, 0
    for method in sorted({k[0] for k in groups}):
        for alpha in sorted({k[1] for k in groups if k[0] == method}):
            entropy, random = groups.get((method, alpha, "entropy")), groups.get((method, alpha, "random"))
            if not entropy or not random:
                continue
            e, r = np.mean(np.stack(entropy), 0), np.mean(np.stack(random), 0)
            below = int(np.sum(e < r))
            runs += 1
            lower_at_end += int(e[-1] < r[-1])
            most += int(below > len(e) / 2)
            table.row(method, f"{alpha:g}", len(entropy), f"{e[0]:.3f}", f"{e[-1]:.3f}", f"{r[-1]:.3f}",
                      f"{e[0] - e[-1]:.3f}", f"{r[0] - r[-1]:.3f}", f"{below} of {len(e)}")
    print(f"\nBy entropy below at random at the end on {lower_at_end} of {runs} (method, alpha) runs, and on more "
          f"than half of the curve's points on {most} of {runs}.")


def active_learning_figure(results: str = "active_learning") -> None:
    """Alpha paper Figs. 6-7: Waveform test error against the points added, by predictive entropy
    (top row) and at random (bottom row), one panel per method and one line per alpha, averaged
    over the repetitions; written to results/active_learning.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    _, groups = _active_curves(results)
    methods = sorted({k[0] for k in groups})
    fig, axes = plt.subplots(2, len(methods), figsize=(3.6 * len(methods), 6), squeeze=False, sharey=True)
    for j, method in enumerate(methods):
        for alpha in sorted({k[1] for k in groups if k[0] == method}):
            for i, selection in enumerate(("entropy", "random")):
                curves = groups.get((method, alpha, selection))
                if curves:
                    mean = np.mean(np.stack(curves), 0)
                    axes[i, j].plot(np.arange(len(mean)), mean, label=f"alpha={alpha:g} ({len(curves)} rep.)")
        for i, selection in enumerate(("by predictive entropy", "at random")):
            axes[i, j].set(title=f"{method}, {selection}", xlabel="points added", ylabel="test error")
            axes[i, j].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "active_learning.png", dpi=110)
    plt.close(fig)


def active_learning_report(results: str = "active_learning") -> None:
    """:func:`active_learning_table` and :func:`active_learning_figure`."""
    active_learning_table(results)
    active_learning_figure(results)
    print("\nfigure: benchmarks/results/active_learning.png")



#: the reports by name (merged into ``report.REPORTS``)
REPORTS = {"alpharanks": alpha_ranks, "alphafig": alpha_figure, "satalpha": satellite_alpha_figure, "satalphaerror": satellite_alpha_error_figure, "mnistalpha": mnist_alpha_figure, "baselines": baselines_tables, "methodgap": method_gap_table, "satalphafirst": satellite_first_table, "active": active_learning_report, "activetable": active_learning_table, "quasi_newton": quasi_newton_table}
