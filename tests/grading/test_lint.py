"""The project is clean under its linter: ruff, configured in pyproject.toml ([tool.ruff])."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    """`ruff check .` at the repository's root reports nothing (ruff comes with the dev extra: pip install -e '.[dev]')."""
    process = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, (process.stdout[-4000:] + process.stderr[-1000:]) or "ruff failed"
