"""The slow list (``tests/conftest.py``, ``SLOW``) names tests that exist: a renamed test, or a
README snippet moved by an edit above it, would otherwise run in the README's quick command."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO, SLOW


def test_every_slow_id_names_a_collected_test():
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "slow or not slow",
                           "-p", "no:cacheprovider"], cwd=REPO, capture_output=True, text=True, check=False)
    collected = {line.strip() for line in done.stdout.splitlines() if "::" in line}
    assert collected, done.stderr[-500:]
    assert sorted(SLOW - collected) == []
