"""The course notebooks (grader/authoring/notebooks.py, grader/intake/notebooks.py): the generated nbgrader course,
reading notebooks back, and nbgrader's own commands end to end.

The end-to-end tests (marked slow) copy the course into a temporary folder, release every notebook
with ``nbgrader generate_assignment``, hand in three students' notebooks (the references for all of them;
a bug and the stub for three assignments, 02_softmax, 05_quiz and 07_causal, since autograding all
all of them for three students would take minutes), and run ``nbgrader autograde``, ``generate_feedback`` and
``export``. The scores of the three assignments are compared with what the project's own sandboxed
grader gives the same notebooks.
"""
from __future__ import annotations

import ast
import copy
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from courses import MODULES  # noqa: E402

from grader import cli  # noqa: E402
from grader.authoring.lessons import LessonError  # noqa: E402
from grader.authoring.notebooks import (  # noqa: E402
    CODE_STUB,
    generate_course,
    render_course,
    stale_notebooks,
)
from grader.authoring.stubs import BEGIN, END  # noqa: E402
from grader.course import CourseError, course, load_course  # noqa: E402
from grader.intake import IntakeError, notebooks  # noqa: E402
from grader.intake.notebooks import (  # noqa: E402
    read_notebook,
    solution_grade_id,
)
from grader.intake.submission import read_submission  # noqa: E402

ASSIGNMENTS = {course().notebook_name(module): module for module in MODULES}  # one nbgrader assignment per notebook
COURSE_DIR = course().nbgrader_dir


def lessons_copy(tmp_path):
    """A copy of the course (course.yaml, solutions/, tests/course/) in ``tmp_path``, loaded: its lessons can be
    edited."""
    for name in ("solutions", "tests/course"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "course.yaml", tmp_path / "course.yaml")
    return load_course(tmp_path / "course.yaml")


def lesson(copy, name: str) -> Path:
    """The lesson file of exercise ``name`` in the copy, or the texts every notebook shares (``notebook``)."""
    return copy.notebook_texts if name == "notebook" else copy.lesson_file(name)

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
E2E_ASSIGNMENTS = ("02_softmax", "05_quiz", "07_causal")
STUDENTS = ("correct", "buggy", "stub")
BUG = ("alphas = torch.softmax(scores, dim=-1)", "alphas = torch.softmax(scores, dim=0)")  # right on one example, wrong on a batch
BUGGY_MODULE = "quiz"


def source_path(module: str) -> Path:
    name = course().notebook_name(module)
    return COURSE_DIR / "source" / name / f"{name}.ipynb"


def load(module: str):
    return nbformat.read(source_path(module), as_version=4)


