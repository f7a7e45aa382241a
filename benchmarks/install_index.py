"""What the README's install costs where PyTorch's CPU wheel index can and cannot be reached.

``constraints.txt`` pins torch 2.13.0 and adds PyTorch's CPU index (``--extra-index-url``) so that
pip takes the CPU build (a few hundred MB) rather than PyPI's CUDA build (several GB). pip asks every
index about every package it resolves, so a machine that cannot reach the CPU index pays pip's
retries (5 by default, with back-off) for each of the ~23 packages: issue 69 measured about 3
minutes of 115 retry warnings. Each row is one ``pip install --dry-run --ignore-installed -e .``
(every index is asked, nothing is installed) of this checkout with a constraints file whose CPU
index is

- ``reachable``: a local stand-in for ``https://download.pytorch.org/whl/cpu`` that serves torch's
  page with the CPU wheel of this machine's wheel mirror (this machine cannot resolve
  download.pytorch.org, so the stand-in shows what pip picks where the index answers),
- ``download.pytorch.org``: the real index (the row's retry warnings say whether it answered),
- ``refused``: a local port nothing listens on (a firewall that rejects),
- ``silent``: a local port that accepts and never answers (a firewall that drops),
- ``none``: no CPU index line (PyPI's torch),

under pip options as the README would give them: ``defaults``; ``--retries 0`` (and ``--timeout 5``)
on the command line, which pip does not pass to the subprocess that installs the build backend
(setuptools) for ``-e .``; or ``PIP_RETRIES=0`` (and ``PIP_TIMEOUT=5``, ``PIP_DEFAULT_TIMEOUT=5``:
this machine's environment sets the latter to 180) in the environment, which that subprocess
inherits. In two environments: this machine's pip configuration (its local wheel mirror,
which holds the CPU build) and ``isolated`` (``pip --isolated``: PyPI and the CPU index only, what
a user elsewhere has). A row holds the wall seconds, the retry warnings and the torch build pip
would install, with the count of NVIDIA CUDA packages it would pull.

    python benchmarks/install_index.py --skip-done --output install_index.jsonl
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from operator import itemgetter
from pathlib import Path

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args

REPO = Path(__file__).resolve().parents[1]
#: the CPU index of each scenario (the stand-in's and the silent listener's ports are filled in when they start)
INDEXES = {"reachable": "http://127.0.0.1:{stand_in}/whl/cpu", "download.pytorch.org": "https://download.pytorch.org/whl/cpu",
           "refused": "http://127.0.0.1:9/whl/cpu", "silent": "http://127.0.0.1:{silent}/whl/cpu", "none": None}
WHEELS = Path("/opt/wheels")
#: pip's options by name: command-line arguments and environment variables
OPTIONS = {"defaults": ([], {}), "retries 0": (["--retries", "0"], {}),
           "retries 0, timeout 5": (["--retries", "0", "--timeout", "5"], {}),
           "PIP_RETRIES=0": ([], {"PIP_RETRIES": "0"}),
           "PIP_RETRIES=0, PIP_TIMEOUT=5": ([], {"PIP_RETRIES": "0", "PIP_TIMEOUT": "5", "PIP_DEFAULT_TIMEOUT": "5"})}
#: (index, options, environment) measured: the silent index only with a timeout (this machine's pip
#: configuration sets a 180 s timeout, so the defaults there would wait 6 x 180 s per package)
RUNS = [("reachable", "defaults", "isolated"), ("reachable", "retries 0", "isolated"), ("none", "defaults", "isolated"),
        ("download.pytorch.org", "defaults", "this machine"), ("download.pytorch.org", "retries 0", "this machine"),
        ("refused", "defaults", "this machine"), ("refused", "retries 0", "this machine"),
        ("silent", "retries 0, timeout 5", "this machine"), ("none", "defaults", "this machine"),
        ("refused", "PIP_RETRIES=0", "this machine"), ("download.pytorch.org", "PIP_RETRIES=0", "this machine"),
        ("silent", "PIP_RETRIES=0, PIP_TIMEOUT=5", "this machine"), ("reachable", "PIP_RETRIES=0", "isolated")]


def cpu_index_stand_in(root: Path) -> int:
    """Serve ``root`` as a PEP 503 index whose only project is torch, its page linking the CPU wheel
    of the local mirror (``WHEELS``), from a thread on a free local port; the port."""
    page = root / "whl" / "cpu" / "torch"
    page.mkdir(parents=True)
    links = []
    for wheel in sorted(WHEELS.glob("torch-*+cpu-*.whl")):
        (page / wheel.name).symlink_to(wheel)
        links.append(f'<a href="{wheel.name}">{wheel.name}</a>')
    (page / "index.html").write_text("<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static file handler that does not log each request."""

    def log_message(self, *args) -> None:
        pass


def silent_listener() -> int:
    """Start a thread that accepts connections on a free local port and never answers; its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)

    def hold() -> None:
        held = []
        while True:
            held.append(server.accept())

    threading.Thread(target=hold, daemon=True).start()
    return server.getsockname()[1]


def dry_run(index: str | None, options: tuple[list[str], dict], isolated: bool, workdir: Path) -> dict:
    """One ``pip install --dry-run`` of this checkout: seconds, retry warnings, torch's build, CUDA packages."""
    constraints = workdir / "constraints.txt"
    constraints.write_text(("" if index is None else f"--extra-index-url {index}\n") + "torch==2.13.0\n")
    arguments, environment = options
    command = [sys.executable, "-m", "pip", *(["--isolated"] if isolated else []), "install", "--dry-run",
               "--ignore-installed", "--no-cache-dir", *arguments, "-c", str(constraints), "-e", str(REPO)]
    start = time.perf_counter()
    out = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
                         env={**os.environ, **environment})
    seconds = time.perf_counter() - start
    would = next((line for line in out.stdout.splitlines() if line.startswith("Would install")), "")
    torch_build = re.search(r"\btorch-(\S+)", would)
    return {"seconds": seconds, "returncode": out.returncode,
            "retry_warnings": len(re.findall(r"Retrying \(Retry\(", out.stdout)),
            "torch": torch_build.group(1) if torch_build else None,
            "cuda_packages": len(re.findall(r"\bnvidia-", would))}


def main() -> None:
    parser = benchmark_parser(__doc__, threads=None, output="install_index.jsonl")
    parser.add_argument("--skip-done", action="store_true", help="leave out the runs the results file holds")
    args = parse_benchmark_args(parser)
    key = itemgetter("index", "options", "environment")
    done = done_keys(args.output, key) if args.skip_done else set()
    with tempfile.TemporaryDirectory() as workdir, tempfile.TemporaryDirectory() as index_root:
        ports = {"stand_in": cpu_index_stand_in(Path(index_root)), "silent": silent_listener()}
        for index, option, environment in (run for run in RUNS if run not in done):
            url = INDEXES[index] and INDEXES[index].format(**ports)
            result = dry_run(url, OPTIONS[option], environment == "isolated", Path(workdir))
            append_row(args.output, base_row("install_index", index=index, index_url=url, options=option,
                                             environment=environment, **result))
            print(f"{index:>20} {option:>22} {environment:>12}: {result['seconds']:6.1f} s, "
                  f"{result['retry_warnings']} retries, torch {result['torch']}, {result['cuda_packages']} CUDA "
                  f"packages (rc {result['returncode']})", flush=True)


if __name__ == "__main__":
    main()
