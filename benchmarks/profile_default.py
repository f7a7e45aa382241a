"""Issue 79, item 5: where the default's seconds go on the development tables (``real_tables.py``).

``GPClassifier(random_state=0)`` is fitted on each table's training rows (70/30 stratified split,
seed 0, one thread) under ``cProfile``; each row keeps the fit's seconds and the cumulative seconds
of the stages a selection spends them in: exact EP's kernel searches (``pair_ep.search_kernel``),
the closed form's and the regression's kernel starts (``kernel_start._dirichlet_search`` and
``_regression_search``; one function, ``_closed_form_search``, before issue 81), the
trainer's fits (``Trainer.fit``: every candidate's steps, the final fit's included) and the held-out
predictions (``class_probabilities``), with the number of calls of each. The stages do not nest:
the kernel searches run in each fit's build, before its trainer. Profiling slows the fit; the
shares, not the seconds, are the result.

    python benchmarks/profile_default.py --threads 1
    python benchmarks/report.py profile
"""

from __future__ import annotations

import cProfile
import pstats
import time
import warnings

from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

#: stage -> (module path suffix, the function names) whose cumulative time the row keeps
STAGES = {"exact EP's kernel searches": ("alphagp/pair_ep.py", ("search_kernel",)),
          "closed-form kernel starts": ("alphagp/kernel_start.py",
                                        ("_dirichlet_search", "_regression_search", "_closed_form_search")),
          "trainer fits": ("alphagp/training/loop.py", ("fit",)),
          "held-out predictions": ("alphagp/estimators/classifier_family.py", ("class_probabilities",))}
TABLES = ["penguins", "infert", "mroz", "modechoice", "somerville", "titanic", "yogurt", "hi"]


def profile(name: str, threads: int) -> dict:
    import real_tables
    frame, labels = real_tables.load(name)
    X_train, _, y_train, _ = train_test_split(frame, labels, test_size=0.3, stratify=labels, random_state=0)
    model = GPClassifier(random_state=0, n_jobs=threads, verbose=False)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    with threadpool_limits(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profiler.runcall(model.fit, X_train, y_train)
    seconds = time.perf_counter() - started
    stats = pstats.Stats(profiler).stats
    stages = {}
    for stage, (path, functions) in STAGES.items():
        found = [(calls, cumulative) for (file, _, func), (_, calls, _, cumulative, _) in stats.items()
                 if file.replace("\\", "/").endswith(path) and func in functions]
        stages[stage] = {"calls": sum(c for c, _ in found), "seconds": sum(s for _, s in found)}
    return {"dataset": name, "n_train": len(y_train), "fit_seconds": seconds, "stages": stages,
            "candidate": model.candidate_}


def main() -> None:
    parser = benchmark_parser(__doc__, output="profile_default.jsonl")
    parser.add_argument("--tables", nargs="+", default=TABLES)
    args = parse_benchmark_args(parser)
    for name in args.tables:
        row = profile(name, args.threads)
        append_row(args.output, base_row("profile_default", threads=args.threads, **row))
        shares = ", ".join(f"{k} {v['seconds'] / row['fit_seconds']:.0%}" for k, v in row["stages"].items())
        print(f"{name:12s} {row['fit_seconds']:.1f} s: {shares}", flush=True)


if __name__ == "__main__":
    main()
