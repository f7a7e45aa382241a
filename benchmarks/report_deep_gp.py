"""Reports of the deep-GP paper (``benchmarks/docs/deep-gp-paper.md``): the synthetic problems, the
UCI tables and ranks, MNIST, the authors' code and GPyTorch's deep GP beside ours."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from report_common import MarkdownTable, _optional, _ranks, deep_gp_paper, load, mean_se, phase_table

from common import RESULTS, ran_whole_budget, row_threads


def dgp_synthetic_table(results: str = "dgp_synthetic") -> None:
    """Table C.6 of the deep-GP paper: test RMSE and log-likelihood per problem and alpha, beside the paper's."""
    paper = deep_gp_paper()["C.6_synthetic"]
    table = MarkdownTable(["problem", "alpha", "RMSE", "paper", "test log-likelihood", "paper", "epochs",
                           "commit (dirty)"])
    for r in sorted(load(results), key=lambda r: (r["problem"], r["alpha"])):
        ref = paper[r["problem"]]
        i = ref["alpha"].index(r["alpha"]) if r["alpha"] in ref["alpha"] else None
        rmse, ll = (("-", "-") if i is None else (f"{ref['rmse'][i]:.3f}", f"{ref['test_loglik'][i]:.3f}"))
        table.row(r["problem"], f"{r['alpha']:g}", f"{r['rmse']:.3f}", rmse, f"{r['test_loglik']:.3f}", ll, r["epochs"],
                  f"{r['commit']} ({r['dirty']})")


def dgp_synthetic_seeds_table(results: str = "dgp_synthetic_seeds") -> None:
    """Table 1 / C.6 of the deep-GP paper over seeds: mean ± s.e. of the test RMSE and log-likelihood per
    problem, alpha, start of the hidden means and of the later layers' inducing inputs, and how
    many seeds found the bimodal solution (test log-likelihood above -2.5; the unimodal fit sits
    near -3.06)."""
    paper = deep_gp_paper()["C.6_synthetic"]
    groups = defaultdict(list)
    for r in load(results):
        groups[r["problem"], r["alpha"], r.get("hidden_mean_scale", 0.0), r.get("hidden_inducing", "carried"),
               r["epochs"]].append(r)
    table = MarkdownTable(["problem", "alpha", "hidden mean scale", "later layers' Z", "seeds", "RMSE", "paper",
                           "test log-likelihood", "paper", "seeds above -2.5", "commit (dirty)"])
    for (problem, alpha, scale, inducing, _), rows in sorted(groups.items()):
        ref = paper[problem]
        i = ref["alpha"].index(alpha) if alpha in ref["alpha"] else None
        rmse, ll = (("-", "-") if i is None else (f"{ref['rmse'][i]:.3f}", f"{ref['test_loglik'][i]:.3f}"))
        found = sum(r["test_loglik"] > -2.5 for r in rows) if problem == "bimodal" else "-"
        commits = ", ".join(sorted({f"{r['commit']} ({r['dirty']})" for r in rows}))
        table.row(problem, f"{alpha:g}", f"{scale:g}", inducing, len(rows), mean_se([r["rmse"] for r in rows], 3), rmse,
                  mean_se([r["test_loglik"] for r in rows], 3), ll, found, commits)


