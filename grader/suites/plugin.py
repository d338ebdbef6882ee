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
import functools
import io
import random
import re
import sys
import traceback
from pathlib import Path

import pytest
import pytest_jsonreport.plugin
import pytest_metadata.plugin
import torch

from grader.course import Course, CourseError
from grader.memory import GradingOutOfMemory, out_of_memory, resume_collector
from grader.reports.results import check_key
from grader.sandbox.host.client import WorkerSession
from grader.sandbox.host.problems import GraderFault, StudentError, SubmissionProblem
from grader.sandbox.host.proxy import Student, UncheckedValue
from grader.sandbox.seed import seed_torch
from grader.suites import PUBLIC, contract
from grader.suites.checks import CheckFailed
from grader.suites.collection import collection, drop
from grader.text import clean

MAX_FEEDBACK = 600
NOT_RUN = "not run: {module}.py could not be used (why is said once, beside the exercise's points)"
# Only the plugins grading needs are loaded: a plugin installed beside the grader (pytest-randomly reorders and
# reseeds, hypothesis' own plugin, ...) never changes a grade, and every plugin costs hook calls on each item.
PLUGINS = (pytest_metadata.plugin, pytest_jsonreport.plugin)  # modules, not `-p` names: no entry-point scan
# pytest's own plugins that grading never uses (unraisableexception would also run gc.collect() five times a run;
# without skipping, pytest.skip() still works, and skip/skipif/xfail marks are refused at collection).
UNUSED_BUILTIN_PLUGINS = ("cacheprovider", "warnings", "logging", "capture", "faulthandler", "doctest", "junitxml",
                          "pastebin", "tmpdir", "monkeypatch", "recwarn", "setuponly", "setupplan", "stepwise",
                          "unittest", "debugging", "unraisableexception", "threadexception", "skipping", "subtests")


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


def grader_fault(error: BaseException, exercise: str, suites: Path) -> GraderFault | None:
    """The grader fault an exception raised in a test stands for, if it is one: any but a check's own failure
    (CheckFailed, an assert, a skip), the submission's (SubmissionProblem) and the student's own exception (re-created
    as ``StudentError``: their MemoryError is theirs). The checks verify every value of the submission before
    computing with it, and no value makes one raise (tests/grading/test_student_values.py), so anything else is a bug
    of the course's suites, said with where it was raised (``suites``: the course's suites folder) and never scored."""
    if isinstance(error, (StudentError, CheckFailed, SubmissionProblem, AssertionError)):
        return None
    if isinstance(error, GraderFault):  # the sandbox's, said where it happened
        return error
    if out_of_memory(error):
        return GradingOutOfMemory(f"the grading process ran out of memory while checking ({type(error).__name__})")
    if isinstance(error, UncheckedValue):
        return GraderFault(f"a check computed with a value of the submission before verifying it ({error})")
    return GraderFault(f"a check of {exercise} raised {type(error).__name__}{_raised_at(error, suites)}: a bug in the "
                       f"course's test code, not in the submission (`grader check-exercise {exercise}` runs it on the "
                       f"reference)")


def _raised_at(error: BaseException, suites: Path) -> str:
    """' (hidden_x.py, line 12)': the innermost line of the course's suites or the grader's checks that ``error`` went
    through, if any."""
    ours = (suites.resolve(), Path(__file__).resolve().parent)
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if any(Path(frame.filename).is_relative_to(folder) for folder in ours)]
    return f" ({Path(frames[-1].filename).name}, line {frames[-1].lineno})" if frames else ""


def check_name(item, exercise: str) -> str:
    """The check's name as every report shows it: its docstring's first line, and for a case of a parametrized test
    the case's label, its id's parts but the exercise itself (``[x100-float32]`` -> "... (x100, float32).")."""
    doc = (item.function.__doc__ or item.name).strip().splitlines()[0] if hasattr(item, "function") else item.name
    callspec = getattr(item, "callspec", None)
    label = ", ".join(part for part in callspec.id.split("-") if part != exercise) if callspec else ""
    return f"{doc.rstrip('.')} ({label})." if label else doc


# Marks that only pytest's skipping plugin acts on: grading leaves it out, so a suite must not use them.
SKIPPING_MARKS = frozenset({"skip", "skipif", "xfail"})


