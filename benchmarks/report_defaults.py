"""Reports of the default (``benchmarks/docs/defaults.md``): the measured settings, the model
selection's studies and panels, the kernel start, the levers, MNIST in 30 minutes (the closed
form's study is ``report_closed_form.py``)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from report_common import MarkdownTable, load, panel_figure, provenance

from common import RESULTS, results_rows


def mnist_30min_report(results: str = "mnist_30min", earlier: str = "mnist_fast") -> None:
    """Issue 25's MNIST runs: every validation evaluation of each configuration (one per run in
    ``results``; the test split is untouched there), the validated choice among them with its
    one test evaluation (``phase="chosen"``), and a figure of validation NLL against training
    time beside the earlier 30-minute run (``earlier``: batches of 200, decay 0.95 per epoch)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def label(r):
        return (f"{r['dtype']}, batch {r['batch_size']}, lr {r['learning_rate']} "
                f"{'cosine' if r['learning_rate_decay'] == 'cosine' else 'x' + str(r['learning_rate_decay']) + '/epoch'}"
                f"{', shared set' if r.get('shared_inducing_set') else ''}")

    rows = load(results)
    runs = defaultdict(list)
    for r in rows + [dict(r, dtype=r.get("dtype", "float64")) for r in load(earlier) if r["phase"] == "eval"]:
        if r["phase"] == "eval":
            runs[(r["commit"], r["dirty"], label(r))].append(r)
    table = MarkdownTable(["commit (dirty)", "configuration", "epochs", "training time (s)", "seconds per epoch",
                           "lowest validation NLL (epoch)", "validation error there"])
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (commit, dirty, name), evals in runs.items():
        best = min(evals, key=lambda r: r["val_nll"])
        last = evals[-1]
        table.row(f"{commit} ({dirty})", name, last["epoch"], f"{last['train_seconds']:.0f}",
                  f"{last['train_seconds'] / last['epoch']:.1f}", f"{best['val_nll']:.4f} ({best['epoch']})",
                  f"{100 * best['val_error']:.2f} %")
        ax.plot([r["train_seconds"] / 60 for r in evals], [r["val_nll"] for r in evals], label=f"{name} ({commit})")
    ax.axhline(0.0725, color="grey", ls=":", label="paper's test NLL (SEP, 0.0725)")
    ax.set(xlabel="training minutes (two threads)", ylabel="validation NLL (last 10,000 training images)",
           ylim=(0.06, 0.16), title="MNIST, SEP, M = 200 per class")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "mnist_30min.png", dpi=100)
    print("\nfigure: benchmarks/results/mnist_30min.png\n")
    table = MarkdownTable(["commit (dirty)", "chosen model", "validation NLL of each candidate", "test error",
                           "test NLL", "test ECE"])
    for r in rows:
        if r["phase"] == "chosen":
            scores = ", ".join(f"{Path(k).stem} {v:.4f}" for k, v in r["validation_nll"].items())
            table.row(f"{r['commit']} ({r['dirty']})", Path(r["model"]).stem, scores, f"{100 * r['test_error']:.2f} %",
                      f"{r['test_nll']:.4f}", f"{r['test_ece']:.4f}")


