"""`grader ci`: the job summary, annotations, Classroom result, score line and exit policy, with GitHub's files
in a temporary folder. Most tests report hand-built grades; one grading run each on solutions/ (full marks,
in-process with a shared zygote) and on an empty checkout (cannot be graded) covers the whole path; the
handout's workflow step grades the stubs (tests/test_release.py)."""
from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from courses import TOTAL
from test_formats import RAISED, SYNTAX, make_grade

from grader import ROOT
from grader.ci import exercises_folder, exit_status, locate, not_graded, run_ci
from grader.course import course
from grader.grade import stub_lines
from grader.reports.classroom import CLASSROOM_SCHEMA
from grader.reports.github import CiResult, annotations, report, workflow_command
from grader.reports.results import GRADESCOPE_SCHEMA, RESULTS_SCHEMA


class GitHub:
    """The files and variables GitHub Actions gives a step, in a temporary folder."""

    def __init__(self, root: Path):
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        self.summary, self.output = root / "summary.md", root / "output.txt"
        self.summary.write_text("# earlier step\n")
        self.output.write_text("earlier=1\n")
        self.env = {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(self.workspace),
                    "GITHUB_STEP_SUMMARY": str(self.summary), "GITHUB_OUTPUT": str(self.output)}

    def outputs(self) -> dict[str, str]:
        return dict(line.split("=", 1) for line in self.output.read_text().splitlines())

    def result(self) -> dict:
        data = json.loads(base64.b64decode(self.outputs()["result"]))
        jsonschema.validate(data, CLASSROOM_SCHEMA)
        return data


@pytest.fixture
def github(tmp_path) -> GitHub:
    return GitHub(tmp_path)


def _files(grade) -> dict[str, tuple[str, int]]:
    lines = {"softmax": 12, "context": 3, "qkv": 41}
    return {e.module: (f"exercises/{e.module}.py", lines.get(e.module, 0)) for e in grade.exercises}


def _reported(github: GitHub, outcome: CiResult, **kwargs) -> list[str]:
    out = io.StringIO()
    report(outcome, title="Self-attention in PyTorch", env=github.env, stdout=out, **kwargs)
    return out.getvalue().splitlines()


def test_report_writes_every_output(github, tmp_path):
    grade = make_grade()
    outcome = CiResult(grade, "fail", "", _files(grade), 1.5, "cd" * 32)
    stdout = _reported(github, outcome, results_path=str(tmp_path / "r" / "results.json"),
                       junit_path=str(tmp_path / "r" / "junit.xml"))
    # the plain score line comes last
    assert stdout[-1] == "Score: 60/100"
    # the job summary is appended after what earlier steps wrote
    summary = github.summary.read_text()
    assert summary.startswith("# earlier step\n## Self-attention in PyTorch: 60 / 100\n")
    assert "| 2 | Softmax | `exercises/softmax.py` | ⚠️ 7.5 / 10 | 1 / 2 |" in summary and "### What to fix" in summary
    # the Classroom result and the scores are outputs of the step
    outputs = github.outputs()
    assert outputs["earlier"] == "1" and outputs["score"] == "60" and outputs["max-score"] == "100"
    result = github.result()
    assert result["status"] == "fail" and sum(t["score"] for t in result["tests"]) == 60
    assert result["tests"][1]["filename"] == "exercises/softmax.py" and result["tests"][1]["line_no"] == 12
    # the terminal summary (which repeats student text) is printed with workflow commands stopped
    stop, resume = stdout[0], next(line for line in stdout[1:] if line.startswith("::"))
    token = stop.removeprefix("::stop-commands::")
    assert re.fullmatch(r"[0-9a-f]{32}", token) and resume == f"::{token}::"
    # annotations: one per exercise below full marks, at the file and line; a notice for the untouched one
    commands = [line for line in stdout[stdout.index(resume) + 1:] if line.startswith("::")]
    assert len(commands) == 4, commands
    assert commands[0].startswith("::error file=exercises/softmax.py,line=12,title=softmax%3A 7.5/10 points::")
    assert commands[0].endswith("::large scores stay finite: " + RAISED)
    assert commands[1] == f"::error file=exercises/context.py,line=3,title=context%3A 0/10 points::{SYNTAX}"
    assert commands[2] == ("::notice file=exercises/qkv.py,line=41,title=qkv%3A 0/20 points::"
                           "not implemented yet: fill in qkv.project, qkv.copy_linear_weights")
    assert commands[3].startswith("::error file=exercises/causal.py,title=causal%3A 7.5/15 points::no peeking")
    # the other formats, on request
    saved = json.loads((tmp_path / "r" / "results.json").read_text())
    jsonschema.validate(saved, RESULTS_SCHEMA)
    jsonschema.validate(saved, GRADESCOPE_SCHEMA)
    assert saved["score"] == 60 and saved["submission_sha256"] == "cd" * 32
    assert (tmp_path / "r" / "junit.xml").read_text().startswith("<?xml")


