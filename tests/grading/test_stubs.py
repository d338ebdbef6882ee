"""The stub generator (grader/authoring/stubs.py): solutions/ -> exercises/ keeps the interface and drops the answers."""
from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from courses import MODULES  # noqa: E402

from grader.authoring import stubs  # noqa: E402
from grader.authoring.stubs import (  # noqa: E402
    BEGIN,
    END,
    StubError,
    solution_blocks,
    stale_files,
    strip_solutions,
    write_exercises,
)


def solution_source(module: str) -> str:
    return (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")


def interface(source: str) -> dict[str, tuple]:
    """Qualified name -> (signature, decorators, bases, docstring) of every def and class outside the solution blocks.

    Helpers defined inside a solution block are part of the answer and rightly vanish from the stub.
    """
    found: dict[str, tuple] = {}
    tree = ast.parse(source)
    found["<module>"] = (ast.get_docstring(tree, clean=False),)
    hidden = {line for begin, end in solution_blocks(source) for line in range(begin + 1, end + 2)}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if getattr(child, "lineno", None) in hidden:
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found[name] = (ast.dump(child.args), [ast.dump(d) for d in child.decorator_list],
                               ast.dump(child.returns) if child.returns else None, ast.get_docstring(child, clean=False))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                name = prefix + child.name
                found[name] = ([ast.dump(b) for b in child.bases], [ast.dump(d) for d in child.decorator_list],
                               ast.get_docstring(child, clean=False))
                visit(child, name + ".")

    visit(tree, "")
    return found


def stubbed_functions(source: str) -> list[str]:
    """Qualified names of the defs whose body holds a solution block, innermost def per block."""
    lines = {begin + 1 for begin, _ in solution_blocks(source)}
    names = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                inner = [c for c in ast.walk(child) if c is not child and isinstance(c, (ast.FunctionDef, ast.ClassDef))]
                own = set(range(child.lineno, child.end_lineno + 1)) - {
                    line for c in inner for line in range(c.lineno, c.end_lineno + 1)}
                if isinstance(child, ast.FunctionDef) and own & lines:
                    names.append(name)
                visit(child, name + ".")

    visit(ast.parse(source), "")
    return names


def solution_only_lines(source: str) -> set[str]:
    """Stripped code lines that occur inside solution blocks and nowhere else in the file."""
    lines = source.splitlines()
    inside = set()
    for begin, end in solution_blocks(source):
        inside.update(range(begin + 1, end))
    code = lambda i: lines[i].strip()  # noqa: E731
    within = {code(i) for i in inside if code(i) and not code(i).startswith("#")}
    outside = {code(i) for i in range(len(lines)) if i not in inside}
    return within - outside


@pytest.mark.parametrize("module", MODULES)
def test_stub_keeps_signatures_and_docstrings(module):
    """The stub of each module keeps every def/class with its signature, decorators, bases and docstring."""
    source = solution_source(module)
    assert interface(strip_solutions(source, module)) == interface(source)


@pytest.mark.parametrize("module", MODULES)
def test_stub_drops_the_solution(module):
    """The stub holds no solution markers and none of the solution blocks' code lines; it compiles."""
    source = solution_source(module)
    stub = strip_solutions(source, module)
    compile(stub, f"exercises/{module}.py", "exec")
    assert BEGIN not in stub and END not in stub
    assert solution_blocks(source), f"solutions/{module}.py has no solution block"
    stub_lines = {line.strip() for line in stub.splitlines()}
    leaked = solution_only_lines(source) & stub_lines
    assert not leaked, f"solution code left in the stub of {module}: {sorted(leaked)}"
    assert stub.count("raise NotImplementedError(") == len(solution_blocks(source))


@pytest.mark.parametrize("module", MODULES)
def test_stub_raises_not_implemented_naming_the_function(module, tmp_path, monkeypatch):
    """Calling any stubbed function or method raises NotImplementedError("module.name: fill in this stub ...")."""
    package = f"stubcheck_{module}"
    write_exercises(tmp_path / package)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        stub = importlib.import_module(f"{package}.{module}")
        names = stubbed_functions(solution_source(module))
        assert names
        for name in names:
            owner_name, _, function_name = name.rpartition(".")
            if owner_name:  # a method: call it unbound on a bare instance
                owner = getattr(stub, owner_name)
                function = getattr(owner, function_name)
                instance = object.__new__(owner)
                bound = [instance]
            else:
                function, bound = getattr(stub, function_name), []
            required = [p for p in inspect.signature(function).parameters.values()
                        if p.default is inspect.Parameter.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
            arguments = bound + [None] * (len(required) - len(bound))
            with pytest.raises(NotImplementedError) as info:
                function(*arguments)
            assert str(info.value) == f"{module}.{name}: fill in this stub (see its docstring)"
    finally:
        for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[loaded]


def test_exercises_are_up_to_date():
    """exercises/ is exactly what `python -m grader stubs` generates from solutions/ (not stale)."""
    assert stale_files() == [], "exercises/ is stale: run `python -m grader stubs`"


def test_exercises_files_are_the_generated_ones():
    """exercises/ holds __init__.py plus one stub per exercise, each with the generator's header."""
    rendered = stubs.render_exercises()
    assert set(rendered) == {"__init__.py"} | {f"{m}.py" for m in MODULES}
    for module in MODULES:
        assert rendered[f"{module}.py"].startswith(stubs.HEADER)


def test_stale_copy_is_detected(tmp_path):
    """A generated copy is fresh; editing one file or deleting another makes stale_files name exactly those."""
    target = tmp_path / "exercises"
    assert sorted(write_exercises(target)) == sorted(stubs.render_exercises())
    assert stale_files(target) == []
    edited = target / "softmax.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# a student's note\n", encoding="utf-8")
    assert stale_files(target) == ["softmax.py"]
    (target / "quiz.py").unlink()
    assert sorted(stale_files(target)) == ["quiz.py", "softmax.py"]
    assert sorted(write_exercises(target)) == ["quiz.py", "softmax.py"]
    assert stale_files(target) == []
    dropped, own = target / "dropped.py", target / "helpers.py"  # a stub of an exercise no longer in the course
    dropped.write_text(stubs.HEADER + "def f():\n    pass\n", encoding="utf-8")
    own.write_text("# the instructor's own file\n", encoding="utf-8")
    assert stale_files(target) == ["dropped.py"]
    assert write_exercises(target) == ["dropped.py"] and not dropped.exists() and own.exists()


def test_stubs_check_command():
    """`grader stubs --check` reports an up-to-date exercises/ with exit status 0."""
    from grader.cli import main

    assert main(["stubs", "--check"]) == 0


SOURCE_WITH = {
    "BEGIN without END": f"def f():\n    {BEGIN}\n    return 1\n",
    "END without BEGIN": f"def f():\n    return 1\n    {END}\n",
    "BEGIN inside a block": f"def f():\n    {BEGIN}\n    {BEGIN}\n    return 1\n    {END}\n",
}


def test_a_solution_missing_its_end_marker_is_one_line_naming_the_file(tmp_path):
    """`grader stubs` on a course whose solution lost an ``### END SOLUTION``: exit status 2 and one line naming
    the file and the line (it was a traceback naming neither; found by our instructor's walk-through)."""
    import shutil
    import subprocess

    from courses import course_variant

    from grader import ROOT
    from grader.course import COURSE_FILE

    path = course_variant(tmp_path / "course", COURSE_FILE.read_text(encoding="utf-8"))
    solutions = tmp_path / "course" / "solutions"
    solutions.unlink()
    shutil.copytree(ROOT / "solutions", solutions)
    broken = solutions / f"{MODULES[1]}.py"
    broken.write_text(broken.read_text(encoding="utf-8").replace("### END SOLUTION", "", 1), encoding="utf-8")
    for check in ([], ["--check"]):
        done = subprocess.run([sys.executable, "-m", "grader", "stubs", *check, "--course", str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"grader: {broken}: line ") and "### END SOLUTION" in done.stderr


@pytest.mark.parametrize("fault", SOURCE_WITH)
def test_unpaired_markers_raise_stub_error(fault):
    """Solution markers that do not pair up raise StubError naming the line."""
    source = SOURCE_WITH[fault]
    with pytest.raises(StubError, match=r"line \d"):
        solution_blocks(source)
    with pytest.raises(StubError):
        strip_solutions(source, "example")


def test_strip_solutions_small_example():
    """A block inside a method becomes one raise naming module.Class.method, indented like the block."""
    source = (f"class A:\n    def run(self, x):\n        \"\"\"Doc.\"\"\"\n        {BEGIN}\n"
              f"        y = x + 1\n        return y\n        {END}\n")
    expected = ('class A:\n    def run(self, x):\n        """Doc."""\n'
                '        raise NotImplementedError("mod.A.run: fill in this stub (see its docstring)")\n')
    assert strip_solutions(source, "mod") == expected
