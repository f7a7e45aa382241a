"""The examples the documentation build does not run (``examples/plot_*.py`` run there) run here:
the data-parallel fit under torchrun with two processes, and the MNIST memory-map recipe on a
slice of MNIST for a few seconds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from alphagp.data import DataNotFoundError, data_dir

from conftest import REPO

EXAMPLES = REPO / "examples"


def _run(args: list[str], cwd: Path, timeout: int = 240) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run(args, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_distributed_example_under_torchrun(tmp_path):
    """Two processes fit SEP on Vehicle; the first prints the world size and sensible test metrics
    (four classes: chance is 0.75 error and NLL log 4 = 1.39)."""
    out = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                str(EXAMPLES / "distributed_fit.py")], cwd=tmp_path)
    match = re.search(r"2 processes: test error ([\d.]+), NLL ([\d.]+)", out)
    assert match, out
    assert float(match[1]) < 0.5 and float(match[2]) < 1.2


def test_mnist_memmap_example_on_a_slice(tmp_path):
    """Three thousand MNIST rows for about ten seconds: the memory-map is written, the fit reports
    its best held-out epoch, the test error is far below chance (0.9), and the figure exists."""
    try:
        (data_dir() / "mnist.npz").stat()
    except (DataNotFoundError, OSError) as err:
        pytest.skip(f"MNIST absent from the benchmark data: {err}")
    out = _run([sys.executable, str(EXAMPLES / "mnist_memmap.py"), "--minutes", "0.15", "--rows", "3000",
                "--output", str(tmp_path)], cwd=tmp_path)
    assert (tmp_path / "mnist_train.npy").stat().st_size > 3000 * 784 * 8
    assert (tmp_path / "mnist_validation.png").stat().st_size > 0
    error = float(re.search(r"test error ([\d.]+)", out)[1])
    assert error < 0.3, out


def test_fashion_ood_example_on_a_slice(tmp_path):
    """Two thousand MNIST rows for a few seconds: the epistemic uncertainty tells Fashion-MNIST
    images from digits far better than chance (AUROC 0.5), and the figure exists."""
    try:
        (data_dir() / "mnist.npz").stat()
        (data_dir() / "fashion_mnist.npz").stat()
    except (DataNotFoundError, OSError) as err:
        pytest.skip(f"MNIST or Fashion-MNIST absent from the benchmark data: {err}")
    out = _run([sys.executable, str(EXAMPLES / "fashion_ood.py"), "--minutes", "0.1", "--rows", "2000",
                "--test-rows", "1000", "--output", str(tmp_path)], cwd=tmp_path)
    auroc = float(re.search(r"AUROC ([\d.]+)  epistemic", out)[1])
    assert auroc > 0.8, out
    assert (tmp_path / "fashion_ood.png").stat().st_size > 0
