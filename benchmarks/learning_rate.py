"""Choice of the initial sign-adaptive learning rate for batch EP, by the training objective.

EP at M = 10% on Vehicle, Vowel, Wine and New-thyroid (the UCI protocol of uci.py), 3 splits,
250 iterations, for several initial rates. The rate is chosen by the final log Z_q (a training
quantity); test NLL and error are recorded alongside.

    python benchmarks/learning_rate.py --threads 2
"""

from __future__ import annotations

import time

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, parse_benchmark_args, split


def main() -> None:
    parser = benchmark_parser(__doc__, threads=2)
    parser.add_argument("--datasets", nargs="+", default=["vehicle", "vowel", "wine", "new_thyroid"])
    parser.add_argument("--rates", nargs="+", type=float, default=[0.01, 0.03, 0.1])
    parser.add_argument("--splits", type=int, default=3)
    args = parse_benchmark_args(parser)
    for name in args.datasets:
        for rate in args.rates:
            for seed in range(args.splits):
                Xtr, Xte, ytr, yte = split(name, seed)
                m = round(0.1 * len(ytr))
                start = time.perf_counter()
                clf = GPClassifier(n_inducing=m, learning_rate=rate, random_state=seed, n_jobs=args.threads).fit(Xtr, ytr)
                seconds = time.perf_counter() - start
                metrics = clf.evaluate(Xte, yte)
                append_row("learning_rate.jsonl", base_row(
                    "initial-learning-rate", dataset=name, method="EP", alpha=1.0, seed=seed, M=m,
                    batch_size=None, learning_rate=rate, final_log_Zq=clf.history_[-1]["objective"],
                    test_error=metrics["error"], test_nll=metrics["nll"], train_seconds=seconds))
            print(f"{name} rate {rate} done", flush=True)


if __name__ == "__main__":
    main()
