"""Tables C.13 / C.14 of the deep-GP paper, MNIST: the error and NLL of a 2-layer deep GP against iterations.

The paper's model: L = 2, H = 8 hidden units, a degree-9 ARD polynomial kernel in the first
layer, M = 100, mini-batches of 100, S = 20, Adam at 0.01, 200,000 iterations (the authors'
``run_exp.py``). Pixels are in [0, 1]; ``--pixels standardized`` standardises each one (the
estimator's default), ``--pixels unit`` keeps them in [0, 1]; ``--kernel`` picks the first layer's
kernel (``polynomial``, ``normalized_polynomial`` or ``rbf``).

Protocol (nothing is chosen on the test set): the last ``--validation`` training images (default
10,000) are held out and the model trains on the other 50,000. After every ``--eval-every``
epochs (500 iterations each) a row with the validation error and NLL is appended
(``phase="curve"``). ``--checkpoint`` makes a run resumable: a later call with the same settings
and a larger ``--epochs`` continues it (``--max-time`` bounds one call), so the curve can grow
across calls. ``--save-model`` writes the model at the end of the call; ``--test MODEL...``
compares saved models on the validation split and evaluates the test split once, for the one of
lowest validation NLL (``phase="test"``). Year and HIGGS are not available offline.

    python benchmarks/dgp_mnist.py --threads 2 --alpha 0.5 --kernel normalized_polynomial \\
        --epochs 4 --label norm --checkpoint benchmarks/checkpoints/dgp_mnist_norm.pt
"""

from __future__ import annotations

import time

import numpy as np

from alphagp import DeepGPClassifier
from alphagp.data import load_mnist
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

ITERATIONS_PER_EPOCH = 500        # 50,000 training images in batches of 100


def main() -> None:
    parser = benchmark_parser(__doc__, output="dgp_mnist_curve.jsonl")
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--kernel", default="normalized_polynomial",
                        choices=["polynomial", "normalized_polynomial", "rbf"])
    parser.add_argument("--pixels", default="standardized", choices=["standardized", "unit"])
    parser.add_argument("--epochs", type=int, default=4, help="total epochs of the run (across resumed calls)")
    parser.add_argument("--max-time", type=float, default=None, help="seconds this call may train")
    parser.add_argument("--eval-every", type=int, default=1)
    parser.add_argument("--validation", type=int, default=10_000)
    parser.add_argument("--label", default="run", help="names the run's rows")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--save-model", default=None)
    parser.add_argument("--test", nargs="+", default=None, metavar="MODEL",
                        help="saved models: evaluate the test split once for the one of lowest validation NLL")
    parser.add_argument("--by-norm", nargs="+", default=None, metavar="MODEL",
                        help="saved models: validation error and NLL of the 10 %% of images of largest standardised "
                             "norm against the rest")
    args = parse_benchmark_args(parser)
    X, y, X_te, y_te = load_mnist("mnist")
    Xtr, ytr, Xva, yva = X[:-args.validation], y[:-args.validation], X[-args.validation:], y[-args.validation:]
    if args.test:
        choose_and_test(args, Xva, yva, X_te, y_te)
        return
    if args.by_norm:
        by_norm(args, Xtr, Xva, yva)
        return
    clf = DeepGPClassifier(n_layers=args.layers, n_hidden=8, n_inducing=100, first_layer_kernel=args.kernel,
                           standardize=args.pixels == "standardized", alpha=args.alpha, n_samples=20,
                           batch_size=100, max_iter=args.epochs, max_time=args.max_time, learning_rate=0.01,
                           early_stopping=False, checkpoint=args.checkpoint, n_jobs=args.threads, verbose=True,
                           random_state=0)
    settings = {"label": args.label, "alpha": args.alpha, "layers": args.layers, "kernel": args.kernel,
                "pixels": args.pixels, "n_train": len(ytr), "n_validation": len(yva)}

    evaluated = set()

    def evaluate(epoch: int, train_seconds: float, history: list[dict]) -> None:
        start = time.perf_counter()
        val = all_metrics(clf._proba(Xva, validated=True), yva)
        evaluated.add(epoch)
        iterations = iterations_done(history)
        append_row(args.output, base_row("dgp-mnist", phase="curve", epoch=epoch, iterations=iterations,
                                         iterations_counted="steps", train_seconds=train_seconds,
                                         val_error=val["error"], val_nll=val["nll"], val_ece=val["ece"], **settings))
        print(f"epoch {epoch:4d}  iteration {iterations:7d}  {train_seconds:8.0f} s"
              f"  validation error {100 * val['error']:.2f}%  NLL {val['nll']:.4f}"
              f"  (evaluated in {time.perf_counter() - start:.0f} s)", flush=True)

    def record(state) -> None:
        if state.epoch % args.eval_every == 0:
            evaluate(state.epoch, state.train_seconds, state.history)

    clf.fit(Xtr, ytr, callbacks=[record])
    if clf.n_iter_ not in evaluated:            # the end of this call (the epochs, or --max-time)
        evaluate(clf.n_iter_, clf.history_[-1]["train_seconds"], clf.history_)
    if args.save_model:
        clf.save(args.save_model)


