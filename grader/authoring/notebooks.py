"""The course as Jupyter notebooks: an nbgrader course generated from the lessons and solutions/.

``generate_course(target)`` writes an nbgrader course folder (``nbgrader_config.py``
and ``source/<assignment>/<assignment>.ipynb``), one notebook per exercise of
course.yaml, in its order, each its own assignment (``Course.notebook_name``). Each notebook holds the exercise's lesson from
``tests/course/<module>/lesson.md`` (read by ``read_lesson``; the set-up cell and the fixed
texts come from ``tests/course/notebook.md``), the exercise module's code as an
nbgrader solution cell (the reference from ``solutions/`` with its
``### BEGIN SOLUTION`` markers, which ``nbgrader generate_assignment`` turns into
stubs), import-free cells that run the public checks, a heatmap of the lesson's
attention weights, and autograded test cells whose hidden parts nbgrader strips
on release. The notebooks are written without outputs; ``stale_notebooks``
lists the files that differ from what the generator would write.

The grader's intake reads the notebooks back (``grader.intake.notebooks``).

Regenerate with ``python -m grader notebooks`` (``--check`` only reports).
"""
from __future__ import annotations

from pathlib import Path

from grader.authoring.lessons import (
    LessonError,
    Shared,
    lesson_files,
    read_lesson,
    read_shared,
    shown,
)
from grader.course import Course
from grader.course import course as project_course
from grader.extras import need
from grader.intake.notebooks import solution_grade_id

COURSE_ID = "self-attention"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
SCHEMA_VERSION = 3
# What nbgrader puts in place of each solution block when it releases a notebook.
CODE_STUB = '# YOUR CODE HERE\nraise NotImplementedError("fill in this stub (see its docstring)")'


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


def render_notebook(course: Course, module: str, lesson_file: Path, shared: Shared):
    """The source notebook of one exercise (an nbformat v4 NotebookNode without outputs)."""
    need("notebooks", "writing the course's notebooks")
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    lesson = read_lesson(lesson_file)
    exercise = course.exercise(module)
    number = course.modules.index(module) + 1
    points = sum(test.points for test in lesson.tests)
    if points != exercise.points:
        raise LessonError(f"{shown(lesson_file)}: the graded tests add up to {points} points, course.yaml gives "
                          f"{exercise.points}: make the points of its `<!-- test NAME: N points -->` lines add up to "
                          f"{exercise.points}, then run `grader notebooks`")
    solution = (course.solutions_dir / f"{module}.py").read_text(encoding="utf-8")
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
    add("code", shared.public_checks.replace("{module}", module), f"{module}_public_checks", locked=True)
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


def _config_text(course: Course) -> str:
    listed = "\n".join(f"#   {course.notebook_name(e.module)}: {e.title}" for e in course.exercises)
    return f'''# nbgrader configuration of the self-attention course.
# Generated by `python -m grader notebooks` from solutions/ and course.yaml: edit those, then regenerate.
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


def render_course(course: Course | None = None) -> dict[str, str]:
    """Path (relative to the nbgrader course folder) -> text of every generated file, from the course's lesson files
    (default: the project's course)."""
    need("notebooks", "writing the course's notebooks")
    import nbformat

    course = course or project_course()
    shared = read_shared(course.notebook_texts)
    lesson_file = lesson_files(course)
    files = {".gitignore": GITIGNORE, "nbgrader_config.py": _config_text(course)}
    for module in course.modules:
        name = course.notebook_name(module)
        text = nbformat.writes(render_notebook(course, module, lesson_file[module], shared), version=4)
        files[f"source/{name}/{name}.ipynb"] = text if text.endswith("\n") else text + "\n"
    return files


def stale_notebooks(target: Path | None = None, course: Course | None = None) -> list[str]:
    """Generated files of ``target`` (default: the course's nbgrader/) that differ from what the generator would
    write, and stray source notebooks."""
    course = course or project_course()
    target = Path(target or course.nbgrader_dir)
    files = render_course(course)
    stale = [name for name, text in files.items()
             if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text]
    source = target / "source"
    if source.is_dir():
        for path in sorted(source.rglob("*.ipynb")):
            name = path.relative_to(target).as_posix()
            if name not in files and ".ipynb_checkpoints" not in path.parts:
                stale.append(name)
    return stale


def stale_problem(course: Course) -> str | None:
    """Why the course's nbgrader/ is not what course.yaml and its lessons make now (a lesson that does not build, or
    notebooks not generated again since), or None: a release would ship notebooks that state, and grade, other points."""
    try:
        stale = stale_notebooks(course=course)
    except LessonError as error:
        return str(error)
    if not stale:
        return None
    return (f"{course.nbgrader_dir.name}/ is not what course.yaml and the lessons make now ({', '.join(stale[:3])}"
            f"{', ...' if len(stale) > 3 else ''}): run `grader notebooks`, then release")


def generate_course(target: Path | None = None, course: Course | None = None) -> list[str]:
    """Write the nbgrader course into ``target`` (default: the course's nbgrader/); return the files that changed
    (stray source notebooks are removed)."""
    course = course or project_course()
    target = Path(target or course.nbgrader_dir)
    changed = stale_notebooks(target, course)
    files = render_course(course)
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
