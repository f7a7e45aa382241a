"""Reports of the edges (``benchmarks/docs/edges.md``): model files and the command line, class
weights, prediction sets, tables, uncertainty beyond p, streams, ordered classes."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from report_common import MarkdownTable, load, markdown_table, mean_se, provenance

from common import RESULTS, results_rows


def edges_tables(results: str = "edges", *only: str) -> None:
    """Trust at the edges (``edges.py``): one table per measurement (those named in ``only``, or
    all), its rows of the newest commit that measured it (and a refusal's message under the table)."""
    everything = load(results)
    skip = {"benchmark", "library", "commit", "dirty", "machine", "measurement", "threads", "error"}
    for what in dict.fromkeys(r["measurement"] for r in everything):
        if only and what not in only:
            continue
        newest = [r for r in everything if r["measurement"] == what][-1]["commit"]
        group = [r for r in everything if r["measurement"] == what and r["commit"] == newest]
        keys = list(dict.fromkeys(k for r in group for k in r if k not in skip))
        print(f"\n{what} ({newest}, dirty {group[0]['dirty']})\n")
        table = MarkdownTable(keys)
        for r in group:
            table.row(*(f"{r[k]:.4g}" if isinstance(r.get(k), float) else r.get(k, "") for k in keys))
        for r in group:
            if r.get("error"):
                print(f"\n{r.get('file', what)}: {r['error']}")
        if what == "many_classes" and "direct_seconds_per_1000_rows" in group[0]:
            for r in group:
                if r["method"] != "pep":         # the grid is the robust-max likelihood's; vi_softmax samples
                    continue
                print(f"\n{r['method']} at {r['classes']} classes: prediction "
                      f"{r['direct_seconds_per_1000_rows'] / r['seconds_per_1000_rows']:.1f} times faster than the "
                      f"direct sum, {r['seconds_per_1000_rows'] / r['latent_seconds_per_1000_rows']:.1f} times the "
                      f"latent marginals' seconds (the matrix products)", end="")
            print()


def _by_set_and_estimator(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """The rows grouped by (data set, estimator), in the order they first appear (the seeds of a cell)."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["estimator"])].append(r)
    return groups


def class_weights_table(results: str = "class_weights") -> None:
    rows = results_rows(results)
    groups = _by_set_and_estimator(rows)
    print(f"<!-- {provenance(rows)} -->")
    markdown_table(["set (train rows, minority)", "estimator", "minority recall", "balanced accuracy", "balanced NLL",
                    "NLL"],
                   [[f"{dataset} ({group[0]['n_train']}, {group[0]['n_train_minority']})", name,
                     *(mean_se([r[key] for r in group], 3) for key in ("test_minority_recall", "test_balanced_accuracy",
                                                                       "test_balanced_nll", "test_nll"))]
                    for (dataset, name), group in groups.items()])
    minority = [r["n_test_minority"] for r in rows]
    print(f"\ntest splits' minority rows: {min(minority)} to {max(minority)}")


def conformal_table(results: str = "conformal") -> None:
    rows = results_rows(results)
    print(f"<!-- {provenance(rows)} -->")

    def cells(r):
        low = int(np.argmin(r["class_coverage"]))
        return [r["dataset"], f"{r['n_calibration']} ({r['route']})", f"{r['level']:.2f}", f"{r['coverage']:.3f}",
                f"{r['mean_set_size']:.2f}", f"{r['class_coverage'][low]:.3f} ({r['class_rows'][low]})"]
    markdown_table(["set", "calibration rows", "level", "coverage", "mean set size", "lowest class coverage (rows)"],
                   [cells(r) for r in rows])
    for level in sorted({r["level"] for r in rows}):
        for route in ("fresh calibration rows", "fresh calibration rows, per class"):
            fresh = [r for r in rows if r["level"] == level and r["route"] == route]
            if fresh:
                lowest = [min(r["class_coverage"]) for r in fresh]
                print(f"\nlevel {level}, {route}: mean coverage {np.mean([r['coverage'] for r in fresh]):.3f} over "
                      f"{len(fresh)} sets, {sum(r['coverage'] >= level for r in fresh)} at or above the level; lowest "
                      f"class coverage {min(lowest):.3f}, mean of the sets' lowest {np.mean(lowest):.3f}; mean set "
                      f"size {np.mean([r['mean_set_size'] for r in fresh]):.2f}")


def tables_table(results: str = "tables") -> None:
    rows = results_rows(results)
    groups = _by_set_and_estimator(rows)
    print(f"<!-- {provenance(rows)} -->")
    markdown_table(["table", "estimator", "test error", "test NLL", "ECE", "seconds"],
                   [[dataset, name, *(mean_se([r[key] for r in group], 3) for key in ("test_error", "test_nll",
                                                                                     "test_ece")),
                     f"{np.mean([r['train_seconds'] for r in group]):.1f}"] for (dataset, name), group in groups.items()])


def ood_report(results: str = "ood") -> None:
    rows = results_rows(results)
    print(f"<!-- {provenance(rows)} -->")
    markdown_table(["estimator (MNIST test error, NLL)", "score", "AUROC, MNIST against Fashion-MNIST"],
                   [[f"{r['estimator']} ({r['mnist_test_error']:.4f}, {r['mnist_test_nll']:.4f})", str(r["score"]),
                     f"{r['auroc']:.4f}"] for r in rows])
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 4.5))
    for r in rows:
        ax.plot(r["roc"]["fpr"], r["roc"]["tpr"], label=f"{r['estimator'].split(' ')[0]}: {r['score']} "
                f"({r['auroc']:.3f})", lw=1.2, ls="-" if "alphagp" in r["estimator"] else "--")
    ax.plot([0, 1], [0, 1], color="0.7", lw=0.8)
    ax.set_xlabel("MNIST test images flagged (false positive rate)")
    ax.set_ylabel("Fashion-MNIST images flagged (true positive rate)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(RESULTS / "ood.png", dpi=90)


def streaming_table(results: str = "streaming") -> None:
    rows = results_rows(results)
    print(f"<!-- {provenance(rows)} -->")
    table = MarkdownTable(["set", "passes", "fit: NLL, error, seconds",
                           "partial_fit (chunks of rows): NLL, error, seconds"])
    cells = {(r["dataset"], r["passes"], r["how"]): r for r in rows}
    for dataset, passes in sorted({(d, p) for d, p, _ in cells}):
        parts = []
        for how in ("fit", "partial_fit"):
            r = cells.get((dataset, passes, how))
            parts.append("-" if r is None else f"{r['test_nll']:.4f}, {r['test_error']:.4f}, {r['train_seconds']:.1f}")
        table.row(dataset, passes, parts[0], parts[1])


ORDINAL = "GPOrdinalClassifier()"


def _ordinal_cells(results: str) -> tuple[list[dict], dict]:
    """The rows of ``results`` grouped by (set, model), on the splits of a set that every model of
    the file has (like with like; a repeated fit: the last row)."""
    rows = results_rows(results)
    latest = {(r["dataset"], r["split"], r["model"]): r for r in rows}
    models = {r["model"] for r in rows}
    cells = defaultdict(list)
    for (dataset, split, model), r in latest.items():
        if all((dataset, split, m) in latest for m in models):
            cells[dataset, model].append(r)
    return rows, cells


def ordinal_table(results: str = "ordinal") -> None:
    """Issue 62: per ordered set and model, test NLL over the grades, MAE of the median grade (the
    regression: its rounded mean), ECE and training seconds, mean ± s.e. over the splits; then the
    issue's aims counted over the sets."""
    rows, cells = _ordinal_cells(results)
    print(f"<!-- {provenance(rows)} -->")
    table = MarkdownTable(["set", "model", "splits", "test NLL", "MAE (grades)", "ECE", "seconds"])
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    mean = {}
    for dataset in sets:
        for model in models:
            rs = cells.get((dataset, model))
            if not rs:
                continue
            mean[dataset, model] = {k: float(np.mean([r[k] for r in rs])) for k in ("nll", "mae", "train_seconds")}
            table.row(dataset, model, len(rs), mean_se([r["nll"] for r in rs], 3), mean_se([r["mae"] for r in rs], 3),
                      mean_se([r["ece"] for r in rs], 3), mean_se([r["train_seconds"] for r in rs], 3))
    full = [d for d in sets if all((d, m) in mean for m in models)]
    if not full or ORDINAL not in models:
        return

    def count(test) -> str:
        won = [d for d in full if test(d)]
        return f"{len(won)} of {len(full)}" + (f" ({', '.join(won)})" if won else "")

    def lower(d, other, key="nll"):
        return mean[d, ORDINAL][key] < mean[d, other][key]

    print()
    for other in ("GPClassifier()", "GPflow SVGP, ordinal"):
        if other in models:
            print(f"- test NLL of {ORDINAL} below {other}'s on {count(lambda d, o=other: lower(d, o))} sets")
    print(f"- lowest test NLL of all {len(models)} models on {count(lambda d: all(lower(d, m) for m in models if m != ORDINAL))} sets")
    if "GP regression, rounded" in models:
        print(f"- MAE below the rounded GP regression's on "
              f"{count(lambda d: lower(d, 'GP regression, rounded', 'mae'))} sets")
    if "GPClassifier()" in models:
        ratios = [mean[d, ORDINAL]["train_seconds"] / mean[d, "GPClassifier()"]["train_seconds"] for d in full]
        print(f"- seconds over GPClassifier()'s: {', '.join(f'{d} {r:.2f}' for d, r in zip(full, ratios))}; "
              f"at most the multi-class default's on {sum(r <= 1 for r in ratios)} of {len(full)} sets")


def ordinal_figure(results: str = "ordinal") -> None:
    """A reliability diagram over the grades per set (every grade's predicted probability against
    the share of rows that have it, pooled over the splits), a line per model; results/ordinal.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows, cells = _ordinal_cells(results)
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(sets), figsize=(4 * len(sets), 4), squeeze=False)
    for ax, dataset in zip(axes[0], sets):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
        for (d, model), rs in cells.items():
            if d != dataset:
                continue
            count = np.sum([r["reliability"]["count"] for r in rs], 0)
            keep = count > 0
            p = np.sum([r["reliability"]["sum_p"] for r in rs], 0)[keep] / count[keep]
            hit = np.sum([r["reliability"]["sum_hit"] for r in rs], 0)[keep] / count[keep]
            ax.plot(p, hit, "o-", ms=3, label=model)
        ax.set(title=dataset, xlabel="predicted probability of a grade", ylabel="share of rows with that grade")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "ordinal.png", dpi=110)
    plt.close(fig)


def ordinal_fuzz_report(results: str = "ordinal_fuzz") -> None:
    """Issue 69's fuzz of the ordinal surface (``ordinal_fuzz.py``): the outcome of every problem,
    the refusals by what they said, each file edit's outcome, the fresh process's reading, and the
    warnings the fits raised."""
    from collections import Counter
    rows = load(results)
    print(f"<!-- {provenance(rows)} -->")
    outcomes = Counter(r["outcome"] for r in rows)
    print(f"{len(rows)} problems: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    refusals = Counter(r["message"].split(";")[0].split(":")[0][:70] for r in rows if r["outcome"] == "refused")
    if refusals:
        print()
        table = MarkdownTable(["refusal (its first words)", "problems"])
        for message, count in refusals.most_common():
            table.row(message, count)
    edits = sorted({e for r in rows for e in r["edits"]})
    kinds = sorted({v for r in rows for v in r["edits"].values()})
    print()
    table = MarkdownTable(["file edit", *kinds])
    for e in edits:
        counts = Counter(r["edits"][e] for r in rows if e in r["edits"])
        table.row(e, *(counts.get(k, 0) for k in kinds))
    fresh = Counter(r["fresh_process"] for r in rows if r["fresh_process"] is not None)
    print("\nre-read in a fresh process: " + ", ".join(f"{k} {v}" for k, v in sorted(fresh.items())))
    warned = Counter(w for r in rows for w in r.get("warnings", []))
    print("warnings raised by the fits (problems): " + ("; ".join(f"{w}... {c}" for w, c in warned.most_common(5))
                                                       or "none"))
    silent = sum(v == "wrong" for r in rows for v in r["edits"].values()) + fresh.get("wrong", 0)
    unexplained = outcomes.get("unexplained", 0) + sum(str(v).startswith("unexplained") for r in rows
                                                      for v in r["edits"].values())
    print(f"unexplained exceptions {unexplained}, NaN {outcomes.get('nan', 0)}, silent wrong answers {silent}, "
          f"collapsed fits without a warning {outcomes.get('collapsed', 0)}")


def install_index_report(results: str = "install_index") -> None:
    """Issue 69's install measurement (``install_index.py``): each dry run of the README's install
    by where PyTorch's CPU index stands and pip's options, then the seconds the retries cost."""
    rows = load(results)
    print(f"<!-- {provenance(rows)} -->")
    table = MarkdownTable(["CPU index", "pip options", "environment", "seconds", "retry warnings", "torch",
                           "CUDA packages"])
    for r in rows:
        table.row(r["index"], r["options"], r["environment"], f"{r['seconds']:.1f}", r["retry_warnings"], r["torch"],
                  r["cuda_packages"])
    by = {(r["index"], r["options"], r["environment"]): r for r in rows}
    for index in ("download.pytorch.org", "refused"):
        slow = by.get((index, "defaults", "this machine"))
        for option in ("retries 0", "PIP_RETRIES=0"):
            quick = by.get((index, option, "this machine"))
            if slow and quick:
                print(f"\n{index}, {option}: {quick['seconds']:.1f} s against pip's defaults' {slow['seconds']:.1f} s "
                      f"({slow['seconds'] / quick['seconds']:.1f}x), {quick['retry_warnings']} retry warnings against "
                      f"{slow['retry_warnings']}, torch {quick['torch']} both times")
    cpu = [r for r in rows if r["index"] == "reachable"]
    print(f"\nwhere the CPU index answers: torch {sorted({r['torch'] for r in cpu})} in {len(cpu)} of {len(cpu)} runs, "
          f"{sum(r['cuda_packages'] for r in cpu)} CUDA packages; without the index line in the isolated environment: "
          + "; ".join(f"torch {r['torch']} with {r['cuda_packages']} CUDA packages"
                      for r in rows if r["index"] == "none" and r["environment"] == "isolated"))


#: the reports by name (merged into ``report.REPORTS``)
def fuzz_report(results: str = "fuzz") -> None:
    """Issue 74's fuzz of every method (``fuzz.py``): the outcomes, by route, dtype and weights, the
    refusals by what they said, the unexplained exceptions in full, and the files read back."""
    from collections import Counter
    rows = load(results)
    print(f"<!-- {provenance(rows)} -->")
    outcomes = Counter(r["outcome"] for r in rows)
    print(f"{len(rows)} problems over {len({r['method'] for r in rows})} methods (\"auto\" among them): "
          + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    for field in ("route", "dtype", "weights", "estimator"):
        counts = Counter((r[field], r["outcome"]) for r in rows)
        print(f"by {field}: " + "; ".join(f"{value}: " + ", ".join(f"{o} {counts[(value, o)]}" for o in sorted(outcomes)
                                                                    if counts[(value, o)])
                                          for value in sorted({r[field] for r in rows})))
    refusals = Counter(r["message"].split(";")[0].split(":")[1].strip()[:60] if ":" in r["message"] else r["message"]
                       for r in rows if r["outcome"] == "refused")
    if refusals:
        print()
        table = MarkdownTable(["refusal (its first words)", "problems"])
        for message, count in refusals.most_common():
            table.row(message, count)
    timed = [r["seconds"] for r in rows if "seconds" in r]
    if timed:
        print(f"seconds a problem: median {np.median(timed):.1f}, the largest {max(timed):.1f}")
    for r in rows:
        if r["outcome"] in ("unexplained", "unreadable", "wrong", "nan", "timeout"):
            print(f"\n{r['outcome']}: problem {r['problem']}, {r['method']} {r['dtype']} {r['route']} weights "
                  f"{r['weights']}: {(r['message'] or '').strip()[:200]}")
    fresh = Counter(r["fresh_process"] for r in rows if r["fresh_process"] is not None)
    print("\nfiles written " + str(sum(fresh.values())) + "; read back in a fresh process: "
          + ", ".join(f"{k} {v}" for k, v in sorted(fresh.items())))
    print(f"unexplained exceptions {outcomes.get('unexplained', 0)}, timeouts {outcomes.get('timeout', 0)}, "
          f"files that cannot be read back "
          f"{outcomes.get('unreadable', 0)}, read back otherwise {outcomes.get('wrong', 0) + fresh.get('wrong', 0)}, "
          f"NaN {outcomes.get('nan', 0)}")


REPORTS = {"fuzz": fuzz_report, "ordinalfuzz": ordinal_fuzz_report, "installindex": install_index_report, "edges": edges_tables, "ordinal": ordinal_table, "ordinalfig": ordinal_figure, "class_weights": class_weights_table, "conformal": conformal_table, "tables": tables_table, "ood": ood_report, "streaming": streaming_table}


#: issue 80's aim: a fit within this many times its max_time
BUDGET_SLACK = 1.5


def budgets_report(results: str = "budgets") -> None:
    """``budgets.py``'s rows: each configuration's fit seconds at each ``max_time`` (fresh processes),
    and how many fits stayed within :data:`BUDGET_SLACK` times their budget."""
    rows = load(results)
    newest = rows[-1]["commit"]
    rows = [r for r in rows if r["commit"] == newest]
    budgets = sorted({r["max_time"] for r in rows})
    configs = list(dict.fromkeys(r["config"] for r in rows))
    by = {(r["config"], r["max_time"]): r for r in rows}
    print(f"{provenance(rows)}; 500 rows, 20 features, 5 classes (where the configuration does not say)\n")
    table = MarkdownTable(["configuration", *(f"max_time={b:g}" for b in budgets)])
    for c in configs:
        cells = [("error" if "error" in by[(c, b)] else f"{by[(c, b)]['seconds']:.1f} s") if (c, b) in by else "-"
                 for b in budgets]
        table.row(c, *cells)
    timed = [r for r in rows if "error" not in r]
    within = [r for r in timed if r["ratio"] <= BUDGET_SLACK]
    over = sorted({r["config"] for r in timed if r["ratio"] > BUDGET_SLACK})
    print(f"\n- within {BUDGET_SLACK:g} times max_time: {len(within)} of {len(timed)} fits"
          + (f"; over it: {', '.join(over)}" if over else "")
          + f"; the largest ratio {max(r['ratio'] for r in timed):.1f}")


REPORTS["budgets"] = budgets_report


def exact_ep_cost_report(results: str = "exact_ep_cost") -> None:
    """``exact_ep_cost.py``'s rows: per shape, a sweep's and each method's fit seconds against the
    pair factors P = N (C - 1), the exponent of a least-squares line through log seconds against log
    P, and the fits' seconds at the default's limit (``model_selection.EXACT_EP_FACTORS``)."""
    from alphagp.estimators.model_selection import EXACT_EP_FACTORS
    rows = load(results)
    print(f"{provenance(rows)}; one thread\n")
    shapes = list(dict.fromkeys((r["n_rows"], r["n_classes"]) for r in rows))
    by = {(r["n_rows"], r["n_classes"], r["method"]): r for r in rows}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    table = MarkdownTable(["rows", "classes", "pair factors", "a sweep", *(f"{m} fit (evaluations)" for m in methods)])
    for n, C in sorted(shapes, key=lambda s: (s[0] * (s[1] - 1), s)):
        first = next(r for r in rows if (r["n_rows"], r["n_classes"]) == (n, C))
        cells = [f"{by[(n, C, m)]['fit_seconds']:.1f} s ({by[(n, C, m)]['search_evaluations']})" if (n, C, m) in by
                 else "-" for m in methods]
        table.row(n, C, f"{n * (C - 1):,}", f"{first['sweep_seconds']:.3f} s", *cells)
    P = np.array([r["pair_factors"] for r in rows if r["method"] == methods[0]], dtype=float)
    sweep = np.array([r["sweep_seconds"] for r in rows if r["method"] == methods[0]])
    print(f"\n- a sweep's seconds grow as P^{np.polyfit(np.log(P), np.log(sweep), 1)[0]:.2f}")
    for m in methods:
        fits = [r for r in rows if r["method"] == m]
        slope = np.polyfit(np.log([r["pair_factors"] for r in fits]), np.log([r["fit_seconds"] for r in fits]), 1)[0]
        at_limit = [r["fit_seconds"] for r in fits if r["pair_factors"] <= EXACT_EP_FACTORS]
        print(f"- {m}: a fit's seconds grow as P^{slope:.2f}; at most {max(at_limit):.1f} s up to the default's limit "
              f"of {EXACT_EP_FACTORS:,} pair factors, {max(r['fit_seconds'] for r in fits):.1f} s the most here")


REPORTS["exactepcost"] = exact_ep_cost_report


def demo_split_report(results: str = "demo_split") -> None:
    """``demo_split.py``'s rows: per seed of the demo's split, each estimator's test NLL, error and
    seconds (the default's choice named), and the mean test NLL of each over the seeds."""
    rows = load(results)
    print(f"{provenance(rows)}; Vehicle, 90/10 stratified splits\n")
    markdown_table(["seed", "estimator", "test NLL", "test error", "seconds", "the default chose"],
                   [[str(r["seed"]), r["estimator"], f"{r['test_nll']:.4f}", f"{r['test_error']:.4f}",
                     f"{r['train_seconds']:.1f}", r["chose"] or "-"] for r in rows])
    print()
    for name in dict.fromkeys(r["estimator"] for r in rows):
        nll = [r["test_nll"] for r in rows if r["estimator"] == name]
        print(f"- {name}: mean test NLL {np.mean(nll):.4f} over {len(nll)} splits")


REPORTS["demosplit"] = demo_split_report
