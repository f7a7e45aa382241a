"""Tables C.13 / C.14 of the deep-GP paper, MNIST: test NLL and error of a 2-layer deep GP.

The paper's model: L = 2, H = 8 hidden units, a degree-9 ARD polynomial kernel in the first
layer, M = 100, mini-batches of 100, S = 20, Adam at 0.01; 60,000 training and 10,000 test
images (pixels scaled to [0, 1], then standardised by the estimator). Year and HIGGS are not
available offline and are skipped. Nothing is tuned: each alpha is fitted once for ``--epochs``
epochs (recorded) and scored once on the test set. One JSON line per alpha in
benchmarks/results/dgp_mnist.jsonl.

    python benchmarks/dgp_mnist.py --threads 2 --epochs 5 --alphas 0.001 0.5 1
"""

from __future__ import annotations

import time

from alphagp import DeepGPClassifier
from alphagp.data import load_mnist

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def main() -> None:
    parser = benchmark_parser(__doc__, output="dgp_mnist.jsonl")
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-3, 0.5, 1.0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    args = parse_benchmark_args(parser)
    X_tr, y_tr, X_te, y_te = load_mnist("mnist")
    for alpha in args.alphas:
        clf = DeepGPClassifier(n_layers=args.layers, n_hidden=8, n_inducing=100, first_layer_kernel="polynomial",
                               alpha=alpha, n_samples=20, batch_size=100, max_iter=args.epochs, learning_rate=0.01,
                               n_jobs=args.threads, verbose=True, random_state=0)
        start = time.perf_counter()
        clf.fit(X_tr, y_tr)
        seconds = time.perf_counter() - start
        metrics = clf.evaluate(X_te, y_te)
        append_row(args.output, base_row("dgp-mnist", alpha=alpha, layers=args.layers, epochs=args.epochs,
                                         train_seconds=seconds, **metrics))
        print(f"alpha={alpha:<6g} error {metrics['error']:.4f} nll {metrics['nll']:.4f} ({seconds:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
