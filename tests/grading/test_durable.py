"""Durable grades: a grader fault is never a final grade, a dying job costs at most its own submission, a killed
batch leaves no process behind, the gradebook matches the class on disk, and intake is bounded."""
import csv
import importlib.util
import json
import os
import shutil
import signal
import threading
from pathlib import Path

import pytest
from courses import MODULES, TOTAL, course_variant

from grader import ROOT
from grader.batch import PROCESS_DIED, RUNNING, run_batch
from grader.course import COURSE_FILE, course
from grader.intake import IntakeError
from grader.intake.submission import read_submission

pytestmark = pytest.mark.slow
LIMITS = course().grading.intake
_spec = importlib.util.spec_from_file_location("orphans", ROOT / "benchmarks" / "orphans.py")
orphans = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(orphans)


class Recorder:
    """A progress sink that remembers how many submissions a run had to grade."""

    def start(self, total, counts):
        self.total = total

    def advance(self, counts):
        pass


def _gradebook(out: Path) -> dict[str, dict]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


class JobKiller(threading.Thread):
    """SIGKILLs every job process of the batch writing to ``out`` while it grades ``student`` (as a grader that
    dies on that submission would), until stopped."""

    def __init__(self, out: Path, student: str):
        super().__init__(daemon=True)
        self.running, self.student, self.stop, self.killed = out / ".staging" / RUNNING, student, threading.Event(), set()

    def run(self):
        while not self.stop.wait(0.01):
            for marker in self.running.glob("*") if self.running.is_dir() else []:
                try:
                    if marker.read_text(encoding="utf-8") == self.student and int(marker.name) not in self.killed:
                        os.kill(int(marker.name), signal.SIGKILL)
                        self.killed.add(int(marker.name))
                except (OSError, ValueError):  # the job finished meanwhile
                    pass


def test_a_job_process_that_dies_costs_only_its_own_submission(tmp_path):
    """A job process killed whenever it grades one submission breaks the pool; the batch replaces it, grades every
    classmate, records the culprit without a fingerprint (not final), and the next run grades it."""
    submissions = orphans.class_of(tmp_path / "class", 4)
    (submissions / "student1").rename(submissions / "victim")
    out = tmp_path / "out"
    killer = JobKiller(out, "victim")
    killer.start()
    try:
        rows = {r["student"]: r for r in run_batch(submissions, out, course_file=COURSE_FILE, jobs=2)}
    finally:
        killer.stop.set()
        killer.join()
    assert len(killer.killed) >= 2  # once in the class's pool, once alone
    assert {s: r["score"] for s, r in rows.items() if s != "victim"} == {"student0": 100, "student2": 100, "student3": 100}
    assert rows["victim"]["status"] == f"error: {PROCESS_DIED}" and "fingerprint" not in rows["victim"]
    assert _gradebook(out)["victim"]["status"] == f"error: {PROCESS_DIED}"
    progress = Recorder()
    rows = {r["student"]: r for r in run_batch(submissions, out, course_file=COURSE_FILE, jobs=2, progress=progress)}
    assert progress.total == 1
    assert rows["victim"]["status"] == "graded" and rows["victim"]["score"] == TOTAL and "fingerprint" in rows["victim"]


def test_a_grader_error_record_is_regraded_without_force(tmp_path):
    """A "grader error" record, even one with a fingerprint (as older versions wrote), is graded again by the next
    run without --force; final records are not."""
    submissions = orphans.class_of(tmp_path / "class", 2)
    out = tmp_path / "out"
    run_batch(submissions, out, course_file=COURSE_FILE, jobs=2)
    record = out / "results" / "student0.json"
    faulty = {**json.loads(record.read_text()), "score": 0, "status": "error: grader error: GraderFault: the worker zygote stopped"}
    record.write_text(json.dumps(faulty))
    progress = Recorder()
    rows = {r["student"]: r for r in run_batch(submissions, out, course_file=COURSE_FILE, jobs=2, progress=progress)}
    assert progress.total == 1
    assert rows["student0"]["status"] == "graded" and rows["student0"]["score"] == TOTAL
    assert float(_gradebook(out)["student0"]["score"]) == TOTAL