def defaults_study_tables(results: str = "defaults_study") -> None:
    """The digits study of the default's calibration, and the configurations of ``method="auto"``
    across the classification sets: validation NLL (seconds), mean ranks below and from 2,000 rows."""
    rows = {}
    for r in load(results):
        rows[(r.get("dataset", "digits"), r["config"])] = r           # the newest row of each pair
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}\n")
    table = MarkdownTable(["configuration (digits)", "val error", "val NLL", "val ECE", "mean confidence", "noise",
                           "amplitude", "median lengthscale", "epochs", "seconds"])
    for (dataset, config), r in rows.items():
        if dataset == "digits":
            table.row(config, f"{r['val_error']:.4f}", f"{r['val_nll']:.4f}", f"{r['val_ece']:.4f}",
                      f"{r['val_mean_confidence']:.3f}", f"{r['noise']:.3g}", f"{r['amplitude']:.3g}",
                      f"{r['median_lengthscale']:.3g}", r["n_iter"], f"{r['seconds']:.1f}")
    configs = ["default", "pep_0.5", "ep_es", "vi_es", "sep_es"]
    sets = sorted({d for d, c in rows if c == "sep_es" and all((d, k) in rows for k in configs)},
                  key=lambda d: rows[(d, "default")]["n_fit"])
    print()
    table = MarkdownTable(["data set", "fit rows", *configs])
    ranks: dict = defaultdict(lambda: defaultdict(list))
    for d in sets:
        nll = {c: rows[(d, c)]["val_nll"] for c in configs}
        order = sorted(configs, key=nll.get)
        size = "below 2,000 rows" if rows[(d, "default")]["n_fit"] < 2000 else "from 2,000 rows"
        for c in configs:
            ranks[size][c].append(order.index(c) + 1)
            ranks["all"][c].append(order.index(c) + 1)
        table.row(d, rows[(d, "default")]["n_fit"],
                  *(f"{nll[c]:.4f} ({rows[(d, c)]['seconds']:.1f} s)" for c in configs))
    for size, by_config in ranks.items():
        table.row(f"mean rank, {size}", "", *(f"{np.mean(by_config[c]):.2f}" for c in configs))
    variants = ["pep_0.5", "pep_100", "pep_es", "pep_es_20"]
    small = [d for d in sets if all((d, v) in rows for v in variants)]
    if small:
        print()
        table = MarkdownTable(["data set (small-data default's variants)", *variants])
        for d in small:
            table.row(d, *(f"{rows[(d, v)]['val_nll']:.4f}" for v in variants))
        wins = {v: sum(min(variants, key=lambda k, d=d: rows[(d, k)]["val_nll"]) == v for d in small) for v in variants}
        table.row("best on", *(f"{wins[v]} of {len(small)}" for v in variants))


def defaults_test_table(results: str = "defaults_test") -> None:
    """``GPClassifier()`` against the previous default on the test splits, once per set."""
    rows = {(r["dataset"], r["estimator"]): r for r in load(results)}
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}\n")
    table = MarkdownTable(["data set", "train rows", "auto chose", "test NLL auto / previous",
                           "test error auto / previous", "test ECE auto / previous", "seconds auto / previous"])
    ratios = []
    for d in dict.fromkeys(k[0] for k in rows):
        if (d, "auto") not in rows or (d, "previous default (ep)") not in rows:
            continue
        a, p = rows[(d, "auto")], rows[(d, "previous default (ep)")]
        ratios.append(a["test_nll"] / p["test_nll"])
        table.row(d, a["n_train"], a["method"], f"{a['test_nll']:.4f} / {p['test_nll']:.4f}",
                  f"{a['test_error']:.4f} / {p['test_error']:.4f}", f"{a['test_ece']:.4f} / {p['test_ece']:.4f}",
                  f"{a['seconds']:.1f} / {p['seconds']:.1f}")
    if ratios:
        print(f"\ntest NLL of auto over the previous default: geometric mean {np.exp(np.mean(np.log(ratios))):.3f}, "
              f"better on {sum(r < 1 for r in ratios)} of {len(ratios)} sets")


