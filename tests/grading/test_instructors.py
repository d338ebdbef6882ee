"""An instructor's walk-through, through the CLI: the class of tests/grading/corpus/klass.py (folders, zips, a
notebook handed in alone, stubs, a copy, an empty folder and a corrupt zip) with a roster, overrides, submission times
and a late policy; then the reports a person reads: the gradebook, the LMS files and summary.html.

Issue 30: one notebook in a class of folders made a second assignment of it (spurious "missing" rows, a zero column in
canvas.csv, an override without an assignment refused); a bad overrides row stopped the batch only once the class was
graded, leaving a gradebook without the overrides and the late penalties; the summary's totals did not add up, its
hardest checks were those nobody started, and it repeated every similar pair."""
import csv
import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grader import ROOT
from grader.course import course
from grader.points import DEFERRED
from grader.reports.advice import NOT_IMPLEMENTED
from tests.grading.courses import late_course

sys.path.insert(0, str(Path(__file__).parent / "corpus"))
from klass import GRADED, MISSING, NOT_ON_ROSTER, NOTEBOOK, STUBS, UNGRADABLE  # noqa: E402

pytestmark = pytest.mark.slow
REPORTS = ("gradebook.csv", "canvas.csv", "moodle.csv", "summary.html")
SOFTMAX_CHECK = ("Equals torch.softmax(x / t, dim) for shapes of rank 1 to 4, every dim (either sign) and several "
                 "temperatures.")


def grader(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's grader
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False, timeout=900)


def batch(root: Path, out: str, overrides: str = "records/overrides.csv") -> subprocess.CompletedProcess:
    return grader("batch", "class", "--out", out, "--course", "course/course.yaml", "--jobs", "2",
                  "--roster", "records/roster.csv", "--overrides", overrides, "--submitted", "records/submitted.csv",
                  cwd=root)


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as handle:  # a byte-order mark, for Excel
        return list(csv.DictReader(handle))