def test_a_removed_submission_leaves_the_gradebook(tmp_path):
    """The gradebook and the returned rows list the class on disk: a student whose submission was removed is gone."""
    submissions = orphans.class_of(tmp_path / "class", 2)
    out = tmp_path / "out"
    run_batch(submissions, out, course_file=COURSE_FILE, jobs=2)
    assert set(_gradebook(out)) == {"student0", "student1"}
    shutil.rmtree(submissions / "student1")
    rows = run_batch(submissions, out, course_file=COURSE_FILE, jobs=2)
    assert [r["student"] for r in rows] == ["student0"]
    assert set(_gradebook(out)) == {"student0"}


@pytest.mark.parametrize("moment", list(orphans.MOMENTS))
def test_kill_9_of_the_batch_leaves_no_process_and_the_rerun_completes(tmp_path, moment):
    """`kill -9` of `grader batch` at any moment: every process it started (job processes, zygotes, workers, intake
    readers) is gone within seconds, even where it did not know its parent was gone; a rerun grades the class."""
    submissions = orphans.class_of(tmp_path / "class", 3)
    out = tmp_path / "out"
    left = orphans.leftovers_after_kill(submissions, out, moment, jobs=2, wait=30)
    assert left == {}
    rows = run_batch(submissions, out, course_file=COURSE_FILE, jobs=2)
    assert [(r["student"], r["score"]) for r in rows] == [("student0", 100), ("student1", 100), ("student2", 100)]


def _huge_notebook(path: Path) -> Path:
    """A notebook within the size cap whose JSON parses into far more memory than the course allows."""
    cap = int(LIMITS.max_total_mb * 2**20) - 1024
    path.write_text('{"nbformat": 4, "cells": [], "junk": [' + "{}," * (cap // 3 - 100) + "{}]}", encoding="utf-8")
    return path


def test_reading_a_submission_is_bounded_in_memory(tmp_path):
    """A notebook whose JSON would take more memory to parse than grading.intake.memory_mb allows is refused with
    one line naming the limit, within that limit."""
    notebook = _huge_notebook(tmp_path / "huge.ipynb")
    small = LIMITS.model_copy(update={"memory_mb": 64})
    with pytest.raises(IntakeError, match="more than 64 MB|stopped") as refused:
        read_submission(notebook, small)
    assert "\n" not in str(refused.value)
    assert read_submission(ROOT / "solutions", small)[0].keys() == set(MODULES)


def test_reading_a_submission_is_bounded_in_time(tmp_path, monkeypatch):
    """Reading that runs past grading.intake.seconds (a pathological file, simulated by a reader that never ends)
    is stopped and refused with one line naming the limit; the next submission reads normally."""
    import grader.intake.submission

    original = grader.intake.submission._read

    def endless(path, *args):
        if path.name == "slow":
            while True:
                pass
        return original(path, *args)

    monkeypatch.setattr(grader.intake.submission, "_read", endless)
    # The wall-clock bound (a busy machine, a grader fault) far away: on a loaded machine it came first.
    monkeypatch.setattr(grader.intake.submission, "WALL_FACTOR", 100)
    (tmp_path / "slow").mkdir()
    quick = LIMITS.model_copy(update={"seconds": 1})
    with pytest.raises(IntakeError, match=r"took more than 1 s \(the course's limit\)"):
        read_submission(tmp_path / "slow", quick)
    assert read_submission(ROOT / "solutions", LIMITS)[0].keys() == set(MODULES)


def test_a_refused_submission_costs_only_itself_in_a_batch(tmp_path):
    """In a batch, a notebook that exceeds the intake's bounds is one clear final error; its classmate is graded."""
    submissions = orphans.class_of(tmp_path / "class", 1)
    _huge_notebook(submissions / "huge.ipynb")
    course_file = course_variant(tmp_path / "course", COURSE_FILE.read_text().replace("memory_mb: 512 ", "memory_mb: 64  ", 1))
    rows = {r["student"]: r for r in run_batch(submissions, tmp_path / "out", course_file=course_file, jobs=2)}
    assert rows["student0"]["score"] == TOTAL
    assert rows["huge"]["status"].startswith("error: cannot grade: reading the submission")
    assert "fingerprint" in rows["huge"]
