"""The class as every report shows it: the graded records with the roster, the overrides and the late penalties
applied on top (``Records``, ``class_view``). Nothing here changes a graded record: each view is a copy.

A view is a results record whose ``score``, exercises' and checks' points are the adjusted ones, with
``graded_score`` (before), ``adjustments`` (each ``kind`` "override" or "late", its ``target``, its signed
``points``, full precision, its ``reason`` and where it came from), ``submitted_at`` (when known), ``extended_to`` (the
student's own due date, where an extension gives one), and, with a roster, ``on_roster`` and the student's ``name``
and ``email``. A student of the roster without a record gets a view with status "missing" and 0 points, per
assignment the class was graded on. ``check_records`` checks the overrides and the extensions against a class about
to be graded, before anything is.
"""
from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from grader.course import WHOLE_COURSE, Course, CourseError
from grader.records.late import Extensions, Times, extension_of, late_penalty, load_extensions, load_submitted
from grader.records.overrides import Override, load_overrides
from grader.records.roster import Roster, check_roster, load_roster, loosely
from grader.records.table import TableError
from grader.reports.advice import points
from grader.reports.feedback import MISSING, graded
from grader.reports.gradebook import class_groups
from grader.text import MAX_NAME, clean

PLANNED = "planned"  # a record the batch is about to grade (``check_records``)
KEPT = "records"  # out/records/: the last roster, overrides, submission times and extensions given for a class
MAX_CHECK = 300  # characters of a check's name in an error (its docstring line: cut at 100, three checks read alike)


@dataclass(frozen=True)
class Records:
    """What the instructor gave beside the submissions (each optional)."""

    roster: Roster | None = None
    overrides: tuple[Override, ...] = ()
    submitted: Times = field(default_factory=Times)
    extensions: Extensions = field(default_factory=dict)


@dataclass(frozen=True)
class ClassView:
    rows: list[dict]  # every view, the missing students' included (status MISSING), by student then assignment
    unlisted: list[str]  # students with a submission who are not on the roster
    unapplied: list[str] = field(default_factory=list)  # why each line of the records the class contradicts is left out


class NotApplied(TableError):
    """The class is graded and its reports are written, but lines of the instructor's records did not apply to it
    (``ClassView.unapplied``): said as one error, with the class's ``rows`` as shown."""

    def __init__(self, shown: ClassView, out: str | Path):
        self.rows = shown.rows
        them = "it" if len(shown.unapplied) == 1 else "them"
        super().__init__(f"{'; '.join(shown.unapplied)}. The reports are written without {them}: fix the file and give it"
                         f" to `grader gradebook {out}` (--overrides FILE or --extensions FILE: without, it reuses the"
                         f" copy kept in {Path(out) / KEPT})")


def load_records(course: Course, roster: str | Path | None = None, overrides: str | Path | None = None,
                 submitted: str | Path | None = None, extensions: str | Path | None = None) -> Records:
    """Read the files given; a bad one raises ``TableError`` (one line naming the file and the line)."""
    return Records(load_roster(roster) if roster else None,
                   tuple(load_overrides(overrides, course)) if overrides else (),
                   load_submitted(submitted, course) if submitted else Times(),
                   load_extensions(extensions, course) if extensions else {})


def check_graded_with(course: Course, rows: Sequence[dict]) -> None:
    """``CourseError`` unless every graded record of ``rows`` grades the exercises and points ``course`` gives its
    record (whole course or assignment): reports written with another course said "out of 110" of a class graded out
    of 100 (found by our instructor's walk-through)."""
    for row in rows:
        if not graded(row):
            continue
        graded_on = course.assignment(row["assignment"]) if row.get("assignment") else course
        given = {e.module: float(e.points) for e in graded_on.exercises}
        found = {module: float(e.get("max_score", 0)) for module, e in row.get("exercises", {}).items()}
        if found != given:
            module = next(m for m in sorted(found | given) if given.get(m) != found.get(m))
            graded_out = f"out of {found[module]:g} points" if module in found else "not graded"
            raise CourseError(f"the results were not graded with this course: {clean(row['student'], MAX_NAME)}'s "
                              f"{clean(module, MAX_NAME)} is {graded_out}, the course gives "
                              + (f"{given[module]:g}" if module in given else "no such exercise")
                              + ": give --course the course.yaml they were graded with, or grade the class again "
                              "with this one (`grader batch` with this --course and --force)")


