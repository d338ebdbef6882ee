"""`grader ci`: grade a student's checkout inside GitHub Actions and report it the ways GitHub shows it.

The checkout's ``exercises/`` folder (or the folder itself, where it has none) is graded like any
submission, then (``reports.github.report``):

* a job summary (exercises, points, what to fix) is appended to ``$GITHUB_STEP_SUMMARY``;
* an annotation per exercise that lost points points at the student's file (its path in the checkout), and at
  the line where the feedback names one (tracebacks, import and syntax errors carry "<module>.py, line 12"; an
  unfinished stub is found by its ``raise NotImplementedError`` in the graded copy): an error, or a notice for an
  exercise not started yet;
* the GitHub Classroom result (base64 JSON, see ``reports.classroom.CLASSROOM_SCHEMA``) goes to
  ``$GITHUB_OUTPUT`` as ``result``, with ``score`` and ``max-score`` beside it;
* the terminal summary and, last, the plain line ``Score: 83.5/100`` go to standard output.

The checkout is read only by the intake (``grade.grade_submission``), as any submission is, and its code runs only
in the sandbox: where none can be built the commit is not graded (unless ``require_sandbox`` is False, for code one
trusts).

The exit status is 0 whatever the score (``--never-fail``, the default) or 1 below ``--min-score``; 2 means the
grader cannot run as asked (a broken course.yaml, a missing path, an unknown device); 3 a grader fault (no sandbox
can be built here, the grader failed): no score is given at all, only the job summary and an error saying why.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from grader import GRADER_FAULT_STATUS
from grader.course import COURSE_FILE, Course, CourseError, load_course
from grader.points import ExerciseScore, Grade
from grader.reports.advice import complete, feedback_line, stubs_left
from grader.reports.github import CiResult, report, report_fault
from grader.text import clean


def exercises_folder(checkout: Path) -> Path:
    """What to grade in a checkout: its ``exercises/`` folder, or the checkout itself where it has none."""
    return checkout / "exercises" if (checkout / "exercises").is_dir() else checkout


def _relative(path: Path, checkout: Path) -> str:
    """``path`` from the checkout's root, as GitHub names the repository's files: worked out from the names alone
    (nothing of the checkout is looked at, a student's link is never followed)."""
    return os.path.relpath(os.path.abspath(path), os.path.abspath(checkout)).replace(os.sep, "/")


def locate(exercise: ExerciseScore, folder: Path, checkout: Path, stub_lines: Mapping[str, int]) -> tuple[str, int]:
    """(path from the checkout, line) of the place the exercise's feedback points at, else of its first stub left
    (``stub_lines``: ``grade.Outcome.stub_lines``); line 0 for the whole file."""
    named = feedback_line(exercise)
    if named is not None:
        return _relative(folder / named[0], checkout), named[1]
    stubs = stubs_left(exercise)
    return _relative(folder / f"{exercise.module}.py", checkout), stub_lines.get(stubs[0], 0) if stubs else 0


def not_graded(course: Course, message: str, folder: Path, checkout: Path, execution_time: float = 0.0) -> CiResult:
    """The outcome for a commit that could not be graded at all: zero points, status "error", ``message`` as a note."""
    exercises = [ExerciseScore(e.module, e.title, 0.0, float(e.points), "not graded (see the note above)")
                 for e in course.exercises]
    files = {e.module: (_relative(folder / f"{e.module}.py", checkout), 0) for e in course.exercises}
    return CiResult(Grade(exercises, notes=[f"cannot grade this commit: {message}"]), "error", message, files,
                    execution_time, "0" * 64)


def grade_checkout(checkout: Path, course: Course, zygote, device: str = "cpu", require_sandbox: bool = True) -> CiResult:
    """Grade the checkout's exercises; a submission that cannot be graded at all gives status "error"."""
    from grader.grade import grade_submission
    from grader.intake import IntakeError

    folder = exercises_folder(checkout)
    started = time.monotonic()
    try:
        outcome = grade_submission(checkout, course, zygote, device, require_sandbox)
    except IntakeError as error:
        return not_graded(course, clean(str(error)), folder, checkout, time.monotonic() - started)
    grade = outcome.grade
    files = {e.module: (outcome.sources[e.module], 0) if e.module in outcome.sources
             else locate(e, folder, checkout, outcome.stub_lines) for e in grade.exercises}
    status = "pass" if all(map(complete, grade.exercises)) else "fail"
    return CiResult(grade, status, "", files, outcome.results["execution_time"], outcome.results["submission_sha256"])


def exit_status(grade: Grade, min_score: float | None) -> int:
    """0 whatever the score when ``min_score`` is None (never fail); else 1 below it."""
    return 1 if min_score is not None and grade.score < min_score else 0


def run_ci(path: str | os.PathLike = ".", *, course_file: str | os.PathLike = COURSE_FILE, min_score: float | None = None,
           device: str = "cpu", env: Mapping[str, str] | None = None, stdout: TextIO | None = None, zygote=None,
           results_path: str | None = None, junit_path: str | None = None, assignment: str | None = None,
           require_sandbox: bool = True) -> int:
    """`grader ci`: grade the checkout at ``path`` on ``device`` (cpu, cuda or auto), as the whole course or as one
    ``assignment``, write the GitHub outputs, return the exit status. Its files are named from ``path``, the
    repository's root."""
    env = os.environ if env is None else env
    stdout = stdout or sys.stdout
    try:
        course = load_course(course_file)
        if assignment:
            course = course.assignment(assignment)
    except CourseError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    checkout = Path(path)
    if not checkout.is_dir():
        print(f"grader: {checkout} is not a folder (give the checkout to grade)", file=sys.stderr)
        return 2
    from grader.grade import (  # imports torch: after the cheap checks
        DeviceError,
        resolve_device,
    )

    try:
        device = resolve_device(device)
    except DeviceError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    own = zygote is None
    if own:
        from grader.sandbox.host.client import Zygote

        zygote = Zygote(hide=(course.root,))
    try:
        outcome = grade_checkout(checkout, course, zygote, device, require_sandbox)
    except Exception as error:  # a grader fault: no score at all; tell the student why, and fail the step
        message = f"the grader failed ({type(error).__name__}: {clean(str(error))}); please tell your instructor"
        print(f"grader: {message}", file=sys.stderr)
        report_fault(message, title=course.title, env=env, stdout=stdout)
        return GRADER_FAULT_STATUS
    finally:
        if own:
            zygote.close()
    report(outcome, title=course.title, env=env, stdout=stdout, device=device, results_path=results_path,
           junit_path=junit_path)
    return exit_status(outcome.grade, min_score)
