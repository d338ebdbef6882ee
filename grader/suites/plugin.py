"""Suites: run the hidden pytest suites against one submission, through the worker.

``GradingPlugin`` is a pytest plugin object: it provides the fixtures the
suites use (``student``, ``device``, ``course``), reads each test's exercise
marker (one per exercise of course.yaml) and ``weight``, runs only the tests of the course's (or the
assignment's) exercises, turns every failure into feedback that is safe to show
(never a line of the suites or the references, never a hidden value), and
keeps pytest-json-report's report free of tracebacks and paths.
"""
from __future__ import annotations

import contextlib
import io
import random
import sys
from pathlib import Path

import pytest
import pytest_jsonreport.plugin
import pytest_metadata.plugin
import torch

from grader.course import Course
from grader.sandbox.client import WorkerSession
from grader.sandbox.problems import StudentError, SubmissionProblem
from grader.sandbox.proxy import Student
from grader.sandbox.seed import seed_torch
from grader.text import clean

MAX_FEEDBACK = 600
# Only the plugins grading needs are loaded: a plugin installed beside the grader (pytest-randomly reorders and
# reseeds, hypothesis' own plugin, ...) never changes a grade, and every plugin costs hook calls on each item.
PLUGINS = (pytest_metadata.plugin, pytest_jsonreport.plugin)  # modules, not `-p` names: no entry-point scan
# pytest's own plugins that grading never uses (unraisableexception would also run gc.collect() five times a run;
# without skipping, pytest.skip() still works, and skip/skipif/xfail marks are refused at collection).
UNUSED_BUILTIN_PLUGINS = ("cacheprovider", "warnings", "logging", "capture", "faulthandler", "doctest", "junitxml",
                          "pastebin", "tmpdir", "monkeypatch", "recwarn", "setuponly", "setupplan", "stepwise",
                          "unittest", "debugging", "unraisableexception", "threadexception", "skipping", "subtests")


class CheckFailed(AssertionError):
    """A property of the submission does not hold; the message is written for the student. ``misconception``: the id
    of the known mistake the message names (one whose result on the same input reproduces the student's), if any."""

    def __init__(self, message: str, misconception: str = ""):
        super().__init__(message)
        self.misconception = misconception


def feedback(error: BaseException | None) -> str:
    """What the student reads about a failure: only messages written for them (CheckFailed, SubmissionProblem,
    StudentError, a skip), never suite code, a hidden value, or the text of an error raised while checking (it
    may quote the student's result)."""
    if error is None:
        return ""
    if isinstance(error, (CheckFailed, SubmissionProblem, StudentError, pytest.skip.Exception)):
        text = str(error)
    elif isinstance(error, AssertionError):
        text = "a check of this property failed"
    else:
        text = f"{type(error).__name__} while checking your result"
    return clean(text, MAX_FEEDBACK)


def _failure_text(excinfo: pytest.ExceptionInfo, style=None) -> str:
    """An item's failure repr in pytest's report: the feedback alone.
    Only ``feedback`` reaches the results, and pytest's traceback formatting costs milliseconds per failure."""
    return feedback(excinfo.value)


# Marks that only pytest's skipping plugin acts on: grading leaves it out, so a suite must not use them.
SKIPPING_MARKS = frozenset({"skip", "skipif", "xfail"})