def iterations_done(history: list[dict]) -> int:
    """Adam steps taken so far: 500 per epoch, fewer for an epoch that ``--max-time`` cut short
    (its history entry records the rows it processed). Rows written before this count existed
    (no ``iterations_counted`` key) took 500 per epoch, which overstates by less than 500 per call
    that ``--max-time`` ended."""
    return sum(-(-h["rows"] // 100) if "rows" in h else ITERATIONS_PER_EPOCH for h in history)


def by_norm(args, Xtr, Xva, yva) -> None:
    """Validation metrics of each saved model on the 10 % of images whose per-pixel standardised
    norm is largest (where the plain polynomial kernel's prior variance explodes) and on the rest."""
    mean, std = Xtr.mean(0), Xtr.std(0)
    norms = np.linalg.norm((Xva - mean) / np.where(std > 0, std, 1.0), axis=1)
    large = norms >= np.quantile(norms, 0.9)
    for path in args.by_norm:
        clf = DeepGPClassifier.load(path)
        clf.n_jobs = args.threads
        proba = clf.predict_proba(Xva)
        parts = {name: all_metrics(proba[rows], yva[rows]) for name, rows in (("largest", large), ("rest", ~large))}
        append_row(args.output, base_row("dgp-mnist", phase="by-norm", model=path, kernel=clf.first_layer_kernel,
                                         pixels="standardized" if clf.standardize else "unit",
                                         norm_threshold=float(np.quantile(norms, 0.9)),
                                         **{f"{name}_{k}": v[k] for name, v in parts.items() for k in ("error", "nll")}))
        print(f"{path}: largest-norm 10 %: error {100 * parts['largest']['error']:.2f}% NLL "
              f"{parts['largest']['nll']:.4f}; rest: error {100 * parts['rest']['error']:.2f}% NLL "
              f"{parts['rest']['nll']:.4f}", flush=True)


def choose_and_test(args, Xva, yva, X_te, y_te) -> None:
    """Validation NLL of each saved model (skipped when there is one); the test split once for the lowest."""
    scores = {}
    for path in args.test if len(args.test) > 1 else ():
        clf = DeepGPClassifier.load(path)
        clf.n_jobs = args.threads
        scores[path] = all_metrics(clf.predict_proba(Xva), yva)["nll"]
        print(f"{path}: validation NLL {scores[path]:.4f}", flush=True)
    chosen = min(scores, key=scores.get) if scores else args.test[0]
    clf = DeepGPClassifier.load(chosen)
    clf.n_jobs = args.threads
    test = clf.evaluate(X_te, y_te)
    append_row(args.output, base_row("dgp-mnist", phase="test", model=chosen, validation_nll=scores,
                                     epochs=int(clf.n_iter_), iterations=iterations_done(clf.history_), iterations_counted="steps",
                                     kernel=clf.first_layer_kernel, alpha=clf.alpha,
                                     pixels="standardized" if clf.standardize else "unit", **test))
    print(f"chosen {chosen}: test error {100 * test['error']:.2f}%  NLL {test['nll']:.4f}", flush=True)


if __name__ == "__main__":
    main()
