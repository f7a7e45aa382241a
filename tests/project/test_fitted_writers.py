"""Issues 75 and 81: the fitted attributes are written in known places, each by name. Every
assignment of a public trailing-underscore attribute (``model_``, ``classes_``, ``setattr(est,
f"{name}_", ...)``) in ``src/alphagp/estimators/`` is in :mod:`alphagp.estimators.fitted`, by at
most five writers (the four of issue 75 and the diagnostics', which two of them share), or in a
family's ``record`` in its own module (issue 81: a family is one module, the names of its fitted
attributes with it); the one exception is the table encoding that scikit-learn-style input
validation fits with the input columns (``inputs.validate_table``). No write goes through
``setattr`` with a computed name (a reader's search for ``kernel_start_ =`` finds its writer). The
estimators' base has no mixins for inputs or files."""

from __future__ import annotations

import ast
from pathlib import Path

import alphagp

ESTIMATORS = Path(alphagp.__file__).resolve().parent / "estimators"
#: the writes outside fitted.py that scikit-learn's conventions place with the input validation
ALLOWED = {("inputs.py", "validate_table", "table_encoding_")}
#: the families' ``record`` functions (their module, their name): each writes its family's values
FAMILY_RECORDS = {("classifier_family.py", "record_values"), ("deep_gp_family.py", "_record_target_scale"),
                  ("deep_gp_family.py", "_record_classes")}


def _fitted_name(node) -> str | None:
    """The public fitted attribute ``node`` writes, or ``None``: an assignment target
    ``x.name_`` or a ``setattr(x, <name ending in _>, ...)`` call."""
    if isinstance(node, ast.Attribute) and node.attr.endswith("_") and not node.attr.startswith("_"):
        return node.attr
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and len(node.args) == 3:
        name = node.args[1]
        if isinstance(name, ast.JoinedStr) and isinstance(name.values[-1], ast.Constant) \
                and str(name.values[-1].value).endswith("_"):
            return "<f-string>_"
        if isinstance(name, ast.Constant) and str(name.value).endswith("_"):
            return name.value
    return None


def writes() -> list[tuple[str, str, str]]:
    """``(file, function, attribute)`` of every write of a fitted attribute in the estimators."""
    found = []
    for path in sorted(ESTIMATORS.glob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            name = getattr(function, "name", "<lambda>")
            for node in ast.walk(function):
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
                for target in [t for tt in targets for t in (tt.elts if isinstance(tt, ast.Tuple) else [tt])]:
                    if _fitted_name(target):
                        found.append((path.name, name, _fitted_name(target)))
                if isinstance(node, ast.Call) and _fitted_name(node):
                    found.append((path.name, name, _fitted_name(node)))
    return sorted(set(found))


def test_fitted_attributes_are_written_by_name_in_fitted_py_and_the_families_records():
    from alphagp.estimators.classifier_family import GP_CLASSIFIER
    from alphagp.estimators.deep_gp_family import DEEP_GP_CLASSIFIER, DEEP_GP_REGRESSOR
    found = writes()
    outside = [w for w in found if w[0] != "fitted.py" and w not in ALLOWED and w[:2] not in FAMILY_RECORDS]
    assert outside == [], f"fitted attributes written outside estimators/fitted.py and the families' records: {outside}"
    assert not [w for w in found if w[2] == "<f-string>_"], "a fitted attribute written through a computed name"
    writers = {function for file, function, _ in found if file == "fitted.py"}
    assert writers and len(writers) <= 5, sorted(writers)
    assert {f.record.__name__ for f in (GP_CLASSIFIER, DEEP_GP_CLASSIFIER, DEEP_GP_REGRESSOR)} == {
        name for _, name in FAMILY_RECORDS}


def test_the_base_has_no_mixins_for_inputs_or_files():
    from sklearn.base import BaseEstimator

    from alphagp.estimators.base import GPEstimatorBase
    assert GPEstimatorBase.__bases__ == (BaseEstimator,)
