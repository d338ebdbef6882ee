"""Late penalties: when each submission was handed in, and what course.yaml's ``late`` policy takes for it.

A submission's time is, first found: the instructor's list (``--submitted FILE``: a CSV with a student column and a
``submitted_at`` column; ``submitted``, ``submission_time``, ``commit_time`` (`grader collect`'s ``commit time``),
``committed_at`` and ``timestamp`` are read as that column; an optional ``assignment`` column, ``course`` or blank for
a class graded on the whole course), nbgrader's
``submitted/<student>/<assignment>/timestamp.txt``, or a zip's newest entry (read while the zip is read, in the
bounded intake). A time without a zone is in ``late.timezone``. Without a time, or without a due date for the
assignment, there is no penalty.

The penalty is ``percent`` of the points possible per started day (or hour) past the due date, at most
``cap_percent``, nothing within ``grace_minutes``; it never takes more than the score left.
"""
from __future__ import annotations

import math
import os
import stat
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

from grader.course import WHOLE_COURSE, Course, Late
from grader.records.table import TableError, parse_time, pick, read_table
from grader.text import MAX_NAME, clean, student_id

STUDENT_COLUMNS = ("student", "student_id", "id", "github_username", "login")
TIME_COLUMNS = ("submitted_at", "submitted", "submission_time", "commit_time", "committed_at", "timestamp")
TIMESTAMP_FILE = "timestamp.txt"  # nbgrader's, in each submitted/<student>/<assignment>/
MAX_TIMESTAMP_BYTES = 200

Times = dict[tuple[str, "str | None"], datetime]  # (student, assignment or None: any) -> submitted at


def zone(late: Late | None) -> tzinfo:
    """The zone of times that name none."""
    return ZoneInfo(late.timezone if late else "UTC")


def load_submitted(path: str | Path, course: Course) -> Times:
    """The instructor's list of submission times; a row without a time (a failed clone) is left out."""
    header, rows = read_table(path, "a list of submission times")
    student, when = pick(header, STUDENT_COLUMNS), pick(header, TIME_COLUMNS)
    if student is None or when is None:
        raise TableError(f"{path}:1: a list of submission times needs a student column ({', '.join(STUDENT_COLUMNS)}) "
                         f"and a time column ({', '.join(TIME_COLUMNS)})")
    times: Times = {}
    for row in rows:
        if not row[student]:
            raise TableError(f"{row.where}: no student in this row")
        assignment = row.get("assignment") or None
        key = (student_id(row[student]), None if assignment == WHOLE_COURSE else assignment)
        if key[1] and key[1] not in course.whole.assignment_modules():
            raise TableError(f"{row.where}: no assignment {clean(key[1], MAX_NAME)!r} in course.yaml (its assignments, "
                             f"or {WHOLE_COURSE} for a class graded on the whole course)")
        if key in times:
            raise TableError(f"{row.where}: a second time for student {clean(key[0], MAX_NAME)!r}")
        if row[when]:
            times[key] = parse_time(row[when], zone(course.late), row.where)
    return times


def nbgrader_timestamp(folder: Path, late: Late | None) -> datetime | None:
    """The time in ``folder/timestamp.txt`` (nbgrader's), if it is a small regular file holding one; else None."""
    path = folder / TIMESTAMP_FILE
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TIMESTAMP_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(MAX_TIMESTAMP_BYTES).decode("utf-8")
        return parse_time(text, zone(late), str(path))
    except (OSError, UnicodeDecodeError, TableError):
        return None


def zip_time(stamp: str | None, late: Late | None) -> datetime | None:
    """A zip's newest entry (``intake.Read.stamp``, its local time) in the course's zone."""
    return None if stamp is None else datetime.fromisoformat(stamp).replace(tzinfo=zone(late))


def late_penalty(late: Late | None, assignment: str | None, submitted: datetime | None,
                 possible: float) -> tuple[float, str] | None:
    """The points a submission loses for being late, and why; None when it is on time or cannot be judged."""
    due = late.due.get(assignment or WHOLE_COURSE) if late else None
    if due is None or submitted is None:
        return None
    lateness = submitted - due
    if lateness <= timedelta(minutes=late.grace_minutes) or lateness <= timedelta(0):
        return None
    periods = math.ceil(lateness / late.period)
    percent = min(late.cap_percent, periods * late.percent)
    capped = f", at most {late.cap_percent:g}%" if periods * late.percent > late.cap_percent else ""
    return percent / 100 * possible, (f"late: submitted {submitted.isoformat()}, {duration(lateness)} after the due "
                                      f"date {due.isoformat()}: {percent:g}% of the points ({late.percent:g}% per "
                                      f"started {late.per}{capped})")


def duration(span: timedelta) -> str:
    """``1 day 2 hours 5 minutes`` (seconds only under a minute)."""
    minutes, seconds = divmod(int(span.total_seconds()), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [(days, "day"), (hours, "hour"), (minutes, "minute")] if span >= timedelta(minutes=1) else [(seconds, "second")]
    return " ".join(f"{n} {unit}{'s' * (n != 1)}" for n, unit in parts if n) or "0 seconds"


def submission_time(path: Path, in_assignment_folder: bool, stamp: str | None, late: Late | None) -> datetime | None:
    """When a submission says it was made: nbgrader's timestamp.txt in its folder (the folder of an nbgrader
    assignment's notebook), else a zip's newest entry (``stamp``); None when neither says."""
    folder = path if path.is_dir() else path.parent if in_assignment_folder else None
    return (nbgrader_timestamp(folder, late) if folder else None) or zip_time(stamp, late)