def portfolio_study(results: str = "defaults_portfolio") -> None:
    """The study behind method="auto"'s portfolio (validation rows only): every candidate's held-out
    NLL per set, and for every sub-portfolio the held-out NLL of what it would choose (relative to
    the best candidate of the set) against the seconds its selection costs, summed over the sets."""
    from itertools import combinations
    rows = load(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}\n")
    names = list(dict.fromkeys(c for r in rows for c in r["cv_results"]["candidate"]))
    # the portfolios' rows of one set share its folds (the same seed): their candidates are merged
    by_set, info = {}, {}
    for r in rows:
        cv = r["cv_results"]
        folds = sum(k.startswith("split") for k in cv)
        by_set.setdefault(r["dataset"], {}).update(
            {c: (m, t * folds) for c, m, t in zip(cv["candidate"], cv["mean_test_nll"], cv["mean_fit_time"])})
        info[r["dataset"]] = (r["n_train"], r["scheme"])
    table = MarkdownTable(["data set (training rows)", "scheme", *names])
    wins = dict.fromkeys(names, 0)
    for d, scores in by_set.items():
        best = min(scores, key=lambda c: scores[c][0])
        wins[best] += 1
        cells = [("-" if c not in scores else f"**{scores[c][0]:.4f}**" if c == best else f"{scores[c][0]:.4f}")
                 + ("" if c not in scores else f" ({scores[c][1]:.0f} s)") for c in names]
        table.row(f"{d} ({info[d][0]})", info[d][1], *cells)
    table.row("lowest on", "", *(wins[c] for c in names))
    print()
    print("cells: held-out NLL (seconds of all its fits)\n")
    print("Sub-portfolios (each keeps the candidate with the lowest held-out NLL among its members; a set where "
          "none of them runs keeps the full portfolio's first): geometric mean over the sets of the chosen NLL over "
          "the best candidate's, the sets where it chooses the best, and the seconds of all fits summed over the "
          "sets; the Pareto front of the two:\n")
    options = []
    for k in range(1, len(names) + 1):
        for subset in combinations(names, k):
            ratios, seconds, best_hits = [], 0.0, 0
            for scores in by_set.values():
                present = [c for c in subset if c in scores]
                if not present:
                    present = [next(iter(scores))]
                pick = min(present, key=lambda c: scores[c][0])
                best = min(v[0] for v in scores.values())
                ratios.append(scores[pick][0] / best)
                best_hits += scores[pick][0] == best
                seconds += sum(scores[c][1] for c in present)
            options.append((float(np.exp(np.mean(np.log(ratios)))), seconds, best_hits, subset))
    front = [o for o in options if not any(p[0] <= o[0] and p[1] < o[1] or p[0] < o[0] and p[1] <= o[1]
                                           for p in options)]
    table = MarkdownTable(["sub-portfolio", "NLL over the best (geometric mean)", "best on", "seconds (all sets)"])
    for ratio, seconds, hits, subset in sorted(front, key=lambda o: o[1]):
        table.row(", ".join(subset), f"{ratio:.4f}", f"{hits} of {len(by_set)}", f"{seconds:.0f}")


def replay_racing(splits: list[list[float]], seconds: list[float], margin: float) -> tuple[int, float]:
    """Racing replayed on recorded folds: candidates in order, each dropped after the first fold
    where ``model_selection.behind`` says so at ``margin``. ``splits[i]``: candidate i's NLL per
    fold; ``seconds[i]``: its mean seconds per fit. Returns the winner's index and the seconds of
    the fits made."""
    from alphagp.estimators.model_selection import behind
    leader, spent = None, 0.0
    for i, scores in enumerate(splits):
        done = 0
        for k in range(len(scores)):
            done, spent = k + 1, spent + seconds[i]
            if k + 1 < len(scores) and behind(scores[:k + 1], None if leader is None else splits[leader], margin):
                break
        if done == len(scores) and (leader is None or np.mean(scores) < np.mean(splits[leader])):
            leader = i
    return leader, spent


