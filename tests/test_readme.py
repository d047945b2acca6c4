""".ci/run must run the README's test command, word for word."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = [line.strip() for line in readme.splitlines() if line.strip().startswith("python3 -m venv")]
    assert len(commands) == 2, "README gives exactly two set-up commands"
    assert commands[1].endswith("pytest")
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert commands[1] in ci_lines
