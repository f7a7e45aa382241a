"""Reports of speed and scale (``benchmarks/docs/speed-and-scale.md``): a step against its dense floor,
memory, threads, distributed fits, where a step's time goes, time to accuracy beside the peers."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from report_common import MarkdownTable, load

from common import RESULTS


def speed_table() -> None:
    table = MarkdownTable(["commit", "configuration", "method", "C", "M", "batch", "D", "step (ms)", "dense floor (ms)",
                           "step / floor"])
    for r in load("speed"):
        table.row(r["commit"], r["dataset"], r["method"], r["C"], r["M"], r["batch_size"], r["D"],
                  f"{1000.0 * r['step_seconds']:.1f}", f"{1000.0 * r['floor_seconds']:.1f}", f"{r['ratio']:.2f}")


def memory_table() -> None:
    table = MarkdownTable(["commit", "N (rows, memory-mapped)", "batch", "steps", "peak RSS incl. file pages (MiB)",
                           "peak anonymous RSS (MiB)", "training time (s)"])
    for r in load("memory"):
        table.row(r["commit"], f"{r['n']:,}", r["batch_size"], r["steps"], f"{r['peak_rss_mib']:.0f}",
                  f"{r['peak_anon_rss_mib']:.0f}", f"{r['train_seconds']:.1f}")


def distributed_table(results: str = "distributed") -> None:
    """Seconds per epoch of the same fit in 1 and several processes (rows or classes split), the
    speed-up, the communication per step, and the seconds to a fixed validation NLL (the
    one-process fit's after its first epoch; the runs are the same model, so they reach it at the
    same epoch)."""
    rows = load(results)
    table = MarkdownTable(["commit (dirty)", "data set", "method", "rows", "M", "processes", "split", "s/epoch",
                           "speed-up", "kB sent per step (collectives)", "MB at each epoch's end",
                           "s to validation NLL", "test error", "test NLL"])
    single = {}
    for r in rows:
        key = (r["commit"], r["dataset"], r["n_train"], r.get("method"), r["M"])
        curve = r.get("curve") or []
        if r["processes"] == 1:
            single[key] = (r["seconds_per_epoch"], curve[0][1] if curve and curve[0][1] == curve[0][1] else None)
        reference, target = single.get(key, (None, None))
        speed = f"{reference / r['seconds_per_epoch']:.2f}x" if reference else "-"
        reached = next((f"{t:.0f} (NLL {v:.3f})" for t, v in curve if target is not None and v <= target + 1e-9), "-")
        traffic = (f"{r['bytes_per_step'] / 1e3:.0f} ({r['collectives_per_step']:.0f})" if "bytes_per_step" in r
                   and r["processes"] > 1 else "-")
        epoch_end = f"{r['epoch_end_bytes'] / 1e6:.1f}" if r.get("epoch_end_bytes") else "-"
        table.row(f"{r['commit']} ({r['dirty']})", r["dataset"], r.get("method") or "sep", r["n_train"] or "all",
                  r["M"], r["processes"], r.get("split") or ("one" if r["processes"] == 1 else "rows"),
                  f"{r['seconds_per_epoch']:.1f}", speed, traffic, epoch_end, reached, f"{100 * r['test_error']:.2f} %",
                  f"{r['test_nll']:.4f}")


def _tta_runs(results: str):
    """``(runs, failed)``: the time-to-accuracy rows by run and library, and the failed rows."""
    runs = defaultdict(lambda: defaultdict(list))
    failed = []
    for r in load(results):
        (failed.append(r) if "failed" in r else runs[r["run"]][r["library"]].append(r))
    return runs, failed


def _reached(curves: dict, level: float) -> dict:
    """The training seconds at which each library's curve first reaches test NLL ``level`` (``None``: never)."""
    return {lib: next((r["train_seconds"] for r in c if r["test_nll"] <= level), None) for lib, c in curves.items()}


def _reference(curves: dict) -> str:
    """The library the time ratios are against: alphagp's augmented model where the run has it, else SEP."""
    return "alphagp-augmented" if "alphagp-augmented" in curves else "alphagp-sep"


