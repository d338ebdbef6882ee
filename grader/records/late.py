"""Late penalties: when each submission was handed in, and what course.yaml's ``late`` policy takes for it.

A submission's time is, first found: the instructor's list (``--submitted FILE``: a CSV with a student column and a
``submitted_at`` column; ``submitted``, ``submission_time``, ``commit_time`` (`grader collect`'s ``commit time``),
``committed_at`` and ``timestamp`` are read as that column; an optional ``assignment`` column, ``course`` or blank for
a class graded on the whole course), nbgrader's
``submitted/<student>/<assignment>/timestamp.txt``, or a zip's newest entry (read while the zip is read, in the
bounded intake). A time without a zone is in ``late.timezone``. Without a time, or without a due date for the
assignment, there is no penalty.

The penalty is ``percent`` of the points possible per started day (or hour) past the due date, at most
``cap_percent``, nothing within ``grace_minutes``; it never takes more than the score left. A student's extension
(``--extensions FILE``: student, due, an optional assignment) replaces the due date it extends for that student.
"""
from __future__ import annotations

import math
import os
import stat
import sys
from dataclasses import dataclass
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

EXTENSION_COLUMNS = ("student", "assignment", "due", "reason")  # reason: the instructor's note, not shown

NOT_COLLECTED = "not collected"  # the status of `grader collect`'s repositories it could not take (collected.csv)


class Times(dict):
    """(student, assignment or None: any) -> submitted at; ``where``: each key's file:line; ``blank``: the file:line
    of each key listed without a time (an instructor's slip where the student handed in), except a row whose status
    says it was not collected (collect's failed clones: nothing handed in to time)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.where: dict[tuple[str, str | None], str] = {}
        self.blank: dict[tuple[str, str | None], str] = {}
Extensions = dict[tuple[str, "str | None"], "Extension"]  # (student, assignment or None: any) -> their extension


@dataclass(frozen=True)
class Extension:
    """A student's own due date, later than the one it extends."""

    student: str
    assignment: str | None  # None: every record of the student
    due: datetime
    where: str  # file:line


def zone(late: Late | None) -> tzinfo:
    """The zone of times that name none."""
    return ZoneInfo(late.timezone if late else "UTC")


def load_submitted(path: str | Path, course: Course) -> Times:
    """The instructor's list of submission times; a row without a time is noted apart (``blank``), except one that says
    it was not collected (collected.csv's status)."""
    header, rows = read_table(path, "a list of submission times")
    student, when = pick(header, STUDENT_COLUMNS), pick(header, TIME_COLUMNS)
    if student is None or when is None:
        raise TableError(f"{path}:1: a list of submission times needs a student column ({', '.join(STUDENT_COLUMNS)}) "
                         f"and a time column ({', '.join(TIME_COLUMNS)})")
    times = Times()
    for row in rows:
        if not row[student]:
            raise TableError(f"{row.where}: no student in this row")
        assignment = row.get("assignment") or None
        key = (student_id(row[student]), None if assignment == WHOLE_COURSE else assignment)
        if key[1] and key[1] not in course.whole.assignment_modules():
            raise TableError(f"{row.where}: no assignment {clean(key[1], MAX_NAME)!r} in course.yaml (its assignments, "
                             f"or {WHOLE_COURSE} for a class graded on the whole course)")
        if key in times or key in times.blank:
            raise TableError(f"{row.where}: a second time for student {clean(key[0], MAX_NAME)!r}")
        if row[when]:
            times[key] = parse_time(row[when], zone(course.late), row.where)
            times.where[key] = row.where
        elif not row.get("status", "").startswith(NOT_COLLECTED):
            times.blank[key] = row.where
    return times


