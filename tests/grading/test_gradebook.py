"""End to end through the CLI: a small class (correct, late, missing, overridden, not on the roster) graded with
`grader batch --roster --overrides --submitted` on a course with a late policy, regraded, and re-exported with
`grader gradebook` (new overrides, an extension): the gradebook, the Canvas and Moodle files, results.json, the
feedback and the summary agree."""
import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import ROOT
from grader.course import course
from tests.grading.courses import late_course

pytestmark = pytest.mark.slow
SOLUTIONS = ROOT / "solutions"
WRONG_SOFTMAX = "import torch\n\n\ndef softmax(x, dim=-1, temperature=1.0):\n    return x\n"


def grader(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's grader, from the class's folder
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False, timeout=900)


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as handle:  # a byte-order mark, for Excel
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def klass(tmp_path_factory) -> Path:
    """ann: correct, on time (the instructor's list); bob: correct, in a zip made 2 days late (Berlin time);
    cy: a wrong softmax, overridden by hand; dee: on the roster, nothing handed in; zed: not on the roster."""
    root = tmp_path_factory.mktemp("gradebook")
    subs = root / "submissions"
    for student in ("ann", "cy", "zed"):
        (subs / student).mkdir(parents=True)
        for module in course().modules:
            shutil.copy(SOLUTIONS / f"{module}.py", subs / student / f"{module}.py")
    (subs / "cy" / "softmax.py").write_text(WRONG_SOFTMAX, encoding="utf-8")
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        for module in course().modules:
            archive.writestr(zipfile.ZipInfo(f"{module}.py", (2026, 11, 22, 12, 0, 0)),
                             (SOLUTIONS / f"{module}.py").read_bytes())
    late_course(root / "course")
    (root / "roster.csv").write_text("id,name,email\nann,Ann Lee,ann@x.org\nbob,Bob Ray,bob@x.org\n"
                                     "cy,Cy Do,cy@x.org\ndee,Dee Wu,dee@x.org\n", encoding="utf-8")
    (root / "overrides.csv").write_text("student,exercise,check,points,penalty,reason\n"
                                        "cy,softmax,,6,,partial credit: right idea on paper\n", encoding="utf-8")
    (root / "collected.csv").write_text("student,url,commit,commit time\nann,https://x/ann,abc1,2026-11-20T21:00:00Z\n",
                                        encoding="utf-8")
    return root


