"""The class list: who should have handed something in, with the names and e-mails the LMS exports need.

Three formats are read, told apart by their header:

* ours: ``id, name, email`` (optional: ``section``, ``sis_login_id``, ``lms_user_id``);
* nbgrader's (``nbgrader db student import``): ``id, first_name, last_name, email`` (optional ``lms_user_id``);
* GitHub Classroom's roster download: ``identifier, github_username, github_id, name``: the student is the GitHub
  username (the identifier while no account is linked), whose submissions `grader collect` names after it;
  an identifier that is an e-mail address is the e-mail.

A ``name`` is split at its last space into the first and last names that Moodle's import asks for (``Ana María
Díaz``: ``Ana María``, ``Díaz``); nbgrader's columns give them as they are. Canvas's gradebook export is refused (its
``ID`` is Canvas's user id, not a submission's name), and so, before grading, is a roster that names fewer than half
of the students who handed something in (``check_roster``).

An id is read as batch reads a submission's name (``text.student_id``), so that the two match.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from grader.records.table import TableError, pick, read_table
from grader.text import MAX_NAME, clean, student_id

ID_COLUMNS = ("id", "student_id", "student", "github_username", "identifier")
EXPECTED = ("id, name, email; nbgrader's id, first_name, last_name, email; or GitHub Classroom's identifier, "
            "github_username, github_id, name")
CANVAS_EXPORT = ("student", "sis_user_id")  # columns of Canvas's gradebook export that no roster format has


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    section: str = ""
    lms_user_id: str = ""  # Canvas's numeric user id (nbgrader's lms_user_id), where known
    sis_login_id: str = ""

    @property
    def name(self) -> str:
        return " ".join(part for part in (self.first_name, self.last_name) if part)


class Roster(dict):
    """Student id -> the student, in the file's order; ``where`` (the file), ``columns`` (its header) and ``lines``
    (id -> its line) for the errors."""

    where: str
    columns: list[str]
    lines: dict[str, int]


def load_roster(path: str | Path) -> Roster:
    """The roster of the file ``path``; a row without an id, an id twice, or Canvas's gradebook export is a
    ``TableError``."""
    header, rows = read_table(path, "a roster")
    if all(name in header for name in CANVAS_EXPORT):
        raise TableError(f"{path}:1: Canvas's gradebook export, not a roster (columns {_columns(header)}): its ID is "
                         f"Canvas's user id, not the name of a submission; give a roster: {EXPECTED}")
    if pick(header, ID_COLUMNS) is None:
        raise TableError(f"{path}:1: no id column: a roster's header is {EXPECTED}")
    classroom = "github_username" in header and "id" not in header
    students = Roster()
    students.where, students.columns, students.lines = str(path), header, {}
    lines, emails = students.lines, {}  # e-mail (letter case aside) -> the id it belongs to
    for row in rows:
        raw = (row.get("github_username") or row.get("identifier", "")) if classroom else \
            row.get(pick(header, ID_COLUMNS), "")
        if not raw:
            raise TableError(f"{row.where}: no student id in this row")
        sid = student_id(raw)
        if sid in students:
            raise TableError(f"{row.where}: student {clean(sid, MAX_NAME)!r} is listed twice (also line {lines[sid]})")
        identifier = row.get("identifier", "")
        email = row.get("email", "") or (identifier if classroom and "@" in identifier else "")
        twin = emails.setdefault(email.casefold(), sid) if email else sid
        if twin != sid:
            raise TableError(f"{row.where}: the e-mail {clean(email, MAX_NAME)!r} is also that of "
                             f"{clean(twin, MAX_NAME)!r} (line {lines[twin]}): an LMS import matches students by it, so "
                             "one would get the other's grade")
        first, last = clean(row.get("first_name", ""), MAX_NAME), clean(row.get("last_name", ""), MAX_NAME)
        if not (first or last):
            first, last = [*clean(row.get("name", ""), MAX_NAME).rsplit(maxsplit=1), "", ""][:2]  # "Ana María", "Díaz"
        students[sid] = Student(sid, first, last, clean(email, MAX_NAME),
                                clean(row.get("section", ""), MAX_NAME), clean(row.get("lms_user_id", ""), MAX_NAME),
                                clean(row.get("sis_login_id", ""), MAX_NAME))
        lines[sid] = row.line
    return students


def check_roster(roster: Roster, students: Collection[str]) -> None:
    """A ``TableError`` where fewer than half of ``students`` (those who handed something in) are on ``roster`` (its
    ids are not the submissions' names: the wrong column, or the wrong file, and every student would be "not on the
    roster" and every roster student "missing"), or where a student's id differs from a roster id only in letter case
    or accents (``Dave`` or ``Davé`` handed in, the roster lists ``dave``)."""
    listed = sum(student in roster for student in students)
    if students and listed * 2 < len(students):
        raise TableError(f"{roster.where}: only {listed} of the {len(students)} students who handed something in are "
                         f"on this roster (its columns: {_columns(roster.columns)}): its ids must be the names of the "
                         f"submissions (folder, .zip or .ipynb); a roster's header is {EXPECTED}")
    alike: dict[str, list[str]] = {}
    for sid in roster:
        alike.setdefault(loosely(sid), []).append(sid)
    named: dict[str, list[str]] = {}
    for sid, student in roster.items():
        if name := _as_name(student.name):  # a name of letters or digits (punctuation alone names nobody)
            named.setdefault(name, []).append(sid)
    for student in sorted(set(students) - set(roster)):
        [listed_as, *others] = alike.get(loosely(student), [student])
        if listed_as != student and not others and listed_as not in students:
            raise TableError(f"{roster.where}:{roster.lines[listed_as]}: the submission {clean(student, MAX_NAME)!r} "
                             f"is not on the roster, which lists {clean(listed_as, MAX_NAME)!r}: ids are compared "
                             "exactly, letter case and accents too (one student would be both missing and not on the "
                             "roster): rename the submission or the roster's entry")
        [owner, *others] = named.get(_as_name(student), [student])
        if owner != student and not others and owner not in students:
            raise TableError(f"{roster.where}:{roster.lines[owner]}: the submission {clean(student, MAX_NAME)!r} is "
                             f"not on the roster, whose student {clean(owner, MAX_NAME)!r} has that name: submissions "
                             f"are matched by id (one student would be both missing and not on the roster): rename "
                             f"the submission {clean(owner, MAX_NAME)!r}, or, if it is someone else's, add them to "
                             "the roster under its name")


# An LMS's suffix of a downloaded submission: "Ann Lee (2)", Moodle's "Ann Lee_12_assignsubmission_file_"
LMS_COPY = re.compile(r"\s*\(\d+\)$|_\d+_assignsubmission_.*$")


def _as_name(text: str) -> str:
    """A person's name as a folder may spell it, without an LMS's copy suffix, letter case, accents and punctuation:
    ``Gül Şahin (2)``, ``gul_sahin`` and ``Gül Şahin`` alike."""
    return " ".join(re.findall(r"[^\W_]+", loosely(LMS_COPY.sub("", text))))


def loosely(sid: str) -> str:
    """An id without letter case and accents: ``José`` and ``jose`` alike."""
    return "".join(c for c in unicodedata.normalize("NFKD", sid.casefold()) if not unicodedata.combining(c))


def _columns(header: list[str]) -> str:
    """A header's columns in an error (at most 8)."""
    shown = [clean(name, MAX_NAME) for name in header if name]
    return ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "")