def test_no_annotations_outside_github_actions(github):
    grade = make_grade()
    github.env.pop("GITHUB_ACTIONS")
    stdout = _reported(github, CiResult(grade, "fail", "", _files(grade), 0, "0" * 64))
    assert not [line for line in stdout if line.startswith("::")] and stdout[-1] == "Score: 60/100"


def test_without_github_files_only_prints(tmp_path):
    grade = make_grade()
    out = io.StringIO()
    report(CiResult(grade, "fail", "", _files(grade), 0, "0" * 64), title="T", env={}, stdout=out)
    assert out.getvalue().splitlines()[-1] == "Score: 60/100" and list(tmp_path.iterdir()) == []


def test_workflow_command_escaping():
    assert workflow_command("error", "50% done\nnext: a,b", file="exercises/a b.py", line=3, title="x: y, z") == \
        "::error file=exercises/a b.py,line=3,title=x%3A y%2C z::50%25 done%0Anext: a,b"
    assert workflow_command("notice", "m") == "::notice::m"
    assert workflow_command("error", "m", file="f.py") == "::error file=f.py::m"


def test_annotations_are_capped():
    grade = make_grade()
    outcome = CiResult(grade, "fail", "", _files(grade), 0, "0" * 64)
    outcome.grade.exercises = outcome.grade.exercises * 3
    assert len(annotations(outcome)) == 10


def test_locate_points_at_the_students_file_and_line(tmp_path):
    grade = make_grade()
    checkout = tmp_path / "repo"
    folder = checkout / "exercises"
    folder.mkdir(parents=True)
    softmax, context, qkv, scores = grade.exercises[1], grade.exercises[2], grade.exercises[3], grade.exercises[0]
    stubs = {"qkv.project": 5}  # where the graded copy's stub raises (grade.stub_lines)
    assert locate(softmax, folder, checkout, stubs) == ("exercises/softmax.py", 12)
    assert locate(context, folder, checkout, stubs) == ("exercises/context.py", 3)
    assert locate(qkv, folder, checkout, stubs) == ("exercises/qkv.py", 5)  # the stub's raise line
    assert locate(qkv, folder, checkout, {}) == ("exercises/qkv.py", 0)
    assert locate(scores, folder, checkout, stubs) == ("exercises/scores.py", 0)
    assert locate(softmax, folder, tmp_path, stubs) == ("repo/exercises/softmax.py", 12)
    assert exercises_folder(checkout) == folder and exercises_folder(folder) == folder


def test_stub_lines_are_read_from_the_staged_copy(tmp_path):
    """Each stub left, at the line of its first raise; other files' lines do not count."""
    (tmp_path / "qkv.py").write_text('import torch\n\n\ndef project(x):\n    raise NotImplementedError("qkv.project: '
                                     'fill in this stub (see its docstring)")\n\n\ndef again(x):\n    raise '
                                     'NotImplementedError("qkv.project: fill in this stub (see its docstring)")\n')
    (tmp_path / "notes.txt").write_text('raise NotImplementedError("qkv.other: fill in this stub (see its docstring)")')
    assert stub_lines(tmp_path) == {"qkv.project": 5}


def test_exit_policy():
    grade = make_grade()
    assert exit_status(grade, None) == 0
    assert exit_status(grade, 60) == 0 and exit_status(grade, 60.5) == 1


def test_not_graded_outcome(github):
    outcome = not_graded(course(), "holds none of the exercise files", github.workspace / "exercises", github.workspace)
    stdout = _reported(github, outcome)
    assert stdout[-1] == f"Score: 0/{TOTAL}"
    assert [line for line in stdout if line.startswith("::")][2:] == [
        "::error title=The grader could not grade this commit::holds none of the exercise files"]
    result = github.result()
    assert result["status"] == "error" and result["message"] == "holds none of the exercise files"
    assert "cannot grade this commit: holds none of the exercise files" in github.summary.read_text()