def kernel_start_study(results: str = "defaults_kernel_start", margin: str = "0.1") -> None:
    """Issue 58's study (validation rows only): each candidate of the default's portfolio from the
    fixed start and from the regression of the labels, the counts of sets where the regression's
    start lowers the held-out NLL, and the selections the candidates make (every fit, and racing
    at ``margin``) with their held-out NLL and seconds against today's portfolio."""
    rows = load(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}\n")
    methods = ("sep", "vi", "rpapep", "pep")
    table = MarkdownTable(["data set (training rows)", *(f"{m}: fixed -> regression" for m in methods),
                           "vi, pep: regression, kernel held fixed"])
    lower = dict.fromkeys(methods, 0)
    runs = dict.fromkeys(methods, 0)
    for r in rows:
        cv = r["cv_results"]
        score = dict(zip(cv["candidate"], cv["mean_test_nll"]))
        cells = []
        for m in methods:
            a, b = score.get(f"{m}_fixed"), score.get(f"{m}_regression")
            if a is None or b is None:
                cells.append("-")
                continue
            runs[m] += 1
            lower[m] += b < a
            cells.append(f"{a:.4f} -> {b:.4f}")
        held = [score.get(f"{m}_regression_kernel_fixed") for m in ("vi", "pep")]
        cells.append(" / ".join("-" if v is None else f"{v:.4f}" for v in held))
        table.row(f"{r['dataset']} ({r['n_train']})", *cells)
    print()
    for m in methods:
        print(f"{m}: the regression's start gives the lower held-out NLL on {lower[m]} of {runs[m]} sets")
    print()
    # the selections the recorded candidates make
    groups = {"today (4 candidates, fixed start)": [f"{m}_fixed" for m in methods],
              "4 candidates, regression start": [f"{m}_regression" for m in methods],
              "the first run's choice (sep, rpapep fixed; pep regression; vi on the regression's kernel held fixed)":
                  ["sep_fixed", "vi_regression_kernel_fixed", "rpapep_fixed", "pep_regression"],
              "the new default (rpapep fixed; sep, vi, pep regression)":
                  ["sep_regression", "vi_regression", "rpapep_fixed", "pep_regression"],
              "all 10 candidates": None}
    table = MarkdownTable(["portfolio", f"racing ({float(margin):.0%})", "NLL over today's choice (geometric mean)",
                           "lower than today's on", "seconds of all fits (all sets)"])
    base, changed = {}, {}
    for label, names in groups.items():
        winners = {}
        for race in (False, True):
            ratios, lowered, spent = [], 0, 0.0
            for r in rows:
                cv = r["cv_results"]
                keep = [i for i, c in enumerate(cv["candidate"]) if names is None or c in names]
                folds = sum(k.startswith("split") for k in cv)
                splits = [[cv[f"split{k}_test_nll"][i] for k in range(folds)] for i in keep]
                secs = [cv["mean_fit_time"][i] for i in keep]
                if race:
                    win, t = replay_racing(splits, secs, float(margin))
                else:
                    win, t = int(np.argmin([np.mean(s) for s in splits])), sum(s * folds for s in secs)
                nll = float(np.mean(splits[win]))
                winners.setdefault(r["dataset"], set()).add(keep[win])
                if label.startswith("today") and not race:
                    base[r["dataset"]] = nll
                ratios.append(nll / base[r["dataset"]])
                lowered += nll < base[r["dataset"]]
                spent += t
            table.row(label, "yes" if race else "no", f"{np.exp(np.mean(np.log(ratios))):.4f}",
                      f"{lowered} of {len(rows)}", f"{spent:.0f}")
        changed[label] = sum(len(w) > 1 for w in winners.values())
    print()
    for label, count in changed.items():
        print(f"racing changed the choice of '{label}' on {count} of {len(rows)} sets")


OURS = "alphagp GPClassifier()"


GP_PEERS = ("GPflow SVGP", "GPyTorch SVGP", "scikit-learn GPC")


def _panel_rows(results: str, previous: str | None = None) -> dict:
    """The latest row per (data set, estimator); rows of the default from before model selection
    (no ``candidate``) are named "alphagp previous default", and so are, with ``previous`` (another
    panel's results file), the default's latest rows there (set beside this run's)."""
    rows = {}
    if previous:
        for r in load(previous):
            if r["estimator"] == OURS and "candidate" in r:
                rows[(r["dataset"], "alphagp previous default")] = {**r, "estimator": "alphagp previous default"}
    for r in load(results):
        if r["estimator"] == OURS and "candidate" not in r:
            r = {**r, "estimator": "alphagp previous default"}
        rows[(r["dataset"], r["estimator"])] = r
    if previous:                    # only the sets of this run
        mine = {d for d, n in rows if n != "alphagp previous default"}
        rows = {k: v for k, v in rows.items() if k[0] in mine}
    return rows


