"""What each change of issue 26 does on MNIST: the paper's model (L = 2, H = 8, degree-9 polynomial
first layer on standardised pixels, M = 100, S = 20, batches of 100, Adam 0.01) for ``--epochs``
epochs of 500 iterations on 50,000 training images, scored on the 10,000 held-out ones (the
validation split of ``dgp_mnist.py``; the test split is not read).

``--positive softplus`` stores the kernel parameters through a softplus instead of logs. The
factor form of q is the code before issue 26: run this script with that revision's ``src`` first
on ``PYTHONPATH`` (``git worktree add /tmp/before 4a867b3``) and ``--code-label``; the row records
which alphagp it imported.

    PYTHONPATH=/tmp/before/src python benchmarks/dgp_mnist_ablation.py --threads 2 --code-label "factor q, softplus (4a867b3)"
    python benchmarks/dgp_mnist_ablation.py --threads 2 --positive softplus --code-label "whitened q, softplus"
"""

from __future__ import annotations

import functools
import time

import alphagp
from alphagp import DeepGPClassifier
from alphagp.data import load_mnist
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def main() -> None:
    parser = benchmark_parser(__doc__, output="dgp_mnist_screen.jsonl")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--positive", default=None, choices=["softplus", "log"],
                        help="kernel parameter storage (default: the library's)")
    parser.add_argument("--code-label", required=True, help="names the code and variant in the row")
    args = parse_benchmark_args(parser)
    if args.positive is not None:
        from alphagp.estimators import deep_gp
        deep_gp.initial_layers = functools.partial(deep_gp.initial_layers, positive=args.positive)
    X, y, _, _ = load_mnist("mnist")
    Xtr, ytr, Xva, yva = X[:-10_000], y[:-10_000], X[-10_000:], y[-10_000:]
    clf = DeepGPClassifier(n_layers=2, n_hidden=8, n_inducing=100, first_layer_kernel="polynomial", alpha=0.5,
                           n_samples=20, batch_size=100, max_iter=args.epochs, learning_rate=0.01,
                           early_stopping=False, n_jobs=args.threads, verbose=True, random_state=0)
    start = time.perf_counter()
    clf.fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    val = all_metrics(clf.predict_proba(Xva), yva)
    energies = [h["objective"] for h in clf.history_]
    append_row(args.output, base_row("dgp-mnist", phase="ablation", label=args.code_label, alphagp=alphagp.__file__,
                                     epochs=args.epochs, iterations=500 * args.epochs, train_seconds=seconds,
                                     epoch_energy=energies, val_error=val["error"], val_nll=val["nll"]))
    print(f"{args.code_label}: validation error {100 * val['error']:.2f}% NLL {val['nll']:.4f} "
          f"(energy per epoch {energies})", flush=True)


if __name__ == "__main__":
    main()