class Tables(HTMLParser):
    """The text of every cell of every table with an id, by id: rows of cells, the heading's first."""

    def __init__(self, page: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id"):
            self._table = self.tables.setdefault(dict(attrs)["id"], [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._table[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def number(cell: str) -> float:
    return float(cell) if cell not in ("", "-") else 0.0


@pytest.fixture(scope="module")
def klass(tmp_path_factory) -> Path:
    """The class, its records and a course with a late policy, graded once through `grader batch`."""
    from klass import build_class, write_records

    root = tmp_path_factory.mktemp("instructors")
    build_class(root / "class")
    write_records(root / "records")
    late_course(root / "course")
    run = batch(root, "out")
    assert run.returncode == 0, run.stderr[-3000:]
    (root / "stdout.txt").write_text(run.stdout, encoding="utf-8")
    (root / "stderr.txt").write_text(run.stderr, encoding="utf-8")
    return root


def test_a_mixed_class_is_one_row_per_student_in_every_report(klass):
    """ivan's notebook is his attempt at the course, out of its points: one row per student in the gradebook, the
    LMS files and the summary, the roster's one absentee missing once; the overrides on the course record (named
    `course`) and on a whole submission without an assignment column apply. The student not on the roster is left out
    of the LMS files (no LMS user matches him), saying so on stderr; jon's corrupt zip has no score anywhere."""
    out = klass / "out"
    students = sorted([*GRADED, *(u.removesuffix(".zip") for u in UNGRADABLE), MISSING])
    gradebook = {row["student"]: row for row in _csv(out / "gradebook.csv")}
    assert sorted(gradebook) == students and {row["assignment"] for row in gradebook.values()} == {""}
    assert {row["max_score"] for row in gradebook.values()} == {str(course().total_points)}
    ivan = gradebook[NOTEBOOK[0]]
    assert (float(ivan["score"]), ivan["status"]) == (course().exercise("qkv").points, "graded")
    assert [s for s, row in gradebook.items() if row["status"] == "missing"] == [MISSING]
    assert float(gradebook["cy"]["causal"]) == 5 and "oral exam" in gradebook["cy"]["adjustments"]
    assert float(gradebook["hal"]["score"]) == pytest.approx(float(gradebook["hal"]["graded_score"]) - 4)
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as handle:
        canvas = list(csv.reader(handle))
    assert canvas[0][5:] == [course().title] and canvas[1][5:] == [str(course().total_points)]
    on_roster = [student for student in students if student != NOT_ON_ROSTER]
    assert sorted(row[2] for row in canvas[2:]) == on_roster
    assert {row[2]: row[5] for row in canvas[2:]}[NOTEBOOK[0]] == str(course().exercise("qkv").points)
    assert {row[2]: row[5] for row in canvas[2:]}["jon"] == "" == gradebook["jon"]["score"]
    assert sorted(row["ID number"] for row in _csv(out / "moodle.csv")) == on_roster
    assert (f"grader: 1 student with a submission not on the roster, left out of canvas.csv and moodle.csv: "
            f"{NOT_ON_ROSTER}; add them to the roster") in (klass / "stderr.txt").read_text(encoding="utf-8")
    summary = Tables((out / "summary.html").read_text(encoding="utf-8")).tables
    assert summary["missing"] == [["student"], [MISSING]] and summary["unlisted"] == [["student"], [NOT_ON_ROSTER]]
    assert sorted(row[0] for row in summary["students"][1:]) == students
    title = (klass / "stdout.txt").read_text(encoding="utf-8")
    assert f"{len(students) - 1} submissions, 1 missing" in title


@pytest.mark.parametrize("line, said", [
    ("nobody,,,,,1,typo", "no submission from student 'nobody' in this class"),
    ("hal,,softmax,Equals torch.softmax,,1,typo", "no check 'Equals torch.softmax' in softmax's suites (a check is "
     f"named as the feedback page shows it); did you mean {SOFTMAX_CHECK!r}?"),
])
def test_a_bad_override_stops_the_batch_before_anything_is_graded(klass, tmp_path, line, said):
    """An override for a student of no submission, or of a check the suites do not have, is one line naming its file
    and line, exit status 2, and nothing is graded or written (both were found once the whole class was graded)."""
    bad = tmp_path / "overrides.csv"
    bad.write_text((klass / "records" / "overrides.csv").read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    run = batch(klass, tmp_path / "out", str(bad))
    assert run.returncode == 2 and run.stderr.splitlines()[-1] == f"grader: {bad}:5: {said}"
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "out").exists()


def test_a_record_the_graded_class_contradicts_is_left_out_and_said(klass, tmp_path):
    """An override giving a check more points than it holds is known only once the class is graded (a check's points
    come with the results): the batch exits 2 naming it and how to finish, the new results are kept, and the reports are
    written without that line, the summary naming it (a student's hand-in could withdraw the whole class's reports that
    way: red team; the gradebook was once rewritten after each student without the overrides and late penalties)."""
    root = tmp_path / "again"
    for part in ("class", "records", "course", "out"):
        shutil.copytree(klass / part, root / part, symlinks=True)
    with open(root / "class" / "hal" / "softmax.py", "a", encoding="utf-8") as handle:
        handle.write("# changed\n")
    bad = root / "records" / "bad.csv"
    bad.write_text(f'student,exercise,check,points,reason\nhal,softmax,"{SOFTMAX_CHECK}",9,x\n', encoding="utf-8")
    run = batch(root, "out", "records/bad.csv")
    assert run.returncode == 2, run.stderr[-3000:]
    assert "9 points is more than the 2.08 of check" in run.stderr and "grader gradebook" in run.stderr
    assert "The reports are written without it" in run.stderr
    assert "# changed" in (root / "out" / "taken" / "hal.json").read_text(encoding="utf-8")
    assert all((root / "out" / name).exists() for name in REPORTS)
    summary = (root / "out" / "summary.html").read_text(encoding="utf-8")
    assert "Records not applied" in summary and "9 points is more than" in summary
    bad_too = grader("gradebook", "out", "--course", "course/course.yaml", "--overrides", "records/bad.csv", cwd=root)
    assert bad_too.returncode == 2 and "9 points is more than the 2.08 of check" in bad_too.stderr
    again = grader("gradebook", "out", "--course", "course/course.yaml", "--overrides", "records/overrides.csv",
                   cwd=root)
    assert again.returncode == 0, again.stderr[-3000:]
    assert all((root / "out" / name).exists() for name in REPORTS)
    assert "Records not applied" not in (root / "out" / "summary.html").read_text(encoding="utf-8")


def test_the_summary_adds_up_and_says_who_needs_help(klass):
    """Every row of the students table adds up (its exercises as graded to `graded`; graded, adjusted and late to
    `final`, the gradebook's score), with the roster's names and a status; dee's late penalty (two days: 20% of the
    points) and the overrides show; kim's untouched stubs say so."""
    out = klass / "out"
    gradebook = {row["student"]: row for row in _csv(out / "gradebook.csv")}
    head, *rows = Tables((out / "summary.html").read_text(encoding="utf-8")).tables["students"]
    assert head[:7] == ["student", "name", "final", "graded", "adjusted", "late", "status"]
    assert head[7:] == list(course().modules)
    table = {row[0]: dict(zip(head, row)) for row in rows}
    for student, row in table.items():
        final = number(row["graded"]) + number(row["adjusted"]) + number(row["late"])
        assert number(row["final"]) == pytest.approx(final, abs=0.011), row
        assert number(row["final"]) == pytest.approx(number(gradebook[student]["score"]), abs=0.005), row
        if row["graded"] != "-":
            assert number(row["graded"]) == pytest.approx(sum(number(row[m]) for m in course().modules), abs=0.05)
    assert table["dee"]["late"] == "-20" and table["dee"]["name"] == "Dee Müller"
    assert table["hal"]["adjusted"] == "-4" and table["ada"]["adjusted"] == "-2.5"
    assert table[STUBS]["status"] == f"graded, {len(course().modules)} exercises not started"
    assert table[MISSING]["status"] == "missing: nothing handed in"
    assert table[NOT_ON_ROSTER]["status"] == "graded; not on the roster"
    assert table["jon"]["status"] == "could not be graded"


def test_hardest_checks_are_those_students_attempted(klass):
    """Each hardest check counts the students who were judged on it: whose exercise ran and was started (not every
    failure a stub), with a case of it that is no stub not filled in yet nor a rule not judged yet (kim's stubs made
    every check "1 of N" harder, and exercises nobody started topped the table)."""
    out = klass / "out"
    hardest = Tables((out / "summary.html").read_text(encoding="utf-8")).tables["hardest"][1:]

    def unjudged(test: dict) -> bool:
        output = test.get("output") or ""
        return test["status"] == "failed" and bool(NOT_IMPLEMENTED.search(output) or DEFERRED in output)

    judged: dict[tuple[str, str], dict[str, bool]] = {}  # (exercise, check) -> student -> every judged case passed
    for path in (out / "results").glob("*.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        tests = record["tests"] if record["status"] == "graded" else []
        stubs_only = {t["name"].split(": ")[0] for t in tests if t["status"] == "failed"} - {
            t["name"].split(": ")[0] for t in tests if t["status"] == "failed" and not NOT_IMPLEMENTED.search(t["output"])}
        for test in tests:
            module, what = test["name"].split(": ", 1)
            if record["exercises"][module].get("problem") or module in stubs_only or unjudged(test):
                continue
            cases = judged.setdefault((module, what), {})
            cases[record["student"]] = cases.get(record["student"], True) and test["status"] == "passed"
    assert hardest and STUBS not in {s for cases in judged.values() for s in cases}
    assert [row[1] for row in hardest] == [f"{sum(judged[row[2], row[3]].values())} of {len(judged[row[2], row[3]])}"
                                           for row in hardest]


def test_the_summary_links_the_similarity_report_instead_of_repeating_it(klass):
    """The summary shows the student pairs and groups of alike code, at most ten of each, linking similarity.html,
    and stays small (it repeated every flagged pair of every exercise: 2.3 MB for a class of 12)."""
    out = klass / "out"
    page = (out / "summary.html").read_text(encoding="utf-8")
    tables = Tables(page).tables
    assert 0 < len(tables["similar-pairs"]) - 1 <= 10 and "href='similarity.html'" in page
    pairs = json.loads((out / "similarity.json").read_text(encoding="utf-8"))["pairs"]
    assert len(pairs) > 10, "the class has more flagged pairs than the summary shows"
    assert "similar" not in tables and len(page.encode()) < 100_000
