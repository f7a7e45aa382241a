"""How close a training step runs to its unavoidable dense linear algebra.

For a configuration (C classes, M inducing points, batch |B|, D features) this times one full
training step (EP local update + objective + backward + optimiser step) and, in the same
run, the dense floor alone: the C kernel matrices K_uu and K_uf (one call of
``ARDKernel.inducing_covariances``, as the step makes) and the C Cholesky factorisations of
K_uu. The ratio step / floor says how much the implementation adds. With one inducing set and
kernel shared by all classes the floor is one K_uu, one K_uf and one factorisation: compare such
a configuration with the per-class one by step time, not by ratio.

    python benchmarks/speed.py --threads 2
"""

from __future__ import annotations

import time

import numpy as np
import torch

from alphagp.kernels import ARDKernel
from alphagp.methods import build_method
from alphagp.training.optim import make_optimizer

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

CONFIGS = {  # name: (C, M, batch, D, N, one inducing set and kernel shared by all classes)
    "mnist-minibatch": (10, 200, 200, 784, 60000, False),
    "mnist-minibatch-shared-set": (10, 200, 200, 784, 60000, True),
    "satellite-batch-M5%": (6, 64, 1287, 36, 1287, False),
}


def median_time(fn, repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` (robust to the machine's noise)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def make_step(C, M, B, D, N, shared, tied):
    """A random EP or (``tied``) SEP problem of this shape, with one inducing set and kernel
    for all classes when ``shared``; returns the model, the batch's rows ``[B, D]`` and
    ``step()``: local update, objective, backward and Adam step."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(B, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (B,), generator=g)
    idx = torch.arange(B) if B == N else torch.randperm(N, generator=g)[:B].sort().values
    Z = torch.randn(1 if shared else C, M, D, generator=g, dtype=torch.float64)
    model = build_method("sep" if tied else "ep", Z, ARDKernel(C, D, shared=shared), n_data=N,
                         damping=1.0 if B < N else 0.5)
    opt = make_optimizer("adam", model.parameters(), 1e-3)  # as the trainer makes it

    def step():
        objective = model.local_update(X, y, idx).total(N, B)   # the trainer's scaling in one process
        opt.zero_grad()
        (-objective / N).backward()
        opt.step()

    return model, X, step


def measure(C, M, B, D, N, shared, tied, repeats=15):
    model, X, step = make_step(C, M, B, D, N, shared, tied)

    def floor():
        with torch.no_grad():
            Kuu, _ = model.kernel.inducing_covariances(model.inducing_points, X, expand=False)
            torch.linalg.cholesky(Kuu + 1e-6 * torch.eye(M, dtype=torch.float64))

    step(), floor()
    return median_time(step, repeats), median_time(floor, repeats)


def main() -> None:
    parser = benchmark_parser(__doc__, threads=2)
    parse_benchmark_args(parser)
    for name, (C, M, B, D, N, shared) in CONFIGS.items():
        for tied in (False, True):
            step, floor = measure(C, M, B, D, N, shared, tied)
            row = base_row("step-vs-dense-floor", dataset=name, method="SEP" if tied else "EP", alpha=1.0,
                           seed=0, M=M, batch_size=B, C=C, D=D, shared_inducing_set=shared,
                           step_seconds=step, floor_seconds=floor,
                           ratio=step / floor)
            append_row("speed.jsonl", row)
            print(f"{name:22s} {row['method']:3s} step {step * 1e3:7.1f} ms  floor {floor * 1e3:6.1f} ms  "
                  f"ratio {step / floor:5.2f}", flush=True)


if __name__ == "__main__":
    main()