def class_view(course: Course, rows: Sequence[dict], records: Records,
               stamps: Mapping[str, datetime | None] | None = None, assignment: str | None = None) -> ClassView:
    """The views of the class ``rows`` (graded records), with a "missing" view for each roster student without a
    record (per assignment graded: those of ``rows``, else ``assignment``). ``stamps``: entry key -> the time the
    submission itself gives (nbgrader's timestamp, a zip's newest entry); else the one its record keeps."""
    stamps = stamps or {}
    if records.roster is not None:
        check_roster(records.roster, {row["student"] for row in rows})
    missing_rows = _missing_rows(course, rows, records, assignment)
    records, unapplied = _applicable(records, [*rows, *missing_rows])
    views = [view(course, row, records, source_time(row, stamps)) for row in [*rows, *missing_rows]]
    unapplied += _extending_nothing(course, records, [*rows, *missing_rows])
    views.sort(key=lambda v: (v["student"], v.get("assignment") or ""))
    unlisted = sorted({row["student"] for row in rows} - set(records.roster)) if records.roster is not None else []
    return ClassView(views, unlisted, unapplied)


def _due(course: Course, assignment: str | None) -> datetime | None:
    """course.yaml's due date of a record on ``assignment`` (None: the whole course), if it has one."""
    return course.late.due.get(assignment or WHOLE_COURSE) if course.late is not None else None


def _extending_nothing(course: Course, records: Records, rows: Sequence[dict]) -> list[str]:
    """Why each extension without an assignment moves no due date of its student's ``rows``."""
    moved = {row["student"] for row in rows if (due := _due(course, row.get("assignment")))
             and extension_of(records.extensions, row["student"], row.get("assignment"), due)}
    return [f"{e.where}: {e.due.isoformat()} is not later than the due date of any record of student "
            f"{clean(e.student, MAX_NAME)!r}: it extends nothing" for (student, assignment), e in
            records.extensions.items() if assignment is None and student not in moved]


def _applicable(records: Records, rows: Sequence[dict]) -> tuple[Records, list[str]]:
    """``records`` less the override and extension lines the graded class ``rows`` contradicts (a record they name
    that is not there, a check of no result, more points than a target holds), and why each was left out, with the
    listed times of students neither in ``rows`` nor on the roster (which no record reads). Known only
    once the class is graded where a submission names its own record (a notebook graded as the assignment it
    carries): a line checked before grading may no longer apply, and the class's reports are written without it
    rather than withdrawn because of one student's hand-in."""
    overrides, unapplied = [], []
    for override in records.overrides:
        try:
            _check_overrides([override], rows)
            for row in rows:
                if _applies(override, row):
                    _new_score(override, *_target(row, override))
        except TableError as error:
            unapplied.append(str(error))
            continue
        overrides.append(override)
    extensions = {}
    for key, extension in records.extensions.items():
        try:
            _check_extensions({key: extension}, rows)
        except TableError as error:
            unapplied.append(str(error))
            continue
        extensions[key] = extension
    students = {row["student"] for row in rows}
    for key in records.submitted:  # `grader gradebook` checks its times here alone: a misspelled id lost a penalty
        try:
            _check_times(records.submitted, [key], students)
        except TableError as error:
            unapplied.append(str(error))
    try:
        _check_blank_times(records.submitted,
                           {(row["student"], row.get("assignment")) for row in rows if row.get("status") != MISSING})
    except TableError as error:
        unapplied.append(str(error))
    return replace(records, overrides=tuple(overrides), extensions=extensions), unapplied


def check_records(course: Course, records: Records, planned: Sequence[tuple[str, str | None]],
                  undecided: Collection[str] = (), assignment: str | None = None) -> None:
    """Check the roster, the overrides and the extensions against the class about to be graded, before anything is
    graded (``TableError``, one line naming the file and the line): the roster names at least half of the class
    (``roster.check_roster``); each override or extension names a student of the class or of the roster and a record
    of theirs; an override names one record and an exercise it grades, and sets no more points than its exercise or
    submission holds. ``planned``: (student, assignment or None) of each record the batch will write; ``undecided``:
    students whose record is named only by grading (a notebook graded as the assignment it carries). The records of
    undecided students, and the checks an override names (their names come with the results), are checked once the
    class is graded (``class_view``, which leaves out and names a line the class contradicts)."""
    if records.roster is not None:
        check_roster(records.roster, {student for student, _ in planned} | set(undecided))
    rows = [_blank(course, student, group, PLANNED) for student, group in planned]
    if not undecided:  # else the class's assignments, which the missing records follow, are not all known yet
        rows += _missing_rows(course, rows, records, assignment)
    students = {row["student"] for row in rows}

    def now(student: str) -> bool:  # else checked once the class is graded
        return student not in undecided and (student in students or not undecided)

    overrides = [o for o in records.overrides if now(o.student)]
    _check_overrides(overrides, rows)
    extensions = {key: e for key, e in records.extensions.items() if now(e.student)}
    _check_extensions(extensions, rows)
    if all(group is None for _, group in planned):  # a class of the whole course: its every record is here
        for problem in _extending_nothing(course, replace(records, extensions=extensions), rows):
            raise TableError(problem)
    _check_times(records.submitted, [key for key in records.submitted if now(key[0])], students)
    _check_blank_times(records.submitted, planned)
    for override in overrides:
        for row in rows:
            if not override.check and _applies(override, row):
                _new_score(override, *_target(row, override))


