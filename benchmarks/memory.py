"""SEP peak resident memory against N: the same model (M = 50, C = 3, D = 10, mini-batches of
1000) trained for one epoch on 10^4 and on 10^6 synthetic rows streamed from a memory-mapped
file. Each size runs in its own process. Two measures: peak RSS (ru_maxrss, which counts the
memory-mapped file's pages once read: reclaimable page cache) and peak anonymous RSS (the
memory the process allocated itself, sampled every 5 ms from /proc/self/status).

    python benchmarks/memory.py --threads 2
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

D, C = 10, 3


def make_data(path: Path, n: int, seed: int = 0) -> None:
    """Rows x ~ N(0, I_D); labels argmax of three fixed smooth functions, written in chunks."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((D, C))
    X = np.lib.format.open_memmap(path / "X.npy", mode="w+", dtype=np.float64, shape=(n, D))
    y = np.lib.format.open_memmap(path / "y.npy", mode="w+", dtype=np.int64, shape=(n,))
    for start in range(0, n, 100_000):
        chunk = rng.standard_normal((min(100_000, n - start), D))
        X[start:start + len(chunk)] = chunk
        y[start:start + len(chunk)] = np.argmax(np.sin(chunk @ W), axis=1)
    X.flush()
    y.flush()


def _rss_anon_mib() -> float:
    """Anonymous (not file-backed) resident memory of this process, from /proc/self/status."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(path: str, threads: int, batch: int) -> None:
    import threading

    import torch
    torch.set_num_threads(threads)
    from alphagp import GPClassifier
    X = np.load(Path(path) / "X.npy", mmap_mode="r")
    y = np.load(Path(path) / "y.npy", mmap_mode="r")
    peak_anon = [_rss_anon_mib()]
    done = threading.Event()

    def sample():
        while not done.wait(0.005):
            peak_anon[0] = max(peak_anon[0], _rss_anon_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    clf = GPClassifier(method="sep", n_inducing=50, batch_size=batch, max_iter=1, random_state=0,
                       n_jobs=threads).fit(X, y)
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Xt = np.asarray(X[:5000])
    print(json.dumps({"n": len(y), "batch_size": batch, "steps": -(-len(y) // batch), "peak_rss_mib": peak_mib,
                      "peak_anon_rss_mib": peak_anon[0],
                      "train_seconds": seconds, "train_error_first_5000": float(np.mean(clf.predict(Xt) != y[:5000]))}))


def main() -> None:
    parser = benchmark_parser(__doc__, threads=2)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 1_000_000])
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--child", default=None)
    args = parse_benchmark_args(parser)
    if args.child:
        child(args.child, args.threads, args.batch_size)
        return
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            make_data(Path(tmp), n)
            out = subprocess.check_output([sys.executable, __file__, "--child", tmp, "--threads",
                                           str(args.threads), "--batch-size", str(args.batch_size)], text=True)
            result = json.loads(out.strip().splitlines()[-1])
        row = base_row("sep-memory", dataset="synthetic-memmap", method="SEP", alpha=1.0, seed=0, M=50, C=C, D=D,
                       test_error=None, test_nll=None, **result)
        append_row("memory.jsonl", row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
