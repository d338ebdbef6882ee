"""The student's path through a fresh handout (`grader release`): the same code gets the same grade whether it is
written in `exercises/<module>.py` or in the solution cell of the exercise's notebook (`grader ci`)."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from grader import ROOT
from grader.authoring.release import build_handout
from grader.ci import run_ci
from grader.course import course
from grader.intake.notebooks import solution_grade_id

EXAMPLES = ROOT / "examples" / "submissions"
# The same code for both students: a correct exercise and one with a classic bug (no max subtraction).
CODE = {"scores": (ROOT / "solutions" / "scores.py").read_text(),
        "softmax": (EXAMPLES / "ben" / "softmax.py").read_text()}


@pytest.fixture(scope="module")
def handout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("students") / "handout"
    build_handout(root, grader_repository="course-org/attention-grader")
    return root


def checkout(handout: Path, folder: Path, *, in_notebooks: bool) -> Path:
    """A student's clone of the handout with ``CODE`` written into the exercise files or into the notebooks."""
    shutil.copytree(handout, folder)
    for module, code in CODE.items():
        if not in_notebooks:
            (folder / "exercises" / f"{module}.py").write_text(code)
            continue
        name = course().notebook_name(module)
        path = folder / "notebooks" / name / f"{name}.ipynb"
        notebook = json.loads(path.read_text())
        [cell] = [c for c in notebook["cells"] if c["metadata"]["nbgrader"]["grade_id"] == solution_grade_id(module)]
        cell["source"] = code
        path.write_text(json.dumps(notebook))
    return folder


def grade_in_ci(folder: Path, zygote) -> tuple[dict, str, str]:
    """(the results file, the job summary, the log) of `grader ci` on a checkout."""
    summary, output = folder.parent / f"{folder.name}.md", folder.parent / f"{folder.name}.out"
    results = folder / "r.json"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(folder), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(output)}
    log = io.StringIO()
    assert run_ci(folder, env=env, stdout=log, zygote=zygote, results_path=str(results)) == 0
    return json.loads(results.read_text()), summary.read_text(), log.getvalue()


@pytest.fixture(scope="module")
def zygote():
    from grader.sandbox.host.client import Zygote

    zygote = Zygote(hide=(ROOT,))
    yield zygote
    zygote.close()


@pytest.mark.slow
def test_notebooks_and_files_get_the_same_grade(handout, tmp_path, zygote):
    """One student writes in the exercise files, one only in the notebooks: same scores, exercise by exercise; the
    notebook student's summary says which notebook cell was graded and points at it."""
    files, files_summary, _ = grade_in_ci(checkout(handout, tmp_path / "files", in_notebooks=False), zygote)
    notebooks, summary, log = grade_in_ci(checkout(handout, tmp_path / "notebooks", in_notebooks=True), zygote)
    scores = {t["name"]: t["score"] for t in files["tests"]}
    assert scores == {t["name"]: t["score"] for t in notebooks["tests"]}
    assert files["score"] == notebooks["score"] and 10 < files["score"] < 20  # scores full, softmax partly
    assert "`notebooks/02_softmax/02_softmax.ipynb`" in summary and "notebooks/" not in files_summary
    assert "scores: graded the solution cell of notebooks/01_scores/01_scores.ipynb" in log


def test_a_started_file_wins_over_its_notebook(handout, tmp_path):
    """Where both the file and the notebook cell hold code, the file is graded; an untouched file gives way."""
    from grader.intake.submission import read_submission

    folder = checkout(handout, tmp_path / "both", in_notebooks=True)
    (folder / "exercises" / "scores.py").write_text(CODE["scores"] + "\n# my own version\n")
    read = read_submission(folder, course().grading.intake)
    assert read.files["scores"].decode().endswith("# my own version\n")
    assert read.files["softmax"].decode() == CODE["softmax"] + ("" if CODE["softmax"].endswith("\n") else "\n")
    assert read.sources == {"softmax": "notebooks/02_softmax/02_softmax.ipynb"}



def test_a_started_file_says_the_notebook_code_it_leaves_ungraded(handout, tmp_path):
    """Where the file is graded though the notebook's solution cell holds other code of the student's, a note says
    that cell was not graded (a complete cell lost to a half-filled file, without a word, before)."""
    from grader.intake.submission import read_submission

    folder = checkout(handout, tmp_path / "both", in_notebooks=True)
    (folder / "exercises" / "scores.py").write_text(CODE["scores"] + "\n# my own version\n")
    read = read_submission(folder, course().grading.intake)
    assert read.files["scores"].decode().endswith("# my own version\n")
    assert ("scores: graded scores.py, which holds code of yours; the solution cell of "
            "notebooks/01_scores/01_scores.ipynb holds other code of it, not graded") in read.notes


def test_code_written_outside_the_solution_cell_is_pointed_at(handout, tmp_path):
    """A notebook whose code sits in a new cell below the untouched solution cell gets a note naming that cell and
    the solution cell (it was graded as the stub, "fill in the stubs", with no word of the cell that holds the code)."""
    from grader.intake.submission import read_submission

    folder = tmp_path / "below"
    shutil.copytree(handout, folder)
    name = course().notebook_name("scores")
    path = folder / "notebooks" / name / f"{name}.ipynb"
    notebook = json.loads(path.read_text())
    at = next(i for i, c in enumerate(notebook["cells"], 1) if c["metadata"].get("nbgrader", {}).get("grade_id")
              == solution_grade_id("scores"))
    notebook["cells"].insert(at, {"cell_type": "code", "metadata": {}, "source": CODE["scores"], "outputs": [],
                                  "execution_count": None})
    path.write_text(json.dumps(notebook))
    read = read_submission(folder, course().grading.intake)
    [note] = [note for note in read.notes if note.startswith("scores: ")]
    assert note.startswith(f"scores: cell {at + 1} (defines ") and note.endswith(
        f"of {name}.ipynb, outside the solution cell (cell {at}): only the solution cell is graded; move your code into it")
