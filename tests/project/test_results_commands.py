"""Issue 68: every results file of benchmarks/results names the command that produced it: each row
records it (``common.base_row``'s ``command``), or, for files written before rows did,
``results/COMMANDS.json`` gives the commands and where they come from; every command runs a script
of benchmarks/."""

from __future__ import annotations

import json
import re

from conftest import REPO

RESULTS = REPO / "benchmarks" / "results"


def _commands(name: str, rows: list[dict], manifest: dict) -> list[str]:
    """The commands of results file ``name``: its rows' own, else the manifest's."""
    if rows and all("command" in r for r in rows):
        return sorted({r["command"] for r in rows})
    return manifest.get(name, {}).get("commands", [])


def test_every_results_file_names_its_producing_command():
    manifest = json.loads((RESULTS / "COMMANDS.json").read_text())
    files = sorted(RESULTS.glob("*.jsonl"))
    assert len(files) >= 80
    nameless, unknown = [], []
    for path in files:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        commands = _commands(path.name, rows, manifest)
        if not commands:
            nameless.append(path.name)
        for command in commands:
            script = re.match(r"python ([\w/]+\.py)", command)
            if script is None or not (REPO / "benchmarks" / script[1]).is_file() or command.rstrip().endswith("\\"):
                unknown.append(f"{path.name}: {command[:80]}")      # a script of benchmarks/, whole (no "\\" cut)
    assert nameless == [], f"results files with no producing command (rows' 'command' or COMMANDS.json): {nameless}"
    assert unknown == [], f"commands that run no script of benchmarks/, or are cut at a line's end: {unknown}"
    assert not set(manifest) - {p.name for p in files}, "COMMANDS.json names files that are gone"


def test_a_new_row_records_its_command(monkeypatch):
    """``base_row`` writes the running command (script and arguments) into every row."""
    import sys
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import common
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    row = common.base_row("probe", x=1)
    assert row["command"] == common.RUN_COMMAND and row["command"].startswith("python ")
