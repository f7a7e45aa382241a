"""The package's imports (issue 75): no circle among ``src/alphagp``'s modules (lazy imports inside
functions included), no module importing itself, the kernel starts importing no method, and the
fit's checks imported by the estimators alone (nothing they call imports them)."""

from __future__ import annotations

import ast

from conftest import REPO

ROOT = REPO / "src" / "alphagp"
#: the benchmark scripts, which import each other by name (``benchmarks/`` on the path)
BENCHMARKS = REPO / "benchmarks"


def _name(path, root) -> str:
    parts = list(path.relative_to(root.parent if root == ROOT else root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root=ROOT) -> dict[str, set[str]]:
    """Each module under ``root`` (the package, or the benchmark scripts) and the modules there it
    imports anywhere in its text (a ``from . import x`` of a submodule counts as that submodule, not
    as the package)."""
    modules = {_name(p, root): p for p in root.rglob("*.py") if ".venv" not in p.parts}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                subs = {f"{target}.{a.name}" for a in node.names} & modules.keys()
                found |= subs
                if len(subs) < len(node.names) and target in modules:
                    found.add(target)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names} & modules.keys()
        graph[name] = found
    return graph


def _reach(graph, start) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_module_takes_part_in_a_circle_of_imports():
    """Issue 81: in ``src/`` and in ``benchmarks/`` (where ``defaults_panel`` and ``defaults_study``
    imported each other)."""
    for root, least in ((ROOT, 50), (BENCHMARKS, 50)):
        graph = imports(root)
        assert len(graph) > least
        circles = sorted(name for name in graph if name in _reach(graph, name))
        assert circles == [], f"modules of {root.name} on a circle of imports (themselves included): {circles}"


def test_the_kernel_starts_import_no_method_and_the_checks_sit_above_the_fit():
    graph = imports()
    assert not {m for m in _reach(graph, "alphagp.kernel_start") if m.startswith("alphagp.methods")}
    below = {"alphagp.estimators.fit_plan", "alphagp.estimators.model_selection", "alphagp.estimators.build"}
    assert not any("alphagp.estimators.checks" in _reach(graph, m) for m in below)
