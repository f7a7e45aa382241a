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