def dgp_mnist_curve_report(results: str = "dgp_mnist_curve") -> None:
    """The deep GP on MNIST against iterations: a table of each run's last validation point, the
    test rows, and the figure results/dgp_mnist_curve.png (validation error and NLL per run)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = load(results)
    curves = defaultdict(list)
    for r in rows:
        if r["phase"] == "curve":
            curves[r["label"]].append(r)
    table = MarkdownTable(["run", "first-layer kernel", "pixels", "alpha", "iterations", "train seconds",
                           "validation error", "validation NLL", "commit (dirty)"])
    for label, points in curves.items():
        last = max(points, key=lambda r: r["iterations"])
        commits = ", ".join(sorted({f"{r['commit']} ({r['dirty']})" for r in points}))
        table.row(label, last["kernel"], last["pixels"], f"{last['alpha']:g}", last["iterations"],
                  f"{last['train_seconds']:.0f}", f"{100 * last['val_error']:.2f} %", f"{last['val_nll']:.4f}", commits)
    for r in rows:
        if r["phase"] == "test":
            print(f"\ntest split, once, for {r['model']} ({r['iterations']} iterations): error "
                  f"{100 * r['error']:.2f} %, NLL {r['nll']:.4f}, ECE {r['ece']:.4f} ({r['commit']}, dirty {r['dirty']})")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, points in curves.items():
        points = sorted(points, key=lambda r: r["iterations"])
        it = [r["iterations"] for r in points]
        axes[0].plot(it, [100 * r["val_error"] for r in points], "o-", ms=3, label=label)
        axes[1].plot(it, [r["val_nll"] for r in points], "o-", ms=3, label=label)
    colours = {label: line.get_color() for label, line in zip(curves, axes[0].get_lines())}
    for r in rows:
        if r["phase"] == "test":
            label = next((lab for lab in curves if Path(r["model"]).stem.endswith(lab)), None)
            for ax, value in ((axes[0], 100 * r["error"]), (axes[1], r["nll"])):
                ax.plot(r["iterations"], value, "*", ms=9, color=colours.get(label, "k"),
                        label=f"{label}, test (once)")
    for ax, name, band in ((axes[0], "error (%)", (2.1, 2.5)), (axes[1], "NLL", (0.09, 0.14))):
        ax.axhspan(*band, color="0.85", label="paper, L = 2, 200,000 iterations (test)")
        ax.set_xlabel("iterations (batches of 100)")
        ax.set_ylabel(f"validation {name}; stars: test")
    axes[1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(RESULTS / "dgp_mnist_curve.png", dpi=200)


def dgp_mnist_screen_report(results: str = "dgp_mnist_screen") -> None:
    """The deep GP on MNIST's validation split after 500 and 1,000 iterations: the first layer's
    kernel and pixel scaling (``phase="curve"``), the 10 % of images of largest norm against the
    rest (``"by-norm"``), and the code before issue 26 (``"ablation"``)."""
    rows = load(results)
    phase_table(rows, "curve", ["run", "first-layer kernel", "pixels", "iterations", "train seconds",
                                "validation error", "validation NLL", "commit (dirty)"],
                lambda r: [r["label"], r["kernel"], r["pixels"], str(r["iterations"]), f"{r['train_seconds']:.0f}",
                           f"{100 * r['val_error']:.2f} %", f"{r['val_nll']:.4f}", f"{r['commit']} ({r['dirty']})"])
    print()
    phase_table(rows, "by-norm", ["model", "first-layer kernel", "pixels", "largest-norm 10 %: error", "NLL",
                                  "other 90 %: error", "NLL", "commit (dirty)"],
                lambda r: [Path(r["model"]).stem, r["kernel"], r["pixels"], f"{100 * r['largest_error']:.2f} %",
                           f"{r['largest_nll']:.4f}", f"{100 * r['rest_error']:.2f} %", f"{r['rest_nll']:.4f}",
                           f"{r['commit']} ({r['dirty']})"])
    print()
    phase_table(rows, "ablation", ["code", "iterations", "train seconds", "energy after each 500 iterations",
                                   "validation error", "validation NLL", "commit (dirty)"],
                lambda r: [r["label"], str(r["iterations"]), f"{r['train_seconds']:.0f}",
                           ", ".join(f"{e:.3g}" for e in r["epoch_energy"]), f"{100 * r['val_error']:.2f} %",
                           f"{r['val_nll']:.4f}", f"{r['commit']} ({r['dirty']})"])


def _paper_cell(table: dict, layers: int, name: str, alpha: float) -> str:
    """The paper's mean ± s.e. in the column of ``alpha`` (-> 0 for our 0.001, then 0.1, ..., 1); raw
    text for rows marked ambiguous."""
    row = table.get(f"L={layers}", {}).get(name)
    if row is None:
        return "-"
    if row.get("ambiguous"):
        return "ambiguous: " + " ".join(row["raw"])
    column = 0 if alpha < 0.05 else round(alpha * 10)
    return f"{row['mean'][column]:.2f} ± {row['se'][column]:.2f}"


def dgp_uci_table(results: str = "dgp_uci") -> None:
    """Tables C.7-C.12 of the deep-GP paper: RMSE or error and test log-likelihood, mean ± s.e. over
    the splits run, beside the paper's (20 splits, 20,000 iterations)."""
    paper = deep_gp_paper()
    groups = defaultdict(list)
    for r in load(results):     # a fit stopped before its budget (early stopping once did) is its own row
        groups[r["dataset"], r["layers"], r["alpha"], r["iterations"], not ran_whole_budget(r)].append(r)
    table = MarkdownTable(["data set", "L", "alpha", "iterations", "splits", "RMSE / error", "paper",
                           "test log-likelihood", "paper", "seconds per fit", "clamped variances (most in a fit)",
                           "commit (dirty)"])
    for (name, layers, alpha, iterations, stopped), rows in sorted(groups.items()):
        if stopped:
            iterations = f"{iterations} (stopped at epoch {', '.join(str(r['epochs_run']) for r in rows)} of {rows[0]['epochs']})"
        task = rows[0]["task"]
        metric = "rmse" if task == "regression" else "error"
        keys = {"regression": ("C.8_regression_rmse", "C.7_regression_test_loglik"),
                "binary": ("C.10_binary_test_error", "C.9_binary_test_loglik"),
                "multiclass": ("C.12_multiclass_test_error", "C.11_multiclass_test_loglik")}[task]
        commits = sorted({f"{r['commit']} ({r['dirty']})" for r in rows})
        table.row(rows[0]["paper_name"], layers, f"{alpha:g}", iterations, len(rows),
                  mean_se([r[metric] for r in rows], 3),
                  _paper_cell(paper[keys[0]], layers, rows[0]["paper_name"], alpha),
                  mean_se([r["test_loglik"] for r in rows], 3),
                  _paper_cell(paper[keys[1]], layers, rows[0]["paper_name"], alpha),
                  f"{np.mean([r['train_seconds'] for r in rows]):.0f}", _most_clamped(rows), ", ".join(commits))