def solution_text(module: str) -> str:
    return (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")


def meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def solution_cell(nb, module: str):
    cells = [cell for cell in nb.cells if meta(cell).get("grade_id") == solution_grade_id(module)]
    assert len(cells) == 1
    return cells[0]


def write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def read(path: Path):
    problems: dict[str, str] = {}
    notes: list[str] = []
    files = read_notebook(path, problems, notes)
    return files, problems, notes


# ---------------------------------------------------------------------------
# The generated course
# ---------------------------------------------------------------------------


def test_the_lesson_helper_expect_close_says_what_differs():
    """`expect_close(...)` in a lesson's check cell says what differs (the kind, the shape, both values), not a bare
    AssertionError; it holds within its tolerance."""
    from grader.authoring.lessons import read_shared
    from grader.course import course

    setup: dict = {}
    exec(read_shared(course().notebook_texts).setup, setup)  # the course's own set-up cell
    expect_close = setup["expect_close"]
    expect_close(setup["torch"].tensor([0.5, 0.25]), [0.50001, 0.25])
    for actual, expected, said in ((0.5, [0.5], "expected a tensor, got float"),
                                   (setup["torch"].ones(2, 1), [1.0, 1.0], "expected shape (2,), got (2, 1)"),
                                   (setup["torch"].tensor([0.5, 0.3]), [0.5, 0.25],
                                    "expected [0.5, 0.25] (to within 0.0001), got [0.5, 0.3]")):
        with pytest.raises(AssertionError) as caught:
            expect_close(actual, expected)
        assert str(caught.value) == said

def test_course_folder_is_not_stale():
    """nbgrader/ is what the generator writes from solutions/ and course.yaml."""
    stale = stale_notebooks()
    assert not stale, f"nbgrader/ is out of date ({', '.join(stale)}): run `python -m grader notebooks`"


def test_generator_writes_finds_and_repairs_stale_files(tmp_path):
    """A fresh folder gets every file; a changed file and a stray notebook are reported, and regenerating repairs both."""
    assert sorted(generate_course(tmp_path)) == sorted(render_course())
    assert stale_notebooks(tmp_path) == []
    changed = tmp_path / "source" / "05_quiz" / "05_quiz.ipynb"
    changed.write_text(changed.read_text(encoding="utf-8").replace("0.4387", "0.5"), encoding="utf-8")
    stray = tmp_path / "source" / "09_extra" / "09_extra.ipynb"
    stray.parent.mkdir()
    stray.write_text("{}", encoding="utf-8")
    assert stale_notebooks(tmp_path) == ["source/05_quiz/05_quiz.ipynb", "source/09_extra/09_extra.ipynb"]
    generate_course(tmp_path)
    assert stale_notebooks(tmp_path) == [] and not stray.exists()


def test_cli_check_reports_the_course_up_to_date(capsys):
    """`grader notebooks --check` exits 0 and says so when nbgrader/ matches solutions/."""
    assert cli.main(["notebooks", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


# (lesson, text replaced, replacement, what the error says): one flaw in a copy of the real lesson files.
LESSON_FLAWS = {
    "missing section": ("quiz", "<!-- picture -->", "", "missing section <!-- picture -->"),
    "unknown section": ("quiz", "<!-- picture text -->", "<!-- caption -->", "unknown section <!-- caption -->"),
    "section twice": ("quiz", "<!-- task -->", "<!-- lesson -->", "section <!-- lesson --> appears twice"),
    "test without points": ("quiz", "<!-- test quiz_answer: 4 points -->", "<!-- test quiz_answer -->",
                            "unknown section <!-- test quiz_answer -->"),
    "fractional points": ("quiz", "<!-- test quiz_answer: 4 points -->", "<!-- test quiz_answer: 1.5 points -->",
                          "<!-- test quiz_answer: 1.5 points -->: a test's points are a whole number"),  # walk 5
    "points that do not add up": ("quiz", "quiz_answer: 4 points", "quiz_answer: 5 points", "add up to 11 points"),
    "prose among the checks": ("quiz", "<!-- checks -->\n", "<!-- checks -->\nRun these.\n", "text outside"),
    "empty text": ("quiz", "<!-- task -->\n", "<!-- task -->\n\n<!-- demo -->\n```python\npass\n```\n",
                   "section <!-- task --> is empty"),
    "unclosed block": ("quiz", "```\n\n<!-- picture text -->", "\n\n<!-- picture text -->", "not closed"),
    "shared file's missing section": ("notebook", "<!-- tests intro -->", "", "missing section <!-- tests intro -->"),
    "shared file's test": ("notebook", "<!-- tests intro -->", "<!-- test intro: 1 point -->",
                           "unknown section <!-- test intro: 1 point -->"),
}


@pytest.mark.parametrize("flaw", LESSON_FLAWS)
def test_flawed_lesson_file_is_a_one_line_error(tmp_path, flaw):
    """A lesson file with a missing, unknown or malformed section stops the generator with one line naming both."""
    name, old, new, message = LESSON_FLAWS[flaw]
    copy = lessons_copy(tmp_path)
    path = lesson(copy, name)
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(LessonError) as error:
        render_course(copy)
    assert str(error.value).startswith(str(path)) and message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_missing_lesson_is_a_course_error(tmp_path):
    """Each exercise of course.yaml needs its lesson file: the course does not load without it, naming it."""
    copy = lessons_copy(tmp_path)
    copy.lesson_file("quiz").unlink()
    with pytest.raises(CourseError, match=r"tests/course/quiz/lesson\.md: missing lesson of exercise quiz \(course.yaml "
                                          r"lists it: restore the file from version control, or, for a new exercise, "
                                          r"take it out of course.yaml and run `grader new-exercise quiz`"):
        load_course(tmp_path / "course.yaml")


def test_cli_reports_a_flawed_lesson_in_one_line(tmp_path, monkeypatch, capsys):
    """`grader notebooks --check` prints a lesson file's problem as one line and exits 2, writing nothing."""
    shared = lessons_copy(tmp_path).notebook_texts
    shared.unlink()
    assert cli.main(["notebooks", "--check", "--course", str(tmp_path / "course.yaml")]) == 2
    error = capsys.readouterr().err
    assert error == f"grader: {shared}: no such lesson file\n"


def test_one_assignment_per_exercise_in_syllabus_order():
    assert list(ASSIGNMENTS) == [f"{i:02d}_{m}" for i, m in enumerate(MODULES, 1)]
    assert sorted(p.parent.name for p in (COURSE_DIR / "source").glob("*/*.ipynb")) == list(ASSIGNMENTS)
    config = (COURSE_DIR / "nbgrader_config.py").read_text(encoding="utf-8")
    namespace = {"get_config": lambda: SimpleNamespace(CourseDirectory=SimpleNamespace(), ClearSolutions=SimpleNamespace(),
                                                       Execute=SimpleNamespace())}
    exec(compile(config, "nbgrader_config.py", "exec"), namespace)  # the config is plain Python nbgrader can load
    assert namespace["c"].ClearSolutions.code_stub == {"python": CODE_STUB}


@pytest.mark.parametrize("module", MODULES)
def test_notebook_is_valid_nbformat_4_without_outputs(module):
    nb = load(module)
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.metadata.kernelspec.name == "python3"
    ids = [cell.id for cell in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids are unique"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "notebooks are committed without outputs"
            ast.parse(cell.source)


@pytest.mark.parametrize("module", MODULES)
def test_notebook_nbgrader_metadata(module):
    """One solution cell holding the reference with its markers; graded cells with points that add up to course.yaml's."""
    from nbgrader.nbgraderformat import MetadataValidator

    nb = load(module)
    MetadataValidator().validate_nb(nb)  # nbgrader's own check (grade ids, points, duplicates)
    cell = solution_cell(nb, module)
    assert cell.cell_type == "code"
    assert meta(cell) == {"grade": False, "grade_id": f"{module}_solution", "locked": False, "schema_version": 3,
                          "solution": True, "task": False}
    assert cell.source == solution_text(module).strip("\n")
    assert BEGIN in cell.source and END in cell.source
    assert all(meta(c).get("schema_version") == 3 for c in nb.cells), "every cell carries nbgrader metadata"
    assert [c for c in nb.cells if not meta(c).get("locked")] == [cell], "only the solution cell is editable"
    graded = [c for c in nb.cells if meta(c).get("grade")]
    assert graded and all(c.cell_type == "code" and meta(c)["grade_id"].startswith(f"{module}_test_") for c in graded)
    assert sum(meta(c)["points"] for c in graded) == course().exercise(module).points
    assert any(HIDDEN_BEGIN in c.source for c in graded), "some checks are hidden from students"
    for c in graded:
        assert c.source.count(HIDDEN_BEGIN) == c.source.count(HIDDEN_END) <= 1
    assert not any(BEGIN in c.source for c in nb.cells if c is not cell), "solution markers only in the solution cell"


@pytest.mark.parametrize("module", MODULES)
def test_notebook_has_lesson_checks_and_heatmap(module):
    """A lesson first; import-free check, picture and test cells that call the notebook's own functions."""
    nb = load(module)
    number = MODULES.index(module) + 1
    assert nb.cells[0].cell_type == "markdown"
    assert nb.cells[0].source.startswith(f"# Exercise {number}: {course().exercise(module).title}")
    checks = [c for c in nb.cells if meta(c)["grade_id"].startswith(f"{module}_check_")]
    picture = [c for c in nb.cells if meta(c)["grade_id"] == f"{module}_picture"]
    graded = [c for c in nb.cells if meta(c).get("grade")]
    assert checks and len(picture) == 1 and "show_attention(" in picture[0].source
    for cell in checks + picture + graded:
        imports = [n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not imports, f"{meta(cell)['grade_id']} imports: cells call the functions defined in the notebook"
    order = [meta(c)["grade_id"] for c in nb.cells]
    assert order.index(f"{module}_setup") < order.index(f"{module}_solution") < order.index(meta(checks[0])["grade_id"])


# ---------------------------------------------------------------------------
# read_notebook
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("module", MODULES)
def test_read_notebook_takes_the_solution_cell_only(module):
    files, problems, notes = read(source_path(module))
    assert problems == {}
    assert files == {module: solution_text(module).strip("\n").encode() + b"\n"}
    assert any(module in note for note in notes)


def test_scratch_cells_are_never_included(tmp_path):
    """Cells outside the solution cell cost nothing: shell commands, endless loops, a redefinition."""
    nb = load("softmax")
    scratch = ["!pip install torch", "while True:\n    pass", "def softmax(x, dim=-1, temperature=1.0):\n    return 0",
               "%%time\nimport os\nos.system('rm -rf /')"]
    nb.cells[4:4] = [nbformat.v4.new_code_cell(source) for source in scratch]
    nb.cells.append(nbformat.v4.new_code_cell("raise SystemExit"))
    files, problems, _ = read(write(nb, tmp_path / "scratch.ipynb"))
    assert problems == {} and files == {"softmax": solution_text("softmax").strip("\n").encode() + b"\n"}


def test_notebook_with_several_exercises(tmp_path):
    nb = load("scores")
    nb.cells += load("quiz").cells
    files, problems, notes = read(write(nb, tmp_path / "two.ipynb"))
    assert sorted(files) == ["quiz", "scores"] and problems == {}


def test_notebook_through_intake(tmp_path):
    """grader.intake.submission reads a .ipynb through read_notebook: one assignment gives one module."""
    files, problems, notes, *_ = read_submission(source_path("context"), course().grading.intake)
    assert list(files) == ["context"] and problems == {}


def test_released_stub_is_read_as_code(tmp_path):
    """The stub nbgrader releases is still found (and fails at grading, not at intake)."""
    nb = load("quiz")
    cell = solution_cell(nb, "quiz")
    lines, keep = [], True
    for line in cell.source.splitlines():
        if line.strip() == BEGIN:
            keep = False
            indent = line[:len(line) - len(line.lstrip())]
            lines += [indent + stub for stub in CODE_STUB.splitlines()]
        elif line.strip() == END:
            keep = True
        elif keep:
            lines.append(line)
    cell.source = "\n".join(lines)
    files, problems, _ = read(write(nb, tmp_path / "stub.ipynb"))
    assert b"raise NotImplementedError" in files["quiz"]
    ast.parse(files["quiz"])


@pytest.mark.parametrize("content, message", [
    (b'{"cells": [', "is not valid notebook JSON (line 1"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
    (b"[1, 2, 3]", "has no list of cells"),
    (b'{"worksheets": [], "nbformat": 3}', "old-format notebook"),
    (b'{"cells": [], "nbformat": 5}', "notebook format 5"),
    (b"[" * 100000 + b"]" * 100000, "not valid notebook JSON"),
])
def test_unreadable_notebook_is_an_intake_error(tmp_path, content, message):
    path = tmp_path / "broken.ipynb"
    path.write_bytes(content)
    with pytest.raises(IntakeError, match="broken.ipynb") as error:
        read(path)
    assert message in str(error.value)


def test_truncated_notebook(tmp_path):
    text = source_path("scores").read_bytes()
    path = tmp_path / "cut.ipynb"
    path.write_bytes(text[: len(text) // 2])
    with pytest.raises(IntakeError, match="not valid notebook JSON"):
        read(path)


def test_notebook_without_any_solution_cell(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")])
    with pytest.raises(IntakeError, match="holds no solution cell"):
        read(write(nb, tmp_path / "plain.ipynb"))


def test_a_notebook_of_another_assignment_says_which_it_is(tmp_path):
    """The qkv notebook graded as the softmax assignment names the exercise whose solution cell it holds and asks for
    this assignment's notebook (it said "holds no solution cell... hand in the course notebook itself", which it was:
    our instructor's walk-through)."""
    with pytest.raises(IntakeError) as refused:
        read_notebook(write(load("qkv"), tmp_path / "qkv.ipynb"), {}, [], course=course().assignment("02_softmax"))
    assert str(refused.value) == ("qkv.ipynb holds the solution cell of qkv, not of the exercises graded here "
                                  "(softmax): hand in the notebook of this assignment")


def test_size_caps(tmp_path):
    big = tmp_path / "big.ipynb"
    big.write_bytes(b" " * (notebooks.MAX_NOTEBOOK_MB * 2**20 + 1))
    with pytest.raises(IntakeError, match="over the 8 MiB limit"):
        read(big)
    nb = load("scores")
    solution_cell(nb, "scores").source += "\n# " + "x" * 2**20
    problems: dict[str, str] = {}
    files = read_notebook(write(nb, tmp_path / "long.ipynb"), problems, [])
    assert files == {} and "over the 1 MiB limit" in problems["scores"]
    small = SimpleNamespace(max_total_mb=0.01, max_file_mb=1)
    with pytest.raises(IntakeError, match="limit"):
        read_notebook(source_path("scores"), {}, [], limits=small)


def test_special_files_are_refused(tmp_path):
    fifo = tmp_path / "pipe.ipynb"
    os.mkfifo(fifo)
    with pytest.raises(IntakeError, match="not a regular file"):
        read(fifo)
    link = tmp_path / "link.ipynb"
    link.symlink_to(source_path("scores"))
    with pytest.raises(IntakeError):
        read(link)


def test_duplicated_solution_cell(tmp_path):
    nb = load("causal")
    cell = solution_cell(nb, "causal")
    nb.cells.append(copy.deepcopy(cell))
    nb.cells[-1].id = "copy"
    files, problems, _ = read(write(nb, tmp_path / "twice.ipynb"))
    assert files == {} and "2 solution cells of causal" in problems["causal"]


def test_deleted_solution_cell(tmp_path):
    nb = load("causal")
    nb.cells.remove(solution_cell(nb, "causal"))
    files, problems, _ = read(write(nb, tmp_path / "gone.ipynb"))
    assert files == {} and "not its solution cell" in problems["causal"]


def test_stripped_metadata_is_reported_with_the_cell(tmp_path):
    """A cell that holds the module's code without its metadata is not graded, and the message says which cell."""
    nb = load("qkv")
    cell = solution_cell(nb, "qkv")
    del cell.metadata["nbgrader"]
    files, problems, _ = read(write(nb, tmp_path / "stripped.ipynb"))
    index = nb.cells.index(cell) + 1
    assert files == {}
    assert f"cell {index} (defines SelfAttention, SelfAttentionLinear" in problems["qkv"]
    assert "metadata was removed or changed" in problems["qkv"]


def test_code_pasted_into_a_fresh_notebook_is_reported(tmp_path):
    """Metadata lost wholesale (code copied into a new notebook): the message names the cell that looks like the code."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("my work"),
                                         nbformat.v4.new_code_cell(solution_text("scores"))])
    files, problems, _ = read(write(nb, tmp_path / "fresh.ipynb"))
    assert files == {} and list(problems) == ["scores"] and "cell 2 (defines attention_scores, dot" in problems["scores"]


def test_scratch_definitions_of_other_exercises_are_not_reported(tmp_path):
    nb = load("causal")
    nb.cells.append(nbformat.v4.new_code_cell("def softmax(x, dim=-1, temperature=1.0):\n    return x"))
    files, problems, _ = read(write(nb, tmp_path / "causal.ipynb"))
    assert list(files) == ["causal"] and problems == {}


@pytest.mark.parametrize("tamper, message", [
    (lambda cell: cell["metadata"]["nbgrader"].update(solution=False), "not marked as a solution cell"),
    (lambda cell: cell.update(cell_type="markdown"), "is a markdown cell, not a code cell"),
    (lambda cell: cell.update(source=7), "does not hold text"),
])
def test_tampered_solution_cell(tmp_path, tamper, message):
    nb = json.loads(source_path("dictionary").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["metadata"]["nbgrader"]["grade_id"] == "dictionary_solution")
    tamper(cell)
    path = tmp_path / "tampered.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    files, problems, _ = read(path)
    assert files == {} and message in problems["dictionary"]


def test_ipython_lines_in_the_solution_cell(tmp_path):
    """`!pip` and `%time` lines become `pass` (same line numbers) when the cell is otherwise plain Python."""
    nb = load("scores")
    cell = solution_cell(nb, "scores")
    cell.source = "!pip install torch\n%load_ext autoreload\n" + cell.source
    files, problems, notes = read(write(nb, tmp_path / "magic.ipynb"))
    code = files["scores"].decode()
    ast.parse(code)
    assert code.splitlines()[0] == "pass  # IPython line left out by the grader: !pip install torch"
    assert len(code.splitlines()) == len(cell.source.splitlines())
    assert any("IPython line(s) 1, 2" in note for note in notes)


def test_ipython_lines_left_out_cannot_grow_a_cell_past_the_limit(tmp_path):
    """A cell under the size limit whose IPython lines, left out with a comment, would take it over the limit is a
    problem of that exercise (red team: a 0.4 MB cell of `!a` lines became a 9.4 MB exercise file)."""
    nb = load("scores")
    cell = solution_cell(nb, "scores")
    cell.source = "!a\n" * 150_000 + cell.source  # 0.45 MB; each line becomes a comment of some 50 characters
    files, problems, _ = read(write(nb, tmp_path / "magic.ipynb"))
    assert "scores" not in files and "once its IPython lines are left out, over the 1 MiB limit" in problems["scores"]


def test_a_folder_of_notebooks_is_read_wherever_they_are(tmp_path):
    """nbgrader's submitted/<student>/<assignment>/ layout, a renamed notebook, a notebook further down and a course
    notebook that cannot be read: every exercise a notebook carries, and a problem for the one that cannot be read; a
    folder is graded on the course it is given (a notebook alone, on the assignment it carries)."""
    student = tmp_path / "submitted" / "ada"
    write(load("scores"), student / "01_scores" / "01_scores.ipynb")
    write(load("context"), student / "03_context" / "my copy.ipynb")  # renamed, but alone in its folder
    write(load("causal"), student / "work" / "week 7" / "causal.ipynb")
    (student / "05_quiz").mkdir()
    (student / "05_quiz" / "05_quiz.ipynb").write_text("{", encoding="utf-8")
    write(load("softmax"), student / ".ipynb_checkpoints" / "02_softmax-checkpoint.ipynb")  # Jupyter's, not the student's
    read = read_submission(student, course().grading.intake)
    assert sorted(read.files) == ["causal", "context", "scores"]
    assert read.files["scores"] == solution_text("scores").strip("\n").encode() + b"\n"
    assert list(read.problems) == ["quiz"] and "not valid notebook JSON" in read.problems["quiz"]
    assert read.covers is None
    assert read.sources["causal"] == "work/week 7/causal.ipynb"


def test_a_folder_holding_nothing_to_grade_says_what_was_looked_for(tmp_path):
    """The refusal names the exercise files and the course's notebooks, whole (no word cut), and why a notebook it
    holds gave nothing."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(IntakeError) as refused:
        read_submission(tmp_path / "empty", course().grading.intake)
    message = str(refused.value)
    assert all(f"{module}.py" in message for module in MODULES), message
    assert all(f"{course().notebook_name(module)}.ipynb" in message for module in MODULES), message
    assert message.endswith("hand in your exercise files or your notebooks"), message
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "mine.ipynb").write_text("{", encoding="utf-8")
    with pytest.raises(IntakeError, match=r"\(mine\.ipynb was not graded: mine\.ipynb is not valid notebook JSON"):
        read_submission(tmp_path / "broken", course().grading.intake)


# ---------------------------------------------------------------------------
# Running the notebooks, and nbgrader end to end
# ---------------------------------------------------------------------------

def environment() -> dict[str, str]:
    """The environment of the subprocesses: the kernel's `python` is this interpreter."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("JUPYTER_CONFIG_DIR", None)
    return env


def run(arguments: list[str], cwd: Path, timeout: int = 300) -> str:
    done = subprocess.run([sys.executable, "-m", *arguments], cwd=cwd, env=environment(), capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(arguments)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def require_kernel():
    from jupyter_client.kernelspec import KernelSpecManager

    if "python3" not in KernelSpecManager().find_kernel_specs():
        pytest.fail("no `python3` Jupyter kernel: run `python -m ipykernel install --sys-prefix`")


def execute(paths: list[Path], out: Path) -> dict[str, object]:
    """Run notebooks top to bottom as a student would (nbconvert --execute, errors allowed); name -> executed notebook."""
    require_kernel()
    run(["nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.allow_errors=True",
         "--ExecutePreprocessor.timeout=300", "--output-dir", str(out), *map(str, paths)], cwd=out)
    return {path.stem: nbformat.read(out / path.name, as_version=4) for path in paths}


def errors(cell) -> list[str]:
    return [output.ename for output in cell.get("outputs", []) if output.output_type == "error"]


def images(cell) -> int:
    return sum("image/png" in output.get("data", {}) for output in cell.get("outputs", []))


def student_notebook(release: Path, student: str, module: str):
    """The release notebook as a student hands it in: the references (markers removed), a bug, or the stub."""
    nb = nbformat.read(release, as_version=4)
    if student != "stub":
        code = "".join(line for line in solution_text(module).splitlines(keepends=True)
                       if line.strip() not in (BEGIN, END))
        if student == "buggy" and module == BUGGY_MODULE:
            assert BUG[0] in code
            code = code.replace(*BUG)
        solution_cell(nb, module).source = code
    return nb


@pytest.fixture(scope="module")
def nbgrader_course(tmp_path_factory):
    """A copy of the course, released, handed in by three students, autograded, with feedback and grades.csv.

    "correct" hands in every assignment (so autograde runs every notebook with the references in place),
    "buggy" and "stub" the three of E2E_ASSIGNMENTS.
    """
    require_kernel()
    root = tmp_path_factory.mktemp("nbgrader") / "course"
    shutil.copytree(COURSE_DIR, root, ignore=shutil.ignore_patterns(
        "gradebook.db", "release", "submitted", "autograded", "feedback", "grades.csv", ".ipynb_checkpoints"))
    run(["nbgrader", "generate_assignment", "*", "--force"], root)
    for student in STUDENTS:
        for assignment in ASSIGNMENTS if student == "correct" else E2E_ASSIGNMENTS:
            release = root / "release" / assignment / f"{assignment}.ipynb"
            write(student_notebook(release, student, ASSIGNMENTS[assignment]),
                  root / "submitted" / student / assignment / f"{assignment}.ipynb")
    autograde = run(["nbgrader", "autograde", "*"], root)
    run(["nbgrader", "generate_feedback", "*"], root)
    run(["nbgrader", "export"], root)
    with open(root / "grades.csv", newline="", encoding="utf-8") as handle:
        grades = {(row["student_id"], row["assignment"]): (float(row["score"]), float(row["max_score"]))
                  for row in csv.DictReader(handle)}
    return SimpleNamespace(root=root, grades=grades, autograde=autograde)


@pytest.mark.slow
def test_nbgrader_release_strips_solutions_and_hidden_tests(nbgrader_course):
    for assignment, module in ASSIGNMENTS.items():
        nb = nbformat.read(nbgrader_course.root / "release" / assignment / f"{assignment}.ipynb", as_version=4)
        text = "\n".join(cell.source for cell in nb.cells)
        assert BEGIN not in text and HIDDEN_BEGIN not in text, f"{assignment}: the release shows answers"
        cell = solution_cell(nb, module)
        assert CODE_STUB.splitlines()[-1] in cell.source and meta(cell)["grade_id"] == f"{module}_solution"


@pytest.mark.slow
def test_nbgrader_scores(nbgrader_course):
    """correct: full marks; stub: zero; buggy: less on the exercise with the bug, full on the others."""
    grades = nbgrader_course.grades
    for assignment, module in ASSIGNMENTS.items():
        points = float(course().exercise(module).points)
        assert grades["correct", assignment] == (points, points), assignment
    for assignment in E2E_ASSIGNMENTS:
        module = ASSIGNMENTS[assignment]
        points = float(course().exercise(module).points)
        assert grades["correct", assignment] == (points, points), assignment
        assert grades["stub", assignment] == (0.0, points), assignment
        buggy, _ = grades["buggy", assignment]
        assert buggy < points if module == BUGGY_MODULE else buggy == points, assignment
    assert 0 < grades["buggy", course().notebook_name(BUGGY_MODULE)][0], "the visible checks of the buggy exercise still pass"


@pytest.mark.slow
def test_references_run_clean_under_nbgrader(nbgrader_course):
    """With the references in place every cell runs: checks, heatmaps and graded tests, hidden parts included."""
    for assignment in ASSIGNMENTS:
        graded = nbgrader_course.root / "autograded" / "correct" / assignment / f"{assignment}.ipynb"
        nb = nbformat.read(graded, as_version=4)
        failed = [(meta(c)["grade_id"], errors(c)) for c in nb.cells if errors(c)]
        assert not failed, f"{assignment}: {failed}"
        picture = next(c for c in nb.cells if meta(c)["grade_id"].endswith("_picture"))
        assert images(picture) >= 1, f"{assignment}: the heatmap was not drawn"
        checks = [c for c in nb.cells if "_check_" in meta(c)["grade_id"]]
        assert all(any(o.output_type == "stream" for o in c.outputs) for c in checks), f"{assignment}: a check printed nothing"


@pytest.mark.slow
def test_nbgrader_autograde_warns_of_the_checksum_of_each_cell_with_hidden_tests(nbgrader_course):
    """Stock nbgrader saves each graded cell in gradebook.db before it removes the hidden tests, so autograde finds every
    graded cell with hidden tests changed, in untouched notebooks too, and puts the saved one back (which is how the
    hidden tests run): its "Attribute 'checksum' ... has changed!" warning (docs/instructors.md) names exactly those
    cells, never a cell the students did not touch and that holds no hidden tests."""
    warned = set(re.findall(r"Attribute 'checksum' for cell (\S+) has changed!", nbgrader_course.autograde))
    hidden = {meta(cell)["grade_id"] for assignment in ASSIGNMENTS
              for cell in nbformat.read(COURSE_DIR / "source" / assignment / f"{assignment}.ipynb", as_version=4).cells
              if HIDDEN_BEGIN in cell.source}
    assert hidden and warned == hidden


@pytest.mark.slow
def test_nbgrader_feedback_and_autograded_notebooks(nbgrader_course):
    for student in STUDENTS:
        for assignment in E2E_ASSIGNMENTS:
            html = nbgrader_course.root / "feedback" / student / assignment / f"{assignment}.html"
            assert html.is_file() and "Exercise" in html.read_text(encoding="utf-8")
            graded = nbgrader_course.root / "autograded" / student / assignment / f"{assignment}.ipynb"
            text = "\n".join(c.source for c in nbformat.read(graded, as_version=4).cells)
            assert HIDDEN_BEGIN in text, "autograde ran the hidden tests"


def qualitative(score: float, points: float) -> str:
    return "full" if abs(score - points) < 1e-6 else "zero" if score == 0 else "partial"


@pytest.mark.slow
def test_our_grader_agrees_with_nbgrader(nbgrader_course):
    """The sandboxed grader, given the same notebooks, ranks them as nbgrader does; each notebook is graded as its
    own assignment, out of its own points, with nothing about the other exercises."""
    from grader.grade import grade_submission
    from grader.sandbox.host.client import Zygote

    zygote = Zygote()
    try:
        for student in STUDENTS:
            for assignment in E2E_ASSIGNMENTS:
                module = ASSIGNMENTS[assignment]
                path = nbgrader_course.root / "submitted" / student / assignment / f"{assignment}.ipynb"
                outcome = grade_submission(path, course(), zygote)
                theirs, points = nbgrader_course.grades[student, assignment]
                assert [e.module for e in outcome.grade.exercises] == [module]
                assert outcome.grade.max_score == points and outcome.results["assignment"] == assignment
                ours = outcome.grade.exercises[0].score
                assert qualitative(ours, points) == qualitative(theirs, points), \
                    f"{student}/{assignment}: ours {ours}, nbgrader {theirs} of {points}"
    finally:
        zygote.close()


def stopped_at_the_stub(nb, module: str) -> list[str]:
    """What is wrong with a run of a released (stub) notebook; empty when it went as it should."""
    wrong = []
    ids = [meta(c)["grade_id"] for c in nb.cells]
    if not (nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# Exercise")):
        wrong.append("the notebook does not open with its lesson")
    solution = ids.index(f"{module}_solution")
    if any(errors(c) for c in nb.cells[: solution + 1]):
        wrong.append("the set-up or the stub cell itself failed")
    if errors(nb.cells[ids.index(f"{module}_check_1")]) != ["NotImplementedError"]:
        wrong.append("the first public check did not stop at NotImplementedError")
    other = {name for c in nb.cells for name in errors(c)} - {"NotImplementedError"}
    if other:
        wrong.append(f"cells failed for other reasons: {sorted(other)}")
    return wrong


@pytest.mark.slow
def test_released_notebook_top_to_bottom(nbgrader_course, tmp_path):
    """A student runs a release: the lesson and set-up run, the stub cell defines, the checks stop at NotImplementedError."""
    assignment = "07_causal"
    executed = execute([nbgrader_course.root / "release" / assignment / f"{assignment}.ipynb"], tmp_path)
    assert stopped_at_the_stub(executed[assignment], ASSIGNMENTS[assignment]) == []
    for assignment in E2E_ASSIGNMENTS:  # nbgrader ran the stub student's copies the same way
        graded = nbgrader_course.root / "autograded" / "stub" / assignment / f"{assignment}.ipynb"
        assert stopped_at_the_stub(nbformat.read(graded, as_version=4), ASSIGNMENTS[assignment]) == [], assignment