def test_a_class_with_roster_overrides_and_late_penalties(klass):
    out = klass / "out"
    run = grader("batch", "submissions", "--out", out, "--course", "course/course.yaml", "--jobs", "2",
                 "--roster", "roster.csv", "--overrides", "overrides.csv", "--submitted", "collected.csv", cwd=klass)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {row["student"]: row for row in _csv(out / "gradebook.csv")}
    assert list(rows) == ["ann", "bob", "cy", "dee", "zed"]
    assert [(r["status"], r["on_roster"]) for r in rows.values()] == [
        ("graded", "yes"), ("graded", "yes"), ("graded", "yes"), ("missing", "yes"), ("graded", "no")]
    assert [rows[s]["score"] for s in ("ann", "bob", "dee", "zed")] == ["100", "80", "0", "100"]
    # bob: zipped 2026-11-22 12:00 Berlin, due 2026-11-20 23:59 (+01:00): 1 day 12 hours late, two started days
    assert rows["bob"]["late_penalty"] == "20" and rows["bob"]["submitted_at"] == "2026-11-22T12:00:00+01:00"
    assert rows["ann"]["late_penalty"] == "" and rows["ann"]["submitted_at"] == "2026-11-20T21:00:00+00:00"
    graded_softmax = _softmax(out, "cy")  # results.json keeps what grading gave
    assert graded_softmax < 6 and float(rows["cy"]["softmax"]) == 6
    assert float(rows["cy"]["score"]) == pytest.approx(float(rows["cy"]["graded_score"]) - graded_softmax + 6)
    canvas = list(csv.reader((out / "canvas.csv").open(encoding="utf-8-sig")))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert [row[:3] + row[5:] for row in canvas[2:]] == [["Ann Lee", "", "ann", "100"], ["Bob Ray", "", "bob", "80"],
                                                         ["Cy Do", "", "cy", rows["cy"]["score"]],
                                                         ["Dee Wu", "", "dee", "0"]]  # zed: on no roster, no LMS user
    assert "not on the roster, left out of canvas.csv and moodle.csv: zed;" in run.stderr
    moodle = _csv(out / "moodle.csv")
    assert [(r["ID number"], r["Email address"]) for r in moodle][:2] == [("ann", "ann@x.org"), ("bob", "bob@x.org")]
    bob = json.loads((out / "results" / "bob.json").read_text(encoding="utf-8"))
    assert (bob["score"], bob["final_score"], bob["adjustments"][0]["kind"]) == (100, 80, "late")
    assert "late: submitted 2026-11-22T12:00:00+01:00" in (out / "feedback" / "bob.md").read_text(encoding="utf-8")
    assert "partial credit: right idea on paper" in (out / "feedback" / "cy.html").read_text(encoding="utf-8")
    summary = (out / "summary.html").read_text(encoding="utf-8")
    assert "<tbody><tr><td>dee</td></tr></tbody>" in summary and "<tbody><tr><td>zed</td></tr></tbody>" in summary

    # a regrade, naming no record: the kept roster, overrides and times apply again to the new graded records
    again = grader("batch", "submissions", "--out", out, "--course", "course/course.yaml", "--jobs", "2", "--force",
                   cwd=klass)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "overrides.csv (kept from an earlier run" in again.stderr
    regraded = {row["student"]: row for row in _csv(out / "gradebook.csv")}
    assert {s: (r["score"], r["softmax"], r["late_penalty"]) for s, r in regraded.items()} == \
        {s: (r["score"], r["softmax"], r["late_penalty"]) for s, r in rows.items()}
    assert regraded["cy"]["graded_at"] >= rows["cy"]["graded_at"]

    # the course is kept too: a re-export without --course keeps its late policy (it took the project's course, and
    # bob's penalty vanished: our instructor's walk-through); another course is refused, naming the kept one
    plain = grader("gradebook", out, cwd=klass)
    assert plain.returncode == 0 and "grader: using the course " in plain.stderr, plain.stderr[-3000:]
    assert {row["student"]: row["late_penalty"] for row in _csv(out / "gradebook.csv")}["bob"] == "20"
    other = grader("gradebook", out, "--course", ROOT / "course.yaml", cwd=klass)
    assert other.returncode == 2 and other.stderr.splitlines()[-1] == (
        f"grader: {out} was graded with {(klass / 'course' / 'course.yaml').resolve()}, not {ROOT / 'course.yaml'}: "
        f"give --course {(klass / 'course' / 'course.yaml').resolve()} (or another --out; to move this class to the "
        f"other course, remove {out / 'records' / 'course.txt'})")

    # a new overrides file, applied without grading; a bad one is one line naming its file and line
    (klass / "more.csv").write_text("student,points,reason\nbob,95,extension granted\n", encoding="utf-8")
    export = grader("gradebook", out, "--course", "course/course.yaml", "--overrides", "more.csv", cwd=klass)
    assert export.returncode == 0, export.stderr[-3000:]
    assert {row["student"]: row["score"] for row in _csv(out / "gradebook.csv")}["bob"] == "75"  # 95 - 20 late
    kept = out / "records" / "overrides.csv"
    assert (f"grader: more.csv replaces {kept} (kept from an earlier run): 1 of its rows are not in it and no longer "
            f"apply ({kept}:2); add them to more.csv to keep them") in export.stderr  # the sixth walk-through: unsaid
    (klass / "bad.csv").write_text("student,points,reason\nbob,95,fine\nnobody,1,who\n", encoding="utf-8")
    bad = grader("gradebook", out, "--course", "course/course.yaml", "--overrides", "bad.csv", cwd=klass)
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1] == "grader: bad.csv:3: no submission from student 'nobody' in this class"
    assert (out / "records" / "overrides.csv").read_text(encoding="utf-8") == (klass / "more.csv").read_text(encoding="utf-8")

    # an extension: bob's due date moves past his zip's time, and his late penalty goes (the kept overrides stay)
    (klass / "extensions.csv").write_text("student,due\nbob,2026-11-23T23:59:00+01:00\n", encoding="utf-8")
    extended = grader("gradebook", out, "--course", "course/course.yaml", "--extensions", "extensions.csv", cwd=klass)
    assert extended.returncode == 0, extended.stderr[-3000:]
    bob = {row["student"]: row for row in _csv(out / "gradebook.csv")}["bob"]
    assert (bob["score"], bob["late_penalty"]) == ("95", "")
    said = "extended to 2026-11-23T23:59:00+01:00"
    assert f"Your due date was {said}." in (out / "feedback" / "bob.md").read_text(encoding="utf-8")
    assert f"<td class='status'>graded; due date {said}</td>" in (out / "summary.html").read_text(encoding="utf-8")
    (klass / "bad-extensions.csv").write_text("student,due\nbob,2026-11-23T23:59:00+01:00\n"
                                              "nobody,2026-11-23T23:59:00+01:00\n", encoding="utf-8")
    bad = grader("gradebook", out, "--course", "course/course.yaml", "--extensions", "bad-extensions.csv", cwd=klass)
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1] == "grader: bad-extensions.csv:3: no student 'nobody' in this class or its roster"
    # a misspelled id in the list of times (refused by batch before grading) is refused by gradebook too: it dropped
    # that student's late penalty from the LMS files, exit status 0 (found by our instructor's walk-through)
    (klass / "bad-times.csv").write_text("student,submitted_at\nann,2026-11-20T21:00:00Z\nbobb,2026-11-22T12:00:00Z\n",
                                         encoding="utf-8")
    before = (out / "gradebook.csv").read_bytes()
    bad = grader("gradebook", out, "--course", "course/course.yaml", "--submitted", "bad-times.csv", cwd=klass)
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1] == "grader: bad-times.csv:3: no student 'bobb' in this class or its roster"
    assert (out / "gradebook.csv").read_bytes() == before


