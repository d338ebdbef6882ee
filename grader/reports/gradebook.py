"""The class's gradebook.csv, rebuilt by batch from the results on disk, for the instructor (the class's summary.html:
``summary``)."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.course import Course
from grader.reports.files import write_atomic
from grader.text import MAX_NAME, csv_cell

MAX_STATUS = 300  # characters of a status in the gradebook


def write_gradebook(course: Course, out: Path, rows: list[dict]) -> None:
    """gradebook.csv from ``rows``, which mirror the results files on disk."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", "assignment", "score", "max_score", *[e.module for e in course.exercises], "status",
                     "graded_at", "submission_sha256"])
    for data in rows:  # an exercise outside the row's assignment is left blank
        writer.writerow([csv_cell(data["student"], MAX_NAME), csv_cell(data.get("assignment", ""), MAX_NAME),
                         data["score"], data["max_score"],
                         *[data["exercises"].get(e.module, {}).get("score", "") for e in course.exercises],
                         csv_cell(data.get("status", "graded"), MAX_STATUS),
                         csv_cell(data.get("graded_at", ""), MAX_NAME), csv_cell(data["submission_sha256"], MAX_NAME)])
    write_atomic(buffer.getvalue(), out / "gradebook.csv")
