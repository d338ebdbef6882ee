"""moodle.csv: the class's final points for Moodle's grade import (Grades > Import > CSV file).

The user columns of Moodle's own grade export (``First name``, ``Last name``, ``ID number``, ``Email address``),
then per assignment a grade column (its title) and ``Feedback for <title>`` (the adjustments' reasons: a late
penalty, an override). On import, map users from ``Email address`` to "email address" (or ``ID number`` to "ID
number", which holds the student id), and each grade column to its grade item (or a new one). Scores are the final
ones, to two decimals; a blank grade changes nothing in Moodle.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.course import Course
from grader.reports.gradebook import assignment_columns, by_student, lms_score, reasons, write_csv
from grader.text import MAX_MESSAGE, MAX_NAME, csv_cell

HEADER = ("First name", "Last name", "ID number", "Email address")


def write_moodle(course: Course, out: Path, rows: Sequence[dict], roster: Mapping | None = None) -> None:
    """moodle.csv in ``out`` for the class ``rows`` (``roster``: student id -> ``records.roster.Student``)."""
    columns = assignment_columns(course, rows)
    table = [[*HEADER, *(csv_cell(cell, MAX_NAME) for _, title, _ in columns
                         for cell in (title, f"Feedback for {title}"))]]
    for student, records in by_student(rows, roster).items():
        person = (roster or {}).get(student)
        cells = [person.first_name, person.last_name, student, person.email] if person else ["", "", student, ""]
        grades = []
        for name, _, _ in columns:
            record = records.get(name)
            grades += [lms_score(record), csv_cell(reasons(record) if record else "", MAX_MESSAGE)]
        table.append([*(csv_cell(cell, MAX_NAME) for cell in cells), *grades])
    write_csv(table, out / "moodle.csv")