RANK_ALPHAS = (0.001, 0.5, 1.0)


#: the deep-GP paper's Figs. 6-8: task -> (figure, error metric, its table, the log-likelihood's table)
RANK_FIGURES = {"regression": ("Fig. 6", "rmse", "C.8_regression_rmse", "C.7_regression_test_loglik"),
                "binary": ("Fig. 7", "error", "C.10_binary_test_error", "C.9_binary_test_loglik"),
                "multiclass": ("Fig. 8", "error", "C.12_multiclass_test_error", "C.11_multiclass_test_loglik")}


def dgp_rank_cells(*results: str) -> dict:
    """The cells of the deep-GP paper's Figs. 6-8 from the files ``results`` (default dgp_uci and
    dgp_uci_paper): ``(task, file, iterations, L) -> {"error": [[rank per alpha]], "nll": [...],
    "cells": [(set, split)], "rows": [the rows ranked]}``, one ranking of the alphas of :data:`RANK_ALPHAS` per (set, split)
    fitted at all of them with the whole budget (a repeated fit: the file's last row)."""
    out = {}
    for name in results or ("dgp_uci", "dgp_uci_paper"):
        fits = {}
        for r in load(name):
            if r["alpha"] in RANK_ALPHAS and ran_whole_budget(r):
                fits[r["task"], r["iterations"], r["layers"], r["dataset"], r["split"], r["alpha"]] = r
        groups = defaultdict(dict)
        for (task, iterations, layers, dataset, split, alpha), r in fits.items():
            groups[task, iterations, layers, dataset, split][alpha] = r
        for (task, iterations, layers, dataset, split), by_alpha in sorted(groups.items()):
            if len(by_alpha) < len(RANK_ALPHAS):
                continue
            rows = [by_alpha[a] for a in RANK_ALPHAS]
            cell = out.setdefault((task, name, iterations, layers), {"error": [], "nll": [], "cells": [], "rows": []})
            cell["rows"].extend(rows)
            cell["error"].append(_ranks([r[RANK_FIGURES[task][1]] for r in rows]))
            cell["nll"].append(_ranks([-r["test_loglik"] for r in rows]))
            cell["cells"].append((dataset, split))
    return out


