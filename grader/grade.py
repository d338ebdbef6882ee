"""The whole path of one submission, as its stages: intake -> worker -> suites -> points -> results (the reports'
common record); ``grade_submission`` runs them in that order, each a function of this module but the last
(grader.reports.results)."""
from __future__ import annotations

import os
import time
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import stub_message
import torch

from grader.course import Course
from grader.intake.submission import Read, stage
from grader.points import Grade, score
from grader.reports.results import results
from grader.sandbox.host.client import WorkerSession, Zygote
from grader.sandbox.host.problems import SubmissionProblem
from grader.suites.plugin import run_suites
from grader.text import clean

MAX_NOTES = 20  # notes about a submission shown (then their count)
SANDBOX_WARNING = "WARNING: no sandbox could be built here ({}); student code ran with resource limits only"
CPU_NOTE = "note: the worker's CPU was not capped by a cgroup ({}); it shared the CPU with other gradings by its session only"


class DeviceError(ValueError):
    """The requested device is not available."""


NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def gpu_present() -> bool:
    """Whether torch sees a GPU, asked of NVML, not of CUDA: torch.cuda.is_available() starts CUDA's driver in the
    asking process, and a process forked from one that did can never start it (a batch forks its jobs after asking;
    seen on an H200: "CUDA error: initialization error" in every job). Torch asks NVML under ``NVML_CHECK`` = 1."""
    saved = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        return torch.cuda.is_available()
    finally:
        if saved is None:
            del os.environ[NVML_CHECK]
        else:
            os.environ[NVML_CHECK] = saved


def resolve_device(device: str) -> str:
    """'auto' becomes 'cuda' when a GPU is present, else 'cpu'; 'cuda' without a GPU is an error."""
    if device == "auto":
        return "cuda" if gpu_present() else "cpu"
    if device == "cuda" and not gpu_present():
        raise DeviceError("--device cuda was asked for, but torch sees no CUDA device here")
    if device not in ("cpu", "cuda"):
        raise DeviceError(f"unknown device {device!r}: use cpu, cuda or auto")
    return device


@dataclass
class Outcome:
    grade: Grade
    results: dict
    isolation: str
    sources: dict[str, str] = field(default_factory=dict)  # module -> the handout notebook its code came from
    stub_lines: dict[str, int] = field(default_factory=dict)  # stub left (``<module>.<function>``) -> the line raising


def stub_lines(folder: Path) -> dict[str, int]:
    """Where each stub left in a staged submission raises: ``<module>.<function>`` (or ``...<Class>.forward``) -> the
    line of its first ``NotImplementedError`` message in ``folder``'s files (the intake's copy, never the original)."""
    lines: dict[str, int] = {}
    for path in sorted(folder.glob("*.py")):
        for target, line in stub_message.stubs_in(path.read_text(encoding="utf-8", errors="replace")).items():
            lines.setdefault(target, line)
    return lines


def grade_submission(path, course: Course, zygote: Zygote | None = None, device: str = "cpu",
                     require_sandbox: bool = True, select: str | None = None, read: Read | None = None,
                     whole_course: bool = False) -> Outcome:
    """Grade one submission on ``course`` (the whole course, or one assignment: ``Course.assignment``), from what
    intake ``read`` of it if given; raises IntakeError when it cannot be graded at all, GraderFault where no sandbox
    can be built (unless ``require_sandbox`` is False: code one trusts then runs with resource limits only, and the
    grade says so). A notebook graded on the whole course is graded as the assignment of the exercises it carries
    cells of (``02_softmax.ipynb`` out of its own points, about its own exercise), unless ``whole_course`` (a
    batch's class that is not all notebooks: every student out of the course's points).

    Without a ``zygote`` one is started after intake (so a submission that cannot be graded is refused at once)
    and stopped at the end. The stages are the functions below, in the order the submission travels them.
    """
    started = time.monotonic()
    staged, course = intake(path, course, read, whole_course)
    with worker(staged, course, zygote, device, require_sandbox) as session:
        report, stubs = suites(session, staged, course, device, select), stub_lines(staged.directory)
    grade = points(report, session, staged, course, select, stubs)
    data = results(grade, execution_time=time.monotonic() - started, device=device, sha256=staged.sha256,
                   visibility=course.visibility, notes=staged.notes[:MAX_NOTES])
    if course.assignment_name:
        data["assignment"] = course.assignment_name
    return Outcome(grade, data, session.isolation, staged.sources, stubs)


def intake(path, course: Course, read: Read | None = None, whole_course: bool = False):
    """1. Intake: the exercise files (only those) copied into a private folder by a bounded child (or from what it
    already ``read``); a notebook graded on the whole course is graded as the assignment of the exercises it
    carries (unless ``whole_course``)."""
    staged = stage(path, course.grading.intake, course, read)
    if course.assignment_name is None and staged.covers and not whole_course:
        course = course.covering(staged.covers)
    return staged, course


@contextmanager
def worker(staged, course: Course, zygote: Zygote | None, device: str, require_sandbox: bool):
    """2. The sandboxed worker: a session of workers forked from the zygote (started here when none is given) that
    import the submission and serve the suites' calls; closed, with the staged copy, whatever happens."""
    own_zygote = zygote is None
    try:
        zygote = zygote or Zygote(hide=(course.root,))
    except BaseException:
        staged.cleanup()
        raise
    session = WorkerSession(zygote, str(staged.directory), course.grading.limits, device, require_sandbox,
                            modules=course.modules, exercises=course.exercises_dir)
    try:
        yield session
    finally:
        try:
            session.close()
        finally:
            staged.cleanup()
            if own_zygote:
                zygote.close()


def suites(session: WorkerSession, staged, course: Course, device: str, select: str | None) -> dict:
    """3. The suites: the hidden pytest suites through the worker (an exercise the intake could not take fails at
    once with that problem)."""
    for module, problem in staged.problems.items():
        session.broken[module] = SubmissionProblem("intake", problem)
    session.static_imports = staged.imports
    return run_suites(session, course, device, select=select)


def points(report: dict, session: WorkerSession, staged, course: Course, select: str | None,
           stubs: Mapping[str, int]) -> Grade:
    """4. Points: per test and exercise from the suites' report and course.yaml, with the notes a student reads
    (the intake's, a sandbox that could not be built, a CPU not capped) and the handout's stubs left in each file
    (``stub_lines``: a check that fails at the first stub reached names no other)."""
    problems = {module: clean(str(problem)) for module, problem in session.broken.items()}
    if select:  # only the exercises the selection reached are scored
        graded = {test.get("metadata", {}).get("exercise") for test in report.get("tests", [])}
        course = course.model_copy(update={"exercises": [e for e in course.exercises if e.module in graded]})
    grade = score(report, course, problems)
    for exercise in grade.exercises:
        exercise.stubs = tuple(target for target in stubs
                               if target in session.stubs and target.split(".")[0] == exercise.module)
    grade.notes.extend(clean(note) for note in staged.notes[:MAX_NOTES])
    if len(staged.notes) > MAX_NOTES:
        grade.notes.append(f"... and {len(staged.notes) - MAX_NOTES} more notes")
    if session.unconfined:
        grade.notes.insert(0, SANDBOX_WARNING.format(session.isolation.removeprefix("rlimits only: ")))
    if session.cpu_cap.startswith("none: "):
        grade.notes.append(CPU_NOTE.format(session.cpu_cap.removeprefix("none: ")))
    return grade
