"""Training time to reach a test NLL: the issue's speed reference on Satellite at M = 5%.

The authors' implementation needs about a minute for its 250 batch iterations on Satellite
(20/80 split, M = 5%) and reaches the paper's test NLL (EP 0.31, SEP 0.33, Table 2). This
records, for each split and initial sign-adaptive learning rate, the test NLL every
``--eval-every`` iterations against training time (evaluation not counted), and the first
training time at which the test NLL is at or below the target. One JSON line per
(method, rate, split) goes to benchmarks/results/time_to_nll.jsonl.

    python benchmarks/time_to_nll.py --threads 2 --rates 0.1 0.3 1.0

Figure 4 of the EP paper (GFITC, SEP and VI on Satellite with M = 4, 20, 100, batch training,
each method's default optimiser and rate; there is no target NLL at a fixed M):

    python benchmarks/time_to_nll.py --threads 1 --methods gfitc sep vi --inducing 4 20 100 --rates default \
        --splits 3 --output satellite_time.jsonl

The alpha paper's Figure 3 (the same curves for PEP, APEP, ARPEP and RPAPEP at alpha -> 0 (0.001),
0.3, 0.5, 0.8 and 1, and VI; a method's alpha after a colon), resumable with ``--skip-done``:

    all="vi"; for m in pep apep arpep rpapep; do for a in 0.001 0.3 0.5 0.8 1; do all="$all $m:$a"; done; done
    python benchmarks/time_to_nll.py --threads 1 --methods $all --inducing 4 20 100 --rates default \
        --splits 2 --output satellite_alpha_time.jsonl --skip-done
"""

from __future__ import annotations

from alphagp import GPClassifier
from alphagp.training import MetricsRecorder

from common import (
    append_row,
    base_row,
    benchmark_parser,
    done_keys,
    first_reaching,
    parse_benchmark_args,
    split,
)

PAPER_NLL = {"ep": 0.31, "sep": 0.33}  # Table 2, Satellite, M = 5%


def fit_curve(problem, spec: str, m: int, rate: float | None, seed: int, args) -> dict:
    """The row of one fit: method ``spec`` (a name, alpha after a colon) at ``m`` inducing points
    and initial rate ``rate`` on one split's ``problem`` (``Xtr, Xte, ytr, yte``), its test NLL
    and error every ``--eval-every`` iterations, and where it first reaches the paper's NLL."""
    Xtr, Xte, ytr, yte = problem
    method, _, alpha = spec.partition(":")
    clf = GPClassifier(method=method, alpha=float(alpha) if alpha else None, n_inducing=m, max_iter=args.max_iter,
                       learning_rate=rate, random_state=seed, n_jobs=args.threads)
    recorder = MetricsRecorder(Xte, yte, every=args.eval_every)
    clf.fit(Xtr, ytr, callbacks=[recorder])
    target = None if args.inducing else PAPER_NLL.get(method)
    curve = [{"iteration": r["epoch"], "train_seconds": r["train_seconds"],
              "test_nll": r["nll"], "test_error": r["error"]} for r in recorder.rows]
    hit = first_reaching(curve, target) if target is not None else None
    final = recorder.rows[-1]
    return base_row("time-to-nll", dataset=args.dataset, method=method.upper(), method_spec=spec,
                    alpha=getattr(clf.model_, "alpha", None), seed=seed, M=m,
                    M_fraction=None if args.inducing else args.fraction, batch_size=None, learning_rate=rate,
                    target_nll=target, iterations_to_target=None if hit is None else hit["iteration"],
                    seconds_to_target=None if hit is None else hit["train_seconds"], final_test_nll=final["nll"],
                    final_test_error=final["error"], train_seconds=final["train_seconds"], iterations=clf.n_iter_,
                    curve=curve)


def main() -> None:
    parser = benchmark_parser(__doc__, threads=2, output="time_to_nll.jsonl")
    parser.add_argument("--dataset", default="satimage")
    parser.add_argument("--fraction", type=float, default=0.05)
    parser.add_argument("--methods", nargs="+", default=["ep", "sep"], help="method names, alpha after a colon (pep:0.5)")
    parser.add_argument("--inducing", nargs="+", type=int, default=None,
                        help="numbers of inducing points (default: --fraction of the training rows)")
    parser.add_argument("--rates", nargs="+", type=lambda v: None if v == "default" else float(v),
                        default=[0.1, 0.3, 1.0], help="initial rates; 'default' for the method's own")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--max-iter", type=int, default=250)
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--skip-done", action="store_true", help="leave out the fits the output file already holds")
    args = parse_benchmark_args(parser)
    done = done_keys(args.output, lambda r: (r["dataset"], r.get("method_spec", r["method"].lower()), r["seed"],
                                             r["M"], r["learning_rate"])) if args.skip_done else set()
    for seed in range(args.splits):
        problem = split(args.dataset, seed)
        sizes = args.inducing or [max(1, round(args.fraction * len(problem[2])))]
        for m, spec, rate in ((m, spec, rate) for m in sizes for spec in args.methods for rate in args.rates):
            if (args.dataset, spec, seed, m, rate) in done:
                continue
            row = fit_curve(problem, spec, m, rate, seed, args)
            append_row(args.output, row)
            it, seconds = row["iterations_to_target"], row["seconds_to_target"]
            reached = "not reached" if it is None else f"iteration {it}, {seconds:.2f} s"
            print(f"{row['method'].lower():3s} M={m} rate={rate} split={seed} target {row['target_nll']}: {reached}; "
                  f"final nll={row['final_test_nll']:.3f} in {row['train_seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
