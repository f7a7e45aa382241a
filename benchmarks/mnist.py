"""MNIST with M = 200 inducing points per class, mini-batches of 200 and Adam (section 4.4).

Records test error and NLL against training time (evaluation time excluded) every
``--eval-every`` epochs into benchmarks/results/mnist.jsonl. The paper reports SEP at 2.08%
error and 0.0725 NLL.

    python benchmarks/mnist.py --method sep --threads 2 --max-minutes 75 --learning-rate-decay 0.96 --eval-every 2
"""

from __future__ import annotations

import argparse

import torch

from alphagp import GPClassifier
from alphagp.data import load_mnist
from alphagp.training import MetricsRecorder

from common import append_row, base_row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="sep", choices=["ep", "sep"])
    parser.add_argument("--n-inducing", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--max-minutes", type=float, default=40.0, help="training-time budget")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--learning-rate-decay", type=float, default=1.0,
                        help="Adam's rate is multiplied by this after every epoch")
    parser.add_argument("--lengthscale", type=float, default=10.0,
                        help="initial lengthscale on raw [0, 1] pixels (about the typical distance "
                             "between two images; pixels are not standardised)")
    parser.add_argument("--damping", type=float, default=1.0,
                        help="EP damping; SEP replaces damping x |B| / N of its tied factor per step")
    parser.add_argument("--eval-every", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint file; a run started again with it resumes (the time budget counts "
                             "training time over all parts)")
    parser.add_argument("--output", default="mnist.jsonl", help="results file in benchmarks/results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    Xtr, ytr, Xte, yte = load_mnist()
    clf = GPClassifier(method=args.method, n_inducing=args.n_inducing, batch_size=args.batch_size,
                       max_iter=args.max_epochs, damping=args.damping, learning_rate=args.learning_rate,
                       learning_rate_decay=args.learning_rate_decay, standardize=False,
                       kernel_params={"lengthscale": args.lengthscale},
                       checkpoint=args.checkpoint, random_state=args.seed, verbose=False)
    recorder = MetricsRecorder(lambda X: clf.predict_proba(X), Xte, yte, every=args.eval_every)

    def report(state):
        if recorder.rows and recorder.rows[-1]["epoch"] == state.epoch:
            r = recorder.rows[-1]
            row = base_row("mnist", dataset="mnist", method=args.method.upper(), alpha=1.0, seed=args.seed,
                           M=args.n_inducing, batch_size=args.batch_size, epoch=r["epoch"],
                           test_error=r["error"], test_nll=r["nll"], test_ece=r["ece"],
                           test_brier=r["brier"], train_seconds=r["train_seconds"],
                           seconds_per_epoch=r["train_seconds"] / r["epoch"], learning_rate=args.learning_rate,
                           learning_rate_decay=args.learning_rate_decay, damping=args.damping)
            append_row(args.output, row)
            print(f"epoch {r['epoch']:3d}  {r['train_seconds']:8.1f} s  error {100 * r['error']:.2f}%  "
                  f"nll {r['nll']:.4f}", flush=True)
        if state.train_seconds > 60 * args.max_minutes:
            state.stop = True

    clf.fit(Xtr, ytr, callbacks=[recorder, report])


if __name__ == "__main__":
    main()
