"""MNIST (or Fashion-MNIST) with the default ``GPClassifier(max_time=...)``: what a user gets.

The estimator is given all 60,000 training images and a training-time budget, nothing else:
``method="auto"`` carves its own stratified held-out share of those images (``validation_fraction``,
10 %), fits each candidate of its portfolio on the rest with validated early stopping, and keeps
the candidate of lowest held-out NLL (``estimators/model_selection.py``). No choice reads the test
split; it is scored once, at the end. The row holds the test metrics, the fit's wall seconds
(selection included), the chosen candidate and ``cv_results_``.

    python benchmarks/mnist_default.py --threads 1 --max-minutes 30 --output mnist_default.jsonl

The paper's SEP reaches 2.08 % error and 0.0725 NLL on MNIST (issue 44's aim in 30 minutes).
"""

from __future__ import annotations

import time

from alphagp import GPClassifier
from alphagp.data import load_mnist

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="mnist_default.jsonl")
    parser.add_argument("--dataset", choices=("mnist", "fashion_mnist"), default="mnist")
    parser.add_argument("--max-minutes", type=float, default=30.0, help="the estimator's max_time, in minutes")
    parser.add_argument("--seed", type=int, default=0)
    args = parse_benchmark_args(parser)
    X, y, Xte, yte = load_mnist(args.dataset)
    clf = GPClassifier(max_time=60 * args.max_minutes, random_state=args.seed, n_jobs=args.threads, verbose=True)
    start = time.perf_counter()
    clf.fit(X, y)
    fit_seconds = time.perf_counter() - start
    test = clf.evaluate(Xte, yte)
    results = clf.cv_results_
    candidates = [{"name": name, "validation_nll": nll, "fit_seconds": seconds}
                  for name, nll, seconds in zip(results["candidate"], results["mean_test_nll"],
                                                results["mean_fit_time"], strict=True)]
    append_row(args.output, base_row("mnist-default", dataset=args.dataset, seed=args.seed, n_train=len(y),
                                     max_minutes=args.max_minutes, fit_seconds=fit_seconds,
                                     candidate=clf.candidate_, selection_scheme=clf.selection_scheme_,
                                     method=clf.method_, epochs_run=clf.n_iter_, candidates=candidates,
                                     **{f"test_{k}": v for k, v in test.items()}))
    print(f"{args.dataset}: {clf.candidate_} in {fit_seconds:.0f} s: test error {100 * test['error']:.2f}%, "
          f"NLL {test['nll']:.4f}, ECE {test['ece']:.4f}", flush=True)


if __name__ == "__main__":
    main()
