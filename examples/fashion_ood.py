"""
Uncertainty beyond p: telling Fashion-MNIST from MNIST
======================================================

A classifier of handwritten digits is shown pictures of clothes. Its probabilities alone do not
say "I have never seen anything like this"; the GP's posterior does. ``predict_uncertainty``
splits each prediction's entropy into the part the labels' noise explains (aleatoric) and the
part more data would remove (epistemic, the mutual information between the label and the latent
functions). The epistemic part is the natural out-of-distribution score.

The example fits the default ``GPClassifier`` on MNIST digits within a time budget, scores MNIST
test digits and Fashion-MNIST test images, prints the area under the ROC curve of each score for
"this image is not a digit", and draws the two histograms of the epistemic part. It needs MNIST
and Fashion-MNIST in the benchmark folder (``$ALPHAGP_DATA``, by default ``../shared/data``) and
is not run when the documentation builds. BENCHMARKS.md ("What practitioners ask for") has the
measurement at 10,000 training images beside HistGradientBoosting::

    python examples/fashion_ood.py --minutes 5 --rows 10000
    python examples/fashion_ood.py --minutes 0.5 --rows 2000      # a quick look
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from alphagp import GPClassifier
from alphagp.data import load_mnist


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip().splitlines()[-1])
    parser.add_argument("--minutes", type=float, default=5.0, help="training time budget (default 5)")
    parser.add_argument("--rows", type=int, default=10_000, help="MNIST training rows (default 10,000)")
    parser.add_argument("--test-rows", type=int, default=10_000, help="test images of each set (default all)")
    parser.add_argument("--output", type=Path, default=Path("."), help="folder for the figure")
    args = parser.parse_args()

    X, y, X_digits, _ = load_mnist("mnist")                     # pixels in [0, 1]
    _, _, X_clothes, _ = load_mnist("fashion_mnist")
    clf = GPClassifier(max_time=60 * args.minutes, random_state=0, verbose=True)
    clf.fit(X[:args.rows], y[:args.rows])

    images = np.concatenate([X_digits[:args.test_rows], X_clothes[:args.test_rows]])
    is_clothes = np.r_[np.zeros(len(images) // 2), np.ones(len(images) // 2)]
    parts = clf.predict_uncertainty(images)                       # nats, one value per image
    proba = clf.predict_proba(images)
    scores = {"epistemic (mutual information)": parts["epistemic"], "total entropy": parts["total"],
              "1 - largest probability": 1 - proba.max(1)}
    for name, score in scores.items():
        print(f"AUROC {roc_auc_score(is_clothes, score):.3f}  {name}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    bins = np.linspace(0, parts["epistemic"].max(), 40)
    ax.hist(parts["epistemic"][is_clothes == 0], bins, alpha=0.6, label="MNIST digits (seen)")
    ax.hist(parts["epistemic"][is_clothes == 1], bins, alpha=0.6, label="Fashion-MNIST (never seen)")
    ax.set_xlabel("epistemic uncertainty (nats)")
    ax.set_ylabel("test images")
    ax.legend()
    fig.tight_layout()
    args.output.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output / "fashion_ood.png", dpi=90)
    print(f"figure: {args.output / 'fashion_ood.png'}")


if __name__ == "__main__":
    main()
