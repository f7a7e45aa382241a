"""Issue 44, item 2: a quasi-Newton step on the hyper-parameters of batch power EP, against the
sign-adaptive rule that batch training uses, on validation splits (no test row is read).

For each set (the fit and validation rows of ``defaults_study.split``: 70 % of the rows, 10 % of
those held out), ``method="pep"`` (alpha = 0.5, the portfolio's batch candidate) is trained by:

* ``sign-adaptive``: the estimator's batch training (the sign-adaptive rule, each iteration one
  damped EP sweep and one step on the kernel and the inducing inputs), ``--iterations`` long;
* ``lbfgs``: L-BFGS (PyTorch's, strong-Wolfe line search, history 10) on the EP energy, each
  evaluation at the EP fixed point: the sites are swept (damped, warm-started from the last
  evaluation) until the energy changes by less than ``--inner-tol`` of its size or
  ``--inner-sweeps`` sweeps, then the energy and its gradient are taken with the sites held
  (GPML's scheme; at a fixed point of EP the energy is stationary in the sites).

``--method`` and ``--alpha`` pick another batch method (the alpha paper trains PEP, APEP, ARPEP and
RPAPEP with L-BFGS): for a method without sites (APEP, ARPEP, RPAPEP fit q by gradients) the
inner sweeps find the energy unchanged at once, so L-BFGS runs on the objective itself, and the
library's scheme is that method's batch optimiser (rows record it as ``optimizer``).

Every ``--record-every`` steps a row records the energy per row (log Z_q / N, re-converged at the
current hyper-parameters so the two schemes are compared at their fixed points), the validation
NLL and the seconds (recording not counted).

    python benchmarks/quasi_newton.py --threads 1 --datasets glass wine sonar ionosphere vehicle digits
    python benchmarks/report.py quasi_newton
"""

from __future__ import annotations

import time

import numpy as np
import torch
from defaults_study import split

from alphagp import GPClassifier
from alphagp.metrics import negative_log_likelihood

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def standardised(dataset: str):
    X_fit, X_val, y_fit, y_val = split(dataset)
    mean, scale = X_fit.mean(0), X_fit.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    classes = np.unique(y_fit)
    return (X_fit - mean) / scale, (X_val - mean) / scale, np.searchsorted(classes, y_fit), \
        np.searchsorted(classes, y_val)


def energy(method, X, y, idx) -> torch.Tensor:
    """The EP energy (log Z_q) of the batch at the current sites, with its graph."""
    terms = method.local_update(X, y, idx)
    return terms.shared + terms.data + terms.coupled


def converge_sites(method, X, y, idx, tol: float, sweeps: int) -> int:
    """Damped EP sweeps at fixed hyper-parameters until the energy settles; returns the sweeps run."""
    previous = None
    with torch.no_grad():
        for sweep in range(1, sweeps + 1):
            value = float(energy(method, X, y, idx))
            if previous is not None and abs(value - previous) <= tol * abs(previous):
                return sweep
            previous = value
    return sweeps


def run(dataset: str, scheme: str, args) -> None:
    X_fit, X_val, y_fit, y_val = standardised(dataset)
    X, y = torch.as_tensor(X_fit, dtype=torch.float64), torch.as_tensor(y_fit)
    idx, n = torch.arange(len(y_fit)), len(y_fit)
    clf = GPClassifier(method=args.method, alpha=args.alpha, standardize=False, random_state=0, n_jobs=args.threads,
                       max_iter=1 if scheme == "lbfgs" else args.iterations)

    def record(step: int, evaluations: int, seconds: float) -> None:
        method = clf.model_
        state = {k: v.detach().clone() for k, v in method.state_dict().items()}
        converge_sites(method, X, y, idx, args.inner_tol, args.inner_sweeps)
        with torch.no_grad():
            value = float(energy(method, X, y, idx)) / n
        nll = negative_log_likelihood(clf.predict_proba(X_val), y_val)
        method.load_state_dict(state)
        append_row(args.output, base_row("quasi-newton", dataset=dataset, scheme=scheme, method=args.method,
                                         alpha=float(method.alpha), optimizer=clf.fit_plan_.optimizer,
                                         threads=args.threads, step=step,
                                         evaluations=evaluations, seconds=seconds, energy_per_row=value,
                                         validation_nll=nll, n_fit=n, n_validation=len(y_val)))
        print(f"{dataset:12s} {scheme:13s} step {step:5d} {seconds:8.1f} s  energy/N {value:.5f}  "
              f"validation NLL {nll:.4f}", flush=True)

    def every(state) -> None:
        if state.epoch % args.record_every == 0:
            record(state.epoch, state.epoch, state.train_seconds)

    clf.fit(X_fit, y_fit, callbacks=[] if scheme == "lbfgs" else [every])
    if scheme != "lbfgs":
        return
    # L-BFGS from the model after one sign-adaptive iteration (the estimator's initialisation)
    method, seconds, evaluations = clf.model_, clf.history_[-1]["train_seconds"], [1]
    params = [p for p in method.parameters() if p.requires_grad]
    optimizer = torch.optim.LBFGS(params, lr=1.0, max_iter=1, history_size=10, line_search_fn="strong_wolfe")

    def closure():
        evaluations[0] += 1
        converge_sites(method, X, y, idx, args.inner_tol, args.inner_sweeps)
        optimizer.zero_grad(set_to_none=True)
        loss = -energy(method, X, y, idx) / n
        loss.backward()
        return loss

    record(0, evaluations[0], seconds)
    for step in range(1, args.lbfgs_steps + 1):
        start = time.perf_counter()
        optimizer.step(closure)
        seconds += time.perf_counter() - start
        record(step, evaluations[0], seconds)


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="quasi_newton.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["glass", "wine", "sonar", "ionosphere", "vehicle", "digits"])
    parser.add_argument("--schemes", nargs="+", choices=("sign-adaptive", "lbfgs"), default=["sign-adaptive", "lbfgs"])
    parser.add_argument("--method", default="pep", help="a batch method of the registry (default pep)")
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--iterations", type=int, default=1000, help="iterations of the library's scheme")
    parser.add_argument("--record-every", type=int, default=50, help="sign-adaptive iterations between rows")
    parser.add_argument("--lbfgs-steps", type=int, default=30, help="L-BFGS outer steps (each a line search)")
    parser.add_argument("--inner-tol", type=float, default=1e-6)
    parser.add_argument("--inner-sweeps", type=int, default=50)
    args = parse_benchmark_args(parser)
    for dataset in args.datasets:
        for scheme in args.schemes:
            run(dataset, scheme, args)


if __name__ == "__main__":
    main()
