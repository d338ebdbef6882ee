"""The class list: who should have handed something in, with the names and e-mails the LMS exports need.

Three formats are read, told apart by their header:

* ours: ``id, name, email`` (optional: ``section``, ``sis_login_id``, ``lms_user_id``);
* nbgrader's (``nbgrader db student import``): ``id, first_name, last_name, email`` (optional ``lms_user_id``);
* GitHub Classroom's roster download: ``identifier, github_username, github_id, name``: the student is the GitHub
  username (the identifier while no account is linked), whose submissions `grader collect` names after it;
  an identifier that is an e-mail address is the e-mail.

An id is read as batch reads a submission's name (``text.student_id``), so that the two match.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.records.table import TableError, pick, read_table
from grader.text import MAX_NAME, clean, student_id

ID_COLUMNS = ("id", "student_id", "student", "github_username", "identifier")
EXPECTED = ("id, name, email; nbgrader's id, first_name, last_name, email; or GitHub Classroom's identifier, "
            "github_username, github_id, name")


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


def load_roster(path: str | Path) -> dict[str, Student]:
    """Student id -> the student, in the file's order; a row without an id, or an id twice, is a ``TableError``."""
    header, rows = read_table(path, "a roster")
    if pick(header, ID_COLUMNS) is None:
        raise TableError(f"{path}:1: no id column: a roster's header is {EXPECTED}")
    classroom = "github_username" in header and "id" not in header
    students: dict[str, Student] = {}
    lines: dict[str, int] = {}
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
        first, last = row.get("first_name", ""), row.get("last_name", "")
        if not (first or last):
            first = row.get("name", "")
        students[sid] = Student(sid, clean(first, MAX_NAME), clean(last, MAX_NAME), clean(email, MAX_NAME),
                                clean(row.get("section", ""), MAX_NAME), clean(row.get("lms_user_id", ""), MAX_NAME),
                                clean(row.get("sis_login_id", ""), MAX_NAME))
        lines[sid] = row.line
    return students
