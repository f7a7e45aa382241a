"""Speed-up of distributed training (``GPClassifier(distributed=...)``) against one process.

The same fit (same global batch, seed and data) runs in one process and then split across gloo
processes on this machine, one thread each: by rows (``distributed="rows"``) or by classes
(``distributed=True``; with more processes than class blocks, by classes and rows). The models
are equal up to rounding, so the time per epoch measures the speed-up alone. One row per run
(the first process's history), with the test metrics, which must agree between the runs.

``--grids`` lists the runs: ``1`` (one process), ``2:rows``, ``2:classes``, ``4:classes``, ...

    python benchmarks/distributed.py --dataset mnist --n-train 20000 --epochs 2 --grids 1 2:rows 2:classes
    python benchmarks/distributed.py --dataset satimage --epochs 20 --grids 1 2:rows 2:classes
    python benchmarks/report.py distributed
"""

from __future__ import annotations

import os
import sys
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
    return dict(method=args.method, n_inducing=args.n_inducing, batch_size=args.batch_size, max_iter=args.epochs,
                random_state=0, **extra)


def _worker(rank: int, world: int, split: str, init_file: str, args, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    X, y, X_test, y_test = _problem(args.dataset, args.n_train)
    distributed = {"rows": "rows", "classes": True, "one": False}[split]
    clf = GPClassifier(distributed=distributed, **_params(args)).fit(X, y)
    if rank == 0:
        metrics = clf.evaluate(X_test, y_test)
        np.save(out, np.array([clf.history_[-1]["train_seconds"], clf.n_iter_, metrics["error"], metrics["nll"]]))
    # leave without the interpreter's finalisation, where gloo's threads can abort a finished
    # process (see tests/test_distributed.py, _leave_group)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)


def main() -> None:
    parser = benchmark_parser(__doc__, threads=None, output="distributed.jsonl")
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--n-train", type=int, default=None, help="first rows of the training set")
    parser.add_argument("--n-inducing", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--method", default="sep")
    parser.add_argument("--grids", nargs="+", default=["1", "2:rows", "2:classes"],
                        help="runs: 1 (one process) or P:rows / P:classes")
    args = parse_benchmark_args(parser)
    for grid in args.grids:
        world, _, split = grid.partition(":")
        world, split = int(world), split or "one"
        if (world == 1) != (split == "one") or split not in ("one", "rows", "classes"):
            parser.error(f"a grid is 1, P:rows or P:classes, got {grid!r}")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.npy")
            mp.spawn(_worker, args=(world, split, os.path.join(tmp, "init"), args, out), nprocs=world, join=True)
            seconds, epochs, error, nll = np.load(out)
        row = base_row("distributed", dataset=args.dataset, method=args.method, n_train=args.n_train,
                       M=args.n_inducing, batch_size=args.batch_size, epochs=int(epochs), processes=world,
                       split=split, threads_per_process=1, train_seconds=float(seconds),
                       seconds_per_epoch=float(seconds / epochs), test_error=float(error), test_nll=float(nll))
        append_row(args.output, row)
        print(f"{args.dataset} {args.method}: {grid}, {seconds / epochs:.1f} s per epoch, test error {error:.4f}, "
              f"NLL {nll:.4f}", flush=True)


if __name__ == "__main__":
    main()