def view(course: Course, row: dict, records: Records, stamp: datetime | None) -> dict:
    """One record with the records applied (a copy)."""
    out = {**row, "exercises": {m: dict(e) for m, e in row["exercises"].items()},
           "tests": [dict(t) for t in row.get("tests", [])], "graded_score": row["score"], "adjustments": []}
    out.pop("final_score", None)
    assignment = row.get("assignment")
    for override in records.overrides:
        if _applies(override, row):
            out["adjustments"].append(_apply(out, override))
    listed = records.submitted.get((row["student"], assignment)) or records.submitted.get((row["student"], None))
    submitted = listed or stamp
    out.pop("submitted_at", None)
    # Without the instructor's list, a due date is judged by the submission's own word (timestamp.txt, a zip's
    # entries), which its author sets, or not at all (SECURITY.md, "Submission times"): the CLI says so.
    due = _due(course, assignment)
    out["time_unlisted"] = listed is None and row.get("status") != MISSING and due is not None
    extension = extension_of(records.extensions, row["student"], assignment, due) if due else None
    out.pop("extended_to", None)
    if extension:
        out["extended_to"] = extension.due.isoformat()
    if submitted is not None and row.get("status") != MISSING:
        out["submitted_at"] = submitted.isoformat()
        late = late_penalty(course.late, assignment, submitted, row["max_score"], extension and extension.due)
        taken = min(late[0], out["score"]) if late else 0
        if taken > 0:
            out["score"] -= taken
            out["adjustments"].append({"kind": "late", "target": "", "points": -taken, "reason": late[1],
                                       "source": "course.yaml late"})
    if records.roster is not None:
        student = records.roster.get(row["student"])
        out["on_roster"] = student is not None
        out["name"], out["email"] = (student.name, student.email) if student else ("", "")
    return out


def stored(row: dict, shown: dict, stamp: datetime | None) -> dict:
    """The graded record as results.json keeps it: untouched, plus when the submission says it was made
    (``stamp``, from ``source_time``), the student's extended due date, the adjustments shown and the final score
    (rewritten at each report)."""
    kept = {key: value for key, value in row.items()
            if key not in ("submitted_at", "extended_to", "adjustments", "final_score")}
    return {**kept, **({"submitted_at": stamp.isoformat()} if stamp else {}),
            **({"extended_to": shown["extended_to"]} if "extended_to" in shown else {}),
            "adjustments": shown["adjustments"], "final_score": shown["score"]}


def source_time(row: Mapping, stamps: Mapping[str, datetime | None]) -> datetime | None:
    """When the submission says it was made: from ``stamps`` (entry key -> time, as batch read it this run), else
    as its record keeps it (`grader gradebook`, which reads no submission)."""
    key = _key(row)
    return stamps[key] if key in stamps else _stored_time(row)


def _target(out: Mapping, override: Override) -> tuple[float, float, str]:
    """What ``override`` changes in a view: its score, its points possible, and its name in an error."""
    if override.check:
        tests = [t for t in out["tests"] if t["name"] == f"{override.exercise}: {override.check}"]
        return (sum(t["score"] for t in tests), sum(t["max_score"] for t in tests),
                f"check {clean(override.check, MAX_CHECK)!r}")
    if override.exercise:
        exercise = out["exercises"][override.exercise]
        return exercise["score"], exercise["max_score"], override.exercise
    return out["score"], out["max_score"], "the submission"


def _new_score(override: Override, old: float, most: float, what: str) -> float:
    """The target's score once ``override`` is applied (``TableError`` for more points than it holds; points as the
    reports show them, to two decimals, are its points: 0.87 of a check of 0.8696)."""
    if override.points is not None and override.points > round(most, 2) + 1e-9:
        raise TableError(f"{override.where}: {override.points:g} points is more than the {points(most)} of {what}")
    return min(override.points, most) if override.points is not None else max(0.0, old - override.penalty)


