"""Figure 5 of the logistic-softmax paper: what the augmentation costs, on Wine.

Three approximations of the same logistic-softmax GP posterior, with the same fixed kernel and
no inducing-point approximation (the inducing inputs are the training inputs, held fixed):

* ``augmented``: the closed-form VI of the augmented model (batch CAVI);
* ``vi_logistic_softmax``: Gaussian VI of the original model, Monte Carlo gradients (Adam);
* ``augmented_gibbs``: Gibbs sampling of the augmented model, whose draws come from the exact
  posterior; it is the ground truth.

The kernel is the one a batch ``augmented`` fit learns on the training rows first (the paper
fixes its hyper-parameters without saying to what). On the test rows the script compares each
VI method's predictive probabilities p, latent means mu and variances sigma^2 (FITC noise
included) with the sampler's: mean and largest absolute difference and correlation, one JSON
line per (seed, method) to benchmarks/results/augmentation_wine.jsonl, and with ``--plot`` a
scatter of both against the sampler (the figure's layout) for the first seed.

    python benchmarks/augmentation_wine.py --threads 2 --seeds 3 --plot augmentation_wine.png
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.data import load_benchmark
from alphagp.metrics import all_metrics

from common import RESULTS, append_row, base_row, benchmark_parser, parse_benchmark_args

METHODS = {"augmented": dict(max_iter=100),
           "vi_logistic_softmax": dict(max_iter=3000, method_params={"n_mc_samples": 100}),
           "augmented_gibbs": dict(max_iter=100, method_params={"n_samples": 5000, "burn_in": 1000, "thin": 2})}


def latent(clf, X):
    """q's (or the sampler's) means and variances ``[N, C]`` of f at the rows ``X``."""
    Xs = torch.as_tensor((X - clf.mean_) / clf.scale_)
    mean, var = clf.model_.predict_f(Xs)
    return mean.numpy(), var.numpy()


def compare(value: np.ndarray, truth: np.ndarray) -> dict:
    diff = np.abs(value - truth)
    return {"mean_abs": float(diff.mean()), "max_abs": float(diff.max()),
            "corr": float(np.corrcoef(value.ravel(), truth.ravel())[0, 1])}


def main() -> None:
    parser = benchmark_parser(__doc__, output="augmentation_wine.jsonl")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--plot", default=None, help="file name in benchmarks/results for the scatter of seed 0")
    args = parse_benchmark_args(parser)
    warnings.simplefilter("ignore", UserWarning)
    X, y = load_benchmark("wine")
    for seed in range(args.seeds):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=1 / 3, random_state=seed, stratify=y)
        y_idx = np.searchsorted(np.unique(y_tr), y_te)
        common = dict(inducing_points=X_tr, optimize_inducing=False, random_state=seed, n_jobs=args.threads)
        kernel_fit = GPClassifier(method="augmented", max_iter=300, **common).fit(X_tr, y_tr)
        kernel = kernel_fit.model_.kernel
        kernel_params = {"lengthscale": kernel.lengthscale.detach().numpy(),
                         "amplitude": kernel.amplitude.detach().numpy(), "noise": kernel.noise.detach().numpy()}
        outputs = {}
        for method, settings in METHODS.items():
            clf = GPClassifier(method=method, kernel_params=kernel_params, optimize_hyperparameters=False,
                               **settings, **common)
            start = time.perf_counter()
            clf.fit(X_tr, y_tr)
            seconds = time.perf_counter() - start
            outputs[method] = (clf.predict_proba(X_te), *latent(clf, X_te))
            outputs[method + "_metrics"] = dict(all_metrics(outputs[method][0], y_idx), train_seconds=seconds,
                                                diagnostics=clf.diagnostics_)
        truth = outputs["augmented_gibbs"]
        for method in METHODS:
            row = base_row("augmentation_wine", seed=seed, method=method, n_train=len(y_tr), n_test=len(y_te),
                           kernel={k: np.asarray(v).tolist() for k, v in kernel_params.items()},
                           **outputs[method + "_metrics"])
            if method != "augmented_gibbs":
                for name, value, reference in zip(("p", "mu", "var"), outputs[method], truth):
                    row[name] = compare(value, reference)
            append_row(args.output, row)
            print(f"seed {seed} {method:<20} error {row['error']:.3f} nll {row['nll']:.3f} "
                  + " ".join(f"{k}: mean |diff| {row[k]['mean_abs']:.3f} corr {row[k]['corr']:.3f}"
                             for k in ("p", "mu", "var") if k in row), flush=True)
        if seed == 0 and args.plot:
            plot(outputs, RESULTS / args.plot)


def plot(outputs: dict, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    titles = ("predictive probability p", "latent mean mu", "latent variance sigma^2")
    fig, axes = plt.subplots(2, 3, figsize=(11, 7))
    for row, method in enumerate(("vi_logistic_softmax", "augmented")):
        for column, title in enumerate(titles):
            ax = axes[row, column]
            truth, value = outputs["augmented_gibbs"][column].ravel(), outputs[method][column].ravel()
            ax.scatter(truth, value, s=8)
            low, high = min(truth.min(), value.min()), max(truth.max(), value.max())
            ax.plot([low, high], [low, high], "k--", linewidth=1)
            ax.set_title(title if row == 0 else "")
            ax.set_xlabel("Gibbs (exact posterior)")
            ax.set_ylabel(("VI, no augmentation" if row == 0 else "augmented VI") if column == 0 else "")
    fig.suptitle("Wine, test rows, fixed kernel, inducing inputs = training inputs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
