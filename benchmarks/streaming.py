"""Issue 46, item 5: ``partial_fit`` on a stream against ``fit`` on the whole set.

Each set is split 70/30 as in ``defaults_panel.py`` (stratified, seed 0, standardised by the
training rows). ``method="sep"`` on mini-batches of 128 (the default's streaming candidate) is
trained two ways for ``--passes`` passes over the training rows, one thread:

* ``fit``: a fresh ``GPClassifier(method="sep", batch_size=128, max_iter=passes)`` per recorded
  pass count, the batches shuffled by the trainer, without early stopping;
* ``partial_fit``: the training rows arrive in chunks of ``--chunk`` rows (a new random order each
  pass); each chunk is one ``partial_fit`` call (its batches of 128 in order), with ``n_rows`` the
  training rows; the standardisation and the inducing inputs come from the first chunk.

At each recorded pass count a row records the test NLL and error and the training seconds.

    python benchmarks/streaming.py --threads 1 --output streaming.jsonl
"""

from __future__ import annotations

import time

import numpy as np
from defaults_panel import problem
from threadpoolctl import threadpool_limits

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def row(args, dataset, how, passes, seconds, clf, X_test, y_test, n_train) -> None:
    metrics = clf.evaluate(X_test, y_test)
    append_row(args.output, base_row("streaming", dataset=dataset, how=how, passes=passes,
                                     chunk=args.chunk if how == "partial_fit" else None, n_train=n_train,
                                     train_seconds=seconds, **{f"test_{k}": v for k, v in metrics.items()}))
    print(f"{dataset:12s} {how:12s} pass {passes:3d} {seconds:7.1f} s  NLL {metrics['nll']:.4f} "
          f"error {metrics['error']:.4f}", flush=True)


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="streaming.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["satimage", "mnist_5000"])
    parser.add_argument("--passes", type=int, nargs="+", default=[1, 2, 5, 10],
                        help="the pass counts recorded (fit: a fresh fit of that many epochs)")
    parser.add_argument("--chunk", type=int, default=500)
    args = parse_benchmark_args(parser)
    settings = dict(method="sep", batch_size=128, random_state=0, n_jobs=args.threads, early_stopping=False)
    for dataset in args.datasets:
        X_train, X_test, y_train, y_test = problem(dataset)
        with threadpool_limits(args.threads):
            for passes in args.passes:
                start = time.perf_counter()
                fitted = GPClassifier(max_iter=passes, **settings).fit(X_train, y_train)
                row(args, dataset, "fit", passes, time.perf_counter() - start, fitted, X_test, y_test, len(y_train))
            streamed, seconds, rng = GPClassifier(**settings), 0.0, np.random.default_rng(0)
            for done in range(1, max(args.passes) + 1):
                start = time.perf_counter()
                order = rng.permutation(len(y_train))
                for first in range(0, len(order), args.chunk):
                    rows = order[first:first + args.chunk]
                    streamed.partial_fit(X_train[rows], y_train[rows], classes=np.unique(y_train),
                                         n_rows=len(y_train))
                seconds += time.perf_counter() - start
                if done in args.passes:
                    row(args, dataset, "partial_fit", done, seconds, streamed, X_test, y_test, len(y_train))


if __name__ == "__main__":
    main()