class GradingPlugin:
    """Fixtures and report hooks for grading one submission."""

    def __init__(self, session: WorkerSession, course: Course, device: str):
        self._session, self._course, self._device = session, course, device
        self._about: dict[str, dict] = {}  # node id -> the test's exercise, weight and docstring line
        self.report: dict | None = None

    def pytest_configure(self, config):
        for module in self._course.course_modules:
            config.addinivalue_line("markers", f"{module}: a test of the {module} exercise")
        config.addinivalue_line("markers", "weight(n): the test's share of its exercise's points (default 1)")
        config.addinivalue_line("markers", "rule: a rule any result may follow (errors, in place, device, autograd, ...), "
                                           "paid in proportion to its exercise's values checks (grader/points.py)")

    def pytest_collection_modifyitems(self, config, items):
        graded, left_out = [], []
        for item in items:
            marks = {mark.name for mark in item.iter_markers()}
            exercises = marks & set(self._course.course_modules)
            if len(exercises) != 1:
                raise pytest.UsageError(f"{item.nodeid} needs exactly one exercise marker")
            if marks & SKIPPING_MARKS:
                raise pytest.UsageError(f"{item.nodeid}: a suite skips with pytest.skip() in the test, not with "
                                        f"{', '.join(sorted(marks & SKIPPING_MARKS))} marks")
            exercise = exercises.pop()
            if exercise not in self._course.modules:  # an exercise of another assignment
                left_out.append(item)
                continue
            graded.append(item)
            item.repr_failure = _failure_text
            weight = item.get_closest_marker("weight")
            doc = (item.function.__doc__ or item.name).strip().splitlines()[0] if hasattr(item, "function") else item.name
            self._about[item.nodeid] = {"exercise": exercise, "weight": float(weight.args[0]) if weight else 1.0,
                                        "doc": doc, "kind": "rule" if item.get_closest_marker("rule") else "values"}
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = graded

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """Every test starts from the same random state, whatever ran before it (other tests, other submissions).
        A test of an exercise whose module is already known to be broken (missing, failed import) fails at once
        with that problem, without generating examples for calls that cannot be made."""
        seed_torch(self._course.seed)
        random.seed(self._course.seed)
        problem = self._session.broken.get(self._about[pyfuncitem.nodeid]["exercise"])
        if problem is not None:
            raise SubmissionProblem(problem.kind, str(problem))

    @pytest.fixture(scope="session")
    def student(self) -> Student:
        return Student(self._session)

    @pytest.fixture(scope="session")
    def device(self) -> torch.device:
        return torch.device(self._device)

    @pytest.fixture(scope="session")
    def course(self) -> Course:
        return self._course

    def pytest_json_runtest_metadata(self, item, call):
        metadata = dict(self._about[item.nodeid])
        if call.excinfo is not None:
            metadata[f"feedback_{call.when}"] = feedback(call.excinfo.value)
            if isinstance(call.excinfo.value, CheckFailed) and call.excinfo.value.misconception:
                metadata["misconception"] = call.excinfo.value.misconception
        return metadata

    def pytest_json_modifyreport(self, json_report):
        json_report.pop("root", None)
        json_report.pop("environment", None)
        json_report.pop("collectors", None)
        for test in json_report.get("tests", []):
            for stage in ("setup", "call", "teardown"):
                for key in ("longrepr", "crash", "traceback", "stdout", "stderr", "log"):
                    test.get(stage, {}).pop(key, None)
        self.report = json_report


def run_suites(session: WorkerSession, course: Course, device: str, suites: Path | None = None,
               select: str | None = None) -> dict:
    """Run the suites (default: the course's tests/course/hidden) against the session's submission, only the tests
    of the course's exercises; return pytest-json-report's (sanitized) report."""
    suites = suites or course.hidden_dir
    plugin = GradingPlugin(session, course, device)
    session.watch = sorted({name for names in course.banned.values() for name in names})
    if str(course.root) not in sys.path:
        sys.path.insert(0, str(course.root))  # the suites import the references from the course's solutions/
    args = [str(suites), "--disable-plugin-autoload",
            *(arg for name in UNUSED_BUILTIN_PLUGINS for arg in ("-p", f"no:{name}")),
            "--json-report", "--json-report-file=none",
            "--json-report-omit", "collectors", "log", "traceback", "streams", "warnings",
            "--rootdir", str(suites), "-c", str(suites / "pytest.ini"), "-qq", "--tb=no"]
    if select:
        args += ["-k", select]
    with contextlib.redirect_stdout(io.StringIO()) as output, contextlib.redirect_stderr(output):
        code = pytest.main(args, plugins=[*PLUGINS, plugin])
    if plugin.report is None or code not in (0, 1):
        raise RuntimeError(f"the hidden suites could not run (pytest exit code {int(code)}): {output.getvalue()[-2000:]}")
    return plugin.report

