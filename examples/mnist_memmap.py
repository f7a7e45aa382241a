"""
MNIST from a memory-map, with progress and a validation curve
=============================================================

The README's recipe for MNIST-sized data, end to end: the training pixels go to a ``.npy`` file
on disk that the fit reads as a NumPy memory-map, one mini-batch at a time (the model's memory
does not grow with the rows); stochastic EP (``sep``) trains within a time budget with a cosine
learning-rate schedule, holding out 10 % of the rows to pick the best state; the progress line
shows the epoch, the held-out NLL and the time left; the test set is scored once at the end, and
the held-out NLL is drawn against training time.

It needs MNIST in the benchmark folder (``$ALPHAGP_DATA``, by default ``../shared/data``) and
is not run when the documentation builds. On one thread, ten minutes reach about 3 % test error;
thirty minutes on two idle cores gave 2.26 % (BENCHMARKS.md, "MNIST in 30 minutes")::

    python examples/mnist_memmap.py --minutes 10
    python examples/mnist_memmap.py --minutes 1 --rows 5000     # a quick look
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from alphagp import GPClassifier
from alphagp.data import load_mnist
from alphagp.plotting import plot_history


def write_memmap(X: np.ndarray, path: Path) -> np.ndarray:
    """``X`` written to ``path`` in NumPy's ``.npy`` format, opened again read-only as a memory-map."""
    disk = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=X.shape)
    for start in range(0, len(X), 10_000):              # in chunks, as a larger-than-memory set would be
        disk[start:start + 10_000] = X[start:start + 10_000]
    disk.flush()
    del disk
    return np.load(path, mmap_mode="r")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip().splitlines()[-1])
    parser.add_argument("--minutes", type=float, default=10.0, help="training time budget (default 10)")
    parser.add_argument("--rows", type=int, default=None, help="use the first ROWS training rows (default all 60,000)")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads (default 1)")
    parser.add_argument("--output", type=Path, default=Path("."), help="folder for the memory-map and the figure")
    args = parser.parse_args()

    X_train, y_train, X_test, y_test = load_mnist()      # pixels in [0, 1]
    X_train, y_train = X_train[:args.rows], y_train[:args.rows]
    args.output.mkdir(parents=True, exist_ok=True)
    X_disk = write_memmap(X_train, args.output / "mnist_train.npy")
    print(f"training rows on disk: {X_disk.shape} in {X_disk.filename}")

    clf = GPClassifier(method="sep", n_inducing=200, batch_size=1000, learning_rate=0.02,
                       learning_rate_decay="cosine", max_time=60 * args.minutes, max_iter=1000,
                       early_stopping=True, standardize=False, kernel_params={"lengthscale": 10.0},
                       n_jobs=args.threads, verbose=True, random_state=0)
    clf.fit(X_disk, y_train)

    metrics = clf.evaluate(X_test, y_test)
    print(f"{clf.n_iter_} epochs, best held-out NLL at epoch {clf.best_iteration_}: test error "
          f"{metrics['error']:.4f}, NLL {metrics['nll']:.4f}, ECE {metrics['ece']:.4f}")
    figure = args.output / "mnist_validation.png"
    plot_history({"SEP, M = 200": clf}, "validation", figure, title="MNIST: held-out NLL")
    print(f"validation curve: {figure}")


if __name__ == "__main__":
    main()
