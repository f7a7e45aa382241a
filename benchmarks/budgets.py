"""Issue 80, item 1 and 4: ``max_time`` honoured, each fit in a fresh process.

One synthetic problem (the issue's exact-EP repro: 500 rows, 20 standard normal features, 5 classes
drawn at random, seed 0) fitted by each estimator of :data:`CONFIGS` at each budget of
:data:`BUDGETS` seconds, one thread, in a process of its own (no warm caches); the child times its
``fit`` alone. One row per (configuration, budget) with the seconds and their ratio to the budget.
Then the issue's large case (:data:`LARGE`): the default on 5,000 rows of 16 features and 26
classes whose labels follow the features (the arg-max of random projections plus noise), at 60 s.

    python benchmarks/budgets.py --threads 1
    python benchmarks/report.py budgets
"""

from __future__ import annotations

import json
import subprocess
import sys

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

BUDGETS = (1.0, 2.0, 5.0, 10.0)
#: name -> GPClassifier keyword arguments (besides max_time, random_state and n_jobs)
CONFIGS = {"GPClassifier()": {}, "exact_ep": {"method": "exact_ep"}, "exact_pep": {"method": "exact_pep"},
           "dirichlet": {"method": "dirichlet"},
           "dirichlet, kernel_init='fixed'": {"method": "dirichlet", "kernel_init": "fixed"},
           "dirichlet, kernel_init='regression'": {"method": "dirichlet", "kernel_init": "regression"},
           "dirichlet, kernel_init='dirichlet_linear'": {"method": "dirichlet", "kernel_init": "dirichlet_linear"},
           "dirichlet, kernel_init='exact_ep'": {"method": "dirichlet", "kernel_init": "exact_ep"},
           "pep, alpha='auto'": {"method": "pep", "alpha": "auto"}}

#: the issue's large case: the default at this budget on :data:`LARGE_PROBLEM`'s rows
LARGE = ("GPClassifier(), 5,000 rows, 26 classes", 60.0)
SMALL_PROBLEM = "X = rng.standard_normal((500, 20)); y = rng.integers(0, 5, 500)"
LARGE_PROBLEM = ("X = rng.standard_normal((5000, 16)); "
                 "y = np.argmax(X @ rng.standard_normal((16, 26)) + rng.standard_normal((5000, 26)), 1)")

CHILD = """
import json, sys, time, warnings
import numpy as np
import torch
torch.set_num_threads({threads})
from alphagp import GPClassifier
rng = np.random.default_rng(0)
{problem}
warnings.simplefilter("ignore")
model = GPClassifier(max_time={budget}, random_state=0, n_jobs={threads}, verbose=False, **{kwargs})
started = time.perf_counter()
model.fit(X, y)
print(json.dumps({{"seconds": time.perf_counter() - started, "method": model.method_}}))
"""


def main() -> None:
    parser = benchmark_parser(__doc__, output="budgets.jsonl")
    parser.add_argument("--configs", nargs="+", default=[*CONFIGS, LARGE[0]], choices=[*CONFIGS, LARGE[0]])
    args = parse_benchmark_args(parser)
    runs = [(name, budget, SMALL_PROBLEM, CONFIGS[name]) for name in args.configs if name in CONFIGS
            for budget in BUDGETS]
    if LARGE[0] in args.configs:
        runs.append((LARGE[0], LARGE[1], LARGE_PROBLEM, {}))
    for name, budget, problem, kwargs in runs:
        code = CHILD.format(threads=args.threads, budget=budget, kwargs=repr(kwargs), problem=problem)
        done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            row = {"error": done.stderr.strip().splitlines()[-1][:300] if done.stderr else "no output"}
        else:
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["ratio"] = row["seconds"] / budget
        append_row(args.output, base_row("budgets", threads=args.threads, config=name, max_time=budget, **row))
        print(f"{name:36s} max_time={budget:g}: {row}", flush=True)


if __name__ == "__main__":
    main()
