"""The course as Jupyter notebooks: an nbgrader course generated from lessons/ and solutions/, and reading notebooks back.

``generate_course(target)`` writes an nbgrader course folder (``nbgrader_config.py``
and ``source/<assignment>/<assignment>.ipynb``), one notebook per exercise of
course.yaml, in its order. Each notebook holds the exercise's lesson from
``lessons/<module>.md`` (read by ``read_lesson``; the set-up cell and the fixed
texts come from ``lessons/_shared.md``), the exercise module's code as an
nbgrader solution cell (the reference from ``solutions/`` with its
``### BEGIN SOLUTION`` markers, which ``nbgrader generate_assignment`` turns into
stubs), import-free cells that run the public checks, a heatmap of the lesson's
attention weights, and autograded test cells whose hidden parts nbgrader strips
on release. The notebooks are written without outputs; ``stale_notebooks``
lists the files that differ from what the generator would write.

``read_notebook`` is the other direction, used by the grader's intake: it finds
each exercise's solution cell by its nbgrader ``grade_id`` (``<module>_solution``)
and returns the code of those cells only, never anything else of the notebook.
``modules_from_nbgrader_submission`` does the same for nbgrader's
``submitted/<student>/<assignment>/<assignment>.ipynb`` layout.

Regenerate with ``python -m grader notebooks`` (``--check`` only reports).
"""
from __future__ import annotations

import ast
import json
import os
import re
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import ROOT
from .course import MODULES, course
from .intake import IntakeError
from .text import MAX_NAME, clean

COURSE_DIR = ROOT / "nbgrader"
SOLUTIONS = ROOT / "solutions"
COURSE_ID = "self-attention"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
SCHEMA_VERSION = 3
# What nbgrader puts in place of each solution block when it releases a notebook.
CODE_STUB = '# YOUR CODE HERE\nraise NotImplementedError("fill in this stub (see its docstring)")'
# Defaults of read_notebook's caps (a notebook with cleared outputs is a few tens of KiB).
MAX_NOTEBOOK_MB = 8
MAX_CELL_MB = 1


def assignment_name(module: str) -> str:
    """The nbgrader assignment (and notebook) name of an exercise: ``01_scores`` ... ``08_multihead``."""
    return f"{MODULES.index(module) + 1:02d}_{module}"


ASSIGNMENTS = {assignment_name(module): module for module in MODULES}


def solution_grade_id(module: str) -> str:
    """The nbgrader grade_id of the cell that holds the exercise's code: how the grader finds it."""
    return f"{module}_solution"


# ---------------------------------------------------------------------------
# The lessons: lessons/<module>.md, and lessons/_shared.md for what every notebook shares
# ---------------------------------------------------------------------------

LESSONS_DIR = ROOT / "lessons"
SHARED_FILE = "_shared.md"
# What each section of a lesson file holds: markdown ("text"), one ```python block ("code") or several ("cells").
LESSON_SECTIONS = {"lesson": "text", "demo": "code", "task": "text", "checks": "cells",
                   "picture text": "text", "picture": "code"}
OPTIONAL_SECTIONS = {"demo"}
SHARED_SECTIONS = {"setup": "code", "how to work": "text", "checks intro": "text", "tests intro": "text"}
MARKER = re.compile(r"<!--\s*(?P<name>.*?)\s*-->")
TEST_MARKER = re.compile(r"test (?P<name>\w+): (?P<points>\d+) points?")
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
    tests_intro: str


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def _split_sections(path: Path) -> list[tuple[str, str]]:
    """(marker, body) of each section: a line ``<!-- name -->`` outside a fenced block starts one."""
    if not path.is_file():
        raise LessonError(f"{_shown(path)}: no such lesson file")
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
            raise LessonError(f"{_shown(path)}:{number}: text before the first section marker")
    if fenced:
        raise LessonError(f"{_shown(path)}: a ``` block is not closed")
    return [(name, "".join(lines)) for name, lines in sections]


def _code_cells(path: Path, name: str, body: str) -> list[str]:
    if CODE_BLOCK.sub("", body).strip():
        raise LessonError(f"{_shown(path)}: section <!-- {name} --> holds text outside its ```python blocks")
    return [match["code"].strip("\n") for match in CODE_BLOCK.finditer(body)]