def defaults_panel_report(results: str = "defaults_panel", previous: str | None = None) -> None:
    """The panel table, the model selection's choices (validation only), the issue's aims per set
    (lowest test NLL of the GP peers and of every classifier, ECE within 0.01 of the best peer's,
    training time against GPflow's recipe) and the NLL-against-time figure (``<results>.png``).
    ``previous``: another panel's results file whose default stands beside this run's as "alphagp
    previous default"."""
    import matplotlib
    matplotlib.use("Agg")
    rows = _panel_rows(results, previous)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}; "
          f"{sorted({r['machine'] for r in rows.values()})}\n")
    names = list(dict.fromkeys(k[1] for k in rows))
    names = [OURS] + [n for n in names if n != OURS]
    sets = list(dict.fromkeys(k[0] for k in rows))
    table = MarkdownTable(["data set", *names])
    for d in sets:
        cells = [f"{rows[(d, n)]['test_nll']:.4f} / {rows[(d, n)]['test_error']:.3f} / {rows[(d, n)]['test_ece']:.3f} "
                 f"({rows[(d, n)]['train_seconds']:.1f} s)" if (d, n) in rows else "-" for n in names]
        table.row(d, *cells)
    print("\ncells: test NLL / error / ECE (training seconds)\n")
    chosen = [d for d in sets if (d, OURS) in rows]
    candidates = list(dict.fromkeys(c for d in chosen for c in rows[(d, OURS)]["cv"].get("candidate", [])))
    print("Model selection on the training rows (validation NLL, mean over the folds or the one split; "
          "the chosen in bold; dropped: raced out after its first folds):\n")
    table = MarkdownTable(["data set", "scheme", *candidates, "selection and final fit, seconds"])
    wins = dict.fromkeys(candidates, 0)
    for d in chosen:
        r = rows[(d, OURS)]
        cv = dict(zip(r["cv"]["candidate"], r["cv"]["mean_test_nll"]))
        wins[r["candidate"]] = wins.get(r["candidate"], 0) + 1
        cells = [("-" if c not in cv else "dropped" if np.isnan(cv[c]) else f"**{cv[c]:.4f}**"
                  if c == r["candidate"] else f"{cv[c]:.4f}") for c in candidates]
        table.row(d, r["scheme"], *cells, f"{r['train_seconds']:.1f}")
    table.row("chosen on", "", *(f"{wins[c]} of {len(chosen)}" for c in candidates), "")
    print()
    budget = "alphagp GPClassifier(max_time=GPflow's)"
    table = MarkdownTable(["data set", "default's test NLL", "lowest GP peer", "lowest of all others",
                           "default's ECE - best peer's ECE", "default's seconds / GPflow's",
                           "with max_time = GPflow's seconds"])
    counts = {"gp": 0, "all": 0, "ece": 0, "time": 0, "budget_gp": 0, "budget_all": 0, "sets": 0, "budget_sets": 0}
    for d in chosen:
        mine = rows[(d, OURS)]
        peers = [rows[(d, n)] for n in GP_PEERS if (d, n) in rows]
        others = [r for (dd, n), r in rows.items() if dd == d and n not in (OURS, budget) and not n.startswith("alphagp")]
        if not peers or not others:
            continue
        counts["sets"] += 1
        best_peer = min(peers, key=lambda r: r["test_nll"])
        best_other = min(others, key=lambda r: r["test_nll"])
        best_ece = min(r["test_ece"] for r in peers)
        counts["gp"] += mine["test_nll"] < best_peer["test_nll"]
        counts["all"] += mine["test_nll"] < best_other["test_nll"]
        counts["ece"] += mine["test_ece"] <= best_ece + 0.01
        gpflow = rows.get((d, "GPflow SVGP"))
        ratio = mine["train_seconds"] / gpflow["train_seconds"] if gpflow else float("nan")
        counts["time"] += ratio <= 1.0
        capped = rows.get((d, budget))
        cap_cell = "-"
        if capped:
            counts["budget_sets"] += 1
            counts["budget_gp"] += capped["test_nll"] < best_peer["test_nll"]
            counts["budget_all"] += capped["test_nll"] < best_other["test_nll"]
            cap_cell = f"{capped['test_nll']:.4f} ({capped['candidate']}, {capped['train_seconds']:.1f} s)"
        table.row(d, f"{mine['test_nll']:.4f} ({mine['candidate']})",
                  f"{best_peer['test_nll']:.4f} ({best_peer['estimator']})",
                  f"{best_other['test_nll']:.4f} ({best_other['estimator']})", f"{mine['test_ece'] - best_ece:+.3f}",
                  f"{ratio:.2f}", cap_cell)
    previous = [(d, rows[(d, OURS)]["test_nll"], rows[(d, "alphagp previous default")]["test_nll"]) for d in chosen
                if (d, "alphagp previous default") in rows]
    if previous:
        ratios = np.array([a / b for _, a, b in previous])
        print(f"\ntest NLL of the default over the previous default: geometric mean "
              f"{np.exp(np.mean(np.log(ratios))):.3f}, lower on {int((ratios < 1).sum())} of {len(ratios)} sets "
              f"({', '.join(d for d, a, b in previous if a < b)}), higher on {int((ratios > 1).sum())} "
              f"({', '.join(d for d, a, b in previous if a > b)})")
    if ("digits", OURS) in rows and ("digits", "HistGradientBoosting") in rows:
        mine, hgb = rows[("digits", OURS)], rows[("digits", "HistGradientBoosting")]
        print(f"\ndigits: the default's test NLL {mine['test_nll']:.4f} in {mine['train_seconds']:.1f} s, "
              f"{mine['train_seconds'] / hgb['train_seconds']:.0f} times HistGradientBoosting's "
              f"{hgb['train_seconds']:.1f} s (NLL {hgb['test_nll']:.4f}) in the same run")
    print(f"\nlowest test NLL of the GP peers on {counts['gp']} of {counts['sets']} sets, of every other classifier "
          f"on {counts['all']}; ECE within 0.01 of the best GP peer's on {counts['ece']}; at most GPflow's time on "
          f"{counts['time']}. With max_time = GPflow's seconds: lowest of the GP peers on {counts['budget_gp']} of "
          f"{counts['budget_sets']}, of every other classifier on {counts['budget_all']}.")
    panel_figure(rows, sets, names, RESULTS / f"{results}.png",
                 xlabel="training seconds (log; the default's curve starts after its model selection)")


