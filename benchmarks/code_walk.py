"""The call-level walk of one fit through the estimators (issue 68's before-and-after measure).

A profile hook follows ``GPClassifier(method=...).fit`` on a small problem and records every call
made from a function of ``alphagp/estimators/`` into a function defined in another file of the
package (a *stop*, named by the callee's file) and every return from such a call (a *return*);
calls inside one file, and everything below the first frame outside the estimators, are not
walked. It prints the files entered in order, the count of stops, of distinct files and of
returns, and of the stops from one estimator file into another (control passing back and forth
between the estimators' own modules), and writes one row with the commit to
``results/code_walk.jsonl``.

    python benchmarks/code_walk.py --method pep
    python benchmarks/code_walk.py --method sep --stream     # two partial_fit calls instead of fit

Each row also keeps the stages entered: the functions of ``estimators/run.py`` the walk called
(``stages``), so a stream's walk can be held to fit's (issue 81: both run through ``run.run``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, parse_benchmark_args

PACKAGE = Path(__import__("alphagp").__file__).resolve().parent


def _file(frame) -> str | None:
    path = Path(frame.f_code.co_filename).resolve()
    return str(path.relative_to(PACKAGE)) if path.is_relative_to(PACKAGE) else None


def walk(fit, stages: set | None = None) -> list[tuple[str, str]]:
    """``[(event, file)]``: the stops ("call") and returns ("return") of ``fit()`` (module docstring);
    ``stages``, where given, collects the functions of ``estimators/run.py`` entered."""
    events, open_calls = [], []

    def hook(frame, event, _arg):
        if event == "call":
            callee, caller = _file(frame), frame.f_back and _file(frame.f_back)
            if stages is not None and callee == "estimators/run.py":
                stages.add(frame.f_code.co_name)
            if callee and caller and caller.startswith("estimators/") and callee != caller:
                events.append(("call", callee))
                open_calls.append(frame)
        elif event == "return" and open_calls and frame is open_calls[-1]:
            open_calls.pop()
            events.append(("return", _file(frame.f_back) or "?"))
    sys.setprofile(hook)
    try:
        fit()
    finally:
        sys.setprofile(None)
    return events


def main() -> None:
    parser = benchmark_parser(__doc__, output="code_walk.jsonl")
    parser.add_argument("--method", default="pep")
    parser.add_argument("--stream", action="store_true", help="two partial_fit calls of 40 rows instead of fit")
    args = parse_benchmark_args(parser)
    g = np.random.default_rng(0)
    X = g.standard_normal((80, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    stages: set = set()
    if args.stream:
        est = GPClassifier(method=args.method, n_inducing=5, random_state=0)
        events = walk(lambda: est.partial_fit(X[:40], y[:40], classes=[0, 1, 2]).partial_fit(X[40:], y[40:]), stages)
    else:
        events = walk(lambda: GPClassifier(method=args.method, n_inducing=5, max_iter=2, random_state=0).fit(X, y),
                      stages)
    stops = [f for e, f in events if e == "call"]
    returns = sum(e == "return" for e, _ in events)
    inside = [f for f in stops if f.startswith("estimators/")]
    print(" -> ".join(stops))
    print(f"{len(stops)} stops in {len(set(stops))} files, {returns} returns; {len(inside)} of the stops between "
          f"the estimators' own {len(set(inside))} files")
    print("stages of run.py entered: " + ", ".join(sorted(stages)))
    append_row(args.output, base_row("code_walk", method=args.method, stream=args.stream, stops=len(stops),
                                     files=sorted(set(stops)), returns=returns, estimator_stops=len(inside),
                                     walk=stops, stages=sorted(stages)))


if __name__ == "__main__":
    main()