def test_ci_on_a_checkout_without_exercises(github, zygote):
    """A real run on an empty checkout: status error, exit 0 by default, 1 with --min-score."""
    out = io.StringIO()
    assert run_ci(github.workspace, env=github.env, stdout=out, zygote=zygote) == 0
    assert github.result()["status"] == "error" and out.getvalue().splitlines()[-1] == f"Score: 0/{TOTAL}"
    assert run_ci(github.workspace, env=github.env, stdout=io.StringIO(), zygote=zygote, min_score=1) == 1


def test_ci_command_line(github):
    """The sub-command's wiring: policy options exclude each other; a bad path, course or device is status 2."""
    command = [sys.executable, "-m", "grader", "ci"]
    both = subprocess.run([*command, "--min-score", "5", "--never-fail"], capture_output=True, text=True)
    assert both.returncode == 2 and "not allowed with" in both.stderr
    missing = subprocess.run([*command, str(github.workspace / "nope")], capture_output=True, text=True, env=github.env)
    assert missing.returncode == 2 and "is not a folder" in missing.stderr
    (github.workspace / "course.yaml").write_text("title: [")
    broken = subprocess.run([*command, "--course", str(github.workspace / "course.yaml")], capture_output=True, text=True)
    assert broken.returncode == 2 and "not valid YAML" in broken.stderr
    assert run_ci(github.workspace, device="tpu", env=github.env, stdout=io.StringIO()) == 2


@pytest.mark.slow
def test_ci_grades_the_solutions_to_full_marks(github, zygote):
    """End to end on the references, laid out like a student's checkout."""
    shutil.copytree(ROOT / "solutions", github.workspace / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    (github.workspace / "tests").mkdir()  # other folders of the checkout are not graded
    out = io.StringIO()
    assert run_ci(github.workspace, env=github.env, stdout=out, zygote=zygote, min_score=100) == 0
    stdout = out.getvalue().splitlines()
    assert stdout[-1] == f"Score: {TOTAL}/{TOTAL}"
    assert [line for line in stdout if line.startswith("::")][2:] == [], "no annotation after stop/resume"
    result = github.result()
    assert result["status"] == "pass" and all(t["status"] == "pass" for t in result["tests"])
    assert "Every check passed: full marks" in github.summary.read_text()


_opened: list[str] | None = None  # while a test records them: the paths this process opens or lists


def _record_opens(event: str, args: tuple) -> None:
    if _opened is not None and event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_record_opens)  # (a hook cannot be removed: it records only while _opened is a list)


def test_ci_reads_the_checkout_only_through_the_intake(github, zygote):
    """`grader ci` opens no file of the checkout in the grading process: the intake reads it (in a bounded child of
    its own), and the annotation's line of an unfinished stub comes from the intake's copy. (It used to read the
    student's file again to find that line.) The notice names every stub left in the file."""
    global _opened
    shutil.copytree(ROOT / "exercises", github.workspace / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    out, _opened = io.StringIO(), []
    try:
        assert run_ci(github.workspace, env=github.env, stdout=out, zygote=zygote, assignment="04_qkv") == 0
        opened, _opened = _opened, None
    finally:
        _opened = None
    checkout = str(github.workspace)
    assert not [path for path in opened if path == checkout or path.startswith(checkout + os.sep)], opened
    notice = next(line for line in out.getvalue().splitlines() if line.startswith("::notice file=exercises/qkv.py"))
    first = notice.split("fill in ", 1)[1].split(",")[0]  # the first stub the feedback names
    line = next(n for n, text in enumerate((ROOT / "exercises" / "qkv.py").read_text().splitlines(), 1)
                if f'NotImplementedError("{first}:' in text)
    assert notice.startswith(f"::notice file=exercises/qkv.py,line={line},"), notice
    # every stub left in the file, those no check reaches too (our sixth student walk-through: only those reached)
    every = [target for target in stub_lines(ROOT / "exercises") if target.startswith("qkv.")]
    assert len(every) > 4 and f"fill in {', '.join(every)}" in notice, notice
