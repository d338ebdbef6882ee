"""The hidden suites collected by pytest once per grading process, and run again for each submission.

``pytest.main`` configures pytest, registers its plugins and collects the suites on every call: about 40 ms of CPU,
a sixth of what grading a correct submission costs the grading process (``benchmarks/warm.py``). A batch's job grades
many submissions of one course with the same suites: a ``Collection`` configures and collects once, keeps pytest's
session and its items, and runs every item's protocol again for each submission (as pytest-rerunfailures reruns one),
with pytest-json-report's recorder started afresh. Each run is the pytest run ``pytest.main`` would make, item for
item: the same hooks, the fixtures set up and torn down alike (the session's after its last item), the same report.

It drives pytest below ``pytest.main``: ``_prepareconfig`` and ``Config._do_configure`` (pytest and
pytest-json-report are pinned in pyproject.toml; tests/grading/test_collection.py checks that a kept collection's run
reports what a fresh one's does; 280 submissions got, check for check, the feedback ``pytest.main`` gave them).
A run that a fault of the grading process stopped, or an interrupt, drops the collection: the next is made afresh.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from _pytest.config import _prepareconfig

from grader.course import Course, CourseError

_kept: Collection | None = None  # the last collection made in this process


class Collection:
    """pytest configured with ``args`` and ``plugins`` (the last a ``GradingPlugin``), its suites collected."""

    def __init__(self, key: tuple, plugins: list, args: list[str]):
        self.key, self.plugin, self.output = key, plugins[-1], io.StringIO()
        plugin = self.plugin
        with self._quiet():
            try:
                self.config = _prepareconfig(args, plugins)
                self.session = pytest.Session.from_config(self.config)
                self.config._do_configure()
                self.config.hook.pytest_sessionstart(session=self.session)
                self.config.hook.pytest_collection(session=self.session)
            except pytest.UsageError:  # the plugin's refusal of a course error
                pass
        if plugin.course_error:
            raise CourseError(plugin.course_error)
        if self.session.testsfailed:  # an error pytest met collecting (the plugin names a suite that cannot import)
            raise RuntimeError(f"the hidden suites could not be collected: {self.output.getvalue()[-2000:]}")

    def _quiet(self):
        stack = contextlib.ExitStack()
        stack.enter_context(contextlib.redirect_stdout(self.output))
        stack.enter_context(contextlib.redirect_stderr(self.output))
        return stack

    def run(self, session) -> None:
        """Run every item for the submission of ``session`` (a ``WorkerSession``): the plugin then holds its report,
        or the fault or interrupt that stopped it (the collection is dropped then)."""
        plugin, pytest_session = self.plugin, self.session
        plugin.begin(session)
        pytest_session.testsfailed, pytest_session.shouldstop, pytest_session.shouldfail = 0, False, False
        recorder = self.config._json_report
        recorder.__init__(self.config)  # its state is one run's (its tests, its start time): made anew for each
        recorder.pytest_deselected(plugin.left_out)  # the items deselected at collection, said again to the new state
        recorder.pytest_sessionstart(pytest_session)
        self.output.seek(0)
        self.output.truncate()
        try:
            with self._quiet():
                self.config.hook.pytest_runtestloop(session=pytest_session)
        except (pytest.Session.Interrupted, pytest.Session.Failed):  # a grader fault stopped the run (the plugin's)
            drop()
            return
        except BaseException:  # an interrupt, or pytest's own failure: said as it is, and nothing is kept
            drop()
            raise
        pytest_session.exitstatus = pytest.ExitCode.TESTS_FAILED if pytest_session.testsfailed else pytest.ExitCode.OK
        recorder.pytest_sessionfinish(pytest_session)  # builds the report: the plugin's pytest_json_modifyreport keeps it
        self.config.pluginmanager.get_plugin("terminalreporter").stats.clear()  # its reports of the run: not kept

    def close(self) -> None:
        """End pytest's session (tearing down what a stopped run left set up) and its configuration."""
        with self._quiet(), contextlib.suppress(Exception):
            self.config.hook.pytest_sessionfinish(session=self.session, exitstatus=pytest.ExitCode.INTERRUPTED)
            self.config._ensure_unconfigure()


def collection(course: Course, device: str, files: list[Path], args: list[str], plugins) -> Collection:
    """The collection of ``files`` for ``course`` on ``device`` made last in this process, or a new one (with pytest's
    ``args`` and ``plugins()``) where that was of another course, other files, or files changed since."""
    global _kept
    key = (course, device, tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files), tuple(args))
    if _kept is None or _kept.key != key:
        drop()
        _kept = Collection(key, plugins(), args)
    return _kept


def drop() -> None:
    """Forget the collection kept (ending its pytest session)."""
    global _kept
    kept, _kept = _kept, None
    if kept is not None:
        kept.close()
