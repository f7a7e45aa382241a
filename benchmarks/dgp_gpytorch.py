"""alphagp's deep GP against GPyTorch's (doubly stochastic VI) on the same problems, splits,
architecture and initial model, in one run.

For each problem (the synthetic ones of ``dgp_synthetic.py``, UCI regression sets with the
published splits of ``dgp_uci.py``) and split, alphagp's ``DeepGPRegressor`` is fitted at each
``--alphas`` and GPyTorch's ``DeepGP`` (``benchmarks/peers/gpytorch_dgp.py``, in its own venv,
``install_gpytorch.sh``) once, with the same layers, units, M, mini-batches, S, epochs, Adam rate
and threads, from the same initial inducing inputs, lengthscales and fixed means (alphagp's
initialisation with the same seed). Both are scored by RMSE and mean log predictive density of
the mixture of 100 propagated samples in the targets' units. Nothing is tuned. One JSON line per
(problem, split, library, alpha) in benchmarks/results/dgp_gpytorch.jsonl.

    python benchmarks/dgp_gpytorch.py --threads 2 --problems heteroscedastic boston --alphas 0.001 1
"""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from dgp_synthetic import LEARNING_RATES, make_problem
from dgp_uci import REGRESSION, split

from alphagp import DeepGPRegressor
from alphagp.methods.dgp import initial_layers

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

PEER = Path(__file__).parent / "peers"


def problem_data(name: str, k: int):
    if name in LEARNING_RATES:
        rng = np.random.default_rng(k)
        X_tr, y_tr = make_problem(name, 1000, rng)
        X_te, y_te = make_problem(name, 500, rng)
        settings = dict(n_layers=4, n_hidden=3, n_inducing=10, n_samples=50, batch_size=50,
                        learning_rate=LEARNING_RATES[name])
        return X_tr, X_te, y_tr, y_te, settings, 500
    X_tr, X_te, y_tr, y_te = split(name, k)
    return X_tr, X_te, y_tr, y_te, dict(n_layers=2, n_hidden=None, n_inducing=100, n_samples=20, batch_size=100,
                                        learning_rate=1e-3), None


def run_peer(X_tr, X_te, y_tr, y_te, settings, epochs, k, threads) -> dict:
    """GPyTorch's fit from alphagp's initial model (the same standardisation and seed)."""
    x_mean, x_scale = X_tr.mean(0), np.where(X_tr.std(0) > 0, X_tr.std(0), 1.0)
    y_mean, y_scale = y_tr.mean(), y_tr.std()
    Xs = (X_tr - x_mean) / x_scale
    d = X_tr.shape[1]
    hidden = settings["n_hidden"] or min(d, 30)
    M = min(settings["n_inducing"], len(y_tr))
    layers = initial_layers(Xs, 1, settings["n_layers"], hidden, M, np.random.default_rng(k))
    arrays = {"X_train": Xs, "y_train": (y_tr - y_mean) / y_scale, "X_test": (X_te - x_mean) / x_scale,
              "y_test": (y_te - y_mean) / y_scale, "y_scale": y_scale, "n_layers": len(layers), "seed": k,
              "threads": threads, "learning_rate": settings["learning_rate"], "batch_size": settings["batch_size"],
              "epochs": epochs, "n_samples": settings["n_samples"], "n_predict_samples": 100}
    for i, layer in enumerate(layers):
        arrays[f"Z_{i}"] = layer.inducing_points.detach().numpy()
        arrays[f"W_{i}"] = layer.mean_weights.numpy()
        arrays[f"lengthscale_{i}"] = float(layer.kernel.lengthscale.detach()[0, 0])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "problem.npz"
        np.savez(path, **arrays)
        out = subprocess.run([str(PEER / ".venv-gpytorch" / "bin" / "python"), str(PEER / "gpytorch_dgp.py"),
                              str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = benchmark_parser(__doc__, output="dgp_gpytorch.jsonl")
    parser.add_argument("--problems", nargs="+", default=["heteroscedastic", "boston"],
                        choices=[*LEARNING_RATES, *REGRESSION])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-3, 1.0])
    parser.add_argument("--splits", nargs="+", type=int, default=[0])
    parser.add_argument("--iterations", type=int, default=2000, help="UCI sets (the synthetic ones: 500 epochs)")
    args = parse_benchmark_args(parser)
    for name in args.problems:
        for k in args.splits:
            X_tr, X_te, y_tr, y_te, settings, epochs = problem_data(name, k)
            epochs = epochs or math.ceil(args.iterations / math.ceil(len(y_tr) / settings["batch_size"]))
            common = dict(problem=name, split=k, epochs=epochs, n_train=len(y_tr), threads=args.threads,
                          layers=settings["n_layers"], M=settings["n_inducing"])
            for alpha in args.alphas:
                model = DeepGPRegressor(alpha=alpha, n_predict_samples=100, max_iter=epochs, n_jobs=args.threads,
                                        random_state=k, **settings)
                start = time.perf_counter()
                model.fit(X_tr, y_tr)
                seconds = time.perf_counter() - start
                metrics = model.evaluate(X_te, y_te)
                append_row(args.output, base_row("dgp-gpytorch", library="alphagp", alpha=alpha, **common,
                                                 rmse=metrics["rmse"], test_loglik=-metrics["nll"],
                                                 train_seconds=seconds))
                print(f"{name:<15} split {k} alphagp alpha={alpha:<6g} rmse {metrics['rmse']:.3f} "
                      f"test LL {-metrics['nll']:.3f} ({seconds:.0f} s)", flush=True)
            peer = run_peer(X_tr, X_te, y_tr, y_te, settings, epochs, k, args.threads)
            append_row(args.output, base_row("dgp-gpytorch", library="gpytorch", alpha=None, **common,
                                             rmse=peer["rmse"], test_loglik=peer["test_loglik"],
                                             train_seconds=peer["train_seconds"],
                                             versions={"gpytorch": peer["gpytorch"], "torch": peer["torch"]}))
            print(f"{name:<15} split {k} gpytorch (VI)       rmse {peer['rmse']:.3f} test LL {peer['test_loglik']:.3f} "
                  f"({peer['train_seconds']:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
