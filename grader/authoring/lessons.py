"""Lesson files: each exercise's tests/course/<module>/lesson.md, and tests/course/notebook.md (what every notebook
shares).

A lesson file is Markdown cut into sections by ``<!-- name -->`` lines; code sections hold ```python blocks,
and each ``<!-- test NAME: N points -->`` section is one autograded nbgrader test cell.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader import ROOT
from grader.course import Course

# What each section of a lesson file holds: markdown ("text"), one ```python block ("code") or several ("cells").
LESSON_SECTIONS = {"lesson": "text", "demo": "code", "task": "text", "checks": "cells",
                   "picture text": "text", "picture": "code"}
OPTIONAL_SECTIONS = {"demo"}
SHARED_SECTIONS = {"setup": "code", "how to work": "text", "checks intro": "text", "public checks": "code",
                   "tests intro": "text"}
MARKER = re.compile(r"<!--\s*(?P<name>.*?)\s*-->")
TEST_MARKER = re.compile(r"test (?P<name>\w+): (?P<points>\d+) points?")
FRACTIONAL_TEST = re.compile(r"test \w+: \d*\.\d+ points?")  # points are whole numbers, as course.yaml's are
CODE_BLOCK = re.compile(r"^```python[ \t]*\n(?P<code>.*?)^```[ \t]*$\n?", re.S | re.M)


class LessonError(ValueError):
    """A lesson file cannot be read (one line naming the file and the problem)."""


@dataclass(frozen=True)
class Test:
    name: str  # grade_id suffix: <module>_test_<name>
    points: int
    source: str  # visible checks, then (optionally) a ### BEGIN HIDDEN TESTS block


@dataclass(frozen=True)
class Lesson:
    lesson: str  # markdown, after the title
    task: str  # markdown: what to write
    checks: tuple[str, ...]  # code cells that run the public checks
    picture_text: str  # markdown above the heatmap
    picture: str  # code: draws the attention weights
    tests: tuple[Test, ...]
    demo: str = ""  # optional code cell after the lesson (plain torch, no student code)


@dataclass(frozen=True)
class Shared:
    setup: str  # the set-up code cell of every notebook
    how_to_work: str  # markdown under the task; {module} becomes the exercise's module
    checks_intro: str
    public_checks: str  # the code cell that runs the public checks on the notebook's code; {module} as above
    tests_intro: str


def shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def _split_sections(path: Path) -> list[tuple[str, str]]:
    """(marker, body) of each section: a line ``<!-- name -->`` outside a fenced block starts one."""
    if not path.is_file():
        raise LessonError(f"{shown(path)}: no such lesson file")
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(keepends=True), 1):
        marker = None if fenced else MARKER.fullmatch(line.strip())
        if line.startswith("```"):
            fenced = not fenced
        if marker:
            sections.append((marker["name"], []))
        elif sections:
            sections[-1][1].append(line)
        elif line.strip():
            raise LessonError(f"{shown(path)}:{number}: text before the first section marker")
    if fenced:
        raise LessonError(f"{shown(path)}: a ``` block is not closed")
    return [(name, "".join(lines)) for name, lines in sections]


def _code_cells(path: Path, name: str, body: str) -> list[str]:
    if CODE_BLOCK.sub("", body).strip():
        raise LessonError(f"{shown(path)}: section <!-- {name} --> holds text outside its ```python blocks")
    return [match["code"].strip("\n") for match in CODE_BLOCK.finditer(body)]


def _read_sections(path: Path, kinds: dict[str, str], optional=frozenset(), graded: bool = False):
    """The sections of a lesson file by name (text, code or a tuple of code cells), and its graded tests."""
    found: dict[str, object] = {}
    tests: list[Test] = []
    for name, body in _split_sections(path):
        test = TEST_MARKER.fullmatch(name) if graded else None
        kind = "code" if test else kinds.get(name)
        if kind is None and graded and FRACTIONAL_TEST.fullmatch(name):
            raise LessonError(f"{shown(path)}: <!-- {name} -->: a test's points are a whole number, as course.yaml's are")
        if kind is None:
            known = ", ".join(f"<!-- {known} -->" for known in kinds) + (", <!-- test NAME: N points -->" if graded else "")
            raise LessonError(f"{shown(path)}: unknown section <!-- {name} --> (known: {known})")
        if name in found or (test and any(t.name == test["name"] for t in tests)):
            raise LessonError(f"{shown(path)}: section <!-- {name} --> appears twice")
        content = body.strip("\n") if kind == "text" else tuple(_code_cells(path, name, body))
        if kind == "text" and not content.strip():
            raise LessonError(f"{shown(path)}: section <!-- {name} --> is empty")
        if kind != "text" and (len(content) != 1 if kind == "code" else not content):
            wanted = "exactly one" if kind == "code" else "at least one"
            raise LessonError(f"{shown(path)}: section <!-- {name} --> needs {wanted} ```python block, not {len(content)}")
        if test:
            tests.append(Test(test["name"], int(test["points"]), content[0]))
        else:
            found[name] = content[0] if kind == "code" else content
    missing = [name for name in kinds if name not in found and name not in optional]
    if missing:
        raise LessonError(f"{shown(path)}: missing section <!-- {missing[0]} -->")
    if graded and not tests:
        raise LessonError(f"{shown(path)}: missing section <!-- test NAME: N points --> (no graded test)")
    return found, tests


def read_lesson(path: Path) -> Lesson:
    """The lesson of one exercise from its lesson file."""
    sections, tests = _read_sections(Path(path), LESSON_SECTIONS, OPTIONAL_SECTIONS, graded=True)
    return Lesson(sections["lesson"], sections["task"], sections["checks"], sections["picture text"],
                  sections["picture"], tuple(tests), sections.get("demo", ""))


def read_shared(path: Path) -> Shared:
    """The set-up cell and the fixed texts every notebook shares."""
    sections, _ = _read_sections(Path(path), SHARED_SECTIONS)
    return Shared(sections["setup"], sections["how to work"], sections["checks intro"], sections["public checks"],
                  sections["tests intro"])


def lesson_files(course: Course) -> dict[str, Path]:
    """The lesson file of every exercise of course.yaml (each one exists: the course is checked when it is loaded)."""
    return {module: course.lesson_file(module) for module in course.modules}