class GradingPlugin:
    """Fixtures and report hooks for grading one submission."""

    def __init__(self, session: WorkerSession | None, course: Course, device: str):
        self._session, self._course, self._device = session, course, device
        self.course_error: str | None = None  # what is wrong with the course's suites, found while collecting them
        self.fault: GraderFault | None = None  # the grading process's own failure during a test: no grade stands
        self.interrupted = False  # Ctrl-C during the suites
        self._about: dict[str, dict] = {}  # node id -> the test's exercise, weight and docstring line
        self.left_out: list = []  # the items collected but not graded here (another assignment's exercises)
        self.report: dict | None = None

    def begin(self, session: WorkerSession) -> None:
        """Grade ``session``'s submission next, with the suites collected before (``collection``): what the
        collection learnt stays, what a run found is forgotten. Its early start is waited for before any test runs."""
        self._session, self.fault, self.report = session, None, None
        resume_collector()
        session.started()

    def end(self) -> dict | None:
        """The run's report (None where none was made), the submission let go: a kept plugin holds none of its
        replies until the next."""
        report, self.report, self._session = self.report, None, None
        return report

    def pytest_configure(self, config):
        for module in self._course.course_modules:
            config.addinivalue_line("markers", f"{module}: a test of the {module} exercise")
        config.addinivalue_line("markers", "weight(n): the test's share of its exercise's points (default 1)")
        config.addinivalue_line("markers", "rule: a rule any result may follow (errors, in place, device, autograd, ...), "
                                           "paid in proportion to its exercise's values checks (grader/points.py)")

    def pytest_collectreport(self, report):
        """A suite file that cannot be imported (a syntax error, a missing module) is the course's to fix: one line
        naming the file, the line and the error, never a traceback."""
        if report.failed and self.course_error is None:
            text = str(report.longrepr)
            places = re.findall(r'File "([^"]+)", line (\d+)|^(\S+\.py):(\d+): in ', text, re.MULTILINE)
            places = [(a or c, b or d) for a, b, c, d in places]
            errors = [line.removeprefix("E").strip() for line in text.splitlines()
                      if line.startswith("E ") and re.search(r"\w+(Error|Exception)\b", line)]
            where = report.nodeid
            if places:
                path = Path(places[-1][0])
                shown = path.relative_to(self._course.root) if path.is_relative_to(self._course.root) else path
                where = f"{shown}:{places[-1][1]}"
            self.course_error = (f"{self._course.file}: {where}: a suite of the course cannot be imported: "
                                 f"{clean(errors[-1] if errors else text.strip().splitlines()[-1], 300)}")

    def pytest_collection_modifyitems(self, config, items):
        graded, left_out = [], []
        registered = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
        for item in items:
            marks = {mark.name for mark in item.iter_markers()}
            exercises = marks & set(self._course.course_modules)
            if not exercises and getattr(getattr(item, "function", None), "contract_property", None):
                left_out.append(item)  # a property of the contract that no exercise graded here has
                continue
            if len(exercises) != 1:
                unknown = sorted(marks - registered)
                self._refuse(f"{item.nodeid}: a test of the suites needs exactly one exercise marker of course.yaml "
                             f"(pytestmark = pytest.mark.<module>); it has {', '.join(sorted(exercises)) or 'none'}"
                             + (f" ({', '.join(unknown)}: no exercise of course.yaml)" if unknown else ""))
            if marks & SKIPPING_MARKS:
                self._refuse(f"{item.nodeid}: a suite skips with pytest.skip() in the test, not with "
                             f"{', '.join(sorted(marks & SKIPPING_MARKS))} marks")
            exercise = exercises.pop()
            if exercise not in self._course.modules:  # an exercise of another assignment
                left_out.append(item)
                continue
            graded.append(item)
            item.repr_failure = _failure_text
            weight = item.get_closest_marker("weight")
            self._about[item.nodeid] = {"exercise": exercise, "weight": float(weight.args[0]) if weight else 1.0,
                                        "doc": check_name(item, exercise),
                                        "kind": "rule" if item.get_closest_marker("rule") else "values"}
        self.left_out = left_out
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = graded

    def pytest_collection_finish(self, session):
        """The worker started beside the collection (``WorkerSession.start_early``) is waited for before any test
        runs: which modules do not import is known to every test alike, whatever the timing. A one-shot grade's
        collector comes back on (``memory.resume_collector``)."""
        resume_collector()
        if self._session is not None:  # collected for several submissions (``collection``): ``begin`` waits
            self._session.started()

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """Every test starts from the same random state, whatever ran before it (other tests, other submissions).
        A test of an exercise whose module is already known to be broken (missing, failed import) fails at once
        with that problem, without generating examples for calls that cannot be made."""
        seed_torch(self._course.seed)
        random.seed(self._course.seed)
        exercise = self._about[pyfuncitem.nodeid]["exercise"]
        self._session.exercise = exercise  # its calls spend that exercise's time
        self._session.check = (str(self._course.file), self._course.seed, self._device, pyfuncitem.nodeid)
        problem = self._session.broken.get(exercise)
        if problem is not None:
            raise SubmissionProblem(problem.kind, str(problem))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        return (yield from self._faults(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        return (yield from self._faults(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item):
        return (yield from self._faults(item))

    def _faults(self, item):
        """A test that fails, in any phase (a fixture's too), for a reason of the grading process's own is no failed
        check of the student: it ran out of memory (``grader.memory``), a suite computed with a student's tensor before
        verifying it (``UncheckedValue``), or a suite's code raised (``grader_fault``). The run stops, and
        ``run_suites`` raises the fault: no grade is recorded."""
        try:
            return (yield)
        except Exception as error:
            exercise = self._about[item.nodeid]["exercise"]
            self.fault = self.fault or grader_fault(error, exercise, self._course.suites_dir)
            if self.fault is not None:
                item.session.shouldstop = str(self.fault)
            raise

    @pytest.fixture(scope="session", autouse=True)
    def one_thread(self):
        """The suites' own tensors are tiny: intra-op threads only spin and steal the CPU from the worker graded."""
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        yield
        torch.set_num_threads(threads)

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True

    def pytest_generate_tests(self, metafunc):
        """A test of the shared contract (``@contract.checks(property)``, grader/suites/contract.py) runs once per
        exercise of the course whose ``CONTRACT`` has that property."""
        prop = getattr(metafunc.function, "contract_property", None)
        if prop is not None:
            try:
                contract.parametrize(metafunc, prop, self._course)
            except contract.ContractError as error:
                self._refuse(str(error))

    def _refuse(self, problem: str):
        """Stop the run on a course error (never the student's): ``run_suites`` raises it as a CourseError."""
        self.course_error = f"{self._course.file}: {problem}"
        raise pytest.UsageError(self.course_error)

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
        """The test's exercise, weight, name and kind, and its feedback. A failure of an exercise whose module is
        broken (missing, failed import) says only that it did not run: the problem itself, with its location, is
        said once for the exercise (``ExerciseScore.problem``), not once per check."""
        metadata = dict(self._about[item.nodeid])
        if call.excinfo is not None:
            broken = metadata["exercise"] in self._session.broken
            text = NOT_RUN.format(module=metadata["exercise"]) if broken else feedback(call.excinfo.value)
            metadata[f"feedback_{call.when}"] = text
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


SUITES_INI = Path(__file__).resolve().parent / "pytest.ini"



def suite_files(course: Course) -> list[Path]:
    """The hidden suites of the course's (or the assignment's) exercises, in course order, then the shared contract's."""
    return [*(course.hidden_suite(module) for module in course.modules), course.contract_suite]


def suite_args(files: list[Path], rootdir: Path) -> list[str]:
    """pytest's arguments for running the suite ``files`` with the grading plugin (and ``PLUGINS``) alone: no
    conftest.py of the course is loaded (the public checks' set-up lives in tests/course), no plugin is discovered."""
    return [*map(str, files), "--disable-plugin-autoload", "--noconftest",
            *(arg for name in UNUSED_BUILTIN_PLUGINS for arg in ("-p", f"no:{name}")),
            "--json-report", "--json-report-file=none",
            "--json-report-omit", "collectors", "log", "traceback", "streams", "warnings",
            "--rootdir", str(rootdir), "-c", str(SUITES_INI), "-qq", "--tb=no"]


def importable(course: Course) -> None:
    """Put on ``sys.path`` what the suites import by name: the course root (``solutions``), the shared hints of
    tests/course, each exercise's folder (its ``hints_<module>``) and the public modules the hints build on
    (``diagnosis``): the names they have in the handout, where they lie side by side. A process that graded another
    course before forgets that course's suites, hints and references (the same names, other files)."""
    folders = [PUBLIC, course.suites_dir, *(course.exercise_dir(m) for m in course.course_modules), course.root]
    for folder in reversed(folders):
        if str(folder) in sys.path:
            sys.path.remove(str(folder))
        sys.path.insert(0, str(folder))
    root = course.root.resolve()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name.startswith(("hidden_", "hints", "solutions")) and path and not _resolved(path).is_relative_to(root):
            del sys.modules[name]


@functools.lru_cache(maxsize=1024)
def _resolved(path: str) -> Path:
    """A module file's path, resolved once per process (``importable`` asks it of the same modules for every grade)."""
    return Path(path).resolve()


def unknown_banned(course: Course) -> list[str]:
    """course.yaml's banned names that name no torch call the worker could see: no function or method of torch,
    torch.Tensor, torch.nn.functional, torch.special, torch.linalg or torch.fft (``special_``, ``linalg_``, ``fft_``
    before the names of the last three) and no ATen operator."""
    spaces = {"": (torch, torch.Tensor, torch.nn.functional), "special_": (torch.special,), "linalg_": (torch.linalg,),
              "fft_": (torch.fft,)}

    def known(name: str) -> bool:
        if any(name.startswith(prefix) and callable(getattr(space, name.removeprefix(prefix), None))
               for prefix, found in spaces.items() for space in found):
            return True
        try:
            return getattr(torch.ops.aten, name) is not None
        except (AttributeError, RuntimeError):
            return False

    return [f"{target}: {name}" for target, names in course.banned.items() for name in names if not known(name)]


def check_suites(course: Course) -> frozenset[str]:
    """Collect the course's suites without grading anything, and return their checks' names as the results give them
    (``<exercise>: <check>``): a course error (a banned name that is no torch call, a suite whose tests lack their
    exercise's marker, a rule that needs a banned entry course.yaml lacks) raises CourseError, one line naming the
    file and what to change."""
    plugin = GradingPlugin(None, course, "cpu")
    with contextlib.redirect_stdout(io.StringIO()) as output, contextlib.redirect_stderr(output):
        code = pytest.main([*_pytest_args(course, suite_files(course)), "--collect-only"], plugins=[*PLUGINS, plugin])
    if plugin.course_error:
        raise CourseError(plugin.course_error)
    if plugin.interrupted:  # Ctrl-C, which pytest catches: the command stops, said as such (review 12)
        raise KeyboardInterrupt
    if code != 0:
        raise RuntimeError(f"the hidden suites could not be collected (pytest exit code {int(code)}): "
                           f"{output.getvalue()[-2000:]}")
    return frozenset(check_key(about["exercise"], about["doc"]) for about in plugin._about.values())


def run_suites(session: WorkerSession, course: Course, device: str, suites: list[Path] | None = None,
               select: str | None = None) -> dict:
    """Run the suites (default: ``suite_files(course)``) against the session's submission, only the tests of the
    course's exercises; return pytest-json-report's (sanitized) report. The suites are collected once per process
    (``collection``). A course error raises CourseError; a fault of the grading process during a test
    (``GradingPlugin.pytest_runtest_call``), GraderFault; Ctrl-C, KeyboardInterrupt."""
    files = suites or suite_files(course)
    args = _pytest_args(course, files, select)
    session.watch = sorted({name for names in course.banned.values() for name in names})
    session.start_early()  # the worker starts while pytest collects the suites (the first time in this process)
    kept = collection(course, device, files, args, lambda: [*PLUGINS, GradingPlugin(None, course, device)])
    kept.run(session)
    fault, report = kept.plugin.fault, kept.plugin.end()
    if fault is not None:
        drop()
        raise fault
    if report is None:
        drop()
        raise RuntimeError(f"the hidden suites could not run: {kept.output.getvalue()[-2000:]}")
    return report


def _pytest_args(course: Course, files: list[Path], select: str | None = None) -> list[str]:
    """pytest's arguments for the suite ``files`` of ``course`` (``-k select``), once the course's banned names are
    known to be torch's (CourseError otherwise) and the suites importable."""
    unknown = unknown_banned(course)
    if unknown:
        raise CourseError(f"{course.file}: banned: {unknown[0]} is no torch function, method or operator (list the names "
                          f"of the calls the worker sees: a torch function's, its ATen operator's, its torch.special "
                          f"or torch.linalg alias with that prefix)")
    importable(course)
    return suite_args(files, course.suites_dir) + (["-k", select] if select else [])
