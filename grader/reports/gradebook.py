"""The class's gradebook.csv, rebuilt by batch from the results on disk, for the instructor (the class's summary.html:
``summary``; the LMS imports: ``canvas``, ``moodle``).

One row per record (student, or student and assignment), as ``records.adjust`` shows it: the final score after the
overrides and the late penalty, the graded score before them, each exercise's points (a column per exercise the
rows grade: a batch of one assignment has its own), the late penalty (points taken), the adjustments' reasons, when
it was submitted, the due date it was extended to, and, with a roster, the student's name and e-mail and whether
they are on it ("missing" rows for those without a submission). A record without a final score
(``feedback.final_score``: a grader fault, a submission that could not be graded) has blank points; one that could
not be graded but to which an override gives a score keeps its graded points, exercises and hash blank.

The three files are for people and the LMSs that import them: UTF-8 with a byte-order mark (so that Excel reads
"Díaz" as it is; Canvas's and Moodle's imports take it), points to at most two decimals (``advice.points``), every
string a ``csv_cell``. Programs read the full precision in ``results/<student>.json``.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.course import Course
from grader.reports.advice import points
from grader.reports.feedback import final_score, graded
from grader.reports.files import write_atomic
from grader.text import MAX_MESSAGE, MAX_NAME, csv_cell

MAX_STATUS = 1000  # characters of a status in the gradebook: the longest, two submissions named in full, fits


def write_gradebook(course: Course, out: Path, rows: list[dict]) -> None:
    """gradebook.csv from ``rows``, which mirror the results files on disk (with the records applied)."""
    roster = any("on_roster" in data for data in rows)
    graded_modules = {module for data in rows for module in data["exercises"]}
    modules = [e.module for e in course.exercises if e.module in graded_modules or not rows]
    table = [["student", *(["name", "email", "on_roster"] * roster), "assignment", "score", "graded_score", "max_score",
              *modules, "late_penalty", "adjustments", "submitted_at", "extended_to", "status", "graded_at",
              "submission_sha256"]]
    for data in rows:  # an exercise outside the row's assignment is left blank
        scored = final_score(data) is not None
        late = -sum(a["points"] for a in data.get("adjustments", []) if a["kind"] == "late")
        listed = [csv_cell(data.get("name", ""), MAX_NAME), csv_cell(data.get("email", ""), MAX_NAME),
                  "yes" if data.get("on_roster") else "no"]
        was_graded = graded(data)  # else no graded points, even where an override gives it a score
        points_of = [data.get("graded_score", data["score"]),
                     *(data["exercises"].get(module, {}).get("score") for module in modules)]
        final = points(data["score"]) if scored else ""
        graded_score, *exercises = [points(value) if was_graded and value is not None else "" for value in points_of]
        table.append([csv_cell(data["student"], MAX_NAME), *(listed * roster),
                      csv_cell(data.get("assignment") or "", MAX_NAME), final, graded_score, points(data["max_score"]),
                      *exercises, points(late) if late else "", csv_cell(reasons(data), MAX_MESSAGE),
                      csv_cell(data.get("submitted_at", ""), MAX_NAME), csv_cell(data.get("extended_to", ""), MAX_NAME),
                      csv_cell(data.get("status", "graded"), MAX_STATUS),
                      csv_cell(data.get("graded_at", ""), MAX_NAME),
                      csv_cell(data["submission_sha256"] if was_graded else "", MAX_NAME)])
    write_csv(table, out / "gradebook.csv")


def reasons(data: dict) -> str:
    """The adjustments of a record in one line: ``late: ... (-10); <module>: regraded by hand (+2)``."""
    return "; ".join(f"{a['target'] + ': ' if a['target'] else ''}{a['reason']} ({_cents(a['points'])})"
                     for a in data.get("adjustments", []))


def _cents(value: float) -> str:
    """Signed points to two decimals (``-2.00``, ``+0.50``); none unsigned (``0.00``: a penalty that took nothing)."""
    return f"{value:+.2f}" if round(value, 2) else "0.00"


# ----------------------------------------------------------------- shared by the LMS exports (canvas, moodle)

def class_groups(rows: Sequence[dict]) -> list[str | None]:
    """The records a class is graded in: its assignments, or None (the whole course) where no row has one. An entry
    refused unread in a class graded per assignment (a folder among notebooks) has no assignment, and is none."""
    return sorted({row.get("assignment") for row in rows} - {None}) or [None]


def assignment_columns(course: Course, rows: Sequence[dict]) -> list[tuple[str | None, str, float]]:
    """The assignments the rows hold, in course order: (name or None for the whole course, title, points possible)."""
    whole = course.whole
    order = list(whole.assignment_modules())
    names = sorted(class_groups(rows) if rows else [], key=lambda n: (order.index(n) if n in order else -1))
    titles = {a.name: a.title for a in whole.assignments}
    for module in whole.modules:
        titles.setdefault(whole.notebook_name(module), whole.exercise(module).title)
    return [(name, titles.get(name, course.title) if name else course.title,
             max(row["max_score"] for row in rows if row.get("assignment") == name)) for name in names]


def by_student(rows: Sequence[dict], roster: Mapping | None) -> dict[str, dict]:
    """Student -> assignment (None: the whole course) -> their record, students in the rows' order; with a roster,
    only its students: one not on it matches no LMS user (and Moodle's import stops at a user it cannot find), and is
    flagged in gradebook.csv, the summary and on stderr instead."""
    students: dict[str, dict] = {}
    for row in rows:
        if roster is None or row["student"] in roster:
            students.setdefault(row["student"], {})[row.get("assignment")] = row
    return students


def lms_score(row: dict | None) -> str:
    """A score for an LMS: the final score to two decimals; blank where there is none (no record, or no final score:
    ``feedback.final_score``), which the LMS leaves as it is."""
    score = final_score(row) if row is not None else None
    return "" if score is None else points(score)


def write_csv(table: list[list[str]], path: Path) -> None:
    """A CSV file for people and LMSs: UTF-8 with a byte-order mark (Excel reads UTF-8 only with one)."""
    buffer = io.StringIO()
    csv.writer(buffer).writerows(table)
    write_atomic("\ufeff" + buffer.getvalue(), path)
