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
from sklearn.datasets import make_classification

from alphagp import GPClassifier
from alphagp.data import load_benchmark, load_mnist
from alphagp.distributed import Reducer

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def _problem(name: str, n_train: int | None):
    if name == "mnist":
        X, y, X_test, y_test = load_mnist()
    elif name == "synthetic50":       # a many-class problem: 50 classes, 20 features, 25,000 rows
        X, y = make_classification(n_samples=25000, n_features=20, n_informative=15, n_redundant=0, n_classes=50,
                                   n_clusters_per_class=1, class_sep=2.0, random_state=0)
        X, y, X_test, y_test = X[:20000], y[:20000], X[20000:], y[20000:]
    else:
        X, y = load_benchmark(name)
        order = np.random.default_rng(0).permutation(len(y))
        cut = int(0.8 * len(y))
        X, y, X_test, y_test = X[order[:cut]], y[order[:cut]], X[order[cut:]], y[order[cut:]]
    return (X[:n_train], y[:n_train], X_test, y_test) if n_train else (X, y, X_test, y_test)


def _params(args) -> dict:
    extra = {"standardize": False, "kernel_params": {"lengthscale": 10.0}} if args.dataset == "mnist" else {}
    # with a validation split the fit scores it after each epoch (not timed) and runs every epoch
    validation = dict(early_stopping=True, n_iter_no_change=args.epochs) if args.validation else {}
    return dict(method=args.method, n_inducing=args.n_inducing, batch_size=args.batch_size, max_iter=args.epochs,
                random_state=0, **extra, **validation)


class _Traffic:
    """Bytes this process puts into collectives and how many calls: the steps' all-reduces and
    all-gathers, apart from the class blocks' copy at each epoch's end and the one broadcast of
    the initial state. Wraps ``torch.distributed``'s functions, which the
    library calls through the module."""

    def __init__(self):
        self.bytes, self.calls, self.broadcast_bytes, self.epoch_end_bytes = 0, 0, 0, 0
        self._at_epoch_end = False
        for name in ("all_reduce", "all_gather", "broadcast"):
            setattr(dist, name, self._counting(getattr(dist, name), name))
        assemble = Reducer.assemble_classes

        def assembling(reducer, *args, **kwargs):
            self._at_epoch_end = True
            try:
                return assemble(reducer, *args, **kwargs)
            finally:
                self._at_epoch_end = False
        Reducer.assemble_classes = assembling

    def _counting(self, original, name):
        def wrapped(*args, **kwargs):
            tensor = args[1] if name == "all_gather" else args[0]
            size = tensor.numel() * tensor.element_size()
            if name == "broadcast":
                self.broadcast_bytes += size
            elif self._at_epoch_end:
                self.epoch_end_bytes += size
            else:
                self.bytes, self.calls = self.bytes + size, self.calls + 1
            return original(*args, **kwargs)
        return wrapped


def _worker(rank: int, world: int, split: str, init_file: str, args, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    X, y, X_test, y_test = _problem(args.dataset, args.n_train)
    distributed = {"rows": "rows", "classes": True, "one": False}[split]
    traffic = _Traffic()
    clf = GPClassifier(distributed=distributed, **_params(args)).fit(X, y)
    if rank == 0:
        metrics = clf.evaluate(X_test, y_test)
        curve = [[h["train_seconds"], h.get("validation", np.nan)] for h in clf.history_]
        np.savez(out, seconds=clf.history_[-1]["train_seconds"], epochs=clf.n_iter_, error=metrics["error"],
                 nll=metrics["nll"], curve=np.array(curve),
                 traffic=[traffic.bytes, traffic.calls, traffic.broadcast_bytes, traffic.epoch_end_bytes])
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
    parser.add_argument("--validation", action="store_true",
                        help="hold out 10 %% of the training rows and record the validation NLL after each epoch")
    parser.add_argument("--grids", nargs="+", default=["1", "2:rows", "2:classes"],
                        help="runs: 1 (one process) or P:rows / P:classes")
    args = parse_benchmark_args(parser)
    for grid in args.grids:
        world, _, split = grid.partition(":")
        world, split = int(world), split or "one"
        if (world == 1) != (split == "one") or split not in ("one", "rows", "classes"):
            parser.error(f"a grid is 1, P:rows or P:classes, got {grid!r}")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.npz")
            mp.spawn(_worker, args=(world, split, os.path.join(tmp, "init"), args, out), nprocs=world, join=True)
            with np.load(out) as result:
                result = {key: result[key] for key in result.files}
        seconds, epochs = float(result["seconds"]), int(result["epochs"])
        n_rows = len(_problem(args.dataset, args.n_train)[1]) * (0.9 if args.validation else 1.0)
        steps = epochs * int(np.ceil(n_rows / args.batch_size))
        sent, calls, broadcast, epoch_end = result["traffic"]
        row = base_row("distributed", dataset=args.dataset, method=args.method, n_train=args.n_train,
                       M=args.n_inducing, batch_size=args.batch_size, epochs=epochs, processes=world,
                       split=split, threads_per_process=1, train_seconds=seconds, seconds_per_epoch=seconds / epochs,
                       bytes_per_step=float(sent / steps) if world > 1 else 0.0,
                       collectives_per_step=float(calls / steps) if world > 1 else 0.0,
                       initial_broadcast_bytes=float(broadcast), epoch_end_bytes=float(epoch_end / epochs),
                       curve=result["curve"].tolist(), test_error=float(result["error"]),
                       test_nll=float(result["nll"]))
        append_row(args.output, row)
        print(f"{args.dataset} {args.method}: {grid}, {seconds / epochs:.1f} s per epoch, "
              f"{row['bytes_per_step'] / 1e3:.0f} kB in {row['collectives_per_step']:.0f} collectives per step, "
              f"test error {result['error']:.4f}, NLL {result['nll']:.4f}", flush=True)


if __name__ == "__main__":
    main()
