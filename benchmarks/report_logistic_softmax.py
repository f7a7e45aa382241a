"""Reports of the logistic-softmax paper (``benchmarks/docs/logistic-softmax-paper.md``): the
likelihoods (Figures 3-4), the augmentation's cost (Figure 5), Shuttle's inducing points
(Figure 6) and the predictive maps (Figure 8)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from report_common import MarkdownTable, load, mean_se, provenance_threads

from common import read_rows, row_threads


def likelihoods_table(results: str = "likelihoods") -> None:
    """Figure 4 of the logistic-softmax paper: test error, NLL and ECE per likelihood and noise level
    (mean ± standard error over seeds), beside the Bayes-optimal predictions of the known mixture."""
    rows = load(results)
    commits = sorted({(r["commit"], r["dirty"]) for r in rows})
    groups = defaultdict(list)
    for r in rows:
        groups[(r["noise"], r["likelihood"])].append(r)
    order = ["bayes", "softmax", "logistic-softmax", "robust-max", "heaviside", "logistic-softmax, augmented"]
    print(f"commits (dirty): {commits}; {len(groups[next(iter(groups))])} seeds per cell\n")
    table = MarkdownTable(["sigma^2", "likelihood (method)", "test error (%)", "test NLL", "ECE", "fit seconds"])
    for noise in sorted({k[0] for k in groups}):
        for name in order:
            rs = groups.get((noise, name))
            if not rs:
                continue
            method = rs[0]["method"] or "known mixture"
            seconds = mean_se([r["train_seconds"] for r in rs]) if "train_seconds" in rs[0] else "-"
            table.row(f"{noise:.3f}", f"{name} ({method})", mean_se([100 * r["error"] for r in rs]),
                      mean_se([r["nll"] for r in rs], 3), mean_se([r["ece"] for r in rs], 3), seconds)


def augmentation_wine_table(results: str = "augmentation_wine") -> None:
    """Figure 5 of the logistic-softmax paper: each VI method against the Gibbs sampler on Wine's test
    rows (mean over seeds of the mean and largest absolute differences and correlations)."""
    rows = load(results)
    groups = defaultdict(list)
    for r in rows:
        groups[r["method"]].append(r)
    print(f"commits (dirty): {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{len(groups['augmented'])} seeds\n")
    table = MarkdownTable(["method", "test error (%)", "test NLL", "p: mean abs. diff.", "p: largest", "p: corr.",
                           "mu: mean abs. diff.", "mu: corr.", "sigma^2: mean abs. diff.", "sigma^2: corr.",
                           "fit seconds"])
    for method, rs in groups.items():
        def avg(key, field, rs=rs):
            return f"{np.mean([r[key][field] for r in rs]):.3f}" if key in rs[0] else "-"
        table.row(method, mean_se([100 * r["error"] for r in rs]), mean_se([r["nll"] for r in rs], 3),
                  avg("p", "mean_abs"), avg("p", "max_abs"), avg("p", "corr"), avg("mu", "mean_abs"), avg("mu", "corr"),
                  avg("var", "mean_abs"), avg("var", "corr"), mean_se([r["train_seconds"] for r in rs]))


def augmented_inducing_table(inducing_set: str = "every", part: str = "all", epochs: str = "every",
                             results: str = "augmented_inducing") -> None:
    """Figure 6 of the logistic-softmax paper: Shuttle, NLL and training time against M, shared or not.
    ``inducing_set`` (``per-setting``, ``one``, or every row) picks the rows: with ``one`` both
    settings had the same inducing set, so only the kernels differ. ``part="summary"`` prints only
    the line that compares the settings; ``epochs`` keeps the rows of one budget."""
    if part == "all":
        table = MarkdownTable(["commit (dirty)", "threads", "M", "hyper-parameters", "inducing sets", "epochs",
                               "test error (%)", "test NLL", "training seconds"])
    pairs = defaultdict(dict)
    for r in load(results):
        kept = r.get("inducing_set", "per-setting")
        if inducing_set not in ("every", kept) or epochs not in ("every", str(r["epochs"])):
            continue
        sets = "one" if kept == "one" or r["shared"] else "one per class"
        if part == "all":
            table.row(f"{r['commit']} ({r['dirty']})", row_threads(r), r["M"],
                      "shared" if r["shared"] else "independent", sets, r["epochs"], f"{100 * r['error']:.2f}",
                      f"{r['nll']:.4f}", f"{r['training_seconds']:.0f}")
        pairs[r["M"], r["epochs"], kept][r["shared"]] = r
    pairs = {key: pair for key, pair in pairs.items() if len(pair) == 2}
    if inducing_set != "every" and pairs:
        lower = [key for key, pair in pairs.items() if pair[False]["nll"] < pair[True]["nll"]]
        ratios = [pair[True]["nll"] / pair[False]["nll"] for pair in pairs.values()]
        print(f"{chr(10) if part == 'all' else ''}Independent hyper-parameters have the lower test NLL at {len(lower)} of {len(pairs)} (M, epochs); "
              f"shared over independent: {min(ratios):.2f} to {max(ratios):.2f} times the NLL.")


def likelihood_maps_table(results: str = "likelihood_maps") -> None:
    """Per likelihood: what its map shows in numbers (the lattice's mean largest probability, the
    share above 0.99, the mean absolute difference from the Bayes map) and its test error and NLL."""
    rows = read_rows(f"{results}.jsonl")
    print(f"<!-- {provenance_threads(rows)} -->")
    table = MarkdownTable(["likelihood", "method", "mean largest probability on the lattice", "share above 0.99",
                           "mean abs. difference from Bayes", "test error", "test NLL"])
    for r in rows:
        table.row(r["likelihood"], r["method"] or "-", f"{r['mean_max_probability']:.3f}",
                  f"{100 * r['share_above_0_99']:.1f} %", f"{r['mean_abs_diff_bayes']:.3f}", f"{r['error']:.3f}",
                  f"{r['nll']:.3f}")
    fitted = [r for r in rows if r["method"]]
    sharpest = max(fitted, key=lambda r: r["share_above_0_99"])
    print(f"\nThe sharpest map: {sharpest['likelihood']}, above 0.99 on {100 * sharpest['share_above_0_99']:.1f} % "
          f"of the lattice; the other {len(fitted) - 1} on at most "
          f"{100 * max(r['share_above_0_99'] for r in fitted if r is not sharpest):.1f} % (Bayes: "
          f"{100 * next(r['share_above_0_99'] for r in rows if not r['method']):.1f} %).")



#: the reports by name (merged into ``report.REPORTS``)
REPORTS = {"likelihoods": likelihoods_table, "augwine": augmentation_wine_table, "auginducing": augmented_inducing_table, "likmaps": likelihood_maps_table}