def dgp_paper_ranks(task: str, layers: int, datasets) -> dict:
    """The ranks of :data:`RANK_ALPHAS` in the paper's Tables C.7-C.12 means (not per split: the
    tables give no splits) on those of ``datasets`` (paper names) whose row at depth ``layers`` was
    transcribed without ambiguity, per metric (``"error"``, ``"nll"``): ``(sets, mean ranks)``,
    or ``(0, None)``."""
    paper = deep_gp_paper()
    _, _, error_key, loglik_key = RANK_FIGURES[task]
    columns = [0 if a < 0.05 else round(a * 10) for a in RANK_ALPHAS]
    out = {}
    for metric, key, sign in (("error", error_key, 1.0), ("nll", loglik_key, -1.0)):
        ranks = []
        for name in datasets:
            row = paper[key].get(f"L={layers}", {}).get(name)
            if row and not row.get("ambiguous"):
                ranks.append(_ranks([sign * row["mean"][c] for c in columns]))
        out[metric] = (len(ranks), np.mean(ranks, axis=0) if ranks else None)
    return out


def dgp_ranks_table(*results: str) -> None:
    """The deep-GP paper's Figs. 6-8 as numbers: for each task, results file, budget and depth, the
    average rank of alpha = 0.001, 0.5 and 1 (1 the best of the three) over the (set, split) cells
    fitted at all three, in RMSE or error and in NLL, with the number of cells; beside it the ranks
    the paper's tables' means give on the same sets (the paper's figures average per-split ranks
    over 20 splits and all eleven alphas, which its tables do not hold)."""
    cells = dgp_rank_cells(*results)
    used = [r for cell in cells.values() for r in cell["rows"]]
    commits = sorted({f"{r['commit']} ({r['dirty']})" for r in used})
    print(f"<!-- {len(used)} rows, commit (dirty) {', '.join(commits)}, threads {', '.join(sorted({row_threads(r) for r in used}))} -->")
    table = MarkdownTable(["figure", "task", "results file", "iterations", "L", "cells (sets x splits)",
                           "RMSE / error rank (alpha 0.001 / 0.5 / 1)", "NLL rank",
                           "paper tables' means: error rank (sets)", "NLL rank (sets)"])

    def ranks(values) -> str:
        return " / ".join(f"{v:.2f}" for v in np.mean(values, axis=0))

    def paper_cell(sets: int, mean) -> str:
        return f"{ranks([mean])} ({sets})" if sets else "- (0)"

    for (task, name, iterations, layers), cell in sorted(cells.items()):
        sets = sorted({d for d, _ in cell["cells"]})
        paper = dgp_paper_ranks(task, layers, sorted({r["paper_name"] for r in load(name) if r["dataset"] in sets}))
        described = ", ".join(f"{d} {sum(c[0] == d for c in cell['cells'])}" for d in sets)
        table.row(RANK_FIGURES[task][0], task, name, iterations, layers, f"{len(cell['cells'])} ({described})",
                  ranks(cell["error"]), ranks(cell["nll"]), paper_cell(*paper["error"]), paper_cell(*paper["nll"]))