def levers_study(results: str = "defaults_levers") -> None:
    """Issue 58's selection-cost and capacity levers (``defaults_study.py --levers``), validation
    rows only: per set the default's validation NLL and seconds, the refit of its winner (the same
    fit again: a check), the fold models' average instead of the refit, the first fold's choice
    refitted, and the winner at more inducing points; then the geometric means and counts."""
    rows = load(results)
    table = MarkdownTable(["set", "fit rows", "chosen", "default NLL (s)", "fold average NLL (s)",
                           "first fold: choice, NLL", "M=100 NLL (s)", "M=200 NLL (s)"])
    cells = {"fold_average": [], "first_fold": [], "100": [], "200": []}
    for r in rows:
        fold = r.get("fold_average")
        first = r.get("first_fold")
        cap = r.get("capacity", {})
        if fold:       # the fold models exist already; averaging them saves the refit's share of the default's seconds
            cells["fold_average"].append((r["dataset"], fold["val_nll"] / r["refit"]["val_nll"],
                                          r["refit"]["seconds"], r["default"]["seconds"]))
        if first:       # what the folds after the first cost: each candidate's later folds at its mean fit time
            res = r["cv_results"]
            later = sum(max(sum(np.isfinite(res[f"split{k}_test_nll"][i]) for k in range(3)) - 1, 0) * t
                        for i, t in enumerate(res["mean_fit_time"]) if np.isfinite(t))
            cells["first_fold"].append((r["dataset"], first["val_nll"] / r["refit"]["val_nll"], later,
                                        r["default"]["seconds"]))
        for m, v in cap.items():
            cells[m].append((r["dataset"], v["val_nll"] / r["refit"]["val_nll"], v["seconds"], r["refit"]["seconds"]))

        def cell(v):
            return f"{v['val_nll']:.4f} ({v['seconds']:.0f})" if v else "-"
        table.row(r["dataset"], r["n_fit"], f"{r['chosen']} ({r['scheme']})", cell(r["default"]), cell(fold),
                  f"{first['chosen']}, {first['val_nll']:.4f}" if first else "-", cell(cap.get("100")),
                  cell(cap.get("200")))
    same = sum(abs(r["refit"]["val_nll"] - r["default"]["val_nll"]) < 1e-9 for r in rows)
    print(f"\nthe winner refitted gives the default's validation NLL again on {same} of {len(rows)} sets")
    for name, label, seconds_label in (
            ("fold_average", "fold models' average", "the refit it saves is {:.0%} of the default's seconds"),
            ("first_fold", "first fold's choice", "the later folds it saves are {:.0%} of the default's seconds"),
            ("100", "winner at M = 100", "its seconds are {:.2f} times the refit's"),
            ("200", "winner at M = 200", "its seconds are {:.2f} times the refit's")):
        if not cells[name]:
            continue
        ratios = np.array([c[1] for c in cells[name]])
        line = (f"{label} over the refit: validation NLL geometric mean {np.exp(np.mean(np.log(ratios))):.3f}, "
                f"lower on {int((ratios < 1).sum())} of {len(ratios)} sets "
                f"({', '.join(c[0] for c in cells[name] if c[1] < 1) or 'none'}), higher on {int((ratios > 1).sum())} "
                f"({', '.join(c[0] for c in cells[name] if c[1] > 1) or 'none'})")
        if seconds_label:
            seconds = np.array([c[2] / c[3] for c in cells[name]])
            line += "; " + seconds_label.format(np.exp(np.mean(np.log(seconds)))) + " (geometric mean)"
        print(line)


