"""A class's reports from its graded records and the instructor's records: results.json's adjustments, the feedback
pages, gradebook.csv, canvas.csv, moodle.csv and summary.html. Batch calls it once the class is graded;
`grader gradebook` calls it again (a new roster, overrides or submission times) without grading anything.

The reports go together: each is computed before any is written, the earlier ones are withdrawn first
(``withdraw_reports``), and batch withdraws them too as soon as it grades anything, so that no report is ever left
beside results it does not show (a batch killed or stopped by a bad record leaves none: `grader gradebook` writes
them).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from grader.course import Course
from grader.records.adjust import MISSING, ClassView, Records, class_view, source_time, stored
from grader.records.table import TableError
from grader.reports.canvas import write_canvas
from grader.reports.feedback import write_feedback
from grader.reports.files import write_json
from grader.reports.gradebook import write_gradebook
from grader.reports.moodle import write_moodle
from grader.reports.summary import PICTURES, write_summary

REPORTS = ("gradebook.csv", "canvas.csv", "moodle.csv", "summary.html", *PICTURES)


def publish(course: Course, out: Path, rows: Sequence[dict], records: Records,
            stamps: Mapping[str, datetime | None] | None = None, similar: Mapping | None = None,
            assignment: str | None = None, strict: bool = False) -> ClassView:
    """Write every report of the class ``rows`` (graded records, as on disk) with ``records`` applied; a record whose
    adjustments or submission time changed gets its results.json and feedback pages written again (the graded part
    of results.json is kept as it is). A line of the records that the class contradicts is left out, and said in
    the summary and in the view returned (``ClassView.unapplied``); ``strict`` (`grader gradebook`, where only the
    instructor's files changed): it raises ``TableError`` instead, before anything is written."""
    stamps = stamps or {}
    shown = class_view(course, rows, records, stamps, assignment)
    if strict and shown.unapplied:
        raise TableError("; ".join(shown.unapplied))
    withdraw_reports(out)
    views = {view.get("key") or view["student"]: view for view in shown.rows}
    titles = {exercise.module: exercise.title for exercise in course.exercises}
    for row in rows:
        key = row.get("key") or row["student"]
        kept = stored(row, views[key], source_time(row, stamps))
        if kept != row:
            problem = write_feedback(views[key], out, titles, key)
            write_json({**kept, **({"feedback": problem} if problem else {})}, out / "results" / f"{key}.json")
    write_gradebook(course, out, shown.rows)
    write_canvas(course, out, shown.rows, records.roster)
    write_moodle(course, out, shown.rows, records.roster)
    write_summary(course, out, [view for view in shown.rows if view.get("status") != MISSING], similar,
                  [view for view in shown.rows if view.get("status") == MISSING], shown.unlisted, shown.unapplied)
    return shown


def withdraw_reports(out: Path) -> None:
    """Remove the class's reports (gradebook.csv, the LMS files, summary.html and its pictures) from ``out``."""
    for name in REPORTS:
        (out / name).unlink(missing_ok=True)