def dgp_ranks_figure(*results: str) -> None:
    """The deep-GP paper's Figs. 6-8 drawn as the paper draws them: the average rank of each alpha,
    one line per (depth, budget), RMSE / error on the left and NLL on the right, one row per task,
    from :func:`dgp_rank_cells`; written to results/dgp_ranks.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cells = dgp_rank_cells(*results)
    tasks = [t for t in RANK_FIGURES if any(key[0] == t for key in cells)]
    fig, axes = plt.subplots(len(tasks), 2, figsize=(8, 2.8 * len(tasks)), squeeze=False)
    for row, task in zip(axes, tasks):
        for ax, metric, label in zip(row, ("error", "nll"), (RANK_FIGURES[task][1].upper(), "NLL")):
            for (t, name, iterations, layers), cell in sorted(cells.items()):
                if t == task:
                    ax.plot(RANK_ALPHAS, np.mean(cell[metric], axis=0), "o-",
                            label=f"L = {layers}, {iterations} it. ({len(cell['cells'])} cells)")
            ax.set_title(f"{RANK_FIGURES[task][0]} ({task}): {label}", fontsize=9)
            ax.set_xlabel("alpha")
            ax.set_ylabel("average rank")
            ax.set_ylim(0.8, 3.2)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "dgp_ranks.png", dpi=110)
    plt.close(fig)


def dgp_alpha_sweep_table(dataset: str = "wine_quality_red", split: str = "0", layers: str = "2",
                          *results: str) -> None:
    """Every alpha fitted on one set, split and depth (the deep-GP paper's Tables C.7/C.8 run along
    their alpha columns): one line per fit of the files ``results`` (default dgp_uci_paper and
    dgp_uci_winered), sorted by alpha, beside the paper's column for that alpha (20 splits)."""
    paper = deep_gp_paper()
    rows = sorted((r for name in (results or ("dgp_uci_paper", "dgp_uci_winered")) for r in load(name)
                   if r["dataset"] == dataset and r["split"] == int(split) and r["layers"] == int(layers)
                   and ran_whole_budget(r)), key=lambda r: (r["alpha"], r["commit"]))
    table = MarkdownTable(["alpha", "RMSE", "paper RMSE", "test log-likelihood", "paper", "without repeated test rows",
                           "median", "energy at the end", "seconds", "threads", "commit (dirty)"])
    for r in rows:
        name = r["paper_name"]
        table.row(f"{r['alpha']:g}", f"{r['rmse']:.3f}",
                  _paper_cell(paper["C.8_regression_rmse"], r["layers"], name, r["alpha"]), f"{r['test_loglik']:.3f}",
                  _paper_cell(paper["C.7_regression_test_loglik"], r["layers"], name, r["alpha"]),
                  _optional(r.get("test_loglik_without_duplicates")), _optional(r.get("test_loglik_median")),
                  f"{r['energy_by_epoch'][-1][1]:.0f}", f"{r['train_seconds']:.0f}", row_threads(r),
                  f"{r['commit']} ({r['dirty']})")


def _energy_change_at_end(row: dict) -> float:
    """Percent change of the training energy over the last 10 % of the epochs: from the last recorded
    epoch at or before 90 % of the budget to the end (positive: still rising)."""
    curve = row["energy_by_epoch"]
    start = [energy for epoch, energy in curve if epoch <= 0.9 * curve[-1][0]][-1]
    return 100 * (curve[-1][1] - start) / abs(start)


