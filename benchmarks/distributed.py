"""Speed-up of data-parallel SEP (``GPClassifier(distributed=True)``) from 1 to 2 processes.

The same fit (same global batch, seed and data) runs in 1 and then in 2 gloo processes on this
machine, one thread each; the models are equal up to rounding, so the time per epoch measures
the speed-up alone. One row per run (the first process's history), with the test metrics, which
must agree between the runs.

    python benchmarks/distributed.py --dataset mnist --n-train 20000 --epochs 2 --output distributed.jsonl
    python benchmarks/distributed.py --dataset satimage --epochs 20 --output distributed.jsonl
    python benchmarks/report.py distributed
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from alphagp import GPClassifier
from alphagp.data import load_benchmark, load_mnist

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def _problem(name: str, n_train: int | None):
    if name == "mnist":
        X, y, X_test, y_test = load_mnist()
    else:
        X, y = load_benchmark(name)
        order = np.random.default_rng(0).permutation(len(y))
        cut = int(0.8 * len(y))
        X, y, X_test, y_test = X[order[:cut]], y[order[:cut]], X[order[cut:]], y[order[cut:]]
    return (X[:n_train], y[:n_train], X_test, y_test) if n_train else (X, y, X_test, y_test)


def _params(args) -> dict:
    extra = {"standardize": False, "kernel_params": {"lengthscale": 10.0}} if args.dataset == "mnist" else {}
    return dict(method="sep", n_inducing=args.n_inducing, batch_size=args.batch_size, max_iter=args.epochs,
                random_state=0, **extra)


def _worker(rank: int, world: int, init_file: str, args, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        X, y, X_test, y_test = _problem(args.dataset, args.n_train)
        clf = GPClassifier(distributed=True, **_params(args)).fit(X, y)
        if rank == 0:
            metrics = clf.evaluate(X_test, y_test)
            np.save(out, np.array([clf.history_[-1]["train_seconds"], clf.n_iter_, metrics["error"], metrics["nll"]]))
    finally:
        dist.destroy_process_group()


def main() -> None:
    parser = benchmark_parser(__doc__, threads=None, output="distributed.jsonl")
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--n-train", type=int, default=None, help="first rows of the training set")
    parser.add_argument("--n-inducing", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    args = parse_benchmark_args(parser)
    for world in args.processes:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.npy")
            mp.spawn(_worker, args=(world, os.path.join(tmp, "init"), args, out), nprocs=world, join=True)
            seconds, epochs, error, nll = np.load(out)
        row = base_row("distributed", dataset=args.dataset, n_train=args.n_train, M=args.n_inducing,
                       batch_size=args.batch_size, epochs=int(epochs), processes=world, threads_per_process=1,
                       train_seconds=float(seconds), seconds_per_epoch=float(seconds / epochs),
                       test_error=float(error), test_nll=float(nll))
        append_row(args.output, row)
        print(f"{args.dataset}: {world} process(es), {seconds / epochs:.1f} s per epoch, test error {error:.4f}, "
              f"NLL {nll:.4f}", flush=True)


if __name__ == "__main__":
    main()