def _apply(out: dict, override: Override) -> dict:
    """Apply one override to a view; return its adjustment."""
    old, most, what = _target(out, override)
    new = _new_score(override, old, most, what)
    if override.check:
        for test in out["tests"]:
            if test["name"] == f"{override.exercise}: {override.check}":
                test["score"] = new * test["max_score"] / most if most else 0.0
                test["overridden"] = True  # its badge says so: "failed" beside full points read wrong
    if override.exercise:
        out["exercises"][override.exercise]["score"] += new - old
    out["score"] += new - old
    return {"kind": "override", "target": override.target, "points": new - old, "reason": override.reason,
            "source": override.where}


def _check_overrides(overrides: Sequence[Override], rows: Sequence[dict]) -> None:
    """Each override names a student, exercise and check of the class (checks only in graded records), and the
    submission its ``submission`` column names (in graded records); one without an assignment is not split between
    several records."""
    for override in overrides:
        mine = [row for row in rows if row["student"] == override.student and _names(override, row)]
        if not mine:
            theirs = sorted({row.get("assignment") or WHOLE_COURSE for row in rows if row["student"] == override.student})
            if theirs:  # the student is here, on other records: the assignment column is what is wrong
                fix = (f" (their records here: {', '.join(clean(a, MAX_NAME) for a in theirs)}; "
                       + ("leave the column blank for a class graded on the whole course)" if WHOLE_COURSE in theirs
                          else "name one of them, or leave the column blank for all)"))
            else:
                fix = _meant_student(override.student, [row["student"] for row in rows])
            raise TableError(f"{override.where}: no submission from student {clean(override.student, MAX_NAME)!r}"
                             + (f" for {override.assignment}" if override.assignment else "") + " in this class" + fix)
        if override.exercise:
            mine = [row for row in mine if override.exercise in row["exercises"]]
            if not mine:
                raise TableError(f"{override.where}: {override.exercise} is not graded in this student's submission")
        if len(mine) > 1:
            raise TableError(f"{override.where}: student {clean(override.student, MAX_NAME)!r} has "
                             f"{len(mine)} graded assignments here: name one in the assignment column")
        handed = [row for row in mine if row.get("status") not in (PLANNED, MISSING)]  # known once graded
        if override.submission and handed and not (graded(handed[0]) and
                                                   handed[0]["submission_sha256"].startswith(override.submission)):
            since = (f"was graded on another one since ({handed[0]['submission_sha256'][:len(override.submission)]})"
                     if graded(handed[0]) else "handed in another one since, which could not be graded")
            raise TableError(f"{override.where}: written for submission {override.submission} of student "
                             f"{clean(override.student, MAX_NAME)!r}, who {since}: check it still holds, then update "
                             "or clear its submission column")
        if override.check and not any(row.get("status") == PLANNED for row in mine):
            _check_named(override, {t["name"] for row in mine for t in row.get("tests", [])}, "results")


def check_override_checks(records: Records, checks: Collection[str]) -> None:
    """Each check an override names is one of ``checks`` (``<exercise>: <check>``, the suites' as collected before
    grading: ``plugin.check_suites``), so a misspelled one stops the batch before anything is graded."""
    for override in records.overrides:
        if override.check:
            _check_named(override, checks, "suites")


def _check_named(override: Override, names: Collection[str], where: str) -> None:
    """A ``TableError`` naming the override's line, unless the check it names is one of ``names``
    (``<exercise>: <check>``), found in the exercise's ``where`` ("results", "suites"), with the one it begins or
    the closest name."""
    if f"{override.exercise}: {override.check}" in names:
        return
    checks = sorted({name.split(": ", 1)[-1] for name in names if name.startswith(f"{override.exercise}: ")})
    begun = [check for check in checks if check.casefold().startswith(override.check.rstrip(". ").casefold())]
    like = begun if len(begun) == 1 else difflib.get_close_matches(override.check, checks, n=1, cutoff=0.6)
    raise TableError(f"{override.where}: no check {clean(override.check, MAX_CHECK)!r} in "
                     f"{override.exercise}'s {where} (a check is named as the feedback page shows it)"
                     + (f"; did you mean {clean(like[0], MAX_CHECK)!r}?" if like else ""))


def _check_extensions(extensions: Extensions, rows: Sequence[dict]) -> None:
    """Each extension names a student of the class or of the roster and, where it names an assignment, a record of
    theirs on it."""
    records = {(row["student"], group) for row in rows for group in (None, row.get("assignment"))}
    for extension in extensions.values():
        if (extension.student, extension.assignment) not in records:
            raise TableError(f"{extension.where}: no student {clean(extension.student, MAX_NAME)!r}"
                             + (f" with a record of {extension.assignment}" if extension.assignment else "")
                             + " in this class or its roster" + _meant_student(extension.student,
                                                                              [row["student"] for row in rows]))