def dgp_depth_table(split: str = "0", alpha: str = "0.5", results: str = "dgp_uci_paper") -> None:
    """L = 2 beside L = 3 on each regression set fitted at both depths (one split, one alpha, the
    paper's 20,000 iterations), with the paper's columns for both depths (Tables C.7 / C.8, 20 splits),
    the three-layer fit's seconds and their ratio to the two-layer fit's, and both fits' energies at
    the end and their change over the last 10 % of the epochs.
    Where a fit was repeated (same set, depth, split and alpha), the file's last row is the one shown."""
    paper = deep_gp_paper()
    fits = {(r["dataset"], r["layers"]): r for r in load(results)
            if r["task"] == "regression" and r["split"] == int(split) and r["alpha"] == float(alpha)
            and r["iterations"] == 20000 and ran_whole_budget(r)}
    table = MarkdownTable(["data set", "RMSE L=2", "L=3", "paper L=2", "paper L=3", "test log-likelihood L=2", "L=3",
                           "paper L=2", "paper L=3", "L=3 seconds (x L=2)", "energy at the end L=2 / L=3",
                           "its change over the last 10 % of the epochs L=2 / L=3", "L=3 commit (dirty)"])

    def paper_cells(key: str, paper_name: str) -> list[str]:
        return [_paper_cell(paper[key], layers, paper_name, float(alpha)) for layers in (2, 3)]

    for name in sorted({dataset for dataset, layers in fits if layers == 3 and (dataset, 2) in fits}):
        two, three = fits[name, 2], fits[name, 3]
        rmse_cells = paper_cells("C.8_regression_rmse", two["paper_name"])
        loglik_cells = paper_cells("C.7_regression_test_loglik", two["paper_name"])
        table.row(two["paper_name"], f"{two['rmse']:.3f}", f"{three['rmse']:.3f}", *rmse_cells,
                  f"{two['test_loglik']:.3f}", f"{three['test_loglik']:.3f}", *loglik_cells,
                  f"{three['train_seconds']:.0f} ({three['train_seconds'] / two['train_seconds']:.1f})",
                  f"{two['energy_by_epoch'][-1][1]:.0f} / {three['energy_by_epoch'][-1][1]:.0f}",
                  f"{_energy_change_at_end(two):+.1f} % / {_energy_change_at_end(three):+.1f} %",
                  f"{three['commit']} ({three['dirty']})")


def winered_duplicates_table(results: str = "dgp_uci_winered", exact: str = "winered_duplicates") -> None:
    """Wine-red's test log-likelihood with and without the test rows that repeat a training row:
    each deep-GP fit of ``results`` (rows of ``dgp_uci.py`` that record ``n_test_duplicates``),
    then the exact GP of ``winered_duplicates.py`` on the same splits."""
    table = MarkdownTable(["model", "split", "L", "alpha", "RMSE", "test log-likelihood", "repeated test rows",
                           "log-likelihood without them", "median", "commit (dirty)"])
    for r in load(results):
        if "n_test_duplicates" in r:
            table.row(f"deep GP ({r['iterations']} iterations)", r["split"], r["layers"], f"{r['alpha']:g}",
                      f"{r['rmse']:.3f}", f"{r['test_loglik']:.3f}", f"{r['n_test_duplicates']} of {r['n_test']}",
                      _optional(r["test_loglik_without_duplicates"]), f"{r['test_loglik_median']:.3f}",
                      f"{r['commit']} ({r['dirty']})")
    for r in load(exact):
        table.row(r["model"], r["split"], "-", "-", f"{r['test_rmse']:.3f}", f"{r['test_ll_mean']:.3f}",
                  f"{r['n_test_duplicates']} of {r['n_test']}", f"{r['test_ll_mean_without_duplicates']:.3f}",
                  f"{r['test_ll_median']:.3f}", f"{r['commit']} ({r['dirty']})")


def authors_dgp_table(results: str = "authors_dgp", *ours: str) -> None:
    """Each fit by the authors' code (benchmarks/authors_dgp.py) beside alphagp's fit of the same set,
    split, L, alpha and budget (a clean row of the files ``ours``, one that records its lowest test
    points where there is one): test metrics, the lowest test point, and the last recorded energy
    (ours: the last epoch's sum over its mini-batches; theirs: all training rows at the end)."""
    mine = {}
    for r in (row for name in ours or ("dgp_uci_paper", "dgp_uci_diagnosis") for row in load(name)):
        key = (r["dataset"], r["split"], r["layers"], r["alpha"], r["iterations"])
        if r["dirty"] is False and (key not in mine or "lowest_test_points" in r):
            mine[key] = r
    table = MarkdownTable(["data set", "split", "L", "alpha", "code", "RMSE", "test log-likelihood", "median",
                           "lowest point: y, mean ± sd", "energy at the end", "commit (dirty)"])
    for r in load(results):
        peer = mine.get((r["dataset"], r["split"], r["layers"], r["alpha"], r["iterations"]))
        for code, row in (("authors' " + r["authors_commit"], r), ("alphagp", peer)):
            if row is None:
                continue
            low = row.get("lowest_test_points", [None])[0]
            low_cell = f"{low['y']:.2f}, {low['mean']:.2f} ± {low['std']:.3f} (LL {low['loglik']:.1f})" if low else "-"
            median = f"{row['test_loglik_median']:.3f}" if "test_loglik_median" in row else "-"
            table.row(r["paper_name"], r["split"], r["layers"], f"{r['alpha']:g}", code, f"{row['rmse']:.3f}",
                      f"{row['test_loglik']:.3f}", median, low_cell, f"{row['energy_by_epoch'][-1][1]:.0f}",
                      f"{row['commit']} ({row['dirty']})")


