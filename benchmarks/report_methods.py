"""Reports of the methods checked (``benchmarks/docs/methods.md``): against the exact posterior, per-point
EP learning inducing inputs on MNIST, a refactor's guard, which method when."""

from __future__ import annotations

import subprocess
from collections import defaultdict

import numpy as np
from report_common import MarkdownTable, _machine_label, load, mean_se


def mnist_sites_table(results: str = "mnist_sites") -> None:
    """Validation error and NLL per epoch of MNIST runs that learn the inducing inputs at several
    Adam rates (per-point EP and PEP against SEP)."""
    runs = defaultdict(list)
    for r in load(results):
        if r["phase"] == "eval":
            runs[(r["method"], r["learning_rate"], _machine_label(r), r["commit"], r["dirty"])].append(r)
    table = MarkdownTable(["machine", "commit (dirty)", "method", "Adam rate",
                           "validation error % / NLL after each epoch"])
    for (method, lr, machine, commit, dirty), rs in runs.items():
        curve = ", ".join(f"{100 * e['val_error']:.1f} / {e['val_nll']:.3f}" for e in rs)
        table.row(machine, f"{commit} ({dirty})", method, f"{lr:g}", curve)


def exact_posterior_table() -> None:
    """Latest commit's rows: each method against the exact posterior and against the posterior of
    the factorised likelihood EP targets (mean over seeds, range in brackets)."""
    rows = load("exact_posterior")
    rows = [r for r in rows if r["commit"] == rows[-1]["commit"]]
    groups = defaultdict(list)
    for r in rows:
        groups[r["method"]].append(r)

    def cell(rs, key):
        v = [r[key] for r in rs if key in r]
        return f"{np.mean(v):.3f} ({min(v):.3f}-{max(v):.3f})" if v else "-"

    print(f"commit {rows[-1]['commit']} (dirty: {rows[-1]['dirty']}), {len(groups[rows[-1]['method']])} seeds\n")
    table = MarkdownTable(["against", "exact posterior: mean abs. diff.", "exact: largest",
                           "factorised-likelihood posterior: mean abs. diff.", "factorised: largest"])
    for method, rs in groups.items():
        table.row(method, cell(rs, "mean_abs_diff"), cell(rs, "max_abs_diff"), cell(rs, "mean_abs_diff_factorised"),
                  cell(rs, "max_abs_diff_factorised"))
    print(f"\nGibbs chains' largest gap: exact {cell(rows, 'gibbs_chain_max_gap')}, "
          f"factorised {cell(rows, 'factorised_chain_max_gap')}")


def method_guide_table(results: str = "method_guide") -> None:
    """Which method when: each registered method at its defaults, per data set and training mode,
    mean ± s.e. over the seeds of test error, NLL and ECE, with seconds per epoch, for the fit
    and for predicting the test rows."""
    groups = defaultdict(list)
    for r in load(results):
        groups[r["dataset"], r["mode"], r["method"]].append(r)
    table = MarkdownTable(["data set (rows, classes)", "training", "method", "seeds", "test error", "test NLL",
                           "test ECE", "seconds an epoch", "fit seconds", "predict seconds", "commit (dirty)"])
    for (dataset, mode, method), rows in groups.items():
        r0 = rows[0]
        commits = ", ".join(sorted({f"{r['commit']} ({r['dirty']})" for r in rows}))
        if "refused" in r0:
            table.row(f"{dataset} ({r0['n_train']} train, {r0['n_classes']})", mode, f"`{method}`", len(rows),
                      f"refused: {r0['refused'].split(';')[0]}", "", "", "", "", "", commits)
            continue
        table.row(f"{dataset} ({r0['n_train']} train, {r0['n_classes']})", mode, f"`{method}`", len(rows),
                  mean_se([r["test_error"] for r in rows], 3), mean_se([r["test_nll"] for r in rows], 3),
                  mean_se([r["test_ece"] for r in rows], 3), f"{np.mean([r['seconds_per_epoch'] for r in rows]):.3g}",
                  f"{np.mean([r['fit_seconds'] for r in rows]):.0f}",
                  f"{np.mean([r['predict_seconds'] for r in rows]):.1f}", commits)


