""".ci/run must run the README's test command, word for word."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = [line.strip() for line in readme.splitlines() if line.strip().startswith("python3 -m venv")]
    assert len(commands) == 2, "README gives exactly two set-up commands"
    assert commands[1].endswith("pytest")
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert commands[1] in ci_lines


def test_ci_lints_after_the_readme_test_command():
    """ruff (and mypy) run after the tests, from the venv the README command made, with the
    versions pinned; the configuration is pyproject.toml's, which checks every folder."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    tests = next(i for i, line in enumerate(lines) if line.startswith("python3 -m venv") and line.endswith("pytest"))
    ruff = lines.index(".venv/bin/ruff check src tests")
    assert tests < ruff and any(line.startswith(".venv/bin/pip install -q ruff==") for line in lines[tests:ruff])
    mypy = lines.index(".venv/bin/mypy")  # its files come from pyproject.toml: the whole package
    assert ruff < mypy and any(line.startswith(".venv/bin/pip install -q mypy==") for line in lines[ruff:mypy])
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "[tool.ruff.lint]" in pyproject and "[tool.mypy]" in pyproject
    assert not re.search(r"^\s*(extend-)?exclude\s*=", pyproject, re.MULTILINE)  # no folder left out
    assert 'files = ["src/babelprobe"]' in pyproject  # mypy checks the whole package
