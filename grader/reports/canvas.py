"""canvas.csv: the class's final points in Canvas's gradebook import format (Grades > Import).

The columns of Canvas's own gradebook export: ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``,
then one column per assignment the class was graded on (its title), and a second row, ``Points Possible``, with
each assignment's points. Canvas matches a row to a student by ``ID`` (Canvas's user id: the roster's
``lms_user_id``), else ``SIS User ID`` (the student id), else ``SIS Login ID`` (the roster's ``sis_login_id``, else
its e-mail). A column whose title names no Canvas assignment becomes a new one; rename it ``Title (12345)`` with
the Canvas assignment's id to fill that one instead. Scores are the final ones (overrides and late penalty
applied), to two decimals; a blank cell changes nothing in Canvas.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.course import Course
from grader.reports.gradebook import assignment_columns, by_student, lms_score, write_csv
from grader.text import MAX_NAME, csv_cell

HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"  # as Canvas writes it in its exports


def write_canvas(course: Course, out: Path, rows: Sequence[dict], roster: Mapping | None = None) -> None:
    """canvas.csv in ``out`` for the class ``rows`` (``roster``: student id -> ``records.roster.Student``)."""
    columns = assignment_columns(course, rows)
    table = [[*HEADER, *(csv_cell(title, MAX_NAME) for _, title, _ in columns)],
             [POINTS_POSSIBLE, "", "", "", "", *(f"{possible:g}" for _, _, possible in columns)]]
    for student, records in by_student(rows, roster).items():
        person = (roster or {}).get(student)
        cells = [person.name or student, person.lms_user_id, student, person.sis_login_id or person.email,
                 person.section] if person else [student, "", student, "", ""]
        table.append([*(csv_cell(cell, MAX_NAME) for cell in cells),
                      *(lms_score(records.get(name)) for name, _, _ in columns)])
    write_csv(table, out / "canvas.csv")