#: what identifies a row of a guard file, and the numbers compared between commits
_GUARD_KEYS = ("dataset", "method", "alpha", "seed", "M")


_GUARD_NUMBERS = ("test_nll", "test_error", "test_ece", "test_brier", "mean_abs_diff", "max_abs_diff")


def guard_table(*results: str) -> None:
    """A refactor's guard: for each results file, every row of its first commit against the same
    row (same data set, method, alpha, seed, M) of its newest commit; the largest relative change
    of each number per method."""
    table = MarkdownTable(["results", "method", "before", "after", "rows", "largest relative change", "of"])
    for name in results or ("guard_contracts", "exact_posterior_guard"):
        rows = load(name)
        before, after = rows[0]["commit"], rows[-1]["commit"]
        old = {tuple(r.get(k) for k in _GUARD_KEYS): r for r in rows if r["commit"] == before}
        new = {tuple(r.get(k) for k in _GUARD_KEYS): r for r in rows if r["commit"] == after}
        changes: dict = defaultdict(list)
        for key in old.keys() & new.keys():
            for number in _GUARD_NUMBERS:
                if number in old[key]:
                    a, b = old[key][number], new[key][number]
                    changes[key[1]].append((abs(b - a) / max(abs(a), 1e-300), number))
        dirty = f"{after} ({rows[-1]['dirty']})"
        for method, found in sorted(changes.items()):
            change, number = max(found)
            table.row(name, method, before, dirty, len(found) // len({n for _, n in found}), f"{change:.1e}", number)



#: the reports by name (merged into ``report.REPORTS``)
def _commit_time(commit: str) -> int:
    """The commit time of ``commit`` (seconds; rows of commits this clone lacks sort last)."""
    done = subprocess.run(["git", "log", "-1", "--format=%ct", commit], capture_output=True, text=True, check=False)
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else 2**62


def code_walk_table(results: str = "code_walk", most_stops: str = "40", most_between: str = "8") -> None:
    """The fit's path through the estimators (``code_walk.py``): per commit and method (a stream's
    walk named so), the calls from the estimators into other files of the package (stops), the files
    entered, and the stops between the estimators' own files; then each method's first and last
    commit against an issue's aims (``most_stops``, ``most_between``: issue 75's 40 and 8 by
    default; issue 81's are 30 and 5)."""
    rows = {}
    for r in sorted(load(results), key=lambda r: _commit_time(r["commit"])):     # in the order of the history
        name = r["method"] + (" (stream)" if r.get("stream") else "")
        rows[(r["commit"], name)] = r                           # a commit's last walk of a method
    table = MarkdownTable(["commit (dirty)", "method", "stops", "files", "stops between estimator files"])
    for (commit, method), r in rows.items():
        table.row(f"{commit} ({r['dirty']})", method, r["stops"], len(r["files"]), r["estimator_stops"])
    print()
    stops, between = int(most_stops), int(most_between)
    for method in dict.fromkeys(m for _, m in rows):
        walks = [r for (_, m), r in rows.items() if m == method]
        first, last = walks[0], walks[-1]
        met = "met" if last["stops"] <= stops and last["estimator_stops"] <= between else "missed"
        print(f"{method}: {first['stops']} stops, {first['estimator_stops']} between estimator files at "
              f"{first['commit']}; {last['stops']} and {last['estimator_stops']} at {last['commit']} "
              f"(aim: at most {stops} and {between}, {met})")


REPORTS = {"codewalk": code_walk_table, "mnistsites": mnist_sites_table, "exact": exact_posterior_table, "methodguide": method_guide_table, "guard": guard_table}
