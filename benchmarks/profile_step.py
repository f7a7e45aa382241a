"""Where a training step's time goes: ``torch.profiler`` over a few steps of EP/SEP at the shapes
of ``speed.py``, one JSON row per (configuration, method) with the operators' self CPU time
(top ``--top``), their call counts, and the step's median time.

    python benchmarks/profile_step.py --threads 2
    python benchmarks/report.py profile
"""

from __future__ import annotations

from speed import CONFIGS, make_step, median_time
from torch.profiler import ProfilerActivity, profile

from common import append_row, base_row, benchmark_parser, parse_benchmark_args


def profile_step(C, M, B, D, N, shared, tied, steps: int, top: int) -> dict:
    _, _, step = make_step(C, M, B, D, N, shared, tied)
    for _ in range(3):
        step()
    seconds = median_time(step, steps)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ops)
    return {"step_seconds": seconds, "profiled_steps": steps,
            "ops": [{"name": e.key, "self_ms_per_step": e.self_cpu_time_total / 1e3 / steps,
                     "calls_per_step": e.count / steps, "share": e.self_cpu_time_total / total} for e in ops[:top]]}


def main() -> None:
    parser = benchmark_parser(__doc__, threads=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--top", type=int, default=15)
    args = parse_benchmark_args(parser)
    for name, (C, M, B, D, N, shared) in CONFIGS.items():
        for tied in (False, True):
            result = profile_step(C, M, B, D, N, shared, tied, args.steps, args.top)
            append_row("profile.jsonl", base_row("step-profile", dataset=name, method="SEP" if tied else "EP",
                                                  C=C, M=M, batch_size=B, D=D, threads=args.threads, **result))
            head = ", ".join(f"{o['name']} {100 * o['share']:.0f}%" for o in result["ops"][:4])
            print(f"{name:22s} {'SEP' if tied else 'EP':3s} step {1e3 * result['step_seconds']:.1f} ms: {head}",
                  flush=True)


if __name__ == "__main__":
    main()
