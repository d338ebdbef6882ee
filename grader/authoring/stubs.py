"""Generate the student stubs in exercises/ from the references in solutions/.

Every block between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes a
``raise NotImplementedError(...)`` naming the function to fill in; everything
else (imports, signatures, docstrings) is kept. The notebooks are generated
from the same blocks.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import stub_message

from grader.course import Course
from grader.course import course as project_course

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HEADER = "# Generated from solutions/ by `python -m grader stubs`: fill in the stubs below.\n"
PACKAGE_DOC = '"""Your implementations: fill in each stub, then run `python -m pytest tests/public`."""\n'


class StubError(ValueError):
    """A solution file whose markers do not pair up."""


def _enclosing_names(source: str) -> dict[int, str]:
    """Map each line number to the qualified name of the innermost def/class around it."""
    names: dict[int, str] = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, child.end_lineno + 1):
                    names[line] = name
                visit(child, name + ".")

    visit(ast.parse(source), "")
    return names


def solution_blocks(source: str) -> list[tuple[int, int]]:
    """(begin, end) line indices (0-based, inclusive) of every solution block."""
    blocks, begin = [], None
    for index, line in enumerate(source.splitlines()):
        marker = line.strip()
        if marker == BEGIN:
            if begin is not None:
                raise StubError(f"line {index + 1}: {BEGIN} inside another solution block")
            begin = index
        elif marker == END:
            if begin is None:
                raise StubError(f"line {index + 1}: {END} without {BEGIN}")
            blocks.append((begin, index))
            begin = None
    if begin is not None:
        raise StubError(f"line {begin + 1}: {BEGIN} is never closed")
    return blocks


def strip_solutions(source: str, module: str) -> str:
    """The stub of one solution module: each solution block replaced by a NotImplementedError."""
    lines = source.splitlines(keepends=True)
    names = _enclosing_names(source)
    for begin, end in reversed(solution_blocks(source)):
        indent = re.match(r"\s*", lines[begin]).group()
        target = f"{module}.{names.get(begin + 1, module)}"
        lines[begin:end + 1] = [f"{indent}{stub_message.raising(target)}\n"]
    return "".join(lines)


STUB_LINE = re.compile(r'^[ \t]*raise NotImplementedError\("' + stub_message.PATTERN.pattern + ".*$", re.M)


def unstarted(source: str, stub: str) -> bool:
    """Whether ``source`` still holds every ``raise NotImplementedError(...)`` line of ``stub``: none of its stubs
    filled in yet (whatever else changed around them)."""
    present = {match[0].strip() for match in STUB_LINE.finditer(source)}
    lines = [match[0].strip() for match in STUB_LINE.finditer(stub)]
    return bool(lines) and all(line in present for line in lines)


def render_exercises(course: Course | None = None) -> dict[str, str]:
    """File name -> text of every file of exercises/, as generated from the course's solutions/ (default: the
    project's course), for each of its exercises."""
    course = course or project_course()
    files = {"__init__.py": PACKAGE_DOC}
    for module in course.modules:
        path = course.solutions_dir / f"{module}.py"
        try:
            files[f"{module}.py"] = HEADER + strip_solutions(path.read_text(encoding="utf-8"), module)
        except StubError as error:
            raise StubError(f"{path}: {error} (each {BEGIN} needs its {END} before the next)") from None
    return files


def stale_files(target: Path | None = None, course: Course | None = None) -> list[str]:
    """Files of ``target`` (default: the course's exercises/) that differ from what the generator would write, and the
    stubs it wrote for an exercise the course no longer has (walk-through 8: a dropped exercise's stub stayed)."""
    course = course or project_course()
    target = Path(target or course.exercises_dir)
    files = render_exercises(course)
    dropped = [path.name for path in sorted(target.glob("*.py")) if path.name not in files
               and path.read_text(encoding="utf-8", errors="replace").startswith(HEADER)]
    return [name for name, text in files.items()
            if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text] + dropped


def write_exercises(target: Path | None = None, course: Course | None = None) -> list[str]:
    """Regenerate ``target`` (default: the course's exercises/) from solutions/, removing the stubs of exercises the
    course no longer has; return the files that changed."""
    course = course or project_course()
    target = Path(target or course.exercises_dir)
    changed = stale_files(target, course)
    target.mkdir(parents=True, exist_ok=True)
    files = render_exercises(course)
    for name in changed:
        if name in files:
            (target / name).write_text(files[name], encoding="utf-8")
        else:
            (target / name).unlink()
    return changed