def _read_sections(path: Path, kinds: dict[str, str], optional=frozenset(), graded: bool = False):
    """The sections of a lesson file by name (text, code or a tuple of code cells), and its graded tests."""
    found: dict[str, object] = {}
    tests: list[Test] = []
    for name, body in _split_sections(path):
        test = TEST_MARKER.fullmatch(name) if graded else None
        kind = "code" if test else kinds.get(name)
        if kind is None:
            known = ", ".join(f"<!-- {known} -->" for known in kinds) + (", <!-- test NAME: N points -->" if graded else "")
            raise LessonError(f"{_shown(path)}: unknown section <!-- {name} --> (known: {known})")
        if name in found or (test and any(t.name == test["name"] for t in tests)):
            raise LessonError(f"{_shown(path)}: section <!-- {name} --> appears twice")
        content = body.strip("\n") if kind == "text" else tuple(_code_cells(path, name, body))
        if kind == "text" and not content.strip():
            raise LessonError(f"{_shown(path)}: section <!-- {name} --> is empty")
        if kind != "text" and (len(content) != 1 if kind == "code" else not content):
            wanted = "exactly one" if kind == "code" else "at least one"
            raise LessonError(f"{_shown(path)}: section <!-- {name} --> needs {wanted} ```python block, not {len(content)}")
        if test:
            tests.append(Test(test["name"], int(test["points"]), content[0]))
        else:
            found[name] = content[0] if kind == "code" else content
    missing = [name for name in kinds if name not in found and name not in optional]
    if missing:
        raise LessonError(f"{_shown(path)}: missing section <!-- {missing[0]} -->")
    if graded and not tests:
        raise LessonError(f"{_shown(path)}: missing section <!-- test NAME: N points --> (no graded test)")
    return found, tests


def read_lesson(path: Path) -> Lesson:
    """The lesson of one exercise from its lesson file."""
    sections, tests = _read_sections(Path(path), LESSON_SECTIONS, OPTIONAL_SECTIONS, graded=True)
    return Lesson(sections["lesson"], sections["task"], sections["checks"], sections["picture text"],
                  sections["picture"], tuple(tests), sections.get("demo", ""))


def read_shared(path: Path) -> Shared:
    """The set-up cell and the fixed texts every notebook shares."""
    sections, _ = _read_sections(Path(path), SHARED_SECTIONS)
    return Shared(sections["setup"], sections["how to work"], sections["checks intro"], sections["tests intro"])


def lesson_files(folder: Path = LESSONS_DIR) -> dict[str, Path]:
    """The lesson file of every exercise of course.yaml; a lesson file of no exercise is an error."""
    folder = Path(folder)
    files = {module: folder / f"{module}.md" for module in MODULES}
    for module, path in files.items():
        if not path.is_file():
            raise LessonError(f"{_shown(path)}: missing lesson file of exercise {module} (course.yaml lists it)")
    strays = sorted(set(folder.glob("*.md")) - set(files.values()) - {folder / SHARED_FILE})
    if strays:
        raise LessonError(f"{_shown(strays[0])}: no exercise of course.yaml has this lesson (rename or remove it)")
    return files


# ---------------------------------------------------------------------------
# Generating the course
# ---------------------------------------------------------------------------