def _meant_student(student: str, students: Collection[str]) -> str:
    """' (ids are compared exactly: did you mean ...?)' where one of ``students`` is ``student`` but for letter case
    and accents (an extension for 'zoe' said nothing of 'zoë': walk-through 7), else ''."""
    alike = sorted({other for other in students if loosely(other) == loosely(student)})
    return f" (ids are compared exactly: did you mean {clean(alike[0], MAX_NAME)!r}?)" if alike else ""


def _check_times(times: Times, keys, students: Collection[str]) -> None:
    """Each listed time (of ``keys``) names a student of the class or of the roster: a misspelled id left its student
    without a time, unsaid (found by our instructor's walk-through)."""
    for key in keys:
        if key[0] not in students:
            raise TableError(f"{times.where.get(key, 'the list of submission times')}: no student "
                             f"{clean(key[0], MAX_NAME)!r} in this class or its roster")


def _check_blank_times(times: Times, handed: Collection[tuple[str, str | None]]) -> None:
    """No record ``handed`` in ((student, assignment or None)) is listed without a time (a blank cell took a late
    penalty away: the sixth walk-through)."""
    for key, where in times.blank.items():
        if any(student == key[0] and key[1] in (None, assignment) for student, assignment in handed):
            raise TableError(f"{where}: no time for student {clean(key[0], MAX_NAME)!r}, who handed something in: give "
                             "the time your LMS recorded (without one, the submission's own word judges its lateness)")


def _applies(override: Override, row: Mapping) -> bool:
    """Whether ``override`` changes the record ``row``: its student's, the one its assignment column names, grading
    its exercise."""
    return (override.student == row["student"] and _names(override, row)
            and (override.exercise is None or override.exercise in row["exercises"]))


def _names(override: Override, row: Mapping) -> bool:
    """Whether ``override``'s assignment column names ``row``'s record: blank names any, ``course`` the record of a
    class graded on the whole course."""
    return override.assignment in (None, row.get("assignment") or WHOLE_COURSE)


def _missing_rows(course: Course, rows: Sequence[dict], records: Records, assignment: str | None) -> list[dict]:
    """A "missing" record for each roster student without a record, per assignment graded: those of ``rows``
    (``_expected_groups``), else ``assignment``. A student whose entry was refused unread (a row of no assignment
    among assignments) handed something in: none of theirs is missing."""
    groups = _expected_groups(rows) if rows else [assignment]
    have = {(row["student"], row.get("assignment")) for row in rows}
    refused = {student for student, group in have if group is None} if groups != [None] else set()
    return [_blank(course, sid, group, MISSING) for sid in (records.roster or {}) for group in groups
            if (sid, group) not in have and sid not in refused]


def _expected_groups(rows: Sequence[dict]) -> list[str | None]:
    """The records every student of the roster is expected to have: the class's (``class_groups``) that the layout or
    the instructor named (nbgrader's folders, ``--assignment``: a row with a ``key``), and of the assignments that
    notebooks carry (graded as such: no ``key``), the one most of them carry. One student's notebook of another
    assignment made every classmate "missing" it, a zero in the LMS files (red team)."""
    carried = Counter(row["assignment"] for row in rows if row.get("assignment") and not row.get("key"))
    named = {row.get("assignment") for row in rows if row.get("key")}
    most = max(carried.values(), default=0)
    return [group for group in class_groups(rows) if group not in carried or carried[group] == most or group in named]


def _blank(course: Course, student: str, assignment: str | None, status: str) -> dict:
    """A record of 0 points on ``assignment`` (None: the whole course): a missing student's, or one planned."""
    graded = course.assignment(assignment) if assignment else course
    row = {"student": student, "score": 0, "max_score": graded.total_points, "tests": [], "status": status,
           "exercises": {e.module: {"score": 0, "max_score": e.points} for e in graded.exercises},
           "submission_sha256": "", "graded_at": ""}
    return {**row, "assignment": assignment, "key": f"{student}/{assignment}"} if assignment else row


def _key(row: Mapping) -> str:
    return row.get("key") or row["student"]


def _stored_time(row: Mapping) -> datetime | None:
    try:
        return datetime.fromisoformat(row["submitted_at"]) if row.get("submitted_at") else None
    except (TypeError, ValueError):
        return None
