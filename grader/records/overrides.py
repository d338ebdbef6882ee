"""Overrides: points an instructor sets or takes away by hand, with a reason, kept across regrades.

A CSV file, one override per row: ``student`` (required), ``assignment`` (optional: only that assignment's record;
``course`` names the record of a class graded on the whole course),
``exercise`` (optional: a module of course.yaml), ``check`` (optional, with ``exercise``: the check's name as the
feedback page shows it), then ``points`` (the score to give the target) or ``penalty`` (points to take away from
it), ``reason`` (required: the student reads it on their feedback page) and ``submission`` (optional: the first
characters, 16 or more, of the gradebook's ``submission_sha256`` of the submission the override was written for; a
resubmission then leaves it out, named, instead of inheriting it). Without an exercise the override is
on the whole submission. Overrides are applied in the file's order, at report time, on top of the graded record
(never written into it), so a regrade keeps them. A row alike to an earlier one in every column is refused.
"""
from __future__ import annotations

import math
import re
from dataclasses import astuple, dataclass, replace
from pathlib import Path

from grader.course import WHOLE_COURSE, Course
from grader.records.table import TableError, read_table
from grader.text import MAX_MESSAGE, MAX_NAME, clean, student_id

COLUMNS = ("student", "assignment", "exercise", "check", "points", "penalty", "reason", "submission")
# The fewest hex digits of a submission column: a student who knows one can make a resubmission whose hash starts
# alike in 2**(4 * SHA_PREFIX) tries (8 digits: 6 CPU-minutes, red team 11); 16 take a GPU decades.
SHA_PREFIX = 16


@dataclass(frozen=True)
class Override:
    student: str
    assignment: str | None  # None: the student's one record, whatever it is; WHOLE_COURSE: their whole-course record
    exercise: str | None
    check: str | None
    points: float | None  # the target's new score
    penalty: float | None  # points taken from the target
    reason: str
    where: str  # file:line
    submission: str | None = None  # the start of the sha256 of the submission it was written for (lower case)

    @property
    def target(self) -> str:
        """What it changes: ``""`` (the whole submission), an exercise (``<module>``) or a check (``<module>: <check>``)."""
        return ": ".join(part for part in (self.exercise, self.check) if part)


def load_overrides(path: str | Path, course: Course) -> list[Override]:
    """Every override of the file, checked against course.yaml (its exercises and assignments)."""
    header, rows = read_table(path, "an overrides file")
    unknown = header.unknown(COLUMNS)
    if unknown or "student" not in header or "reason" not in header:
        raise TableError(f"{path}:1: an overrides file's columns are {', '.join(COLUMNS)} "
                         "(student and reason required; points or penalty)"
                         + (f", not {unknown!r}" if unknown else ""))
    assignments = set(course.assignment_modules())
    overrides, lines = [], {}
    for row in rows:
        override = _override(row, course, assignments)
        same = astuple(replace(override, where=""))
        if same in lines:  # a row pasted twice would apply twice
            raise TableError(f"{override.where}: the same override as line {lines[same]} (every column alike): remove "
                             f"one, or say in the reason why it is given twice")
        lines[same] = row.line
        overrides.append(override)
    return overrides


def _override(row, course: Course, assignments: set[str]) -> Override:
    where = row.where
    if not row["student"]:
        raise TableError(f"{where}: no student in this row")
    exercise, check, assignment = row.get("exercise") or None, row.get("check") or None, row.get("assignment") or None
    if exercise and exercise not in course.course_modules:
        raise TableError(f"{where}: no exercise {clean(exercise, MAX_NAME)!r} in course.yaml "
                         f"({', '.join(course.course_modules)})")
    if check and not exercise:
        raise TableError(f"{where}: a check needs its exercise (the exercise column)")
    if assignment and assignment != WHOLE_COURSE and assignment not in assignments:
        raise TableError(f"{where}: no assignment {clean(assignment, MAX_NAME)!r} in course.yaml (its assignments, "
                         f"or {WHOLE_COURSE} for a class graded on the whole course)")
    points, penalty = _number(row.get("points", ""), where, "points"), _number(row.get("penalty", ""), where, "penalty")
    if (points is None) == (penalty is None):
        raise TableError(f"{where}: give either points (the score to give) or a penalty (points to take away)")
    if not row["reason"]:
        raise TableError(f"{where}: no reason: the student reads it on their feedback page")
    submission = row.get("submission", "").lower() or None
    if submission and not re.fullmatch(f"[0-9a-f]{{{SHA_PREFIX},64}}", submission):
        raise TableError(f"{where}: submission {clean(submission, MAX_NAME)!r} is not the start of a submission_sha256 "
                         f"of the gradebook ({SHA_PREFIX} to 64 hex digits)")
    return Override(student_id(row["student"]), assignment, exercise, clean(check, MAX_MESSAGE) if check else None,
                    points, penalty, clean(row["reason"], MAX_MESSAGE), where, submission)


def _number(text: str, where: str, what: str) -> float | None:
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise TableError(f"{where}: {what} {clean(text, MAX_NAME)!r} is not a number of points (0 or more)")
    return value