def mnist_default_table(results: str = "mnist_default") -> None:
    """MNIST in 30 minutes with the default (``mnist_default.py``): a row per run, its plan, commit,
    device and inducing points (per class for SEP) where the rows name plans (issue 67's), the
    candidates' held-out NLLs and the test metrics."""
    rows = results_rows(results)
    print(f"<!-- {provenance(rows)} -->")
    plans = any(r.get("plan") for r in rows)
    table = MarkdownTable(["set", *(["plan", "commit", "device", "M"] if plans else []), "budget (min)", "chosen",
                           "candidates: held-out NLL (seconds)", "fit seconds", "test error", "test NLL", "ECE"])
    for r in rows:
        cands = "; ".join(f"{c['name']} {c['validation_nll']:.4f} ({c['fit_seconds']:.0f} s)" for c in r["candidates"])
        plan = ([r.get("plan") or "default", r["commit"], r.get("gpu") or "CPU, 1 thread", r.get("n_inducing", "-")]
                if plans else [])
        table.row(r["dataset"], *plan, f"{r['max_minutes']:g}", r["candidate"], cands or "-", f"{r['fit_seconds']:.0f}",
                  f"{100 * r['test_error']:.2f} %", f"{r['test_nll']:.4f}", f"{r['test_ece']:.4f}")
    defaults = {r["commit"]: r for r in rows if r.get("plan") == "default"}
    for r in rows:
        base = defaults.get(r["commit"])
        if plans and base is not None and r is not base:
            print(f"\n{r['plan']} (M={r['n_inducing']}): test error {100 * r['test_error']:.2f} % and NLL "
                  f"{r['test_nll']:.4f} against the default's {100 * base['test_error']:.2f} % and "
                  f"{base['test_nll']:.4f}, in {r['fit_seconds']:.0f} s against {base['fit_seconds']:.0f} s "
                  f"({r['fit_seconds'] / base['fit_seconds']:.2f}x)")
    for r in (r for r in rows if r.get("plan") == "default"):
        print(f"\nthe default (commit {r['commit']}): test error {100 * r['test_error']:.2f} % (aim: at most 1.9 %), "
              f"NLL {r['test_nll']:.4f} (aim: at most 0.065)")



#: the reports by name (merged into ``report.REPORTS``)
def mnist_headline(results: str = "mnist_default") -> None:
    """The front page's MNIST line: of the rows of ``results``, the default's (plan ``default``, or
    rows from before plans were named) newest run and the lowest test NLL of any plan, each with its
    test error, NLL, seconds and commit."""
    rows = results_rows(results)
    default = [r for r in rows if (r.get("plan") or "default") == "default"]
    newest = default[-1]
    best = min(rows, key=lambda r: r["test_nll"])
    print(f"MNIST in 30 minutes on one CPU thread: the default {100 * newest['test_error']:.2f} % error, test NLL "
          f"{newest['test_nll']:.4f} in {newest['fit_seconds']:.0f} s (commit {newest['commit']}); the lowest NLL of "
          f"the runs: {best.get('plan') or 'default'} {100 * best['test_error']:.2f} % and {best['test_nll']:.4f} "
          f"in {best['fit_seconds']:.0f} s (commit {best['commit']})")


REPORTS = {"mnistheadline": mnist_headline, "mnist30": mnist_30min_report, "defaults": defaults_study_tables, "defaultstest": defaults_test_table, "panel": defaults_panel_report, "portfolio": portfolio_study, "kernelstart": kernel_start_study, "levers": levers_study, "mnist_default": mnist_default_table}