def load_extensions(path: str | Path, course: Course) -> Extensions:
    """The instructor's extensions (student, due, an optional assignment: ``course`` or blank for a class graded on the
    whole course; an optional reason, the instructor's own note), each checked against course.yaml's late policy: a due
    date to extend, and later than it. A due date is written as course.yaml's are (ISO 8601 with its zone; one that
    names no zone is in ``late.timezone``)."""
    header, rows = read_table(path, "a list of extensions")
    unknown = header.unknown(EXTENSION_COLUMNS)
    if unknown or "student" not in header or "due" not in header:
        raise TableError(f"{path}:1: a list of extensions has the columns student, due (and optionally assignment, "
                         "reason)" + (f", not {unknown!r}" if unknown else ""))
    late, lines = course.late, {}
    extensions: Extensions = {}
    for row in rows:
        if not row["student"]:
            raise TableError(f"{row.where}: no student in this row")
        named = row.get("assignment") or None
        if named not in (None, WHOLE_COURSE, *course.whole.assignment_modules()):
            raise TableError(f"{row.where}: no assignment {clean(named, MAX_NAME)!r} in course.yaml (its "
                             f"assignments, or {WHOLE_COURSE} for a class graded on the whole course)")
        dues = late.due if late else {}
        extended = list(dues.values()) if named is None else [dues[named]] if named in dues else []
        if not extended:
            raise TableError(f"{row.where}: course.yaml's late policy has no due date for {named or 'any record'}: "
                             "an extension would change nothing")
        assignment = None if named == WHOLE_COURSE else named
        if not row["due"]:
            raise TableError(f"{row.where}: no due date in this row")
        due = parse_time(row["due"], zone(late), row.where)
        if due <= min(extended):  # one for every record extends those whose due date it is past (``extended``)
            raise TableError(f"{row.where}: {due.isoformat()} is not later than the due date it extends "
                             f"({min(extended).isoformat()})")
        key = (student_id(row["student"]), assignment)
        if key in lines:
            raise TableError(f"{row.where}: a second extension for student {clean(key[0], MAX_NAME)!r}"
                             + (f" and {assignment}" if assignment else "") + f" (the other on line {lines[key]})")
        lines[key] = row.line
        extensions[key] = Extension(*key, due, row.where)
    return extensions


def extension_of(extensions: Extensions, student: str, assignment: str | None, due: datetime) -> Extension | None:
    """The extension of a student's record on ``assignment`` (None: the whole course), whose due date is ``due``: the
    one naming it, else the student's without an assignment where it is later than ``due`` (one for every record
    moves no due date earlier: course.yaml's later due date of another assignment was taken for the one it extends,
    and an extension past the whole course's was refused, found by our instructor's walk-through)."""
    extension = extensions.get((student, assignment)) or extensions.get((student, None))
    return extension if extension is not None and extension.due > due else None


def nbgrader_timestamp(folder: Path, late: Late | None) -> datetime | None:
    """The time in ``folder/timestamp.txt`` (nbgrader's), if it is a small regular file holding one; else None, and
    where there is such a file and a late policy, a note on stderr naming it (one holding "next tuesday" was passed
    over unsaid)."""
    path = folder / TIMESTAMP_FILE
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TIMESTAMP_BYTES:
            raise TableError("not a small regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(MAX_TIMESTAMP_BYTES).decode("utf-8")
        return parse_time(text, zone(late), str(path))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, TableError):
        if late is not None and late.due:  # where lateness is judged at all
            print(f"grader: note: {clean(str(path), 300)} holds no time nbgrader wrote: the lateness of that "
                  "submission is judged without it (give its time with --submitted)", file=sys.stderr)
        return None


def zip_time(stamp: str | None, late: Late | None) -> datetime | None:
    """A zip's newest entry (``intake.Read.stamp``, its local time) in the course's zone."""
    return None if stamp is None else datetime.fromisoformat(stamp).replace(tzinfo=zone(late))


def late_penalty(late: Late | None, assignment: str | None, submitted: datetime | None,
                 possible: float, extended: datetime | None = None) -> tuple[float, str] | None:
    """The points a submission loses for being late, and why; None when it is on time or cannot be judged.
    ``extended``: the student's own due date (an ``Extension``), where they have one."""
    due = late.due.get(assignment or WHOLE_COURSE) if late else None
    if due is None or submitted is None:
        return None
    due = extended or due
    lateness = submitted - due
    if lateness <= timedelta(minutes=late.grace_minutes) or lateness <= timedelta(0):
        return None
    periods = math.ceil(lateness / late.period)
    percent = min(late.cap_percent, periods * late.percent)
    capped = f", at most {late.cap_percent:g}%" if periods * late.percent > late.cap_percent else ""
    which = "extended due date" if extended else "due date"
    return percent / 100 * possible, (f"late: submitted {submitted.isoformat()}, {duration(lateness)} after the "
                                      f"{which} {due.isoformat()}: {percent:g}% of the points ({late.percent:g}% per "
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
