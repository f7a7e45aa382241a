"""EP paper Figure 1 (thesis Figure 5.1): log Z_q against training time on Vehicle when the
hyper-parameters are updated after EP has converged (outer) or together with the sites (inner).

``method="ep"`` (per-point sites), batch training on the scalable-EP paper's split of Vehicle, M =
N / 5 inducing points per class (the paper's setting), 250 hyper-parameter updates, the default
batch rule (the sign-adaptive step), early stopping off:

- **inner**: the library's fit; each update is one damped parallel EP sweep over all factors and
  one step of the hyper-parameters by the gradient of log Z_q (eq. 9) at the current sites
  (autograd with the sites held: the paper's "EP-inner-exact");
- **outer**: after every update, EP sweeps run with the hyper-parameters held until log Z_q
  changes by less than ``--tol`` (relative) between sweeps or ``--max-sweeps`` ran (the paper's
  "EP-outer": EP re-run to convergence from the previous sites). Their seconds count as training.

The paper's third curve, "EP-inner-approx" (the gradient of eq. 10, which drops the terms that
vanish once EP has converged), is not built: the library's step takes the gradient of eq. 9 by
autograd at the cost of one kernel evaluation.

``--datasets`` runs other sets of the paper's Table 2 the same way, at M = 20 % of the training
rows: the thesis's Tables 6.2 and 6.3 have an EP-outer column beside EP (inner), and these rows
give it at that M (test error and NLL after the last update).

Each (data set, schedule, split) appends one JSON line to benchmarks/results/ep_hyper_updates.jsonl: the
curve (update, seconds, log Z_q per point, EP sweeps so far) and the test error and NLL after the
last update. Nothing is tuned, so there is no validation split.

    python benchmarks/ep_hyper_updates.py --threads 1
    python benchmarks/ep_hyper_updates.py --threads 1 --datasets glass new_thyroid svmguide2 vowel waveform_21 wine
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch

from alphagp import GPClassifier
from alphagp.metrics import all_metrics

from common import append_row, base_row, benchmark_parser, class_index, parse_benchmark_args, split


class ConvergeSites:
    """Callback of the outer schedule: after each hyper-parameter update, EP sweeps with the
    hyper-parameters held until log Z_q per point changes by less than ``tol`` (relative) or
    ``max_sweeps`` ran; records the converged log Z_q and the sweeps' seconds."""

    def __init__(self, X: np.ndarray, y_idx: np.ndarray, tol: float, max_sweeps: int):
        self.X, self.y, self.tol, self.max_sweeps = X, y_idx, tol, max_sweeps
        self.seconds, self.sweeps, self.curve = 0.0, 0, []

    @staticmethod
    def _energy(model, X, y, idx) -> float:
        terms = model.local_update(X, y, idx)
        return float(terms.total(len(y), len(y))) / len(y)

    def __call__(self, state) -> None:
        start = time.perf_counter()
        so_far = state.fit_so_far                     # the model in training and its standardisation
        X = torch.as_tensor((self.X - so_far.mean_) / so_far.scale_, dtype=torch.float64)
        y = torch.as_tensor(self.y, dtype=torch.long)
        idx = torch.arange(len(y))
        with torch.no_grad():
            last, sweeps = self._energy(so_far.model_, X, y, idx), 1
            while sweeps < self.max_sweeps:
                energy = self._energy(so_far.model_, X, y, idx)
                sweeps += 1
                done = abs(energy - last) <= self.tol * abs(last)
                last = energy
                if done:
                    break
        self.seconds += time.perf_counter() - start
        self.sweeps += sweeps
        self.curve.append({"update": state.epoch, "seconds": state.train_seconds + self.seconds,
                           "log_zq": last, "sweeps": state.epoch + self.sweeps})


def main() -> None:
    parser = benchmark_parser(__doc__, output="ep_hyper_updates.jsonl")
    parser.add_argument("--datasets", nargs="+", default=["vehicle"])
    parser.add_argument("--splits", type=int, nargs="+", default=[0])
    parser.add_argument("--updates", type=int, default=250)
    parser.add_argument("--schedules", nargs="+", choices=("inner", "outer"), default=["inner", "outer"])
    parser.add_argument("--tol", type=float, default=1e-6, help="outer: relative change of log Z_q that ends EP")
    parser.add_argument("--max-sweeps", type=int, default=200, help="outer: EP sweeps at most per update")
    args = parse_benchmark_args(parser)
    for dataset, seed in ((d, k) for d in args.datasets for k in args.splits):
        X_tr, X_te, y_tr, y_te = split(dataset, seed)
        M = len(y_tr) // 5
        y_idx = np.searchsorted(np.unique(y_tr), y_tr)
        for schedule in args.schedules:
            clf = GPClassifier(method="ep", n_inducing=M, batch_size=None, max_iter=args.updates,
                               early_stopping=False, n_jobs=args.threads, random_state=seed)
            outer = ConvergeSites(X_tr, y_idx, args.tol, args.max_sweeps) if schedule == "outer" else None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                clf.fit(X_tr, y_tr, callbacks=[outer] if outer else None)
            if outer:
                curve = outer.curve
            else:
                curve = [{"update": h["epoch"], "seconds": h["train_seconds"], "log_zq": h["objective"] / len(y_tr),
                          "sweeps": h["epoch"]} for h in clf.history_]
            metrics = all_metrics(clf.predict_proba(X_te), class_index(y_te, y_tr))
            append_row(args.output, base_row("ep-hyper-updates", dataset=dataset, split=seed, schedule=schedule,
                                             M=M, n_train=len(y_tr), updates=int(clf.n_iter_), threads=args.threads,
                                             tol=args.tol, max_sweeps=args.max_sweeps, curve=curve, **metrics))
            print(f"{dataset} split {seed} {schedule:<5} log Z_q/N {curve[-1]['log_zq']:.4f} after "
                  f"{curve[-1]['seconds']:.0f} s, {curve[-1]['sweeps']} sweeps; test error {metrics['error']:.3f} "
                  f"NLL {metrics['nll']:.4f}", flush=True)


if __name__ == "__main__":
    main()