def test_a_bad_extension_stops_the_batch_before_grading(klass):
    """Unknown student, bad date, a student twice: one line naming the file and the line, exit status 2, nothing
    written."""
    for rows, error in [("ann,2026-11-23T23:59:00+01:00\nnobody,2026-11-23T23:59:00+01:00\n",
                         "bad.csv:3: no student 'nobody' in this class or its roster"),
                        ("ann,Friday\n", "bad.csv:2: 'Friday' is not a date and time (e.g. 2026-11-20T14:03:00+01:00)"),
                        ("ann,2026-11-23T23:59:00+01:00\nann,2026-11-24T23:59:00+01:00\n",
                         "bad.csv:3: a second extension for student 'ann' (the other on line 2)")]:
        (klass / "bad.csv").write_text(f"student,due\n{rows}", encoding="utf-8")
        run = grader("batch", "submissions", "--out", "unwritten", "--course", "course/course.yaml", "--roster",
                     "roster.csv", "--extensions", "bad.csv", cwd=klass)
        assert run.returncode == 2 and run.stderr.splitlines() == [f"grader: {error}"]
        assert not (klass / "unwritten").exists()


def test_a_roster_of_other_ids_stops_the_batch_before_grading(klass):
    """A roster whose ids are not the submissions' names (here Canvas's user ids) would make every student "not on
    the roster" and every roster student "missing": exit status 2 before grading, naming its columns; nothing written."""
    (klass / "ids.csv").write_text("id,name,email\n101,Ann Lee,ann@x.org\n102,Bob Ray,bob@x.org\n", encoding="utf-8")
    out = klass / "wrong-roster"
    run = grader("batch", "submissions", "--out", out, "--course", "course/course.yaml", "--roster", "ids.csv", cwd=klass)
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1].startswith("grader: ids.csv: only 0 of the 4 students who handed something in "
                                                  "are on this roster (its columns: id, name, email)"), run.stderr
    assert not out.exists()


def _softmax(out: Path, student: str) -> float:
    """The graded points of a student's softmax, from results.json (never changed by an override)."""
    return json.loads((out / "results" / f"{student}.json").read_text(encoding="utf-8"))["exercises"]["softmax"]["score"]


def test_a_file_replacing_a_kept_one_is_said_only_once_kept(tmp_path):
    """A file given in place of a kept one without some of its rows is said to replace it only once the run succeeds
    and keeps it: a run that fails later keeps the old file, and the note told of a file that was not kept (instructor
    walk-through 7)."""
    out = tmp_path / "out"
    (out / "records").mkdir(parents=True)
    (out / "records" / "overrides.csv").write_text("student,points,reason\nbob,95,extension\n", encoding="utf-8")
    (tmp_path / "new.csv").write_text("student,points,reason\n", encoding="utf-8")
    failed = grader("gradebook", out, "--overrides", "new.csv", cwd=tmp_path)
    assert failed.returncode == 2 and "holds no results" in failed.stderr and "replaces" not in failed.stderr
