"""The hidden suites collected once per grading process (grader/suites/collection.py): each submission's run reports
what a run of freshly collected suites reports, and a changed suite, another course or a fault starts afresh."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch
from courses import course_variant
from test_grader import submission

from grader.course import COURSE_FILE, load_course
from grader.grade import grade_submission
from grader.suites import collection

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"
WRONG_SOFTMAX = "import torch\n\n\ndef softmax(x, dim=-1, temperature=1.0):\n    return torch.exp(x) / 3\n"


def outcomes(results: dict) -> list[tuple]:
    return [(t["name"], t["status"], t["score"], t["output"]) for t in results["tests"]]


def test_each_run_of_the_kept_collection_reports_what_a_fresh_collection_does(tmp_path, zygote, course):
    """A wrong submission, then a right one, then the wrong one again, with the suites collected once: each report is
    the one freshly collected suites give it, and the session's fixtures are torn down after each run."""
    wrong = submission(tmp_path, "wrong", softmax=WRONG_SOFTMAX)
    threads = torch.get_num_threads()
    collection.drop()
    fresh = grade_submission(str(wrong), course, zygote=zygote).results
    kept = collection._kept
    right = grade_submission(str(SOLUTIONS), course, zygote=zygote).results
    again = grade_submission(str(wrong), course, zygote=zygote).results
    assert collection._kept is kept  # collected once for the three
    assert right["score"] == pytest.approx(course.total_points) and fresh["score"] < course.total_points
    assert outcomes(again) == outcomes(fresh)
    assert torch.get_num_threads() == threads  # the plugin's one_thread fixture was torn down after each run


def test_a_changed_suite_or_another_course_is_collected_again(tmp_path, zygote, course):
    """A suite file written since (its time or size changed), or a course loaded from another folder, gets a new
    collection: a kept one never runs suites that are not on disk."""
    variant = load_course(course_variant(tmp_path / "course", COURSE_FILE.read_text(encoding="utf-8")))
    softmax = variant.hidden_suite("softmax").parent
    own = softmax.resolve()
    softmax.unlink()  # a copy of its own, so that touching it touches nothing another test reads
    shutil.copytree(own, softmax, ignore=shutil.ignore_patterns("__pycache__"))
    grade_submission(str(SOLUTIONS), variant, zygote=zygote)
    kept = collection._kept
    suite = variant.hidden_suite("softmax")
    stat = suite.stat()
    os.utime(suite, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    grade_submission(str(SOLUTIONS), variant, zygote=zygote)
    assert collection._kept is not kept
    kept = collection._kept
    only = course.assignment(course.notebook_name("softmax"))
    results = grade_submission(str(SOLUTIONS), only, zygote=zygote, select="softmax").results
    assert collection._kept is not kept and set(results["exercises"]) == {"softmax"}


def test_a_grader_fault_drops_the_collection(tmp_path, zygote, course, monkeypatch):
    """A check that fails for a reason of the grading process's own stops the run: no grade is recorded, and the
    collection is dropped, so the next submission's run starts from freshly collected suites."""
    from grader.sandbox.host.problems import GraderFault
    from grader.suites import checks

    grade_submission(str(SOLUTIONS), course, zygote=zygote)
    assert collection._kept is not None

    def broken(*args, **kwargs):
        raise TypeError("a bug in a check")
    monkeypatch.setattr(checks, "expect_close", broken)
    with pytest.raises(GraderFault):
        grade_submission(str(SOLUTIONS), course, zygote=zygote)
    assert collection._kept is None
    monkeypatch.undo()
    assert grade_submission(str(SOLUTIONS), course, zygote=zygote).grade.score == pytest.approx(course.total_points)