def tta_headline(results: str = "tta") -> None:
    """The front page's time-to-accuracy line: for each data set's newest run, the seconds each
    library took to the test NLL the worst library finally reached (the issue's measure), and the
    time against alphagp's."""
    newest = {}
    for run, libraries in _tta_runs(results)[0].items():
        newest[run.split("-")[0]] = (run, libraries)
    for dataset, (run, libraries) in newest.items():
        curves = {lib: sorted(rs, key=lambda r: r["train_seconds"]) for lib, rs in libraries.items()}
        target = max(c[-1]["test_nll"] for c in curves.values())
        times, reference = _reached(curves, target), _reference(curves)
        commit = next(iter(curves.values()))[-1]["commit"]
        parts = [f"{lib} {'never' if t is None else f'{t:.2f} s'}"
                 + (f" ({t / times[reference]:.2g}x)" if t and times.get(reference) and lib != reference else "")
                 for lib, t in times.items()]
        print(f"{dataset} (commit {commit}, one thread each): seconds to the worst library's final test NLL "
              f"{target:.4f}: " + ", ".join(parts))


def time_to_accuracy_report(results: str = "tta") -> None:
    """Issue 11, goal 3: test NLL against training time per library (one panel per run), and the
    time each library needs to reach the NLL that the worst library finally reaches (the issue's
    measure) and the lowest final NLL of any library."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs, failed = _tta_runs(results)
    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.6), squeeze=False)
    print("Time ratios are against alphagp-augmented in runs that have it (the logistic-softmax paper's "
          "Figure 7), else against alphagp-sep.\n")
    table = MarkdownTable(["run", "commit (dirty)", "library", "inducing sets", "M", "final s", "final test error",
                           "final test NLL", "target: worst final NLL", "seconds to it", "time / reference's",
                           "target: best final NLL", "seconds to it", "time / reference's"])
    for ax, (run, libraries) in zip(axes.flat, runs.items()):
        curves = {lib: sorted(rs, key=lambda r: r["train_seconds"]) for lib, rs in libraries.items()}
        target = max(c[-1]["test_nll"] for c in curves.values())
        best = min(c[-1]["test_nll"] for c in curves.values())

        def reached(level, curves=curves):
            return _reached(curves, level)

        reference = _reference(curves)

        def cells(level, times, lib, reference=reference):
            t, ref = times[lib], times.get(reference)
            return [f"{level:.4f}", "never" if t is None else f"{t:.2f}", f"{t / ref:.2g}x" if t and ref else "-"]

        worst_times, best_times = reached(target), reached(best)
        for lib, c in curves.items():
            ax.plot([r["train_seconds"] for r in c], [r["test_nll"] for r in c], marker=".", label=lib)
            last = c[-1]
            table.row(run, f"{last['commit']} ({last['dirty']})", lib, last["inducing"], last["M"],
                      f"{last['train_seconds']:.0f}", f"{100 * last['test_error']:.2f} %", f"{last['test_nll']:.4f}",
                      *cells(target, worst_times, lib), *cells(best, best_times, lib))
        ax.axhline(target, color="grey", lw=0.6, ls="--")
        ax.set(xscale="log", yscale="log", xlabel="training seconds", ylabel="test NLL (log scale)", title=run)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{results}.png", dpi=200)
    print(f"\nfigure: benchmarks/results/{results}.png")
    for r in failed:
        print(f"\n{r['run']}: {r['library']} failed ({r['commit']}, dirty {r['dirty']}): {r['failed']}")


def profile_table(results: str = "profile") -> None:
    """The operators taking most of a step's time (``profile_step.py``), per configuration and method."""
    table = MarkdownTable(["commit (dirty)", "configuration", "method", "threads", "step (ms)", "operator",
                           "calls per step", "self ms per step", "share"])
    for r in load(results):
        for i, op in enumerate(r["ops"][:8]):
            head = ([f"{r['commit']} ({r['dirty']})", r["dataset"], r["method"], r.get("threads", "not recorded"),
                     f"{1e3 * r['step_seconds']:.1f}"] if i == 0 else [""] * 5)
            table.row(*head, op["name"], f"{op['calls_per_step']:.1f}", f"{op['self_ms_per_step']:.1f}",
                      f"{100 * op['share']:.0f} %")


def threads_table() -> None:
    groups = defaultdict(list)
    for r in load("threads"):
        groups[(r["commit"], r["dirty"], r["dataset"], r["load"], r["n_jobs"])].append(r["fit_seconds"])
    table = MarkdownTable(["commit (dirty)", "problem", "machine load", "n_jobs", "runs", "fit time (s, median)",
                           "range (s)"])
    for (commit, dirty, dataset, load_, n_jobs), t in groups.items():
        table.row(f"{commit} ({dirty})", dataset, load_, n_jobs, len(t), f"{np.median(t):.2f}",
                  f"{min(t):.2f}-{max(t):.2f}")



#: the reports by name (merged into ``report.REPORTS``)
REPORTS = {"distributed": distributed_table, "tta": time_to_accuracy_report, "ttaheadline": tta_headline, "profile": profile_table, "speed": speed_table, "memory": memory_table, "threads": threads_table}