def _most_clamped(rows: list[dict]) -> str:
    """The largest ``n_clamped_variances`` of ``rows``, or "-" where no row recorded it."""
    counts = [r["diagnostics"]["n_clamped_variances"] for r in rows if "diagnostics" in r]
    return str(max(counts)) if counts else "-"


def dgp_gpytorch_table(results: str = "dgp_gpytorch") -> None:
    """alphagp's deep GP at each alpha beside GPyTorch's DSVI deep GP, same run, same problem and model."""
    rows = load(results)
    peers = {(r["problem"], r["split"], r["commit"]): r for r in rows if r["library"] == "gpytorch"}
    table = MarkdownTable(["problem", "split", "library", "alpha", "epochs", "RMSE", "test log-likelihood",
                           "train seconds", "time / GPyTorch's", "commit (dirty)"])
    for r in rows:
        peer = peers.get((r["problem"], r["split"], r["commit"]))
        ratio = f"{r['train_seconds'] / peer['train_seconds']:.2f}" if peer else "-"
        alpha = "-" if r["alpha"] is None else f"{r['alpha']:g}"
        table.row(r["problem"], r["split"], r["library"], alpha, r["epochs"], f"{r['rmse']:.3f}",
                  f"{r['test_loglik']:.3f}", f"{r['train_seconds']:.0f}", ratio, f"{r['commit']} ({r['dirty']})")


def dgp_mnist_table(results: str = "dgp_mnist") -> None:
    """Tables C.13 / C.14 of the deep-GP paper: MNIST test NLL and error beside the paper's (same L)."""
    paper = deep_gp_paper()
    table = MarkdownTable(["L", "alpha", "epochs", "test error", "paper", "test NLL", "paper", "train seconds",
                           "commit (dirty)"])
    for r in load(results):
        column = 0 if r["alpha"] < 0.05 else round(r["alpha"] * 10)
        nll = paper["C.13_big_test_nll"].get(f"L={r['layers']}", {}).get("MNIST", {}).get("mean", ["-"] * 11)[column]
        err = paper["C.14_big_test_error"].get(f"L={r['layers']}", {}).get("MNIST", {}).get("mean", ["-"] * 11)[column]
        table.row(r["layers"], f"{r['alpha']:g}", r["epochs"], f"{r['error']:.4f}", err, f"{r['nll']:.4f}", nll,
                  f"{r['train_seconds']:.0f}", f"{r['commit']} ({r['dirty']})")



#: the reports by name (merged into ``report.REPORTS``)
REPORTS = {"dgpsynth": dgp_synthetic_table, "dgpuci": dgp_uci_table, "authorsdgp": authors_dgp_table, "winered": winered_duplicates_table, "dgpalphas": dgp_alpha_sweep_table, "dgpranks": dgp_ranks_table, "dgpranksfig": dgp_ranks_figure, "dgpdepth": dgp_depth_table, "dgpgpytorch": dgp_gpytorch_table, "dgpmnist": dgp_mnist_table, "dgpmnistcurve": dgp_mnist_curve_report, "dgpmnistscreen": dgp_mnist_screen_report, "dgpsynthseeds": dgp_synthetic_seeds_table}
