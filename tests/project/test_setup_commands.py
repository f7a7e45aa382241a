"""The setup commands: the README's two, the install page's copy and CI's install agree, and while
the constraints file adds an index, each tells pip not to retry (issue 69: a machine that cannot
reach PyTorch's CPU index spent about 3 minutes retrying it; benchmarks/install_index.py). The
setting is ``PIP_RETRIES=0`` in the environment, not ``--retries 0``: pip does not pass its
command-line options to the subprocess that installs the build backend for ``-e .``.
"""

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INSTALL_PAGE = ROOT / "docs" / "install.md"
CI = ROOT / ".ci" / "run"


def pip_installs(text: str) -> list[list[str]]:
    """Every ``pip install`` command of ``text``, as its words up to the first ``&&`` (the environment
    assignments before it, ``NAME=value``, included)."""
    commands = []
    for match in re.finditer(r"(?:[A-Z_]+=\S+ )*\S*(?:python -m )?\S*pip\"? install[^\n`&]*", text):
        commands.append(shlex.split(match.group(0).strip()))
    return commands


def environment_of(words: list[str]) -> dict[str, str]:
    """The environment assignments that start a command's ``words``."""
    assignments = {}
    for word in words:
        if not re.fullmatch(r"[A-Z_]+=\S*", word):
            break
        name, value = word.split("=", 1)
        assignments[name] = value
    return assignments


def setup_commands(text: str) -> list[str]:
    """The lines of ``text``'s first bash blocks after its heading "## Set up" (the README's two
    commands), or of its first bash block (the install page)."""
    section = text.split("## Set up", 1)[-1]
    return [line for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL)[:2] for line in block.splitlines()]


def option_value(words: list[str], name: str) -> str | None:
    """The value given to option ``name`` in ``words``, or ``None``."""
    return words[words.index(name) + 1] if name in words else None


def constraints_add_an_index() -> bool:
    return any(line.split()[:1] in (["--extra-index-url"], ["--index-url"], ["--find-links"])
               for line in (ROOT / "constraints.txt").read_text().splitlines())


def test_the_install_page_shows_the_readme_commands():
    readme = setup_commands(README.read_text())
    assert len(readme) == 2 and readme[0].endswith("alphagp demo") and "pytest" in readme[1]
    assert setup_commands(INSTALL_PAGE.read_text()) == readme


def test_ci_installs_as_the_readme_test_command_does():
    readme_test = next(words for words in pip_installs(setup_commands(README.read_text())[1]))
    ci = next(words for words in pip_installs(CI.read_text()))
    for option in ("-c", "--retries", "--timeout"):
        assert option_value(ci, option) == option_value(readme_test, option), option
    assert environment_of(ci) == environment_of(readme_test)


def test_every_constrained_install_skips_retries_while_the_constraints_add_an_index():
    assert constraints_add_an_index(), "the CPU index left constraints.txt: this test's premise is gone"
    peers = ROOT / "benchmarks" / "peers" / "install_gpytorch.sh"
    constrained = [words for path in (README, INSTALL_PAGE, CI, peers) for words in pip_installs(path.read_text())
                   if "constraints.txt" in str(option_value(words, "-c"))]
    assert len(constrained) >= 6
    assert all(environment_of(words).get("PIP_RETRIES") == "0" for words in constrained), constrained
