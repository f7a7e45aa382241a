"""alphagp's sparse VI beside GPflow's SVGP: same splits, inducing points, initial kernel, likelihood.

Both fit the same model (robust-max likelihood with labelling-error probability 1e-3, one ARD
squared-exponential kernel with additive noise and one set of M inducing points per class,
whitened full-covariance q(u), all parameters by full-batch Adam at the same rate) on the UCI
splits of ``uci.py`` (M a fraction of the training rows, inducing points at random training
points, the same for both). The test NLL and error are recorded every ``--eval-every``
iterations against training seconds; one JSON line per (library, data set, split) goes to
benchmarks/results/<output>. Both run one thread, one after the other. The one modelling
difference: GPflow's white-noise kernel also adds the noise to K_uu, alphagp adds it only to
the data points' prior variances.

    bash benchmarks/peers/install_gpflow.sh     # once
    python benchmarks/vi_vs_gpflow.py --splits 3 --output vi_vs_gpflow.jsonl
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import torch

from alphagp import GPClassifier
from alphagp.data.streaming import column_mean_std
from alphagp.inducing import init_inducing_points
from alphagp.kernels import ARDKernel
from alphagp.training import MetricsRecorder

from common import DATASETS, append_row, base_row, benchmark_parser, class_index, parse_benchmark_args, split

PEERS = Path(__file__).resolve().parent / "peers"
EPSILON = 1e-3


def run_alphagp(problem: dict) -> tuple[list[dict], dict]:
    clf = GPClassifier(method="vi", n_inducing=problem["Z"].shape[1], inducing_points=problem["Z"],
                       standardize=False, epsilon=EPSILON, max_iter=int(problem["iterations"]), tol=None,
                       learning_rate=float(problem["learning_rate"]), n_jobs=1, random_state=0)
    every = int(problem["eval_every"])
    recorder = MetricsRecorder(problem["X_test"], problem["y_test"], every=every)
    clf.fit(problem["X_train"], problem["y_train"], callbacks=[recorder])
    return [{"iteration": r["epoch"], "train_seconds": r["train_seconds"], "test_nll": r["nll"],
             "test_error": r["error"]} for r in recorder.rows], {}


def run_gpflow(problem: dict, python: Path) -> tuple[list[dict], dict]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "problem.npz"
        np.savez(path, **problem)
        out = subprocess.run([str(python), str(PEERS / "gpflow_svgp.py"), str(path)], check=True,
                             stdout=subprocess.PIPE, text=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                                                                  "TF_CPP_MIN_LOG_LEVEL": "2"})
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["curve"], {k: result[k] for k in ("version", "tensorflow", "first_step_seconds")}


def main() -> None:
    parser = benchmark_parser(__doc__, threads=None, output="vi_vs_gpflow.jsonl")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--fraction", type=float, default=0.05)
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--gpflow-python", type=Path, default=PEERS / ".venv-gpflow" / "bin" / "python")
    args = parse_benchmark_args(parser)
    if not args.gpflow_python.exists():
        raise SystemExit(f"{args.gpflow_python} not found: run bash benchmarks/peers/install_gpflow.sh first")
    torch.set_num_threads(1)
    for name in args.datasets:
        for seed in range(args.splits):
            Xtr, Xte, ytr, yte = split(name, seed)
            mean, std = column_mean_std(Xtr)              # the estimator's standardisation
            std = np.where(std > 0, std, 1.0)
            Xtr, Xte = (Xtr - mean) / std, (Xte - mean) / std
            C, D = len(np.unique(ytr)), Xtr.shape[1]
            m = max(1, round(args.fraction * len(ytr)))
            kernel = ARDKernel(C, D)                      # alphagp's initial kernel, shared with GPflow
            problem = {"X_train": Xtr, "y_train": class_index(ytr, ytr), "X_test": Xte,
                       "y_test": class_index(yte, ytr),
                       "Z": init_inducing_points(Xtr, C, m, rng=np.random.default_rng(seed)),
                       **{k: getattr(kernel, k).detach().numpy() for k in ("lengthscale", "amplitude", "noise")},
                       "epsilon": EPSILON, "learning_rate": args.learning_rate, "iterations": args.iterations,
                       "eval_every": args.eval_every}
            runners = {"alphagp": run_alphagp, "gpflow": lambda p: run_gpflow(p, args.gpflow_python)}
            for library, run in runners.items():
                curve, extra = run(problem)
                final = curve[-1]
                row = base_row("vi-vs-gpflow", library=library, dataset=name, method="VI", seed=seed, M=m,
                               M_fraction=args.fraction, learning_rate=args.learning_rate, iterations=args.iterations,
                               epsilon=EPSILON, final_test_nll=final["test_nll"], final_test_error=final["test_error"],
                               train_seconds=final["train_seconds"], curve=curve, **extra)
                append_row(args.output, row)
                print(f"{name:12s} split={seed} M={m:3d} {library:8s} nll={final['test_nll']:.3f} "
                      f"err={final['test_error']:.3f} {final['train_seconds']:.1f}s", flush=True)


if __name__ == "__main__":
    main()
