"""Issue 81, item 4: the estimators' stages are functions of values. At most 20 functions of
``src/alphagp/estimators/`` take the estimator as their first argument (34 at 45c1338, when the
mixin methods had become functions of ``est``): those that write its fitted attributes, validate
its inputs (scikit-learn's ``validate_data`` records them on it), write or check its file, and make
its selection's :class:`~alphagp.estimators.model_selection.Selector`; the rest take the values
they read (parameters, rows, plan, model)."""

from __future__ import annotations

import ast
from pathlib import Path

import alphagp

ESTIMATORS = Path(alphagp.__file__).resolve().parent / "estimators"


def functions_of_the_estimator() -> list[str]:
    """``file:function`` of every module-level function whose first argument is ``est`` or
    ``estimator``."""
    found = []
    for path in sorted(ESTIMATORS.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[0].arg in ("est", "estimator"):
                found.append(f"{path.name}:{node.name}")
    return found


def test_at_most_twenty_functions_take_the_estimator():
    found = functions_of_the_estimator()
    assert len(found) <= 20, found
    assert not [f for f in found if f.startswith(("checks.py", "streams.py", "fit_plan.py", "run.py"))], found


def test_a_streams_calls_enter_the_same_stages_as_a_fit():
    """Issue 81, item 2: ``partial_fit`` runs through ``run.run``: a stream's two calls enter the stage
    functions of ``estimators/run.py`` a fit enters (standardisation and build, the rows' weights,
    the diagnostics), with the stream's call beside them (``benchmarks/code_walk.py``'s walk)."""
    import numpy as np

    from alphagp import GPClassifier

    from conftest import benchmarks_module
    code_walk = benchmarks_module("code_walk")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    fitted, streamed = set(), set()
    code_walk.walk(lambda: GPClassifier(method="sep", n_inducing=5, max_iter=2, random_state=0).fit(X, y), fitted)
    est = GPClassifier(method="sep", n_inducing=5, random_state=0)
    code_walk.walk(lambda: est.partial_fit(X[:40], y[:40], classes=[0, 1, 2]).partial_fit(X[40:], y[40:]), streamed)
    stages = {"run", "_built", "standardisation", "_weighted", "diagnostics_of", "explain_numerical_failure"}
    assert stages <= fitted and stages <= streamed and "_stream_call" in streamed
