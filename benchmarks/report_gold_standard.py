"""Reports of issue 73, the gold standard in seconds and capacity that grows (``python report.py NAME
ARGS``), printed into ``docs/defaults.md``: exact EP beside scikit-learn's GPC (``exact_ep.py``), the
closed form's held-out NLL against M and seconds (``closed_form_capacity.py``)."""

from __future__ import annotations

from report_common import load

#: the binary sets issue 73's aim names (its table: pima, breast_cancer, australian, sonar, ionosphere)
AIM_SETS = ("pima", "breast_cancer", "australian", "sonar", "ionosphere")
#: the aim: at most this many times scikit-learn GPC's seconds, at its test NLL or lower
AIM_RATIO = 3.0


def exact_ep_report(results: str = "exact_ep") -> None:
    """Exact EP (one lengthscale, ARD) beside scikit-learn's GPC and logistic regression, test NLL
    and training seconds in the same run, one row per set; then the aim's counts."""
    rows = load(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{sorted({r['machine'] for r in rows})}\n")
    latest = {}
    for r in rows:                                   # the latest row of each (set, estimator)
        latest[(r["dataset"], r["estimator"])] = r
    names = list(dict.fromkeys(r["estimator"] for r in rows))
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    print("| data set (training rows, classes) | " + " | ".join(names) + " | exact EP (one) s / GPC s |")
    print("|---|" + "---|" * (len(names) + 1))
    below = within = 0
    for d in sets:
        cells = {n: latest.get((d, n)) for n in names}
        first = next(r for r in cells.values() if r is not None)
        one, gpc = cells.get("exact EP (one lengthscale)"), cells.get("scikit-learn GPC")
        ratio = "-" if one is None or gpc is None else f"{one['train_seconds'] / gpc['train_seconds']:.1f}"
        print(f"| {d} ({first['n_train']}, {first['n_classes']}) | "
              + " | ".join("-" if r is None else f"{r['test_nll']:.4f} ({r['train_seconds']:.2f} s)" for r in cells.values())
              + f" | {ratio} |")
        if d in AIM_SETS and one is not None and gpc is not None:
            below += one["test_nll"] <= gpc["test_nll"]
            within += one["train_seconds"] <= AIM_RATIO * gpc["train_seconds"]
    print("\ncells: test NLL (training seconds), the panel's 70/30 split, one thread, one run")
    print(f"\nexact EP (one lengthscale) on the aim's {len(AIM_SETS)} binary sets: test NLL at or below scikit-learn "
          f"GPC's on {below} of {len(AIM_SETS)}, training seconds at most {AIM_RATIO:g} times GPC's on {within} of "
          f"{len(AIM_SETS)}")


def capacity_report(results: str = "closed_form_capacity") -> None:
    """The closed form's held-out NLL and seconds at each M and inducing inputs, per set, beside
    HistGradientBoosting's on the same rows (its held-out NLL, and the fit's seconds over its)."""
    rows = load(results)
    print(f"rows from commit(s) {sorted({(r['commit'], r['dirty']) for r in rows})}; "
          f"{sorted({r['machine'] for r in rows})}\n")
    latest = {}
    for r in rows:
        latest[(r["dataset"], r["asked"], r["inducing_init"])] = r
    print("| data set (fit rows) | M (asked) | inducing inputs | held-out NLL | held-out error | seconds | "
          "seconds / HGB's |\n|---|---|---|---|---|---|---|")
    for d in dict.fromkeys(r["dataset"] for r in rows):
        hgb = latest.get((d, "hgb", "-"))
        fits = sorted((r for (s, a, _), r in latest.items() if s == d and a != "hgb"),
                      key=lambda r: (r["n_inducing"], r["inducing_init"]))
        for r in fits:
            exact = " (exact)" if r.get("exact") else ""
            ratio = "-" if hgb is None else f"{r['seconds'] / hgb['seconds']:.1f}"
            print(f"| {d} ({r['n_fit']}) | {r['n_inducing']}{exact} ({r['asked']}) | {r['inducing_init']} | "
                  f"{r['held_nll']:.4f} | {r['held_error']:.4f} | {r['seconds']:.1f} | {ratio} |")
        if hgb is not None:
            print(f"| {d} ({hgb['n_fit']}) | HistGradientBoosting | - | {hgb['held_nll']:.4f} | "
                  f"{hgb['held_error']:.4f} | {hgb['seconds']:.1f} | 1.0 |")
    print("\nheld-out: a stratified 10 % of the training rows, which no fit reads; one thread, one run")


REPORTS = {"exactep": exact_ep_report, "capacity": capacity_report}
