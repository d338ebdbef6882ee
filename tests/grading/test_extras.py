"""The instructor's extras (grader/extras.py, pyproject.toml): grading installs and imports none of them, and a command
that needs a missing one stops with one line naming it."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
import tomllib

from grader import extras
from grader.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRA_PACKAGES = {name for names in extras.EXTRAS.values() for name in names}


def distribution(requirement: str) -> str:
    return re.split(r"[=<>\[ ;]", requirement, maxsplit=1)[0].lower()


def test_each_extra_installs_what_the_grader_imports_from_it_and_the_core_none_of_it():
    core = {distribution(r) for r in PROJECT["dependencies"]}
    for extra, packages in extras.EXTRAS.items():
        installed = {distribution(r) for r in PROJECT["optional-dependencies"][extra]}
        assert set(packages) <= installed, extra
        assert not installed & core, extra
    assert PROJECT["optional-dependencies"]["instructor"] == [f"{PROJECT['name']}[{','.join(extras.EXTRAS)}]"]
    assert f"{PROJECT['name']}[instructor]" in PROJECT["optional-dependencies"]["dev"], "dev installs every extra"


def _calls_need(function: ast.AST) -> bool:
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "need" for node in ast.walk(function))


def test_an_extras_package_is_imported_only_in_a_function_that_needs_it_first():
    """Never at a module's top (grading would import it), always in a function that calls ``need`` before it."""
    wrong = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if not any(name.split(".")[0] in EXTRA_PACKAGES for name in names):
                continue
            inside = [f for f in functions if f.lineno <= node.lineno <= f.end_lineno]
            function = min(inside, key=lambda f: f.end_lineno - f.lineno, default=None)
            needed = function is not None and any(
                _calls_need(statement) for statement in function.body if statement.lineno < node.lineno)
            if not needed:
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert wrong == []


@pytest.mark.parametrize("argv, extra", [
    (["notebooks", "--check"], "notebooks"),
    (["new-exercise", "gqa"], "notebooks"),
    (["check-exercise", "softmax"], "notebooks"),
    (["gradebook", "nowhere"], "plots"),
    (["batch", "nowhere", "--out", "nowhere"], "plots"),
    (["collect", "nowhere", "--deadline", "2026-12-01T23:59:00+01:00", "--out", "nowhere"], "plots"),
])
def test_a_command_without_its_extra_says_which_in_one_line(argv, extra, monkeypatch, capsys):
    found = importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name, *rest: None if name in EXTRA_PACKAGES else found(name, *rest))
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"grader {argv[0]} needs the grader's {extra} extra" in error, error
    assert f"pip install '.[{extra}]'" in error


def test_dask_is_needed_only_with_dask(monkeypatch, capsys):
    found = importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec",
                        lambda name, *rest: None if name == "distributed" else found(name, *rest))
    assert main(["batch", "nowhere", "--out", "nowhere", "--dask", "local"]) == 2
    assert "needs the grader's dask extra (distributed is not installed)" in capsys.readouterr().err
