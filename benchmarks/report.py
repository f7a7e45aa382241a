"""Markdown tables from benchmarks/results/*.jsonl, beside the papers' numbers.

    python benchmarks/report.py uci      # Tables 2 and 3 of the scalable-EP paper (EP and SEP)
    python benchmarks/report.py table2   # the same, complete: GFITC, EP, SEP and VI (uci_table2.jsonl)
    python benchmarks/report.py alpharanks uci_alpha   # Figure 1 of the alpha paper: ranks over (method, alpha)
    python benchmarks/report.py select   # settings chosen on validation splits (select_validation.jsonl)
    python benchmarks/report.py sattime  # EP paper Figure 4: Satellite NLL against time, M = 4, 20, 100
    python benchmarks/report.py placement   # inducing-point placement: error / NLL per method and M or alpha
    python benchmarks/report.py mnistmethods   # MNIST: SEP, PEP alpha = 0.5, EP and VI against time
    python benchmarks/report.py mnistalpha   # alpha paper Figure 4: MNIST, each method at each alpha, and VI
    python benchmarks/report.py distributed   # distributed fits: 1 process against rows or classes split
    python benchmarks/report.py tta   # time to accuracy beside GPflow and GPyTorch
    python benchmarks/report.py profile   # where a step's time goes (profile_step.py)
    python benchmarks/report.py mnistsites   # MNIST: per-point EP/PEP learning the inducing inputs
    python benchmarks/report.py gpflow   # alphagp's VI beside GPflow's SVGP (vi_vs_gpflow.jsonl)
    python benchmarks/report.py baselines   # Appendix C of the alpha paper: MCMC, Laplace, label regression, PEP
    python benchmarks/report.py uci uci_lr0.1   # the same for another results file
    python benchmarks/report.py ucicompare uci uci_lr0.3 uci_lr0.1   # test NLL of UCI runs side by side
    python benchmarks/report.py mnist    # test error / NLL against training time (mnist.jsonl)
    python benchmarks/report.py mnist mnist_long   # the same for another results file
    python benchmarks/report.py speed    # step time against the dense floor
    python benchmarks/report.py memory   # SEP peak memory against N
    python benchmarks/report.py lr       # initial learning rate of batch training
    python benchmarks/report.py ttn      # training time to the paper's test NLL (Satellite), split-averaged curves
    python benchmarks/report.py fittime  # full fit per split beside the R code, time to target per split
    python benchmarks/report.py sattiming   # older Satellite whole-fit timings (mean ± standard error)
    python benchmarks/report.py mnistval # MNIST with a validation split: evaluations and the selected model
    python benchmarks/report.py threads  # fit time against n_jobs, idle and beside a busy process
    python benchmarks/report.py exact    # EP, SEP, power EP against the Gibbs sampler of the exact posterior
    python benchmarks/report.py likelihoods   # logistic-softmax paper Figure 4: four likelihoods on Gaussian mixtures
    python benchmarks/report.py augwine  # logistic-softmax paper Figure 5: augmented VI and VI against Gibbs
    python benchmarks/report.py auginducing   # logistic-softmax paper Figure 6: Shuttle, M, shared or not
    python benchmarks/report.py dgpsynth   # deep-GP paper Table 1 / C.6: synthetic bimodal and heteroscedastic
    python benchmarks/report.py dgpuci     # deep-GP paper Tables C.7-C.12: UCI sets, mean ± s.e. over splits
    python benchmarks/report.py dgpalphas wine_quality_red 0 2   # one set, split and L at every alpha fitted
    python benchmarks/report.py dgpdepth 0 0.5   # L = 2 beside L = 3 on each regression set, one split and alpha
    python benchmarks/report.py authorsdgp # the authors' deep-GP code beside ours on the same fits
    python benchmarks/report.py dgpgpytorch   # alphagp's deep GP beside GPyTorch's on the same problems
    python benchmarks/report.py dgpmnist   # deep-GP paper Tables C.13 / C.14: MNIST
    python benchmarks/report.py edges   # model files, the command line and augmented VI's start at the edges
    python benchmarks/report.py guard guard_contracts exact_posterior_guard   # a refactor's numbers, before and after
    python benchmarks/report.py class_weights | conformal | tables | ood | streaming | quasi_newton | mnist_default
                                         # report_features.py: issue 46's features and issue 44's last measurements
    python benchmarks/report.py dgpranks | dgpranksfig   # deep-GP paper Figs. 6-8: ranks of alpha per depth
    python benchmarks/report.py ephyper | vigap | likmaps   # report_papers.py: the papers' figures of issue 61
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from report_closed_form import REPORTS as CLOSED_FORM_REPORTS
from report_features import REPORTS as FEATURE_REPORTS
from report_papers import REPORTS as PAPER_REPORTS

from common import RESULTS, first_reaching, ran_whole_budget, results_rows, row_threads

NAMES = {"glass": "Glass", "new_thyroid": "New-thyroid", "satimage": "Satellite", "svmguide2": "Svmguide2",
         "vehicle": "Vehicle", "vowel": "Vowel", "waveform_21": "Waveform", "wine": "Wine"}
PAPER_TABLES = Path(__file__).resolve().parent / "paper_tables"


def paper_table(name: str, quantity: str) -> dict:
    """``{fraction: {dataset: (one value per method)}}`` (or ``{fraction: (...)}`` for times) of
    ``paper_tables/<name>.json``; the methods are the file's ``methods``."""
    table = json.loads((PAPER_TABLES / f"{name}.json").read_text())[quantity]
    return {float(f): ({d: tuple(v) for d, v in row.items()} if isinstance(row, dict) else tuple(row))
            for f, row in table.items()}


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

# Alpha paper, Appendix C (Table C.3: test errors, C.4: negative test log-likelihoods, and times; see
# the file's ``source``): {fraction: {dataset: (MCMC, Laplace, label regression, PEP alpha -> 0, PEP 0.5, PEP 1)}}
BASELINES = ("GIBBS", "LAPLACE", "LABEL_REGRESSION", "PEP:0.001", "PEP:0.5", "PEP:1")
PAPER_C_NLL = paper_table("alpha_appendix_c", "test_nll")
PAPER_C_ERROR = paper_table("alpha_appendix_c", "test_error")
PAPER_C_TIME = paper_table("alpha_appendix_c", "training_seconds")


def load(name: str) -> list[dict]:
    """The rows of results file ``<name>.jsonl`` (``<name>@<commits>``: of those commits; common.results_rows)."""
    return results_rows(name)