def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
              points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def render_notebook(module: str, lesson_file: Path, shared: Shared):
    """The source notebook of one exercise (an nbformat v4 NotebookNode without outputs)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    lesson = read_lesson(lesson_file)
    exercise = course().exercise(module)
    number = MODULES.index(module) + 1
    points = sum(test.points for test in lesson.tests)
    if points != exercise.points:
        raise LessonError(f"{_shown(lesson_file)}: the graded tests add up to {points} points, course.yaml gives {exercise.points}")
    solution = (SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")
    cells = []

    def add(kind, source, grade_id, **flags):
        cell = (new_markdown_cell if kind == "markdown" else new_code_cell)(source.strip("\n"))
        cell.id = grade_id.replace("_", "-")
        cell.metadata["nbgrader"] = _nbgrader(grade_id, **flags)
        cells.append(cell)

    title = f"# Exercise {number}: {exercise.title}\n\n*{exercise.points} points.* {lesson.lesson}"
    add("markdown", title, f"{module}_lesson", locked=True)
    add("code", shared.setup, f"{module}_setup", locked=True)
    if lesson.demo:
        add("code", lesson.demo, f"{module}_demo", locked=True)
    add("markdown", f"## Your code\n\n{lesson.task}\n\n{shared.how_to_work.replace('{module}', module)}",
        f"{module}_task", locked=True)
    add("code", solution, solution_grade_id(module), solution=True)
    add("markdown", shared.checks_intro, f"{module}_checks", locked=True)
    for index, check in enumerate(lesson.checks, 1):
        add("code", check, f"{module}_check_{index}", locked=True)
    add("markdown", "## The attention weights\n\n" + lesson.picture_text, f"{module}_picture_text", locked=True)
    add("code", lesson.picture, f"{module}_picture", locked=True)
    add("markdown", shared.tests_intro, f"{module}_tests", locked=True)
    for test in lesson.tests:
        add("code", test.source, f"{module}_test_{test.name}", grade=True, locked=True, points=test.points)

    notebook = new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    nbformat.validate(notebook)
    return notebook


def _config_text() -> str:
    listed = "\n".join(f"#   {name}: {course().exercise(module).title}" for name, module in ASSIGNMENTS.items())
    return f'''# nbgrader configuration of the self-attention course.
# Generated by `python -m grader.notebooks` from solutions/ and course.yaml: edit those, then regenerate.
#
# Assignments (one notebook each, source/<assignment>/<assignment>.ipynb):
{listed}
c = get_config()  # noqa: F821 - nbgrader provides get_config when it loads this file

c.CourseDirectory.course_id = {COURSE_ID!r}
# What a released notebook shows in place of each solution block.
c.ClearSolutions.code_stub = {{"python": {CODE_STUB!r}}}
# Seconds per cell when nbgrader runs a notebook (autograde, validate); importing torch takes a few.
c.Execute.timeout = 120
'''


GITIGNORE = """# What nbgrader writes when the course is used; only nbgrader_config.py and source/ are generated and committed.
gradebook.db
release/
submitted/
autograded/
feedback/
exchange/
grades.csv
.ipynb_checkpoints/
"""


def render_course(lessons: Path | None = None) -> dict[str, str]:
    """Path (relative to the course folder) -> text of every generated file, from the lesson files in ``lessons``."""
    import nbformat

    lessons = Path(lessons or LESSONS_DIR)
    shared = read_shared(lessons / SHARED_FILE)
    lesson_file = lesson_files(lessons)
    files = {".gitignore": GITIGNORE, "nbgrader_config.py": _config_text()}
    for name, module in ASSIGNMENTS.items():
        text = nbformat.writes(render_notebook(module, lesson_file[module], shared), version=4)
        files[f"source/{name}/{name}.ipynb"] = text if text.endswith("\n") else text + "\n"
    return files


def stale_notebooks(target: Path = COURSE_DIR) -> list[str]:
    """Generated files of ``target`` that differ from what the generator would write, and stray source notebooks."""
    target = Path(target)
    files = render_course()
    stale = [name for name, text in files.items()
             if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text]
    source = target / "source"
    if source.is_dir():
        for path in sorted(source.rglob("*.ipynb")):
            name = path.relative_to(target).as_posix()
            if name not in files and ".ipynb_checkpoints" not in path.parts:
                stale.append(name)
    return stale


def generate_course(target: Path = COURSE_DIR) -> list[str]:
    """Write the nbgrader course into ``target``; return the files that changed (stray source notebooks are removed)."""
    target = Path(target)
    changed = stale_notebooks(target)
    files = render_course()
    for name in changed:
        path = target / name
        if name in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[name], encoding="utf-8")
        else:
            path.unlink()
            if path.parent != target / "source" and not any(path.parent.iterdir()):
                path.parent.rmdir()
    return changed


# ---------------------------------------------------------------------------
# Reading notebooks back
# ---------------------------------------------------------------------------

SOLUTION_ID = re.compile(r"(?P<module>[a-z]+)_solution")
IPYTHON_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<command>[!%].*)$")


@cache
def _public_names(module: str) -> frozenset[str]:
    """Top-level functions and classes of an exercise module (from its reference), to recognize a stripped cell."""
    try:
        tree = ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return frozenset()
    return frozenset(node.name for node in tree.body
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def _read_capped(path: Path, cap: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise IntakeError(f"{path.name} cannot be read ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise IntakeError(f"{path.name} is not a regular file")
        if info.st_size > cap:
            raise IntakeError(f"{path.name} is {info.st_size / 2**20:.1f} MiB, over the {cap / 2**20:g} MiB limit for a "
                              "notebook: clear its outputs (Edit > Clear Outputs of All Cells), save it and hand it in again")
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise IntakeError(f"{path.name} is over the {cap / 2**20:g} MiB limit for a notebook")
    return data


def _parse(path: Path, data: bytes) -> list:
    """The notebook's list of cells; IntakeError when it is not a readable nbformat 4 notebook."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise IntakeError(f"{path.name} is not a notebook: it is not UTF-8 text (byte {data[error.start]:#04x} at "
                          f"offset {error.start})") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise IntakeError(f"{path.name} is not valid notebook JSON (line {error.lineno}, column {error.colno}: "
                          f"{error.msg}): open it in Jupyter, save it and hand it in again") from None
    except (ValueError, RecursionError) as error:
        raise IntakeError(f"{path.name} is not valid notebook JSON ({type(error).__name__})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        if isinstance(notebook, dict) and "worksheets" in notebook:
            raise IntakeError(f"{path.name} is an old-format notebook (nbformat 3): open and save it with a current "
                              "Jupyter, which writes format 4")
        raise IntakeError(f"{path.name} is not a Jupyter notebook: it has no list of cells")
    version = notebook.get("nbformat")
    if version != 4:
        raise IntakeError(f"{path.name} is in notebook format {clean(repr(version), MAX_NAME)}; only format 4 "
                          "(current Jupyter) is read")
    return notebook["cells"]


def _grade_id(cell) -> str | None:
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
    return grade_id if isinstance(grade_id, str) else None


def _source(cell) -> str | None:
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


def _lookalikes(cells: list, module: str) -> list[str]:
    """Cells without the module's metadata whose code defines the module's functions or classes."""
    names = _public_names(module)
    found = []
    for index, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or _grade_id(cell) == solution_grade_id(module):
            continue
        source = _source(cell) or ""
        defined = {m.group(2) for m in re.finditer(r"^(def|class)\s+(\w+)", source, re.MULTILINE)} & names
        if defined:
            found.append(f"cell {index} (defines {', '.join(sorted(defined))})")
    return found


def _without_ipython(source: str) -> tuple[str, list[int]]:
    """Turn IPython-only lines (``!pip ...``, ``%time ...``) into ``pass`` with a comment, when that makes the code parse.

    The module is graded as plain Python, where such lines are syntax errors. They are replaced only when
    the cell does not parse as it is and does parse without them; line numbers stay the same.
    """
    lines = source.splitlines(keepends=True)
    touched = [i for i, line in enumerate(lines) if IPYTHON_LINE.match(line.rstrip("\r\n"))]
    if not touched:
        return source, []
    try:
        ast.parse(source)
        return source, []
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    for i in touched:
        match = IPYTHON_LINE.match(lines[i].rstrip("\r\n"))
        ending = lines[i][len(lines[i].rstrip("\r\n")):]
        lines[i] = f"{match['indent']}pass  # IPython line left out by the grader: {match['command']}{ending}"
    changed = "".join(lines)
    try:
        ast.parse(changed)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source, []
    return changed, [i + 1 for i in touched]


def read_notebook(path, problems: dict[str, str], notes: list[str], limits=None) -> dict[str, bytes]:
    """The exercise code of a notebook: module -> source bytes of its solution cell (grade_id ``<module>_solution``).

    Only solution cells are read; every other cell (scratch work, shell commands, outputs) is ignored.
    A notebook may hold one exercise's cell (one assignment) or several. Problems with one exercise's cell
    (missing, duplicated, metadata changed, not text) go to ``problems[module]``; a file that is not a
    readable notebook raises ``IntakeError``. ``limits`` (course.yaml's intake section) sets the caps:
    ``max_total_mb`` for the notebook and ``max_file_mb`` for one cell; without it, 8 MiB and 1 MiB.
    """
    path = Path(path)
    notebook_cap = int((limits.max_total_mb if limits else MAX_NOTEBOOK_MB) * 2**20)
    cell_cap = int((limits.max_file_mb if limits else MAX_CELL_MB) * 2**20)
    cells = _parse(path, _read_capped(path, notebook_cap))

    found: dict[str, list[int]] = {}
    mentioned: set[str] = set()
    for index, cell in enumerate(cells, 1):
        grade_id = _grade_id(cell)
        if grade_id is None:
            continue
        match = SOLUTION_ID.fullmatch(grade_id)
        if match and match["module"] in MODULES:
            found.setdefault(match["module"], []).append(index)
        mentioned.update(m for m in MODULES if grade_id.startswith(m + "_"))

    files: dict[str, bytes] = {}
    for module in MODULES:
        grade_id = solution_grade_id(module)
        indices = found.get(module, [])
        if not indices:
            # A cell defining the module's names counts as a stripped solution cell only where the notebook
            # belongs to this exercise (other cells of it are there) or has lost all its solution cells.
            lookalikes = _lookalikes(cells, module) if module in mentioned or not found else []
            if lookalikes:
                problems[module] = (f"{', '.join(lookalikes)} of {path.name} holds code of {module}.py but is not the "
                                    f"notebook's solution cell (nbgrader grade_id {grade_id!r}): its metadata was "
                                    "removed or changed. Put your code back into the solution cell of the course notebook")
            elif module in mentioned:
                problems[module] = (f"{path.name} holds cells of {module} but not its solution cell (nbgrader grade_id "
                                    f"{grade_id!r}): it was deleted or its metadata changed. Copy your code into the "
                                    "solution cell of a fresh copy of the course notebook")
            continue
        if len(indices) > 1:
            where = ", ".join(str(i) for i in indices)
            problems[module] = (f"{path.name} holds {len(indices)} solution cells of {module} (cells {where} all have "
                                f"grade_id {grade_id!r}): keep only one, the grader cannot tell which to grade")
            continue
        index = indices[0]
        cell = cells[index - 1]
        meta = cell["metadata"]["nbgrader"]
        if cell.get("cell_type") != "code":
            kind = clean(str(cell.get("cell_type", "typeless")), MAX_NAME)
            problems[module] = (f"the solution cell of {module} (cell {index} of {path.name}) is a {kind} cell, "
                                "not a code cell: change it back to code")
            continue
        if meta.get("solution") is not True:
            problems[module] = (f"cell {index} of {path.name} has grade_id {grade_id!r} but is not marked as a solution "
                                "cell (its nbgrader metadata was changed): use the solution cell of a fresh copy of "
                                "the course notebook")
            continue
        source = _source(cell)
        if source is None:
            problems[module] = f"the solution cell of {module} (cell {index}) does not hold text"
            continue
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError:
            problems[module] = f"the solution cell of {module} (cell {index}) holds characters that are not valid text"
            continue
        if len(data) > cell_cap:
            problems[module] = (f"the solution cell of {module} (cell {index}) is {len(data) / 2**20:.1f} MiB, over the "
                                f"{cell_cap / 2**20:g} MiB limit")
            continue
        if "\0" in source:
            problems[module] = f"the solution cell of {module} (cell {index}) contains NUL characters"
            continue
        source, dropped = _without_ipython(source)
        if dropped:
            lines = ", ".join(str(line) for line in dropped)
            notes.append(f"{module}: IPython line(s) {lines} of the solution cell (shell commands or magics) were left "
                         "out: the grader runs the cell as plain Python")
        if source and not source.endswith("\n"):
            source += "\n"
        files[module] = source.encode("utf-8")
    if files:
        taken = ", ".join(f"{module} (cell {found[module][0]})" for module in files)
        notes.append(f"exercise code taken from the solution cells of {path.name}: {taken}")
    elif not problems:
        raise IntakeError(f"{path.name} holds no solution cell: none of its cells carries an nbgrader grade_id such as "
                          "'scores_solution'. Hand in the course notebook itself; the grader finds your code through "
                          "the metadata of its solution cell")
    return files


def modules_from_nbgrader_submission(student_dir, problems: dict[str, str] | None = None,
                                     notes: list[str] | None = None, limits=None) -> dict[str, bytes]:
    """The exercise code of one student's nbgrader submission: module -> source bytes.

    ``student_dir`` is ``submitted/<student>`` (or ``autograded/<student>``) of an nbgrader course: it holds
    one folder per assignment, ``<assignment>/<assignment>.ipynb``. Assignments the student did not hand in
    are simply absent from the result; problems with one notebook go to ``problems`` under its module.
    """
    problems = {} if problems is None else problems
    notes = [] if notes is None else notes
    student_dir = Path(student_dir)
    if student_dir.is_symlink() or not student_dir.is_dir():
        raise IntakeError(f"{student_dir} is not a folder of nbgrader assignments")
    files: dict[str, bytes] = {}
    for entry in sorted(student_dir.iterdir()):
        if entry.name.startswith("."):
            continue
        module = ASSIGNMENTS.get(entry.name)
        if module is None:
            notes.append(f"ignored {clean(entry.name, MAX_NAME)}: not one of the course's assignments")
            continue
        if entry.is_symlink() or not entry.is_dir():
            problems[module] = f"{entry.name} is not a folder of the submission"
            continue
        notebook = entry / f"{entry.name}.ipynb"
        if not os.path.lexists(notebook):
            others = sorted(p for p in entry.glob("*.ipynb") if not p.is_symlink() and p.is_file())
            if len(others) != 1:
                problems[module] = (f"{entry.name}/ holds no notebook {notebook.name}" if not others else
                                    f"{entry.name}/ holds {len(others)} notebooks and none is {notebook.name}")
                continue
            notebook = others[0]
        local: dict[str, str] = {}
        try:
            found = read_notebook(notebook, local, notes, limits)
        except IntakeError as error:
            problems[module] = str(error)
            continue
        for name, data in found.items():
            if name in files:
                problems[name] = f"{name} appears in more than one assignment's notebook; only the first was taken"
            else:
                files[name] = data
        for name, problem in local.items():
            problems.setdefault(name, problem)
    return files
