"""Tables 2 and 3 of the scalable-EP paper: UCI data sets, batch training, any methods.

Protocol (section 4.1): 90/10 train/test splits, Satellite 20/80, Waveform 1000 points
30/70, Vowel the first 6 classes; M = 5%, 10%, 20% of the training rows, inducing points at
random training points; 250 iterations of batch training with each method's default
optimiser and initial rate (the sign-adaptive rule at 1.0 for the EP methods, Adam at 0.01 for
the methods that fit q by gradients) unless ``--learning-rate`` is given. One JSON line per
(data set, method, M, split) goes to benchmarks/results/<output>.

    python benchmarks/uci.py --threads 1 --splits 5 --methods gfitc ep sep vi --output uci_table2.jsonl

A method may carry its alpha after a colon (``pep:0.5``). With ``--validation F`` the test rows
are never touched: a stratified fraction F of each training split is held out, the model is
fitted on the rest and scored on it (rows say ``scored_on: "validation"``); this is how settings
are chosen before a table is run (``--method-params`` passes e.g. ``{"ep_tol": 1e-5}``).
``train_seconds`` is the whole fit
(for gibbs and laplace: the EP fit of the hyper-parameters and then the sampler or the Newton
iterations); ``training_seconds`` the training epochs alone. ``--skip-done`` leaves out the fits
whose row from a clean tree (same set, method, split, M fraction, rate, method options and
scoring) the output file already holds, so an interrupted queue continues where it stopped.
"""

from __future__ import annotations

import json
import time

from sklearn.model_selection import train_test_split

from alphagp import GPClassifier

from common import DATASETS, append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args, split


def fit_key(row: dict) -> tuple:
    """What names one fit of this script: set, method, split, M fraction, rate, options, scoring."""
    return (row["dataset"], row["method"], row["seed"], row["M_fraction"], row.get("learning_rate"),
            json.dumps(row.get("method_params"), sort_keys=True), row.get("scored_on", "test"))


def main() -> None:
    parser = benchmark_parser(__doc__, threads=2, output="uci.jsonl")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--methods", nargs="+", default=["ep", "sep"])
    parser.add_argument("--fractions", nargs="+", type=float, default=[0.05, 0.10, 0.20])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--first-split", type=int, default=0)
    parser.add_argument("--max-iter", type=int, default=250)
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="initial learning rate (default: each method's, see GPClassifier)")
    parser.add_argument("--method-params", type=json.loads, default=None,
                        help='JSON object of method options, e.g. \'{"ep_tol": 1e-5}\'')
    parser.add_argument("--validation", type=float, default=None,
                        help="score on this stratified fraction of the training split instead of the test set")
    parser.add_argument("--skip-done", action="store_true", help="leave out the fits the output file already holds")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, fit_key) if args.skip_done else set()
    for name in args.datasets:
        for seed in range(args.first_split, args.first_split + args.splits):
            Xtr, Xte, ytr, yte = split(name, seed)
            if args.validation:
                Xtr, Xte, ytr, yte = train_test_split(Xtr, ytr, test_size=args.validation, stratify=ytr,
                                                      random_state=seed)
            for frac in args.fractions:
                m = max(1, round(frac * len(ytr)))
                for spec in args.methods:
                    scored_on = "validation" if args.validation else "test"
                    if fit_key({"dataset": name, "method": spec.upper(), "seed": seed, "M_fraction": frac,
                                "learning_rate": args.learning_rate, "method_params": args.method_params,
                                "scored_on": scored_on}) in done:
                        continue
                    method, _, alpha = spec.partition(":")
                    clf = GPClassifier(method=method, alpha=float(alpha) if alpha else None, n_inducing=m,
                                       max_iter=args.max_iter, learning_rate=args.learning_rate, random_state=seed,
                                       method_params=args.method_params,
                                       n_jobs=args.threads)
                    start = time.perf_counter()
                    clf.fit(Xtr, ytr)
                    seconds = time.perf_counter() - start
                    metrics = clf.evaluate(Xte, yte)
                    row = base_row("uci-table2-3", dataset=name, method=spec.upper(),
                                   alpha=getattr(clf.model_, "alpha", None), seed=seed,
                                   M=m, M_fraction=frac, batch_size=None, n_train=len(ytr),
                                   learning_rate=args.learning_rate, method_params=args.method_params,
                                   scored_on=scored_on,
                                   test_error=metrics["error"], test_nll=metrics["nll"],
                                   test_ece=metrics["ece"], test_brier=metrics["brier"],
                                   train_seconds=seconds, seconds_per_iter=seconds / clf.n_iter_,
                                   training_seconds=clf.history_[-1]["train_seconds"],
                                   diagnostics=clf.diagnostics_)
                    append_row(args.output, row)
                    print(f"{name:12s} {spec:3s} M={m:4d} split={seed} err={metrics['error']:.3f} "
                          f"nll={metrics['nll']:.3f} {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