def mean_se(values, digits: int = 2) -> str:
    """Mean ± standard error; the mean alone for a single value (no standard error to give)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1) / np.sqrt(len(v)):.{digits}f}"


def uci_groups(results: str) -> dict[tuple, list[dict]]:
    """Rows of a UCI results file by (M fraction, data set, method)."""
    groups = defaultdict(list)
    for r in load(results):
        groups[(r["M_fraction"], r["dataset"], r["method"])].append(r)
    return groups


def uci_tables(results: str = "uci") -> None:
    groups = uci_groups(results)
    for metric, paper, title in (("test_nll", PAPER_NLL, "negative test log-likelihood"),
                                 ("test_error", PAPER_ERROR, "test error")):
        print(f"\n#### {title} (mean ± standard error over splits; paper in brackets)\n")
        print("| M | data set | splits | EP | SEP | EP paper | SEP paper |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for frac in sorted(paper):
            for ds, name in NAMES.items():
                ep, sep = groups.get((frac, ds, "EP"), []), groups.get((frac, ds, "SEP"), [])
                if not ep and not sep:
                    continue
                cells = [mean_se([r[metric] for r in rows]) if rows else "–" for rows in (ep, sep)]
                print(f"| {int(frac * 100)}% | {name} | {max(len(ep), len(sep))} | {cells[0]} | {cells[1]} "
                      f"| {paper[frac][ds][0]:.2f} | {paper[frac][ds][1]:.2f} |")
    print("\n#### training time per fit, averaged over the data sets run (seconds; paper's R code in brackets)\n")
    print("| M | EP s/fit | SEP s/fit | EP s/iteration | SEP s/iteration | EP paper | SEP paper |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for frac in sorted(PAPER_TIME):
        row = []
        for key in ("train_seconds", "seconds_per_iter"):
            for method in ("EP", "SEP"):
                per_ds = [np.mean([r[key] for r in groups[(frac, ds, method)]])
                          for ds in NAMES if groups.get((frac, ds, method))]
                row.append(f"{np.mean(per_ds):.3g}" if per_ds else "–")
        print(f"| {int(frac * 100)}% | {' | '.join(row)} | {PAPER_TIME[frac][0]} | {PAPER_TIME[frac][1]} |")


def table2_tables(results: str = "uci_table2") -> None:
    """GFITC, EP, SEP and VI side by side (Tables 2 and 3 of the scalable-EP paper, complete)."""
    groups = uci_groups(results)
    commits = sorted({(r["commit"], r["dirty"]) for rows in groups.values() for r in rows})
    print(f"rows from commit(s) {commits}")
    for metric, paper, title in (("test_nll", PAPER4_NLL, "negative test log-likelihood"),
                                 ("test_error", PAPER4_ERROR, "test error")):
        print(f"\n#### {title}: ours (mean ± standard error over splits) / paper\n")
        print(f"| M | data set | splits | {' | '.join(METHODS4)} |")
        print("| --- " * (len(METHODS4) + 3) + "|")
        for frac in sorted(paper):
            for ds, name in NAMES.items():
                runs = [groups.get((frac, ds, m), []) for m in METHODS4]
                if not any(runs):
                    continue
                cells = [(mean_se([r[metric] for r in rows]) if rows else "–")
                         + (f" / {p:.2f}" if p is not None else " / –") for rows, p in zip(runs, paper[frac][ds])]
                print(f"| {int(frac * 100)}% | {name} | {max(len(r) for r in runs)} | {' | '.join(cells)} |")
    print("\n#### seconds per fit, averaged over the data sets run, and the ratio to EP's in the same run "
          "(paper's R code: average over all 8 sets)\n")
    print(f"| M | data sets | {' | '.join(METHODS4)} | paper {' | paper '.join(METHODS4)} |")
    print("| --- " * (2 * len(METHODS4) + 2) + "|")
    for frac in sorted(PAPER4_TIME):
        done = [ds for ds in NAMES if all(groups.get((frac, ds, m)) for m in METHODS4)]
        if not done:
            continue
        means = {m: np.mean([np.mean([r["train_seconds"] for r in groups[(frac, ds, m)]]) for ds in done])
                 for m in METHODS4}
        cells = [f"{means[m]:.3g} ({means[m] / means['EP']:.2f}x)" for m in METHODS4]
        paper = [f"{t:g} ({t / PAPER4_TIME[frac][1]:.2f}x)" for t in PAPER4_TIME[frac]]
        print(f"| {int(frac * 100)}% | {len(done)} | {' | '.join(cells)} | {' | '.join(paper)} |")


def baselines_tables(results: str = "uci_baselines") -> None:
    """Appendix C of the alpha paper: MCMC, Laplace, label regression and PEP at three alphas."""
    groups = uci_groups(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for rows in groups.values() for r in rows})}")
    for metric, title, paper in (("test_nll", "negative test log-likelihood: ours / paper (Table C.4)", PAPER_C_NLL),
                                 ("test_error", "test error: ours / paper (Table C.3)", PAPER_C_ERROR)):
        print(f"\n#### {title}\n")
        print(f"| M | data set | splits | {' | '.join(BASELINES)} |")
        print("| --- " * (len(BASELINES) + 3) + "|")
        for frac in sorted(PAPER_C_NLL):
            for ds, name in NAMES.items():
                runs = [groups.get((frac, ds, m), []) for m in BASELINES]
                if not any(runs):
                    continue
                cells = []
                for rows, p in zip(runs, paper[frac][ds]):
                    cell = mean_se([r[metric] for r in rows]) if rows else "–"
                    cells.append(f"{cell} / {p:.2f}")
                print(f"| {int(frac * 100)}% | {name} | {max(len(r) for r in runs)} | {' | '.join(cells)} |")
    print("\n#### seconds per fit (whole fit: for gibbs and laplace the EP fit of the hyper-parameters "
          "included), averaged over the data sets run; paper beside\n")
    print(f"| M | data sets | {' | '.join(BASELINES)} |")
    print("| --- " * (len(BASELINES) + 2) + "|")
    for frac in sorted(PAPER_C_TIME):
        done = [ds for ds in NAMES if all(groups.get((frac, ds, m)) for m in BASELINES)]
        if not done:
            continue
        cells = [f"{np.mean([np.mean([r['train_seconds'] for r in groups[(frac, ds, m)]]) for ds in done]):.3g}"
                 f" / {t:g}" for m, t in zip(BASELINES, PAPER_C_TIME[frac])]
        print(f"| {int(frac * 100)}% | {len(done)} | {' | '.join(cells)} |")


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
            print(f"| method | {' | '.join(f'alpha={a}' for a in alphas)} |")
            print("| --- " * (len(alphas) + 1) + "|")
            for m in methods:
                print(f"| {m} | {' | '.join(f'{np.mean(ranks[(m, a)]):.2f}' for a in alphas)} |")
        means = {(m, a): np.mean([case[f"{m}:{a}"][metric] for case in complete]) for m in methods for a in alphas}
        print(f"\n#### mean {name} over the cases\n")
        print(f"| method | {' | '.join(f'alpha={a}' for a in alphas)} |")
        print("| --- " * (len(alphas) + 1) + "|")
        for m in methods:
            print(f"| {m} | {' | '.join(f'{means[(m, a)]:.3f}' for a in alphas)} |")


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
        print("| setting | mean validation NLL | mean validation error | lowest NLL in | mean seconds |")
        print("| --- | --- | --- | --- | --- |")
        for s in settings:
            v = [c[s] for c in complete]
            print(f"| `{s}` | {np.mean([r['test_nll'] for r in v]):.4f} | {np.mean([r['test_error'] for r in v]):.4f} "
                  f"| {wins[s]} | {np.mean([r['train_seconds'] for r in v]):.1f} |")


def uci_comparison(*results: str) -> None:
    """Test NLL of several UCI runs side by side (for example several initial learning rates)."""
    results = results or ("uci", "uci_lr0.1")
    runs = [uci_groups(name) for name in results]
    columns = [f"{method} {name}" for method in ("EP", "SEP") for name in results]
    print(f"| M | data set | {' | '.join(columns)} | EP paper | SEP paper |")
    print("| --- " * (len(columns) + 4) + "|")
    for frac in sorted(PAPER_NLL):
        for ds, name in NAMES.items():
            cells = [mean_se([r["test_nll"] for r in run[(frac, ds, method)]]) if run.get((frac, ds, method)) else "–"
                     for method in ("EP", "SEP") for run in runs]
            if all(c == "–" for c in cells):
                continue
            print(f"| {int(frac * 100)}% | {name} | {' | '.join(cells)} "
                  f"| {PAPER_NLL[frac][ds][0]:.2f} | {PAPER_NLL[frac][ds][1]:.2f} |")


def mnist_table(results: str = "mnist") -> None:
    print("| commit | Adam rate (decay per epoch) | damping | epoch | training time (s) | s/epoch | test error "
          "| test NLL | ECE |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in load(results):
        rate = f"{r['learning_rate']} ({r.get('learning_rate_decay', 1.0)})"
        print(f"| {r['commit']} | {rate} | {r.get('damping', 1.0)} | {r['epoch']} | {r['train_seconds']:.0f} "
              f"| {r['seconds_per_epoch']:.1f} | {100 * r['test_error']:.2f}% | {r['test_nll']:.4f} "
              f"| {r['test_ece']:.4f} |")


def speed_table() -> None:
    print("| commit | configuration | method | C | M | batch | D | step (ms) | dense floor (ms) | step / floor |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in load("speed"):
        print(f"| {r['commit']} | {r['dataset']} | {r['method']} | {r['C']} | {r['M']} | {r['batch_size']} | {r['D']} "
              f"| {1e3 * r['step_seconds']:.1f} | {1e3 * r['floor_seconds']:.1f} | {r['ratio']:.2f} |")


def memory_table() -> None:
    print("| commit | N (rows, memory-mapped) | batch | steps | peak RSS incl. file pages (MiB) "
          "| peak anonymous RSS (MiB) | training time (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in load("memory"):
        print(f"| {r['commit']} | {r['n']:,} | {r['batch_size']} | {r['steps']} | {r['peak_rss_mib']:.0f} "
              f"| {r['peak_anon_rss_mib']:.0f} | {r['train_seconds']:.1f} |")


def learning_rate_table() -> None:
    latest = {(r["dataset"], r["learning_rate"], r["seed"]): r for r in load("learning_rate")}  # reruns replace
    groups = defaultdict(list)
    for (ds, rate, _), r in latest.items():
        groups[(ds, rate)].append(r)
    print("| data set | initial rate | splits | final log Z_q | test NLL | test error |")
    print("| --- | --- | --- | --- | --- | --- |")
    order = list(NAMES)
    for (ds, rate), rows in sorted(groups.items(), key=lambda item: (order.index(item[0][0]), item[0][1])):
        print(f"| {NAMES[ds]} | {rate} | {len(rows)} | {np.mean([r['final_log_Zq'] for r in rows]):.1f} "
              f"| {mean_se([r['test_nll'] for r in rows])} | {mean_se([r['test_error'] for r in rows])} |")


def time_to_nll_table(reference_seconds: float = 60.0) -> None:
    """Curves averaged over splits; targets: the paper's NLL at its printed precision, and the
    250-iteration result of rate 0.1 (the default before commit 1b78706) in the same run.
    A rerun of a (method, rate, split) replaces its earlier row."""
    latest = {(r["method"], r["learning_rate"], r["seed"]): r for r in load("time_to_nll")}
    groups = defaultdict(list)
    for (method, rate, _), r in latest.items():
        groups[(method, rate)].append(r)
    mean_curves = {key: mean_curve(rows) for key, rows in groups.items()}
    print("| method | initial rate | splits | target | reached at iteration | training time (s) "
          "| ~60 s / crossing time (not a speed-up: see above) | NLL after all iterations |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (method, rate), curve in sorted(mean_curves.items()):
        default = mean_curves.get((method, 0.1))
        targets = [(f"paper {PAPER_NLL[0.05]['satimage'][method == 'SEP']:.2f}",
                    PAPER_NLL[0.05]["satimage"][method == "SEP"] + 0.005)]
        if default:
            targets.append((f"rate 0.1 final {default[-1]['test_nll']:.3f}", default[-1]["test_nll"]))
        for label, target in targets:
            hit = first_reaching(curve, target)
            reached = (f"{hit['iteration']} | {hit['train_seconds']:.2f} | "
                       f"{reference_seconds / hit['train_seconds']:.0f}x") if hit else "not reached | - | -"
            print(f"| {method} | {rate} | {len(groups[(method, rate)])} | {label} | {reached} "
                  f"| {curve[-1]['test_nll']:.3f} |")


def mean_curve(rows: list[dict]) -> list[dict]:
    """The evaluations of ``rows`` (one per split, evaluated at the same iterations) averaged
    point by point, up to the shortest curve."""
    n = min(len(r["curve"]) for r in rows)
    return [{"iteration": rows[0]["curve"][i]["iteration"],
             **{f: float(np.mean([r["curve"][i][f] for r in rows]))
                for f in ("train_seconds", "test_nll", "test_error")}}
            for i in range(n)]


def curves_report(rows: list[dict], line: str, panel: str, png: str, title: str, metric: str = "test_nll") -> dict:
    """Split-averaged ``metric`` (test NLL, or ``"test_error"``) against training time, one line
    per value of ``line`` and one panel per value of ``panel``, saved to benchmarks/results/<png>;
    prints the final values and returns the mean curves by (panel value, line value)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = defaultdict(list)
    for r in rows:
        groups[(r[panel], r[line])].append(r)
    curves = {key: mean_curve(rs) for key, rs in groups.items()}
    panels = sorted({k[0] for k in groups})
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}\n")
    print(f"| {panel} | {line} | splits | iterations | training seconds | final test NLL | final test error |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ncols = min(4, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, p in zip(axes.flat, panels):
        for name in sorted({k[1] for k in curves if k[0] == p}):
            curve = curves[(p, name)]
            ax.plot([c["train_seconds"] for c in curve], [c[metric] for c in curve], label=str(name))
            last = curve[-1]
            print(f"| {p} | {name} | {len(groups[(p, name)])} | {last['iteration']} | {last['train_seconds']:.1f} "
                  f"| {last['test_nll']:.3f} | {last['test_error']:.3f} |")
        ax.set(xscale="log", xlabel="training seconds", ylabel="test NLL" if metric == "test_nll" else "test error",
               title=f"{title}, {panel} = {p}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / png, dpi=110)
    print(f"\nfigure: benchmarks/results/{png}")
    return curves


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
    print(f"| alpha | M | {method} | {other} | difference |")
    print("| --- | --- | --- | --- | --- |")
    gaps = []
    for a, m in keys:
        mine, theirs = np.mean(final[(method, a, m)]), np.mean(final[(other, a, m)])
        gaps.append(mine - theirs)
        print(f"| {a:g} | {m} | {mine:.4f} | {theirs:.4f} | {mine - theirs:+.4f} |")
    print(f"\n{method} minus {other}: from {min(gaps):+.4f} to {max(gaps):+.4f} over {len(gaps)} (alpha, M); "
          f"within 0.004 on {sum(abs(g) <= 0.004 for g in gaps)} of them")


def satellite_error_figure(results: str = "satellite_time") -> None:
    """EP paper Figure 6: the runs of Figure 4, test error against training time
    (results/satellite_time_error.png)."""
    curves_report(load(results), "method", "M", "satellite_time_error.png", "Satellite", metric="test_error")


def satellite_time_figure(results: str = "satellite_time") -> None:
    """EP paper Figure 4: GFITC, SEP and VI on Satellite, test NLL against training time for
    M = 4, 20, 100 (batch training, split-averaged)."""
    curves = curves_report(load(results), "method", "M", "satellite_time.png", "Satellite")
    print("\n| M | method | time to reach GFITC's final NLL + 0.005 (s) | lowest NLL on the curve | at (s) |")
    print("| --- | --- | --- | --- | --- |")
    for (m, method), curve in sorted(curves.items()):
        target = curves[(m, "GFITC")][-1]["test_nll"] + 0.005
        hit = first_reaching(curve, target)
        low = min(curve, key=lambda p: p["test_nll"])
        reached = f"{hit['train_seconds']:.1f}" if hit else "never"
        print(f"| {m} | {method} | {reached} | {low['test_nll']:.3f} "
              f"| {low['train_seconds']:.1f} |")


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

    print(f"\n| data set | splits | NLL alphagp / GPflow after {reference_iteration} iterations | after all "
          "| alphagp s | GPflow s | GPflow s without its first step | GPflow / alphagp, first step left out |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for ds in sorted({k[0] for k in pairs}):
        ps = [p for (d, _), p in pairs.items() if d == ds and len(p) == 2]
        last = ps[0]["alphagp"]["iterations"]
        a = np.mean([p["alphagp"]["train_seconds"] for p in ps])
        g = np.mean([p["gpflow"]["train_seconds"] for p in ps])
        g1 = np.mean([p["gpflow"]["train_seconds"] - p["gpflow"]["first_step_seconds"] for p in ps])
        print(f"| {ds} | {len(ps)} | {compared(ps, reference_iteration)} | {compared(ps, last)} | {a:.1f} "
              f"| {g:.1f} | {g1:.1f} | {g1 / a:.2f} |")


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
        print(f"| method | {' | '.join(f'{column} = {c:g}' for c in columns)} | mean seconds per fit |")
        print("| --- " * (len(columns) + 2) + "|")
        for method in dict.fromkeys(r["method"] for r in rows):
            fits = [cells[(method, c)] for c in columns]
            print(f"| {method.upper()} | " + " | ".join(f"{f['test_error']:.3f} / {f['test_nll']:.3f}" for f in fits)
                  + f" | {np.mean([f['train_seconds'] for f in fits]):.0f} |")


def _machine_label(row: dict) -> str:
    """Short name of the machine of a row: the lent GPU machine's CPUs or this one's."""
    if row.get("device", "cpu").startswith("cuda"):
        return "lent device's GPU (H100)"
    return "lent device's CPUs (16-core Xeon)" if "+cu" in row["machine"] else "this machine (2-core)"


def _epoch_curve(evaluations: list[dict]) -> list[dict]:
    """An ``mnist.py`` run's evaluation rows as a :func:`curves_report` curve (one point an epoch)."""
    return [{"iteration": e["epoch"], "train_seconds": e["train_seconds"], "test_nll": e["test_nll"],
             "test_error": e["test_error"]} for e in evaluations]


def mnist_methods_figure(results: str = "mnist_methods") -> None:
    """MNIST test NLL and error against training time for each method of ``mnist.py`` runs (one
    run per method and machine), and the validation-selected row of each."""
    evals, selected = defaultdict(list), []
    for r in load(results):
        (evals[(r["method"], _machine_label(r))].append(r) if r["phase"] == "eval" else selected.append(r))
    rows = [{"dataset": machine, "method": m, "commit": rs[0]["commit"], "dirty": rs[0]["dirty"],
             "curve": _epoch_curve(rs)} for (m, machine), rs in evals.items()]
    curves_report(rows, "method", "dataset", f"{results}.png", "MNIST")
    print("\n| machine | commit (dirty) | method | inducing inputs learnt | epochs run | selected epoch "
          "| its training s | validation NLL | test error (%) | test NLL | mean test error of the last evaluations (%) "
          "| mean test NLL of the last |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in selected:
        print(f"| {_machine_label(r)} | {r['commit']} ({r['dirty']}) | {r['method']} | {r.get('optimize_inducing', True)} "
              f"| {r['epochs_run']} | {r['epoch']} | {r['train_seconds']:.0f} "
              f"| {r['val_nll']:.4f} | {100 * r['test_error']:.2f} | {r['test_nll']:.4f} "
              f"| {100 * r['last_mean_test_error']:.2f} | {r['last_mean_test_nll']:.4f} |")


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
    print("\n| commit (dirty) | method | alpha | epochs run | selected epoch | its training s | validation NLL "
          "| test error (%) | test NLL | refused site updates |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in sorted(selected, key=lambda r: (r["method"].partition(":")[0], r["alpha"] or 0)):
        print(f"| {r['commit']} ({r['dirty']}) | {r['method'].partition(':')[0]} | {r['alpha']} | {r['epochs_run']} "
              f"| {r['epoch']} | {r['train_seconds']:.0f} | {r['val_nll']:.4f} | {100 * r['test_error']:.2f} "
              f"| {r['test_nll']:.4f} | {r.get('diagnostics', {}).get('n_skipped_updates', '-')} |")


def mnist_sites_table(results: str = "mnist_sites") -> None:
    """Validation error and NLL per epoch of MNIST runs that learn the inducing inputs at several
    Adam rates (per-point EP and PEP against SEP)."""
    runs = defaultdict(list)
    for r in load(results):
        if r["phase"] == "eval":
            runs[(r["method"], r["learning_rate"], _machine_label(r), r["commit"], r["dirty"])].append(r)
    print("| machine | commit (dirty) | method | Adam rate | validation error % / NLL after each epoch |")
    print("| --- | --- | --- | --- | --- |")
    for (method, lr, machine, commit, dirty), rs in runs.items():
        curve = ", ".join(f"{100 * e['val_error']:.1f} / {e['val_nll']:.3f}" for e in rs)
        print(f"| {machine} | {commit} ({dirty}) | {method} | {lr:g} | {curve} |")


def distributed_table(results: str = "distributed") -> None:
    """Seconds per epoch of the same fit in 1 and several processes (rows or classes split), the
    speed-up, the communication per step, and the seconds to a fixed validation NLL (the
    one-process fit's after its first epoch; the runs are the same model, so they reach it at the
    same epoch)."""
    rows = load(results)
    print("| commit (dirty) | data set | method | rows | M | processes | split | s/epoch | speed-up "
          "| kB sent per step (collectives) | MB at each epoch's end | s to validation NLL | test error | test NLL |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
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
        print(f"| {r['commit']} ({r['dirty']}) | {r['dataset']} | {r.get('method') or 'sep'} | {r['n_train'] or 'all'} "
              f"| {r['M']} | {r['processes']} | {r.get('split') or ('one' if r['processes'] == 1 else 'rows')} "
              f"| {r['seconds_per_epoch']:.1f} | {speed} | {traffic} | {epoch_end} | {reached} "
              f"| {100 * r['test_error']:.2f} % | {r['test_nll']:.4f} |")


def time_to_accuracy_report(results: str = "tta") -> None:
    """Issue 11, goal 3: test NLL against training time per library (one panel per run), and the
    time each library needs to reach the NLL that the worst library finally reaches (the issue's
    measure) and the lowest final NLL of any library."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = defaultdict(lambda: defaultdict(list))
    failed = []
    for r in load(results):
        (failed.append(r) if "failed" in r else runs[r["run"]][r["library"]].append(r))
    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.6), squeeze=False)
    print("Time ratios are against alphagp-augmented in runs that have it (the logistic-softmax paper's "
          "Figure 7), else against alphagp-sep.\n")
    print("| run | commit (dirty) | library | inducing sets | M | final s | final test error | final test NLL "
          "| target: worst final NLL | seconds to it | time / reference's | target: best final NLL "
          "| seconds to it | time / reference's |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for ax, (run, libraries) in zip(axes.flat, runs.items()):
        curves = {lib: sorted(rs, key=lambda r: r["train_seconds"]) for lib, rs in libraries.items()}
        target = max(c[-1]["test_nll"] for c in curves.values())
        best = min(c[-1]["test_nll"] for c in curves.values())

        def reached(level, curves=curves):
            return {lib: next((r["train_seconds"] for r in c if r["test_nll"] <= level), None)
                    for lib, c in curves.items()}

        reference = "alphagp-augmented" if "alphagp-augmented" in curves else "alphagp-sep"

        def cells(level, times, lib, reference=reference):
            t, ref = times[lib], times.get(reference)
            return (f"{level:.4f} | {'never' if t is None else f'{t:.2f}'} | "
                    + (f"{t / ref:.2g}x" if t and ref else "-"))

        worst_times, best_times = reached(target), reached(best)
        for lib, c in curves.items():
            ax.plot([r["train_seconds"] for r in c], [r["test_nll"] for r in c], marker=".", label=lib)
            last = c[-1]
            print(f"| {run} | {last['commit']} ({last['dirty']}) | {lib} | {last['inducing']} | {last['M']} "
                  f"| {last['train_seconds']:.0f} | {100 * last['test_error']:.2f} % | {last['test_nll']:.4f} "
                  f"| {cells(target, worst_times, lib)} | {cells(best, best_times, lib)} |")
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
    print("| commit (dirty) | configuration | method | threads | step (ms) | operator | calls per step "
          "| self ms per step | share |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in load(results):
        for i, op in enumerate(r["ops"][:8]):
            head = (f"| {r['commit']} ({r['dirty']}) | {r['dataset']} | {r['method']} | {r.get('threads', 'not recorded')} "
                    f"| {1e3 * r['step_seconds']:.1f} " if i == 0 else "| | | | | ")
            print(f"{head}| {op['name']} | {op['calls_per_step']:.1f} | {op['self_ms_per_step']:.1f} "
                  f"| {100 * op['share']:.0f} % |")


def fit_time_table(results: str = "fit_time") -> None:
    """Like for like: whole-fit time per split beside the R code's, and per split whether and when
    the test NLL reaches the paper's value (at its printed precision)."""
    rows = load(results)
    print("| commit (dirty) | data set | method | threads | split | full fit (s) | R full fit (s) | ratio R / ours "
          "| test NLL after the fit | paper NLL | reached at iteration | time to target (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        hit = (f"{r['iterations_to_target']} | {r['seconds_to_target']:.2f}" if r["iterations_to_target"]
               else "not reached | -")
        print(f"| {r['commit']} ({r['dirty']}) | {NAMES[r['dataset']]} | {r['method']} | {r.get('threads', 'not recorded')} | {r['seed']} "
              f"| {r['fit_seconds']:.2f} | {r['r_seconds']:.0f} | {r['r_seconds'] / r['fit_seconds']:.1f}x "
              f"| {r['test_nll']:.3f} | {r['paper_nll']:.2f} | {hit} |")
    print("\n| data set | method | threads | splits | full fit (s, mean ± standard error) | R / ours "
          "| splits reaching the paper's NLL | time to target (s, median of those) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    groups = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"], r["threads"])].append(r)
    for (ds, method, threads), rs in groups.items():
        fit = [r["fit_seconds"] for r in rs]
        hits = [r["seconds_to_target"] for r in rs if r["seconds_to_target"] is not None]
        median = f"{np.median(hits):.2f}" if hits else "-"
        print(f"| {NAMES[ds]} | {method} | {threads} | {len(rs)} | {mean_se(fit)} | {rs[0]['r_seconds'] / np.mean(fit):.1f}x "
              f"| {len(hits)} of {len(rs)} | {median} |")


def satellite_timing_table() -> None:
    """Whole-fit times of the older Satellite M = 5% runs, mean ± standard error over splits."""
    print("| results file | commit | method | splits | seconds per fit (mean ± standard error) | test NLL |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in ("uci_lr0.1", "uci_satellite_M5_timing"):
        groups = defaultdict(list)
        for r in load(name):
            if r["dataset"] == "satimage" and r["M_fraction"] == 0.05:
                groups[(r["commit"], r["method"])].append(r)
        for (commit, method), rs in groups.items():
            print(f"| {name}.jsonl | {commit} | {method} | {len(rs)} | {mean_se([r['train_seconds'] for r in rs])} "
                  f"| {np.mean([r['test_nll'] for r in rs]):.3f} |")


def mnist_validated_table(results: str = "mnist_validated") -> None:
    rows = load(results)
    print("| commit (dirty) | epoch | training time (s) | validation error | validation NLL | test error | test NLL |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["phase"] == "eval":
            print(f"| {r['commit']} ({r['dirty']}) | {r['epoch']} | {r['train_seconds']:.0f} "
                  f"| {100 * r['val_error']:.2f}% | {r['val_nll']:.4f} | {100 * r['test_error']:.2f}% "
                  f"| {r['test_nll']:.4f} |")
    print("\n| commit (dirty) | selected epoch (lowest validation NLL) | training time (s) | test error | test NLL "
          "| test ECE | mean test error, last evaluations | mean test NLL, last evaluations |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["phase"] == "selected":
            print(f"| {r['commit']} ({r['dirty']}) | {r['epoch']} of {r['epochs_run']} | {r['train_seconds']:.0f} "
                  f"| {100 * r['test_error']:.2f}% | {r['test_nll']:.4f} | {r['test_ece']:.4f} "
                  f"| {100 * r['last_mean_test_error']:.2f}% (last {r['n_last']}) "
                  f"| {r['last_mean_test_nll']:.4f} (last {r['n_last']}) |")


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
    print("| commit (dirty) | configuration | epochs | training time (s) | seconds per epoch | lowest validation NLL "
          "(epoch) | validation error there |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (commit, dirty, name), evals in runs.items():
        best = min(evals, key=lambda r: r["val_nll"])
        last = evals[-1]
        print(f"| {commit} ({dirty}) | {name} | {last['epoch']} | {last['train_seconds']:.0f} "
              f"| {last['train_seconds'] / last['epoch']:.1f} | {best['val_nll']:.4f} ({best['epoch']}) "
              f"| {100 * best['val_error']:.2f} % |")
        ax.plot([r["train_seconds"] / 60 for r in evals], [r["val_nll"] for r in evals], label=f"{name} ({commit})")
    ax.axhline(0.0725, color="grey", ls=":", label="paper's test NLL (SEP, 0.0725)")
    ax.set(xlabel="training minutes (two threads)", ylabel="validation NLL (last 10,000 training images)",
           ylim=(0.06, 0.16), title="MNIST, SEP, M = 200 per class")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "mnist_30min.png", dpi=100)
    print("\nfigure: benchmarks/results/mnist_30min.png\n")
    print("| commit (dirty) | chosen model | validation NLL of each candidate | test error | test NLL | test ECE |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["phase"] == "chosen":
            scores = ", ".join(f"{Path(k).stem} {v:.4f}" for k, v in r["validation_nll"].items())
            print(f"| {r['commit']} ({r['dirty']}) | {Path(r['model']).stem} | {scores} | {100 * r['test_error']:.2f} % "
                  f"| {r['test_nll']:.4f} | {r['test_ece']:.4f} |")


def threads_table() -> None:
    groups = defaultdict(list)
    for r in load("threads"):
        groups[(r["commit"], r["dirty"], r["dataset"], r["load"], r["n_jobs"])].append(r["fit_seconds"])
    print("| commit (dirty) | problem | machine load | n_jobs | runs | fit time (s, median) | range (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (commit, dirty, dataset, load_, n_jobs), t in groups.items():
        print(f"| {commit} ({dirty}) | {dataset} | {load_} | {n_jobs} | {len(t)} | {np.median(t):.2f} "
              f"| {min(t):.2f}-{max(t):.2f} |")


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
    print("| against | exact posterior: mean abs. diff. | exact: largest | factorised-likelihood posterior: "
          "mean abs. diff. | factorised: largest |")
    print("| --- | --- | --- | --- | --- |")
    for method, rs in groups.items():
        print(f"| {method} | {cell(rs, 'mean_abs_diff')} | {cell(rs, 'max_abs_diff')} "
              f"| {cell(rs, 'mean_abs_diff_factorised')} | {cell(rs, 'max_abs_diff_factorised')} |")
    print(f"\nGibbs chains' largest gap: exact {cell(rows, 'gibbs_chain_max_gap')}, "
          f"factorised {cell(rows, 'factorised_chain_max_gap')}")

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
    print("| sigma^2 | likelihood (method) | test error (%) | test NLL | ECE | fit seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for noise in sorted({k[0] for k in groups}):
        for name in order:
            rs = groups.get((noise, name))
            if not rs:
                continue
            method = rs[0]["method"] or "known mixture"
            seconds = mean_se([r["train_seconds"] for r in rs]) if "train_seconds" in rs[0] else "-"
            print(f"| {noise:.3f} | {name} ({method}) | {mean_se([100 * r['error'] for r in rs])} "
                  f"| {mean_se([r['nll'] for r in rs], 3)} | {mean_se([r['ece'] for r in rs], 3)} "
                  f"| {seconds} |")


def augmentation_wine_table(results: str = "augmentation_wine") -> None:
    """Figure 5 of the logistic-softmax paper: each VI method against the Gibbs sampler on Wine's test
    rows (mean over seeds of the mean and largest absolute differences and correlations)."""
    rows = load(results)
    groups = defaultdict(list)
    for r in rows:
        groups[r["method"]].append(r)
    print(f"commits (dirty): {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{len(groups['augmented'])} seeds\n")
    print("| method | test error (%) | test NLL | p: mean abs. diff. | p: largest | p: corr. | mu: mean abs. diff. "
          "| mu: corr. | sigma^2: mean abs. diff. | sigma^2: corr. | fit seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for method, rs in groups.items():
        def avg(key, field, rs=rs):
            return f"{np.mean([r[key][field] for r in rs]):.3f}" if key in rs[0] else "-"
        print(f"| {method} | {mean_se([100 * r['error'] for r in rs])} | {mean_se([r['nll'] for r in rs], 3)} "
              f"| {avg('p', 'mean_abs')} | {avg('p', 'max_abs')} | {avg('p', 'corr')} | {avg('mu', 'mean_abs')} "
              f"| {avg('mu', 'corr')} | {avg('var', 'mean_abs')} | {avg('var', 'corr')} "
              f"| {mean_se([r['train_seconds'] for r in rs])} |")


def augmented_inducing_table(inducing_set: str = "every", part: str = "all", epochs: str = "every",
                             results: str = "augmented_inducing") -> None:
    """Figure 6 of the logistic-softmax paper: Shuttle, NLL and training time against M, shared or not.
    ``inducing_set`` (``per-setting``, ``one``, or every row) picks the rows: with ``one`` both
    settings had the same inducing set, so only the kernels differ. ``part="summary"`` prints only
    the line that compares the settings; ``epochs`` keeps the rows of one budget."""
    if part == "all":
        print("| commit (dirty) | threads | M | hyper-parameters | inducing sets | epochs | test error (%) | test NLL "
              "| training seconds |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    pairs = defaultdict(dict)
    for r in load(results):
        kept = r.get("inducing_set", "per-setting")
        if inducing_set not in ("every", kept) or epochs not in ("every", str(r["epochs"])):
            continue
        sets = "one" if kept == "one" or r["shared"] else "one per class"
        if part == "all":
            print(f"| {r['commit']} ({r['dirty']}) | {row_threads(r)} | {r['M']} | {'shared' if r['shared'] else 'independent'} "
                  f"| {sets} | {r['epochs']} | {100 * r['error']:.2f} | {r['nll']:.4f} | {r['training_seconds']:.0f} |")
        pairs[r["M"], r["epochs"], kept][r["shared"]] = r
    pairs = {key: pair for key, pair in pairs.items() if len(pair) == 2}
    if inducing_set != "every" and pairs:
        lower = [key for key, pair in pairs.items() if pair[False]["nll"] < pair[True]["nll"]]
        ratios = [pair[True]["nll"] / pair[False]["nll"] for pair in pairs.values()]
        print(f"{chr(10) if part == 'all' else ''}Independent hyper-parameters have the lower test NLL at {len(lower)} of {len(pairs)} (M, epochs); "
              f"shared over independent: {min(ratios):.2f} to {max(ratios):.2f} times the NLL.")


def deep_gp_paper() -> dict:
    """The deep-GP paper's transcribed tables (``paper_tables/deep-gps-ijar2022.json``, a copy of
    ``../shared/papers/tables/``'s, so that the reports need only the repository)."""
    return json.loads((PAPER_TABLES / "deep-gps-ijar2022.json").read_text())


def method_guide_table(results: str = "method_guide") -> None:
    """Which method when: each registered method at its defaults, per data set and training mode,
    mean ± s.e. over the seeds of test error, NLL and ECE, with seconds per epoch, for the fit
    and for predicting the test rows."""
    groups = defaultdict(list)
    for r in load(results):
        groups[r["dataset"], r["mode"], r["method"]].append(r)
    print("| data set (rows, classes) | training | method | seeds | test error | test NLL | test ECE "
          "| seconds an epoch | fit seconds | predict seconds | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (dataset, mode, method), rows in groups.items():
        r0 = rows[0]
        commits = ", ".join(sorted({f"{r['commit']} ({r['dirty']})" for r in rows}))
        print(f"| {dataset} ({r0['n_train']} train, {r0['n_classes']}) | {mode} | `{method}` | {len(rows)} "
              f"| {mean_se([r['test_error'] for r in rows], 3)} | {mean_se([r['test_nll'] for r in rows], 3)} "
              f"| {mean_se([r['test_ece'] for r in rows], 3)} | {np.mean([r['seconds_per_epoch'] for r in rows]):.3g} "
              f"| {np.mean([r['fit_seconds'] for r in rows]):.0f} | {np.mean([r['predict_seconds'] for r in rows]):.1f} "
              f"| {commits} |")


def dgp_synthetic_table(results: str = "dgp_synthetic") -> None:
    """Table C.6 of the deep-GP paper: test RMSE and log-likelihood per problem and alpha, beside the paper's."""
    paper = deep_gp_paper()["C.6_synthetic"]
    print("| problem | alpha | RMSE | paper | test log-likelihood | paper | epochs | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in sorted(load(results), key=lambda r: (r["problem"], r["alpha"])):
        ref = paper[r["problem"]]
        i = ref["alpha"].index(r["alpha"]) if r["alpha"] in ref["alpha"] else None
        rmse, ll = (("-", "-") if i is None else (f"{ref['rmse'][i]:.3f}", f"{ref['test_loglik'][i]:.3f}"))
        print(f"| {r['problem']} | {r['alpha']:g} | {r['rmse']:.3f} | {rmse} | {r['test_loglik']:.3f} | {ll} "
              f"| {r['epochs']} | {r['commit']} ({r['dirty']}) |")


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
    print("| problem | alpha | hidden mean scale | later layers' Z | seeds | RMSE | paper | test log-likelihood | paper "
          "| seeds above -2.5 | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (problem, alpha, scale, inducing, _), rows in sorted(groups.items()):
        ref = paper[problem]
        i = ref["alpha"].index(alpha) if alpha in ref["alpha"] else None
        rmse, ll = (("-", "-") if i is None else (f"{ref['rmse'][i]:.3f}", f"{ref['test_loglik'][i]:.3f}"))
        found = sum(r["test_loglik"] > -2.5 for r in rows) if problem == "bimodal" else "-"
        commits = ", ".join(sorted({f"{r['commit']} ({r['dirty']})" for r in rows}))
        print(f"| {problem} | {alpha:g} | {scale:g} | {inducing} | {len(rows)} | {mean_se([r['rmse'] for r in rows], 3)} | {rmse} "
              f"| {mean_se([r['test_loglik'] for r in rows], 3)} | {ll} | {found} | {commits} |")


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
    print("| run | first-layer kernel | pixels | alpha | iterations | train seconds | validation error "
          "| validation NLL | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, points in curves.items():
        last = max(points, key=lambda r: r["iterations"])
        commits = ", ".join(sorted({f"{r['commit']} ({r['dirty']})" for r in points}))
        print(f"| {label} | {last['kernel']} | {last['pixels']} | {last['alpha']:g} | {last['iterations']} "
              f"| {last['train_seconds']:.0f} | {100 * last['val_error']:.2f} % | {last['val_nll']:.4f} | {commits} |")
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
    print("| run | first-layer kernel | pixels | iterations | train seconds | validation error | validation NLL "
          "| commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["phase"] == "curve":
            print(f"| {r['label']} | {r['kernel']} | {r['pixels']} | {r['iterations']} | {r['train_seconds']:.0f} "
                  f"| {100 * r['val_error']:.2f} % | {r['val_nll']:.4f} | {r['commit']} ({r['dirty']}) |")
    print("\n| model | first-layer kernel | pixels | largest-norm 10 %: error | NLL | other 90 %: error | NLL "
          "| commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["phase"] == "by-norm":
            print(f"| {Path(r['model']).stem} | {r['kernel']} | {r['pixels']} | {100 * r['largest_error']:.2f} % "
                  f"| {r['largest_nll']:.4f} | {100 * r['rest_error']:.2f} % | {r['rest_nll']:.4f} "
                  f"| {r['commit']} ({r['dirty']}) |")
    print("\n| code | iterations | train seconds | energy after each 500 iterations | validation error "
          "| validation NLL | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["phase"] == "ablation":
            energy = ", ".join(f"{e:.3g}" for e in r["epoch_energy"])
            print(f"| {r['label']} | {r['iterations']} | {r['train_seconds']:.0f} | {energy} "
                  f"| {100 * r['val_error']:.2f} % | {r['val_nll']:.4f} | {r['commit']} ({r['dirty']}) |")


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
    print("| data set | L | alpha | iterations | splits | RMSE / error | paper | test log-likelihood | paper "
          "| seconds per fit | clamped variances (most in a fit) | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (name, layers, alpha, iterations, stopped), rows in sorted(groups.items()):
        if stopped:
            iterations = f"{iterations} (stopped at epoch {', '.join(str(r['epochs_run']) for r in rows)} of {rows[0]['epochs']})"
        task = rows[0]["task"]
        metric = "rmse" if task == "regression" else "error"
        keys = {"regression": ("C.8_regression_rmse", "C.7_regression_test_loglik"),
                "binary": ("C.10_binary_test_error", "C.9_binary_test_loglik"),
                "multiclass": ("C.12_multiclass_test_error", "C.11_multiclass_test_loglik")}[task]
        commits = sorted({f"{r['commit']} ({r['dirty']})" for r in rows})
        print(f"| {rows[0]['paper_name']} | {layers} | {alpha:g} | {iterations} | {len(rows)} "
              f"| {mean_se([r[metric] for r in rows], 3)} | {_paper_cell(paper[keys[0]], layers, rows[0]['paper_name'], alpha)} "
              f"| {mean_se([r['test_loglik'] for r in rows], 3)} "
              f"| {_paper_cell(paper[keys[1]], layers, rows[0]['paper_name'], alpha)} "
              f"| {np.mean([r['train_seconds'] for r in rows]):.0f} | {_most_clamped(rows)} | {', '.join(commits)} |")


RANK_ALPHAS = (0.001, 0.5, 1.0)
#: the deep-GP paper's Figs. 6-8: task -> (figure, error metric, its table, the log-likelihood's table)
RANK_FIGURES = {"regression": ("Fig. 6", "rmse", "C.8_regression_rmse", "C.7_regression_test_loglik"),
                "binary": ("Fig. 7", "error", "C.10_binary_test_error", "C.9_binary_test_loglik"),
                "multiclass": ("Fig. 8", "error", "C.12_multiclass_test_error", "C.11_multiclass_test_loglik")}


def _ranks(values: list[float]) -> np.ndarray:
    """Rank 1 for the smallest value, ties sharing their mean rank."""
    from scipy.stats import rankdata
    return rankdata(values)


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
    print("| figure | task | results file | iterations | L | cells (sets x splits) | RMSE / error rank "
          "(alpha 0.001 / 0.5 / 1) | NLL rank | paper tables' means: error rank (sets) | NLL rank (sets) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    def ranks(values) -> str:
        return " / ".join(f"{v:.2f}" for v in np.mean(values, axis=0))

    def paper_cell(sets: int, mean) -> str:
        return f"{ranks([mean])} ({sets})" if sets else "- (0)"

    for (task, name, iterations, layers), cell in sorted(cells.items()):
        sets = sorted({d for d, _ in cell["cells"]})
        paper = dgp_paper_ranks(task, layers, sorted({r["paper_name"] for r in load(name) if r["dataset"] in sets}))
        described = ", ".join(f"{d} {sum(c[0] == d for c in cell['cells'])}" for d in sets)
        print(f"| {RANK_FIGURES[task][0]} | {task} | {name} | {iterations} | {layers} | {len(cell['cells'])} "
              f"({described}) | {ranks(cell['error'])} | {ranks(cell['nll'])} | {paper_cell(*paper['error'])} "
              f"| {paper_cell(*paper['nll'])} |")


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
    print("| alpha | RMSE | paper RMSE | test log-likelihood | paper | without repeated test rows | median "
          "| energy at the end | seconds | threads | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        name = r["paper_name"]
        print(f"| {r['alpha']:g} | {r['rmse']:.3f} "
              f"| {_paper_cell(paper['C.8_regression_rmse'], r['layers'], name, r['alpha'])} "
              f"| {r['test_loglik']:.3f} | {_paper_cell(paper['C.7_regression_test_loglik'], r['layers'], name, r['alpha'])} "
              f"| {_optional(r.get('test_loglik_without_duplicates'))} | {_optional(r.get('test_loglik_median'))} "
              f"| {r['energy_by_epoch'][-1][1]:.0f} | {r['train_seconds']:.0f} | {row_threads(r)} "
              f"| {r['commit']} ({r['dirty']}) |")


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
    print("| data set | RMSE L=2 | L=3 | paper L=2 | paper L=3 | test log-likelihood L=2 | L=3 | paper L=2 "
          "| paper L=3 | L=3 seconds (x L=2) | energy at the end L=2 / L=3 | its change over the last 10 % "
          "of the epochs L=2 / L=3 | L=3 commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    def paper_cells(key: str, paper_name: str) -> str:
        return " | ".join(_paper_cell(paper[key], layers, paper_name, float(alpha)) for layers in (2, 3))

    for name in sorted({dataset for dataset, layers in fits if layers == 3 and (dataset, 2) in fits}):
        two, three = fits[name, 2], fits[name, 3]
        rmse_cells = paper_cells("C.8_regression_rmse", two["paper_name"])
        loglik_cells = paper_cells("C.7_regression_test_loglik", two["paper_name"])
        print(f"| {two['paper_name']} | {two['rmse']:.3f} | {three['rmse']:.3f} | {rmse_cells} "
              f"| {two['test_loglik']:.3f} | {three['test_loglik']:.3f} | {loglik_cells} "
              f"| {three['train_seconds']:.0f} ({three['train_seconds'] / two['train_seconds']:.1f}) "
              f"| {two['energy_by_epoch'][-1][1]:.0f} / {three['energy_by_epoch'][-1][1]:.0f} "
              f"| {_energy_change_at_end(two):+.1f} % / {_energy_change_at_end(three):+.1f} % "
              f"| {three['commit']} ({three['dirty']}) |")


def _optional(value: float | None) -> str:
    """A number to three decimals, or '-' where a row has none (older rows, or no such test rows)."""
    return "-" if value is None else f"{value:.3f}"


def winered_duplicates_table(results: str = "dgp_uci_winered", exact: str = "winered_duplicates") -> None:
    """Wine-red's test log-likelihood with and without the test rows that repeat a training row:
    each deep-GP fit of ``results`` (rows of ``dgp_uci.py`` that record ``n_test_duplicates``),
    then the exact GP of ``winered_duplicates.py`` on the same splits."""
    print("| model | split | L | alpha | RMSE | test log-likelihood | repeated test rows "
          "| log-likelihood without them | median | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in load(results):
        if "n_test_duplicates" in r:
            print(f"| deep GP ({r['iterations']} iterations) | {r['split']} | {r['layers']} | {r['alpha']:g} "
                  f"| {r['rmse']:.3f} | {r['test_loglik']:.3f} | {r['n_test_duplicates']} of {r['n_test']} "
                  f"| {_optional(r['test_loglik_without_duplicates'])} | {r['test_loglik_median']:.3f} "
                  f"| {r['commit']} ({r['dirty']}) |")
    for r in load(exact):
        print(f"| {r['model']} | {r['split']} | - | - | {r['test_rmse']:.3f} | {r['test_ll_mean']:.3f} "
              f"| {r['n_test_duplicates']} of {r['n_test']} | {r['test_ll_mean_without_duplicates']:.3f} "
              f"| {r['test_ll_median']:.3f} | {r['commit']} ({r['dirty']}) |")


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
    print("| data set | split | L | alpha | code | RMSE | test log-likelihood | median | lowest point: y, mean ± sd "
          "| energy at the end | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in load(results):
        peer = mine.get((r["dataset"], r["split"], r["layers"], r["alpha"], r["iterations"]))
        for code, row in (("authors' " + r["authors_commit"], r), ("alphagp", peer)):
            if row is None:
                continue
            low = row.get("lowest_test_points", [None])[0]
            low_cell = f"{low['y']:.2f}, {low['mean']:.2f} ± {low['std']:.3f} (LL {low['loglik']:.1f})" if low else "-"
            median = f"{row['test_loglik_median']:.3f}" if "test_loglik_median" in row else "-"
            print(f"| {r['paper_name']} | {r['split']} | {r['layers']} | {r['alpha']:g} | {code} | {row['rmse']:.3f} "
                  f"| {row['test_loglik']:.3f} | {median} | {low_cell} | {row['energy_by_epoch'][-1][1]:.0f} "
                  f"| {row['commit']} ({row['dirty']}) |")


def _most_clamped(rows: list[dict]) -> str:
    """The largest ``n_clamped_variances`` of ``rows``, or "-" where no row recorded it."""
    counts = [r["diagnostics"]["n_clamped_variances"] for r in rows if "diagnostics" in r]
    return str(max(counts)) if counts else "-"


def dgp_gpytorch_table(results: str = "dgp_gpytorch") -> None:
    """alphagp's deep GP at each alpha beside GPyTorch's DSVI deep GP, same run, same problem and model."""
    rows = load(results)
    peers = {(r["problem"], r["split"], r["commit"]): r for r in rows if r["library"] == "gpytorch"}
    print("| problem | split | library | alpha | epochs | RMSE | test log-likelihood | train seconds "
          "| time / GPyTorch's | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        peer = peers.get((r["problem"], r["split"], r["commit"]))
        ratio = f"{r['train_seconds'] / peer['train_seconds']:.2f}" if peer else "-"
        alpha = "-" if r["alpha"] is None else f"{r['alpha']:g}"
        print(f"| {r['problem']} | {r['split']} | {r['library']} | {alpha} | {r['epochs']} | {r['rmse']:.3f} "
              f"| {r['test_loglik']:.3f} | {r['train_seconds']:.0f} | {ratio} | {r['commit']} ({r['dirty']}) |")


def dgp_mnist_table(results: str = "dgp_mnist") -> None:
    """Tables C.13 / C.14 of the deep-GP paper: MNIST test NLL and error beside the paper's (same L)."""
    paper = deep_gp_paper()
    print("| L | alpha | epochs | test error | paper | test NLL | paper | train seconds | commit (dirty) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in load(results):
        column = 0 if r["alpha"] < 0.05 else round(r["alpha"] * 10)
        nll = paper["C.13_big_test_nll"].get(f"L={r['layers']}", {}).get("MNIST", {}).get("mean", ["-"] * 11)[column]
        err = paper["C.14_big_test_error"].get(f"L={r['layers']}", {}).get("MNIST", {}).get("mean", ["-"] * 11)[column]
        print(f"| {r['layers']} | {r['alpha']:g} | {r['epochs']} | {r['error']:.4f} | {err} | {r['nll']:.4f} | {nll} "
              f"| {r['train_seconds']:.0f} | {r['commit']} ({r['dirty']}) |")


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
        print("| " + " | ".join(keys) + " |")
        print("| " + " | ".join("---" for _ in keys) + " |")
        for r in group:
            print("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys)
                  + " |")
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


#: what identifies a row of a guard file, and the numbers compared between commits
_GUARD_KEYS = ("dataset", "method", "alpha", "seed", "M")
_GUARD_NUMBERS = ("test_nll", "test_error", "test_ece", "test_brier", "mean_abs_diff", "max_abs_diff")


def guard_table(*results: str) -> None:
    """A refactor's guard: for each results file, every row of its first commit against the same
    row (same data set, method, alpha, seed, M) of its newest commit; the largest relative change
    of each number per method."""
    print("| results | method | before | after | rows | largest relative change | of |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
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
            print(f"| {name} | {method} | {before} | {dirty} | {len(found) // len({n for _, n in found})} "
                  f"| {change:.1e} | {number} |")



def defaults_study_tables(results: str = "defaults_study") -> None:
    """The digits study of the default's calibration, and the configurations of ``method="auto"``
    across the classification sets: validation NLL (seconds), mean ranks below and from 2,000 rows."""
    rows = {}
    for r in load(results):
        rows[(r.get("dataset", "digits"), r["config"])] = r           # the newest row of each pair
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}\n")
    print("| configuration (digits) | val error | val NLL | val ECE | mean confidence | noise | amplitude "
          "| median lengthscale | epochs | seconds |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (dataset, config), r in rows.items():
        if dataset == "digits":
            print(f"| {config} | {r['val_error']:.4f} | {r['val_nll']:.4f} | {r['val_ece']:.4f} "
                  f"| {r['val_mean_confidence']:.3f} | {r['noise']:.3g} | {r['amplitude']:.3g} "
                  f"| {r['median_lengthscale']:.3g} | {r['n_iter']} | {r['seconds']:.1f} |")
    configs = ["default", "pep_0.5", "ep_es", "vi_es", "sep_es"]
    sets = sorted({d for d, c in rows if c == "sep_es" and all((d, k) in rows for k in configs)},
                  key=lambda d: rows[(d, "default")]["n_fit"])
    print("\n| data set | fit rows | " + " | ".join(configs) + " |\n| --- | --- |" + " --- |" * len(configs))
    ranks: dict = defaultdict(lambda: defaultdict(list))
    for d in sets:
        nll = {c: rows[(d, c)]["val_nll"] for c in configs}
        order = sorted(configs, key=nll.get)
        size = "below 2,000 rows" if rows[(d, "default")]["n_fit"] < 2000 else "from 2,000 rows"
        for c in configs:
            ranks[size][c].append(order.index(c) + 1)
            ranks["all"][c].append(order.index(c) + 1)
        print(f"| {d} | {rows[(d, 'default')]['n_fit']} | "
              + " | ".join(f"{nll[c]:.4f} ({rows[(d, c)]['seconds']:.1f} s)" for c in configs) + " |")
    for size, by_config in ranks.items():
        print(f"| mean rank, {size} | | " + " | ".join(f"{np.mean(by_config[c]):.2f}" for c in configs) + " |")
    variants = ["pep_0.5", "pep_100", "pep_es", "pep_es_20"]
    small = [d for d in sets if all((d, v) in rows for v in variants)]
    if small:
        print("\n| data set (small-data default's variants) | " + " | ".join(variants) + " |\n| --- |"
              + " --- |" * len(variants))
        for d in small:
            print(f"| {d} | " + " | ".join(f"{rows[(d, v)]['val_nll']:.4f}" for v in variants) + " |")
        wins = {v: sum(min(variants, key=lambda k, d=d: rows[(d, k)]["val_nll"]) == v for d in small) for v in variants}
        print("| best on | " + " | ".join(f"{wins[v]} of {len(small)}" for v in variants) + " |")



def defaults_test_table(results: str = "defaults_test") -> None:
    """``GPClassifier()`` against the previous default on the test splits, once per set."""
    rows = {(r["dataset"], r["estimator"]): r for r in load(results)}
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}\n")
    print("| data set | train rows | auto chose | test NLL auto / previous | test error auto / previous "
          "| test ECE auto / previous | seconds auto / previous |\n| --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for d in dict.fromkeys(k[0] for k in rows):
        if (d, "auto") not in rows or (d, "previous default (ep)") not in rows:
            continue
        a, p = rows[(d, "auto")], rows[(d, "previous default (ep)")]
        ratios.append(a["test_nll"] / p["test_nll"])
        print(f"| {d} | {a['n_train']} | {a['method']} | {a['test_nll']:.4f} / {p['test_nll']:.4f} "
              f"| {a['test_error']:.4f} / {p['test_error']:.4f} | {a['test_ece']:.4f} / {p['test_ece']:.4f} "
              f"| {a['seconds']:.1f} / {p['seconds']:.1f} |")
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
    table, info = {}, {}
    for r in rows:
        cv = r["cv_results"]
        folds = sum(k.startswith("split") for k in cv)
        table.setdefault(r["dataset"], {}).update(
            {c: (m, t * folds) for c, m, t in zip(cv["candidate"], cv["mean_test_nll"], cv["mean_fit_time"])})
        info[r["dataset"]] = (r["n_train"], r["scheme"])
    print("| data set (training rows) | scheme | " + " | ".join(names) + " |\n| --- | --- |" + " --- |" * len(names))
    wins = dict.fromkeys(names, 0)
    for d, scores in table.items():
        best = min(scores, key=lambda c: scores[c][0])
        wins[best] += 1
        cells = [("-" if c not in scores else f"**{scores[c][0]:.4f}**" if c == best else f"{scores[c][0]:.4f}")
                 + ("" if c not in scores else f" ({scores[c][1]:.0f} s)") for c in names]
        print(f"| {d} ({info[d][0]}) | {info[d][1]} | " + " | ".join(cells) + " |")
    print("| lowest on | | " + " | ".join(f"{wins[c]}" for c in names) + " |\n")
    print("cells: held-out NLL (seconds of all its fits)\n")
    print("Sub-portfolios (each keeps the candidate with the lowest held-out NLL among its members; a set where "
          "none of them runs keeps the full portfolio's first): geometric mean over the sets of the chosen NLL over "
          "the best candidate's, the sets where it chooses the best, and the seconds of all fits summed over the "
          "sets; the Pareto front of the two:\n")
    options = []
    for k in range(1, len(names) + 1):
        for subset in combinations(names, k):
            ratios, seconds, best_hits = [], 0.0, 0
            for scores in table.values():
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
    print("| sub-portfolio | NLL over the best (geometric mean) | best on | seconds (all sets) |\n| --- | --- | --- | --- |")
    for ratio, seconds, hits, subset in sorted(front, key=lambda o: o[1]):
        print(f"| {', '.join(subset)} | {ratio:.4f} | {hits} of {len(table)} | {seconds:.0f} |")


def _race(splits: list[list[float]], seconds: list[float], margin: float) -> tuple[int, float]:
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
    print("| data set (training rows) | " + " | ".join(f"{m}: fixed -> regression" for m in methods)
          + " | vi, pep: regression, kernel held fixed |\n|---|" + "---|" * (len(methods) + 1))
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
        print(f"| {r['dataset']} ({r['n_train']}) | " + " | ".join(cells) + " |")
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
    print(f"| portfolio | racing ({float(margin):.0%}) | NLL over today's choice (geometric mean) | lower than today's "
          "on | seconds of all fits (all sets) |\n|---|---|---|---|---|")
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
                    win, t = _race(splits, secs, float(margin))
                else:
                    win, t = int(np.argmin([np.mean(s) for s in splits])), sum(s * folds for s in secs)
                nll = float(np.mean(splits[win]))
                winners.setdefault(r["dataset"], set()).add(keep[win])
                if label.startswith("today") and not race:
                    base[r["dataset"]] = nll
                ratios.append(nll / base[r["dataset"]])
                lowered += nll < base[r["dataset"]]
                spent += t
            print(f"| {label} | {'yes' if race else 'no'} | {np.exp(np.mean(np.log(ratios))):.4f} | "
                  f"{lowered} of {len(rows)} | {spent:.0f} |")
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
    import matplotlib.pyplot as plt
    rows = _panel_rows(results, previous)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows.values()})}; "
          f"{sorted({r['machine'] for r in rows.values()})}\n")
    names = list(dict.fromkeys(k[1] for k in rows))
    names = [OURS] + [n for n in names if n != OURS]
    sets = list(dict.fromkeys(k[0] for k in rows))
    print("| data set | " + " | ".join(names) + " |\n| --- |" + " --- |" * len(names))
    for d in sets:
        cells = [f"{rows[(d, n)]['test_nll']:.4f} / {rows[(d, n)]['test_error']:.3f} / {rows[(d, n)]['test_ece']:.3f} "
                 f"({rows[(d, n)]['train_seconds']:.1f} s)" if (d, n) in rows else "-" for n in names]
        print(f"| {d} | " + " | ".join(cells) + " |")
    print("\ncells: test NLL / error / ECE (training seconds)\n")
    chosen = [d for d in sets if (d, OURS) in rows]
    candidates = list(dict.fromkeys(c for d in chosen for c in rows[(d, OURS)]["cv"].get("candidate", [])))
    print("Model selection on the training rows (validation NLL, mean over the folds or the one split; "
          "the chosen in bold; dropped: raced out after its first folds):\n")
    print("| data set | scheme | " + " | ".join(candidates) + " | selection and final fit, seconds |\n| --- | --- |"
          + " --- |" * (len(candidates) + 1))
    wins = dict.fromkeys(candidates, 0)
    for d in chosen:
        r = rows[(d, OURS)]
        cv = dict(zip(r["cv"]["candidate"], r["cv"]["mean_test_nll"]))
        wins[r["candidate"]] = wins.get(r["candidate"], 0) + 1
        cells = [("-" if c not in cv else "dropped" if np.isnan(cv[c]) else f"**{cv[c]:.4f}**"
                  if c == r["candidate"] else f"{cv[c]:.4f}") for c in candidates]
        print(f"| {d} | {r['scheme']} | " + " | ".join(cells) + f" | {r['train_seconds']:.1f} |")
    print("| chosen on | | " + " | ".join(f"{wins[c]} of {len(chosen)}" for c in candidates) + " | |\n")
    budget = "alphagp GPClassifier(max_time=GPflow's)"
    print("| data set | default's test NLL | lowest GP peer | lowest of all others | default's ECE - best peer's ECE "
          "| default's seconds / GPflow's | with max_time = GPflow's seconds |\n| --- | --- | --- | --- | --- | --- | --- |")
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
        print(f"| {d} | {mine['test_nll']:.4f} ({mine['candidate']}) | {best_peer['test_nll']:.4f} ({best_peer['estimator']}) "
              f"| {best_other['test_nll']:.4f} ({best_other['estimator']}) | {mine['test_ece'] - best_ece:+.3f} "
              f"| {ratio:.2f} | {cap_cell} |")
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
    ncols = 4
    fig, axes = plt.subplots(int(np.ceil(len(sets) / ncols)), ncols, figsize=(14, 3 * np.ceil(len(sets) / ncols)),
                             squeeze=False)
    for ax, d in zip(axes.ravel(), sets):
        for n in names:
            r = rows.get((d, n))
            if r is None:
                continue
            if r.get("curve"):
                ax.plot([p["train_seconds"] for p in r["curve"]], [p["test_nll"] for p in r["curve"]], label=n)
            else:
                ax.plot([r["train_seconds"]], [r["test_nll"]], "o", label=n)
        ax.set_xscale("log")
        ax.set_title(d, fontsize=9)
    for ax in axes.ravel()[len(sets):]:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7, bbox_to_anchor=(0.5, 0.0))
    fig.supxlabel("training seconds (log; the default's curve starts after its model selection)", y=0.045)
    fig.supylabel("test NLL")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(RESULTS / f"{results}.png", dpi=80)


def levers_study(results: str = "defaults_levers") -> None:
    """Issue 58's selection-cost and capacity levers (``defaults_study.py --levers``), validation
    rows only: per set the default's validation NLL and seconds, the refit of its winner (the same
    fit again: a check), the fold models' average instead of the refit, the first fold's choice
    refitted, and the winner at more inducing points; then the geometric means and counts."""
    rows = load(results)
    print("| set | fit rows | chosen | default NLL (s) | fold average NLL (s) | first fold: choice, NLL | "
          "M=100 NLL (s) | M=200 NLL (s) |")
    print("|---|---|---|---|---|---|---|---|")
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
        print(f"| {r['dataset']} | {r['n_fit']} | {r['chosen']} ({r['scheme']}) | {cell(r['default'])} | {cell(fold)} | "
              + (f"{first['chosen']}, {first['val_nll']:.4f}" if first else "-")
              + f" | {cell(cap.get('100'))} | {cell(cap.get('200'))} |")
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


#: the reports by name: ``python report.py NAME ARGS...`` calls ``REPORTS[NAME](*ARGS)``
REPORTS = {"uci": uci_tables, "table2": table2_tables, "alpharanks": alpha_ranks, "alphafig": alpha_figure, "select": selection_table,
           "sattime": satellite_time_figure, "sattimeerror": satellite_error_figure, "satalpha": satellite_alpha_figure, "satalphaerror": satellite_alpha_error_figure, "gpflow": vi_vs_gpflow_table,
           "mnistmethods": mnist_methods_figure, "mnistalpha": mnist_alpha_figure, "mnistsites": mnist_sites_table, "distributed": distributed_table, "tta": time_to_accuracy_report, "profile": profile_table, "placement": placement_tables, "baselines": baselines_tables, "ucicompare": uci_comparison, "mnist": mnist_table, "speed": speed_table,
           "memory": memory_table, "lr": learning_rate_table, "ttn": time_to_nll_table,
           "fittime": fit_time_table, "sattiming": satellite_timing_table, "mnistval": mnist_validated_table,
           "mnist30": mnist_30min_report,
           "threads": threads_table, "exact": exact_posterior_table, "likelihoods": likelihoods_table,
           "augwine": augmentation_wine_table, "auginducing": augmented_inducing_table,
           "dgpsynth": dgp_synthetic_table, "dgpuci": dgp_uci_table, "authorsdgp": authors_dgp_table,
           "winered": winered_duplicates_table, "dgpalphas": dgp_alpha_sweep_table, "dgpranks": dgp_ranks_table, "dgpranksfig": dgp_ranks_figure, "dgpdepth": dgp_depth_table, "dgpgpytorch": dgp_gpytorch_table,
           "dgpmnist": dgp_mnist_table, "dgpmnistcurve": dgp_mnist_curve_report, "dgpmnistscreen": dgp_mnist_screen_report,
           "dgpsynthseeds": dgp_synthetic_seeds_table, "methodguide": method_guide_table, "edges": edges_tables, "guard": guard_table,
           "defaults": defaults_study_tables, "defaultstest": defaults_test_table,
           "panel": defaults_panel_report, "portfolio": portfolio_study,
           "kernelstart": kernel_start_study, "levers": levers_study, "methodgap": method_gap_table, **FEATURE_REPORTS,
           **PAPER_REPORTS, **CLOSED_FORM_REPORTS}


if __name__ == "__main__":
    REPORTS[sys.argv[1] if len(sys.argv) > 1 else "uci"](*sys.argv[2:])

