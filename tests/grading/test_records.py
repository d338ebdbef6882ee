"""The instructor's records (roster, overrides, submission times, extensions, late policy) and the exports they feed
(gradebook.csv, canvas.csv, moodle.csv), from hand-made results: no grading here (the end-to-end class through the
CLI is tests/grading/test_gradebook.py)."""
import csv
import json
import os
import re
import shutil
import zipfile
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from grader.course import COURSE_FILE, CourseError, Late, load_course
from grader.intake.submission import read_submission
from grader.records.adjust import Records, check_graded_with, check_records, class_view, load_records
from grader.records.kept import keep_records, kept_records
from grader.records.late import (
    Times,
    extension_of,
    late_penalty,
    load_extensions,
    load_submitted,
    nbgrader_timestamp,
    submission_time,
    zip_time,
)
from grader.records.overrides import load_overrides
from grader.records.publish import publish
from grader.records.roster import Student, load_roster
from grader.records.table import TableError, parse_time
from grader.reports.feedback import write_feedback
from tests.grading.courses import course_variant

COURSE = load_course(COURSE_FILE).covering(["scores", "softmax"])  # 20 points, as the records below
UTC = timezone.utc
CHECK = "Sums to one along dim"


def _record(student, softmax=10.0, scores=10.0, assignment=None, status="graded"):
    """A graded record of two exercises; softmax's check CHECK has two cases of 1 point each."""
    passed = softmax >= 2
    tests = [{"name": f"softmax: {CHECK}", "status": "passed" if passed else "failed", "output": "",
              "score": 1.0 if passed else 0.0, "max_score": 1.0} for _ in range(2)]
    exercises = {"softmax": {"score": softmax, "max_score": 10}, "scores": {"score": scores, "max_score": 10}}
    row = {"student": student, "score": softmax + scores, "max_score": 20, "tests": tests, "exercises": exercises,
           "status": status, "output": "", "submission_sha256": "a" * 64, "graded_at": "2026-11-21T00:00:00+00:00"}
    return {**row, "assignment": assignment, "key": f"{student}/{assignment}"} if assignment else row


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _error(call, *args):
    with pytest.raises(TableError) as caught:
        call(*args)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _late(**policy):
    return COURSE.model_copy(update={"late": Late(**{"due": {"course": datetime(2026, 11, 20, 23, 59, tzinfo=UTC)},
                                                     "percent": 10, **policy})})


# ----------------------------------------------------------------- roster

def test_the_three_roster_formats_give_the_same_students(tmp_path):
    """Ours, nbgrader's (first/last name) and GitHub Classroom's (the GitHub username is the id; an identifier that is
    an e-mail is the e-mail) give the same ids, names and e-mails; a byte-order mark is fine."""
    ours = _write(tmp_path / "ours.csv", "\ufeffid,name,email\nann,Ann Lee,ann@x.org\nbob,Bob Ray,bob@x.org\n")
    nbgrader = _write(tmp_path / "nb.csv", "id,first_name,last_name,email,lms_user_id\nann,Ann,Lee,ann@x.org,101\n"
                                           "bob,Bob,Ray,bob@x.org,102\n")
    classroom = _write(tmp_path / "gh.csv", "identifier,github_username,github_id,name\nann@x.org,ann,1,Ann Lee\n"
                                            "bob@x.org,bob,2,Bob Ray\nnot-joined@x.org,,,Cy Do\n")
    for path in (ours, nbgrader, classroom):
        people = load_roster(path)
        assert [(s.id, s.name, s.email) for s in people.values()][:2] == [("ann", "Ann Lee", "ann@x.org"),
                                                                         ("bob", "Bob Ray", "bob@x.org")], path
    assert load_roster(nbgrader)["ann"].lms_user_id == "101"
    assert load_roster(classroom)["not-joined@x.org"].name == "Cy Do"  # no GitHub account yet: the identifier


@pytest.mark.parametrize("text, where, words", [
    ("name,email\nAnn,a@x\n", 1, "no id column"),
    ("id,name\nann,A\nbob,B\nann,C\n", 4, "listed twice (also line 2)"),
    ("id,name\nann,A\n,B\n", 3, "no student id"),
    ("id,name\nann,A,extra\n", 2, '3 cells where the header names 2 (a cell holding a comma, a check\'s name say, '
                                   'goes in double quotes: "a, b")'),
    ("id,name\nann,\"A\n", 2, "not CSV"),
    ("id,id\nann,ann\n", 1, "appears twice"),
])
def test_a_bad_roster_is_one_line_naming_file_and_line(tmp_path, text, where, words):
    path = _write(tmp_path / "roster.csv", text)
    message = _error(load_roster, path)
    assert message.startswith(f"{path}:{where}:") and words in message, message


def test_a_table_separated_by_semicolons_says_so(tmp_path):
    """A spreadsheet's CSV where the decimal comma is the custom separates by ';': every records file says so, where it
    said that a column was missing (found by our instructor's walk-through)."""
    for load, text in ((load_roster, "id;name\nann;Ann\n"), (load_overrides, "student;penalty;reason\nann;2;late\n"),
                       (load_submitted, "student;submitted_at\nann;2026-11-21T10:00:00Z\n")):
        path = _write(tmp_path / f"{load.__name__}.csv", text)
        message = _error(load, path, COURSE) if load is not load_roster else _error(load, path)
        assert message.startswith(f"{path}:1: the columns are separated by ';'") and "comma-separated" in message


def test_a_roster_that_is_not_utf8_or_empty_says_so(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"id,name\nann,A\nbob,Bj\xf6rn\n")
    assert _error(load_roster, latin).startswith(f"{latin}:3: not UTF-8")
    empty = _write(tmp_path / "empty.csv", "\n\n")
    assert "empty" in _error(load_roster, empty)
    assert "cannot read" in _error(load_roster, tmp_path / "nowhere.csv")


def test_a_canvas_gradebook_export_is_not_taken_for_a_roster(tmp_path):
    """Its ID column is Canvas's user id: read as the students' ids, everyone would be "not on the roster" and the
    roster's "123" "missing"; it is refused, naming the columns found."""
    export = _write(tmp_path / "export.csv", "Student,ID,SIS User ID,SIS Login ID,Section,Softmax (1)\n"
                                             "    Points Possible,,,,,10\nLee; Ann,123,ann,ann@x.org,A,9\n")
    message = _error(load_roster, export)
    assert message.startswith(f"{export}:1: Canvas's gradebook export, not a roster (columns student, id, sis_user_id, "
                              "sis_login_id, section, softmax_(1))"), message
    assert "give a roster: id, name, email" in message


def test_a_roster_of_other_ids_than_the_class_stops_before_grading(tmp_path):
    """A roster naming fewer than half of the students who handed something in (ids from the wrong column, the
    wrong file) is refused before grading (``check_records``) and before any report (``class_view``), naming its
    columns; one that names half of them is taken, the others flagged."""
    wrong = load_roster(_write(tmp_path / "roster.csv", "id,name,sis_id\n101,Ann Lee,ann\n102,Bob Ray,bob\n"))
    records = Records(roster=wrong)
    message = _error(check_records, COURSE, records, [("ann", None), ("bob", None)])
    assert message == (f"{tmp_path / 'roster.csv'}: only 0 of the 2 students who handed something in are on this "
                       "roster (its columns: id, name, sis_id): its ids must be the names of the submissions (folder, "
                       ".zip or .ipynb); a roster's header is id, name, email; nbgrader's id, first_name, last_name, "
                       "email; or GitHub Classroom's identifier, github_username, github_id, name")
    assert _error(check_records, COURSE, records, [("ann", None)], {"bob"}).startswith(f"{tmp_path / 'roster.csv'}: only")
    assert _error(class_view, COURSE, [_record("ann"), _record("bob")], records) == message
    half = load_roster(_write(tmp_path / "half.csv", "id,name\nann,Ann Lee\ncy,Cy Do\n"))
    assert check_records(COURSE, Records(roster=half), [("ann", None), ("bob", None)]) is None
    assert class_view(COURSE, [_record("ann"), _record("bob")], Records(roster=half)).unlisted == ["bob"]


def test_an_id_that_differs_from_the_rosters_in_letter_case_only_stops_before_grading(tmp_path):
    """``Dave`` handed in, the roster lists ``dave``: one line naming both before grading (found by our instructor's
    walk-through: the class got a "missing" dave and a "not on the roster" Dave, no hint why), accents too (the
    fourth walk-through: ``José García`` against ``Jose Garcia`` put a 0 in the LMS files); ids that differ in more,
    or two roster ids of one spelling, are left to the not-on-the-roster flag."""
    roster = load_roster(_write(tmp_path / "roster.csv", "id,name\nann,Ann Lee\ndave,Dave Poe\n"))
    assert _error(check_records, COURSE, Records(roster=roster), [("ann", None), ("Dave", None)]) == (
        f"{tmp_path / 'roster.csv'}:3: the submission 'Dave' is not on the roster, which lists 'dave': ids are "
        "compared exactly, letter case and accents too (one student would be both missing and not on the roster): "
        "rename the submission or the roster's entry")
    accented = load_roster(_write(tmp_path / "accents.csv", "id,name\nann,Ann Lee\nJose Garcia,Jose Garcia\n"))
    assert _error(check_records, COURSE, Records(roster=accented), [("ann", None), ("José García", None)]).startswith(
        f"{tmp_path / 'accents.csv'}:3: the submission 'José García' is not on the roster, which lists 'Jose Garcia'")
    assert check_records(COURSE, Records(roster=roster), [("ann", None), ("dave", None), ("Dave", None)]) is None
    assert check_records(COURSE, Records(roster=roster), [("ann", None), ("dav", None)]) is None
    twins = load_roster(_write(tmp_path / "twins.csv", "id,name\nann,Ann Lee\ndave,Dave Poe\nDAVE,Dave Roe\n"))
    assert check_records(COURSE, Records(roster=twins), [("ann", None), ("Dave", None)]) is None


def test_a_submission_named_after_a_roster_students_name_stops_before_grading(tmp_path):
    """A folder named after the student (``Gül Şahin (2)``, as an LMS download names it) rather than their id: one
    line naming the roster's line and the id to rename it to (the fifth instructor walk-through got a missing row with
    0 and an off-roster row with 95); a name two roster students share, or one whose id also handed in, is left to the
    not-on-the-roster flag."""
    roster = load_roster(_write(tmp_path / "roster.csv", "id,name\nann,Ann Lee\ngul.sahin,Gül Şahin\n"))
    for folder in ("Gül Şahin (2)", "gul_sahin", "Gul Sahin_4411_assignsubmission_file_"):
        assert _error(check_records, COURSE, Records(roster=roster), [("ann", None), (folder, None)]) == (
            f"{tmp_path / 'roster.csv'}:3: the submission {folder!r} is not on the roster, whose student 'gul.sahin' "
            "has that name: submissions are matched by id (one student would be both missing and not on the "
            "roster): rename the submission 'gul.sahin', or, if it is someone else's, add them to the roster under its "
            "name")
    both = [("ann", None), ("gul.sahin", None), ("Gül Şahin", None)]  # the roster's student handed in too
    assert check_records(COURSE, Records(roster=roster), both) is None
    assert check_records(COURSE, Records(roster=roster), [("ann", None), ("Gül Şahinoglu", None)]) is None
    twins = load_roster(_write(tmp_path / "twins.csv", "id,name\nann,Ann Lee\ngul1,Gül Şahin\ngul2,Gul Sahin\n"))
    assert check_records(COURSE, Records(roster=twins), [("ann", None), ("Gül Şahin (2)", None)]) is None
    marks = load_roster(_write(tmp_path / "marks.csv", "id,name\nann,Ann Lee\nx1,--\n"))  # punctuation names nobody
    assert check_records(COURSE, Records(roster=marks), [("ann", None), ("__", None)]) is None


def test_a_class_copied_with_or_without_its_course_finds_the_course_it_was_graded_with(tmp_path):
    """The course kept in out/records/course.txt is found from a class moved with its course (relative) and from a
    class copied alone (where the course was); gone from both, the error names where it was (the fifth instructor
    walk-through: a copied class said "gone" of a path resolved against the copy)."""
    from grader.records.kept import class_course, keep_course

    course = tmp_path / "term" / "course" / "course.yaml"
    course.parent.mkdir(parents=True)
    course.write_text("x", encoding="utf-8")
    keep_course(tmp_path / "term" / "out", course)
    assert class_course(tmp_path / "term" / "out", None) == (course, True)
    shutil.copytree(tmp_path / "term" / "out", tmp_path / "elsewhere" / "deep" / "out")
    assert class_course(tmp_path / "elsewhere" / "deep" / "out", None) == (course, True)
    shutil.move(tmp_path / "term", tmp_path / "moved")
    assert class_course(tmp_path / "moved" / "out", None) == (tmp_path / "moved" / "course" / "course.yaml", True)
    with pytest.raises(CourseError, match=f"was graded with {course}, which is gone"):
        class_course(tmp_path / "elsewhere" / "deep" / "out", None)
    with pytest.raises(CourseError, match=r"cours.yaml: cannot read: no such file$"):  # a typo is no other course
        class_course(tmp_path / "moved" / "out", tmp_path / "moved" / "course" / "cours.yaml")
    course.parent.mkdir(parents=True)  # a class copied with its course, the original still there: the copy's
    course.write_text("x", encoding="utf-8")
    shutil.copytree(tmp_path / "moved", tmp_path / "copied")
    assert class_course(tmp_path / "copied" / "out", None) == (tmp_path / "copied" / "course" / "course.yaml", True)
    course.write_text("y", encoding="utf-8")  # copied beside another course: neither is taken
    with pytest.raises(CourseError, match="give --course the one to use"):
        class_course(tmp_path / "copied" / "out", None)


def test_a_new_records_file_says_which_kept_rows_no_longer_apply(tmp_path):
    """A new overrides, extensions or submission times file replaces the kept one: the kept rows it lacks are named
    (the sixth walk-through: one new override dropped the others, unsaid); rows compared as read, so columns in
    another order, a reason column added, say nothing (the review)."""
    from grader.records.kept import keep_records, replaced_rows

    course = _late()
    overrides = _write(tmp_path / "o.csv", "student,exercise,penalty,reason\nann,softmax,1,x\nbob,,2,y\n")
    extensions = _write(tmp_path / "e.csv", "student,due\nann,2026-11-23T23:59:00Z\n")
    keep_records(tmp_path / "out", overrides=overrides, extensions=extensions)
    kept = tmp_path / "out" / "records"
    same = _write(tmp_path / "same.csv", "reason,penalty,student,exercise\ny,2,bob,\nx,1,ann,softmax\n")
    later = _write(tmp_path / "later.csv", "student,due,reason\nann,2026-11-23T23:59:00Z,ill\n")
    assert replaced_rows(course, tmp_path / "out", overrides=same, extensions=later) == []
    one = _write(tmp_path / "one.csv", "student,exercise,penalty,reason\nbob,,2,y\ncy,,1,z\n")
    assert replaced_rows(course, tmp_path / "out", overrides=one) == [
        f"{one} replaces {kept / 'overrides.csv'} (kept from an earlier run): 1 of its rows are not in it and no longer "
        f"apply ({kept / 'overrides.csv'}:2); add them to {one} to keep them"]
    times = _write(tmp_path / "t.csv", "student,submitted_at\nann,2026-11-22T10:00:00Z\nbob,2026-11-21T10:00:00Z\n")
    keep_records(tmp_path / "out", submitted=times)  # a file of one student's time took the other's penalty (the
    bob = _write(tmp_path / "bob.csv", "submitted_at,student\n2026-11-21T10:00:00Z,bob\n")  # seventh walk-through)
    assert replaced_rows(course, tmp_path / "out", submitted=bob) == [
        f"{bob} replaces {kept / 'submitted.csv'} (kept from an earlier run): 1 of its rows are not in it and no longer "
        f"apply ({kept / 'submitted.csv'}:2); add them to {bob} to keep them"]
    moved = _write(tmp_path / "moved.csv", "student,submitted_at\nann,2026-11-23T10:00:00Z\nbob,2026-11-21T10:00:00Z\n")
    assert replaced_rows(course, tmp_path / "out", submitted=moved) == []  # a resubmission's new time (review 11)


# ----------------------------------------------------------------- overrides

@pytest.mark.parametrize("row, words", [
    ("ann,,softmx,,,1,typo", "no exercise 'softmx'"),
    ("ann,,,Some check,,1,no exercise", "a check needs its exercise"),
    ("ann,,softmax,,5,1,both", "either points"),
    ("ann,,softmax,,,,neither", "either points"),
    ("ann,,softmax,,-3,,negative", "not a number of points"),
    ("ann,,softmax,,nan,,nan", "not a number of points"),
    ("ann,,softmax,,5,,", "no reason"),
    (",,softmax,,5,,who", "no student"),
    ("ann,week9,softmax,,5,,which", "no assignment 'week9'"),
])
def test_a_bad_override_is_one_line_naming_file_and_line(tmp_path, row, words):
    path = _write(tmp_path / "overrides.csv", f"student,assignment,exercise,check,points,penalty,reason\n\n{row}\n")
    message = _error(load_overrides, path, COURSE)
    assert message.startswith(f"{path}:3:") and words in message, message


def test_an_override_row_pasted_twice_is_refused(tmp_path):
    """A row alike to an earlier one in every column would apply twice (found by our instructor's walk-through: a
    penalty of 2 pasted twice took 4, unsaid); two different overrides of one target still stack."""
    path = _write(tmp_path / "overrides.csv", "student,assignment,exercise,check,points,penalty,reason\n"
                                              "ann,,softmax,,,2,late fix\nbob,,softmax,,,2,late fix\nann,,softmax,,,2,late fix\n")
    assert _error(load_overrides, path, COURSE) == (f"{path}:4: the same override as line 2 (every column alike): "
                                                    "remove one, or say in the reason why it is given twice")
    stacked = _write(tmp_path / "stacked.csv", "student,exercise,penalty,reason\nann,softmax,2,late\nann,softmax,2,copied\n")
    assert len(load_overrides(stacked, COURSE)) == 2


def test_an_overrides_file_with_an_unknown_column_is_refused(tmp_path):
    path = _write(tmp_path / "overrides.csv", "student,points,reason,Grader Comment\nann,5,x,y\n")
    message = _error(load_overrides, path, COURSE)
    assert message.startswith(f"{path}:1:") and message.endswith("not 'Grader Comment'")  # as the file writes it


def test_overrides_apply_in_order_on_a_copy(tmp_path):
    """A penalty on an exercise, points for a check (shared by its cases) and for the whole submission, in the file's
    order; the graded record is not touched."""
    path = _write(tmp_path / "o.csv", "student,exercise,check,points,penalty,reason\n"
                                      "ann,softmax,,,3,used torch.softmax\n"
                                      f"bob,softmax,{CHECK},1,,half credit after review\n"
                                      "cy,,,15,,oral exam\n")
    rows = [_record("ann"), _record("bob", softmax=0.0), _record("cy", softmax=0.0, scores=0.0)]
    before = json.dumps(rows, sort_keys=True)
    shown = {v["student"]: v for v in class_view(COURSE, rows, Records(overrides=tuple(load_overrides(path, COURSE)))).rows}
    assert json.dumps(rows, sort_keys=True) == before
    assert (shown["ann"]["score"], shown["ann"]["exercises"]["softmax"]["score"], shown["ann"]["graded_score"]) == (17, 7, 20)
    assert (shown["bob"]["score"], shown["bob"]["exercises"]["softmax"]["score"]) == (11, 1)
    assert [t["score"] for t in shown["bob"]["tests"]] == [0.5, 0.5]
    assert shown["cy"]["score"] == 15
    assert [(a["kind"], a["target"], a["points"], a["reason"]) for a in shown["ann"]["adjustments"]] == [
        ("override", "softmax", -3.0, "used torch.softmax")]
    assert shown["ann"]["adjustments"][0]["source"] == f"{path}:2"


@pytest.mark.parametrize("row, words", [
    ("dan,softmax,,,1,nobody", "no submission from student 'dan'"),
    ("ann,softmax,Not a check,1,,x", "no check 'Not a check'"),
    ("ann,softmax,,11,,x", "11 points is more than the 10 of softmax"),
    (f"ann,softmax,{CHECK},3,,x", "more than the 2 of check"),
])
def test_an_override_the_class_contradicts_names_its_line(tmp_path, row, words):
    """Once graded, an override the class contradicts is left out and named (its file and line), the others
    applied: the class's reports are not withdrawn because of it."""
    path = _write(tmp_path / "o.csv", f"student,exercise,check,points,penalty,reason\n{row}\nann,softmax,,,1,late\n")
    records = Records(overrides=tuple(load_overrides(path, COURSE)))
    shown = class_view(COURSE, [_record("ann")], records)
    [message] = shown.unapplied
    assert message.startswith(f"{path}:2:") and words in message, message
    assert [a["source"] for a in shown.rows[0]["adjustments"]] == [f"{path}:3"]


def test_an_override_without_its_assignment_is_left_out_where_a_student_has_several(tmp_path):
    path = _write(tmp_path / "o.csv", "student,exercise,penalty,reason\nann,softmax,1,x\n")
    rows = [_record("ann", assignment="02_softmax"), {**_record("ann", assignment="week1")}]
    shown = class_view(COURSE, rows, Records(overrides=tuple(load_overrides(path, COURSE))))
    assert ["name one in the assignment column" in m for m in shown.unapplied] == [True]
    assert [v["adjustments"] for v in shown.rows] == [[], []]


def test_an_override_tied_to_a_submission_leaves_a_resubmission_alone(tmp_path):
    """An override's submission column (the start of the gradebook's submission_sha256) ties it to the submission it
    was written for: applied to that one, left out and named when the student was graded on another since (found by
    our instructor's walk-through: a penalty for an old hand-in silently took points from its fixed resubmission)."""
    path = _write(tmp_path / "o.csv", "student,exercise,penalty,reason,submission\n"
                                      f"ann,softmax,2,copied helper,{'A' * 16}\nbob,softmax,2,copied helper,{'b' * 20}\n"
                                      "cy,softmax,2,copied helper,\n")
    rows = [_record("ann"), _record("bob"), _record("cy")]
    shown = class_view(COURSE, rows, Records(overrides=tuple(load_overrides(path, COURSE))))
    assert {v["student"]: v["score"] for v in shown.rows} == {"ann": 18, "bob": 20, "cy": 18}
    assert shown.unapplied == [f"{path}:3: written for submission {'b' * 20} of student 'bob', who was graded on "
                               f"another one since ({'a' * 20}): check it still holds, then update or clear its "
                               "submission column"]
    unreadable = {**_record("ann"), "status": "error: cannot grade: ann.zip is not a zip file", "submission_sha256": "0" * 64}
    shown = class_view(COURSE, [unreadable], Records(overrides=tuple(load_overrides(path, COURSE))[:1]))
    assert shown.unapplied == [f"{path}:2: written for submission {'a' * 16} of student 'ann', who handed in another one "
                               "since, which could not be graded: check it still holds, then update or clear its "
                               "submission column"] and shown.rows[0]["adjustments"] == []
    for bad in ("abc", "a" * 15, "g" * 16, "a" * 65):  # 8 digits were forged in 6 CPU-minutes (red team 11)
        _write(path, f"student,penalty,reason,submission\nann,1,x,{bad}\n")
        assert "is not the start of a submission_sha256" in _error(load_overrides, path, COURSE)


def test_an_override_of_a_check_reads_its_points_and_name_as_the_feedback_page_shows_them(tmp_path):
    """A check worth 0.8696 shows as 0.87: 0.87 points give it its whole share (they were refused as more than it
    holds); a misspelled check name is told the closest one (found by our instructor's walk-through)."""
    path = _write(tmp_path / "o.csv", f"student,exercise,check,points,reason\nann,softmax,{CHECK},0.87,rounded\n"
                                      "ann,softmax,Sums to one along dims,0.1,typo\n")
    ann = _record("ann", softmax=0.0)
    ann["tests"] = [{**test, "max_score": 0.4348} for test in ann["tests"]]  # a check of 0.8696 points, shown as 0.87
    shown = class_view(COURSE, [ann], Records(overrides=tuple(load_overrides(path, COURSE))))
    assert shown.rows[0]["exercises"]["softmax"]["score"] == 0.8696
    write_feedback(shown.rows[0], tmp_path)  # its badge says the instructor's points: "failed" beside full points read wrong
    assert f"- adjusted (0.43 / 0.43): {CHECK} (your instructor's points)" in (tmp_path / "feedback" / "ann.md").read_text()
    assert "<span class='badge adjusted'>adjusted</span>" in (tmp_path / "feedback" / "ann.html").read_text()
    [typo] = shown.unapplied
    assert typo.endswith(f"(a check is named as the feedback page shows it); did you mean {CHECK!r}?"), typo


def test_overrides_are_checked_against_the_class_before_grading(tmp_path):
    """Before anything is graded, against the records the batch will write: a student of no submission (off the
    roster), an exercise the record does not grade, more points than an exercise holds, an override without an
    assignment for a student with several are one line naming the line; a check's name waits for the results, and
    so do the overrides of a student whose notebook is graded as the assignment it carries."""
    def check(row, planned, undecided=(), roster=None):
        path = _write(tmp_path / "o.csv", f"student,assignment,exercise,check,points,penalty,reason\n{row}\n")
        records = Records(roster=roster, overrides=tuple(load_overrides(path, COURSE.whole)))
        return check_records(COURSE.whole, records, planned, undecided)

    whole = [("ann", None)]
    assert "no submission from student 'dan'" in _error(check, "dan,,softmax,,1,,x", whole)
    assert _error(check, "Ann,,softmax,,1,,x", whole).endswith("no submission from student 'Ann' in this class (ids are "
                                                               "compared exactly: did you mean 'ann'?)")
    assert _error(check, "ann,02_softmax,softmax,,1,,x", whole).endswith(  # the assignment is wrong, not the id
        "no submission from student 'ann' for 02_softmax in this class (their records here: course; leave the column "
        "blank for a class graded on the whole course)")
    assert check("dan,,softmax,,1,,x", whole, roster={"ann": Student("ann"), "dan": Student("dan")}) is None
    assert "11 points is more than the 10 of softmax" in _error(check, "ann,,softmax,,11,,x", whole)
    assert "more than the 100 of the submission" in _error(check, "ann,,,,101,,x", whole)
    assert "qkv is not graded" in _error(check, "ann,,qkv,,1,,x", [("ann", "02_softmax")])
    several = [("ann", "01_scores"), ("ann", "02_softmax")]
    assert _error(check, "ann,03_context,context,,1,,x", several).endswith(
        "(their records here: 01_scores, 02_softmax; name one of them, or leave the column blank for all)")
    assert "name one in the assignment column" in _error(check, "ann,,,,1,,x", several)
    assert check("ann,02_softmax,,,1,,x", several) is None
    assert check(f"ann,,softmax,{CHECK},1,,x", whole) is None  # checked once graded
    assert check("ann,,softmax,,11,,x", [], undecided={"ann"}) is None  # its assignment is known once graded


def test_an_entry_refused_in_a_class_of_assignments_makes_no_course_record(tmp_path):
    """In a class graded per assignment, an entry refused unread (a folder among notebooks: no assignment) is a row
    of its own and no record of the class: no "missing" course record for the roster's other students, no course
    column in the LMS files, and an override without an assignment still names one record. It made every classmate
    a 0/100 "missing" course row and a zero column in canvas.csv (review). The refused student is missing nothing:
    they handed something in."""
    refused = {**_record("cy", status="error: could not be graded: cy/ holds no assignment folder"), "score": 0}
    rows = [_record("ann", assignment="02_softmax"), refused]
    roster = load_roster(_write(tmp_path / "roster.csv", "id,name\nann,Ann Lee\ncy,Cy Do\ndan,Dan Roe\n"))
    override = _write(tmp_path / "o.csv", "student,exercise,penalty,reason\nann,softmax,1,x\n")
    shown = class_view(COURSE, rows, Records(roster=roster, overrides=tuple(load_overrides(override, COURSE))))
    assert [(v["student"], v.get("assignment"), v["status"][:7]) for v in shown.rows] == [
        ("ann", "02_softmax", "graded"), ("cy", None, "error: "), ("dan", "02_softmax", "missing")]
    assert shown.unapplied == [] and [a["points"] for a in shown.rows[0]["adjustments"]] == [-1]
    publish(COURSE, tmp_path, rows, Records(roster=roster))
    with open(tmp_path / "canvas.csv", newline="", encoding="utf-8-sig") as file:
        header = next(csv.reader(file))
    assert header[5:] == [COURSE.whole.exercise("softmax").title], header


def test_one_students_notebook_of_another_assignment_makes_no_classmate_missing_it(tmp_path):
    """In a class of notebooks graded as the assignments they carry, the roster's students are expected to have the
    one most of them carry: mallory's 01_scores notebook among 02_softmax ones is her record alone, no "missing" 0
    of it for alice and bob (red team: a zero column in canvas.csv an LMS import would write over their grades)."""
    def carried(student, assignment):  # graded as the assignment its notebook carries: no key
        return {**_record(student), "assignment": assignment}

    rows = [carried("alice", "02_softmax"), carried("bob", "02_softmax"), carried("mallory", "01_scores")]
    roster = load_roster(_write(tmp_path / "roster.csv", "id,name\nalice,A\nbob,B\nmallory,M\ndan,D\n"))
    shown = class_view(COURSE, rows, Records(roster=roster))
    assert [(v["student"], v["assignment"]) for v in shown.rows if v["status"] == "missing"] == [
        ("dan", "02_softmax"), ("mallory", "02_softmax")]  # she handed in no 02_softmax
    named = [_record("alice", assignment="02_softmax"), _record("mallory", assignment="01_scores")]  # nbgrader's folders
    assert sorted((v["student"], v["assignment"]) for v in class_view(COURSE, named, Records(roster=roster)).rows
                  if v["status"] == "missing") == [("alice", "01_scores"), ("bob", "01_scores"), ("bob", "02_softmax"),
                                                   ("dan", "01_scores"), ("dan", "02_softmax"), ("mallory", "02_softmax")]


def test_the_course_record_is_named_course(tmp_path):
    """In a class graded on the whole course, `course` in the assignment column names the student's record, in
    the overrides and in the list of submission times (it was refused: "no assignment 'course' in course.yaml")."""
    path = _write(tmp_path / "o.csv", "student,assignment,exercise,points,reason\nann,course,softmax,4,oral exam\n")
    records = Records(overrides=tuple(load_overrides(path, COURSE.whole)))
    shown = {v["student"]: v for v in class_view(COURSE, [_record("ann"), _record("bob")], records).rows}
    assert shown["ann"]["exercises"]["softmax"]["score"] == 4 and shown["bob"]["adjustments"] == []
    other = _write(tmp_path / "other.csv", "student,assignment,exercise,points,reason\nbob,02_softmax,softmax,4,x\n")
    records = Records(overrides=tuple(load_overrides(other, COURSE.whole)))
    assert "no submission from student 'bob' for 02_softmax" in class_view(COURSE, [_record("bob")], records).unapplied[0]
    times = _write(tmp_path / "t.csv", "student,assignment,submitted_at\nann,course,2026-11-21T10:00:00Z\n")
    assert load_submitted(times, COURSE) == {("ann", None): datetime(2026, 11, 21, 10, tzinfo=UTC)}


# ----------------------------------------------------------------- times and the late policy

@pytest.mark.parametrize("text, expected", [
    ("2026-11-20T14:03:12Z", datetime(2026, 11, 20, 14, 3, 12, tzinfo=UTC)),
    ("2026-11-20 14:03:12.123456 UTC", datetime(2026, 11, 20, 14, 3, 12, 123456, tzinfo=UTC)),  # nbgrader's
    ("2026-11-20T15:03:12+01:00", datetime(2026, 11, 20, 14, 3, 12, tzinfo=UTC)),
    ("2026-11-20T15:03:12+0100", datetime(2026, 11, 20, 14, 3, 12, tzinfo=UTC)),
    ("2026-11-20 15:03 Europe/Berlin", datetime(2026, 11, 20, 14, 3, tzinfo=UTC)),
    ("2026-11-20 09:03:12", datetime(2026, 11, 20, 14, 3, 12, tzinfo=UTC)),  # no zone: the course's (New York)
])
def test_times_are_read_as_tools_write_them(text, expected):
    assert parse_time(text, ZoneInfo("America/New_York"), "f:1") == expected


@pytest.mark.parametrize("text", ["yesterday", "2026-13-40T00:00:00Z", "2026-11-20T10:00:00 Mars/Olympus"])
def test_a_bad_time_names_its_line(text):
    assert _error(parse_time, text, UTC, "times.csv:7").startswith("times.csv:7:")


def test_the_late_penalty_counts_started_periods_after_the_grace_and_stops_at_the_cap():
    due = datetime(2026, 11, 20, 23, 59, tzinfo=UTC)
    policy = _late(grace_minutes=15, cap_percent=25).late
    taken = {minutes: (late_penalty(policy, None, due + timedelta(minutes=minutes), 20) or (0, ""))[0]
             for minutes in (-60, 0, 15, 16, 24 * 60, 24 * 60 + 1, 10 * 24 * 60)}
    assert taken == {-60: 0, 0: 0, 15: 0, 16: 2.0, 1440: 2.0, 1441: 4.0, 14400: 5.0}
    hourly = _late(per="hour", percent=1).late
    assert late_penalty(hourly, None, due + timedelta(hours=2, minutes=1), 100)[0] == pytest.approx(3.0)
    assert late_penalty(policy, "week1", due + timedelta(days=3), 20) is None  # no due date for week1
    assert late_penalty(policy, None, None, 20) is None  # no time known
    assert "1 day 0 hours" not in late_penalty(policy, None, due + timedelta(days=1, minutes=1), 20)[1]


def test_the_late_policy_is_checked_in_course_yaml(tmp_path):
    base = COURSE_FILE.read_text(encoding="utf-8")
    cases = {"naive": ("late: {due: {course: 2026-11-20 23:59}, percent: 10}",
                       "late.due.course: a time without its UTC offset: write it with one, as 2026-12-01T23:59:00+01:00"),
             "european": ("late: {due: {course: '01.12.2026 23:59'}, percent: 10}",  # the fourth walk-through
                          "late.due.course: not a date and time: write it as ISO 8601 with its UTC offset, as "
                          "2026-12-01T23:59:00+01:00"),
             "unknown": ("late: {due: {week9: '2026-11-20T23:59:00Z'}, percent: 10}", "week9"),
             "zone": ("late: {due: {course: '2026-11-20T23:59:00Z'}, percent: 10, timezone: Mars}", "time zone"),
             "percent": ("late: {due: {course: '2026-11-20T23:59:00Z'}, percent: 0}", "late.percent"),
             "course": ("assignments: [{name: course, title: C, exercises: [scores]}]", "names the whole course")}
    for name, (policy, words) in cases.items():
        path = course_variant(tmp_path / name, f"{base}\n{policy}\n")
        with pytest.raises(CourseError, match=re.escape(words)):
            load_course(path)
    good = course_variant(tmp_path / "good", f"{base}\nlate: {{due: {{course: '2026-11-20T23:59:00+01:00', "
                                              f"02_softmax: '2026-11-27T12:00:00Z'}}, percent: 10}}\n")
    assert load_course(good).late.due["course"] == datetime(2026, 11, 20, 22, 59, tzinfo=UTC)


def test_the_submission_times_list_takes_grader_collects_commit_time(tmp_path):
    path = _write(tmp_path / "collected.csv", "student,url,commit,Commit time\nann,https://x/ann,abc,2026-11-21T10:00:00Z\n"
                                              "bob,https://x/bob,,\n")
    assert load_submitted(path, COURSE) == {("ann", None): datetime(2026, 11, 21, 10, tzinfo=UTC)}  # bob: no time
    twice = _write(tmp_path / "twice.csv", "student,submitted_at\nann,2026-11-21T10:00:00Z\nann,2026-11-21T11:00:00Z\n")
    assert _error(load_submitted, twice, COURSE).startswith(f"{twice}:3:")
    bad = _write(tmp_path / "bad.csv", "student,submitted_at\nann,soon\n")
    assert _error(load_submitted, bad, COURSE).startswith(f"{bad}:2:")
    unknown = _write(tmp_path / "unknown.csv", "student,assignment,submitted_at\nann,week9,2026-11-21T10:00:00Z\n")
    assert "no assignment 'week9'" in _error(load_submitted, unknown, COURSE)
    nameless = _write(tmp_path / "nameless.csv", "who,submitted_at\nann,2026-11-21T10:00:00Z\n")
    assert _error(load_submitted, nameless, COURSE).startswith(f"{nameless}:1:")


def test_a_time_of_a_student_neither_in_the_class_nor_on_the_roster_is_refused(tmp_path):
    """A misspelled id in the list of submission times left its student without a time, unsaid (found by our
    instructor's walk-through): checked before grading, one line naming the line; a roster student is no typo."""
    path = _write(tmp_path / "times.csv", "student,submitted_at\nann,2026-11-21T10:00:00Z\nanm,2026-11-21T10:00:00Z\n")
    records = Records(submitted=load_submitted(path, _late()))
    assert _error(check_records, _late(), records, [("ann", None)]) == f"{path}:3: no student 'anm' in this class or its roster"
    roster = load_roster(_write(tmp_path / "roster.csv", "id,name\nann,Ann Lee\nanm,Anm Roe\n"))
    assert check_records(_late(), Records(roster=roster, submitted=records.submitted), [("ann", None)]) is None


def test_a_blank_time_for_a_student_who_handed_in_is_refused(tmp_path):
    """A row of the list of times with its time left blank, for a student who handed something in, is refused before
    grading and left out (named) once graded (the sixth instructor walk-through: it took a 30% penalty away, exit 0);
    for one who handed nothing in (collect's failed clone) it is no error."""
    path = _write(tmp_path / "times.csv", "student,submitted_at\nann,2026-11-21T10:00:00Z\nfinn,\n")
    records = Records(submitted=load_submitted(path, _late()))
    said = (f"{path}:3: no time for student 'finn', who handed something in: give the time your LMS recorded (without "
            "one, the submission's own word judges its lateness)")
    assert _error(check_records, _late(), records, [("ann", None), ("finn", None)]) == said
    assert class_view(_late(), [_record("ann"), _record("finn")], records).unapplied == [said]
    roster = load_roster(_write(tmp_path / "roster.csv", "id,name\nann,Ann Lee\nfinn,Finn Roe\n"))
    assert check_records(_late(), Records(roster=roster, submitted=records.submitted), [("ann", None)]) is None
    week = _write(tmp_path / "week.csv", "student,assignment,submitted_at\nann,02_softmax,\n")  # not handed in (the
    assert check_records(_late(), Records(submitted=load_submitted(week, _late())), [("ann", "01_scores")]) is None
    twice = _write(tmp_path / "twice.csv", "student,submitted_at\nann,\nann,2026-11-21T10:00:00Z\n")  # review)
    assert _error(load_submitted, twice, _late()) == f"{twice}:3: a second time for student 'ann'"


def test_an_extension_moves_the_due_date_of_its_student_alone(tmp_path):
    """ann's due date moves three days: two days late is on time for her, four days late costs one started day from
    her own due date; bob, as late, loses two days' share. A reason column is the instructor's note."""
    course = _late()  # due 2026-11-20 23:59 UTC, 10% of the points per started day
    extensions = _write(tmp_path / "extensions.csv", "student,due,reason\nann,2026-11-23T23:59:00Z,ill (note 12)\n")
    def shown(ann_at):
        times = _write(tmp_path / "t.csv", f"student,submitted_at\nann,{ann_at}\nbob,2026-11-22T23:00:00Z\n")
        records = load_records(course, submitted=times, extensions=extensions)
        return {v["student"]: v for v in class_view(course, [_record("ann"), _record("bob")], records).rows}
    two_days = shown("2026-11-22T23:00:00Z")
    assert (two_days["ann"]["score"], two_days["ann"]["adjustments"]) == (20.0, [])
    assert two_days["ann"]["extended_to"] == "2026-11-23T23:59:00+00:00" and "extended_to" not in two_days["bob"]
    assert two_days["bob"]["score"] == pytest.approx(16.0)
    four_days = shown("2026-11-24T23:00:00Z")["ann"]
    assert four_days["score"] == pytest.approx(18.0)
    assert "after the extended due date 2026-11-23T23:59:00+00:00" in four_days["adjustments"][0]["reason"]


def test_an_extension_for_every_record_extends_those_whose_due_date_it_is_past(tmp_path):
    """An extension naming no assignment is checked against the earliest due date it could extend: a later
    assignment's due date in course.yaml refused one for a class graded on the whole course (found by our
    instructor's walk-through); it moves the due dates it is past and no other earlier."""
    week5 = datetime(2026, 11, 27, 23, 59, tzinfo=UTC)
    course = _late(due={"course": datetime(2026, 11, 20, 23, 59, tzinfo=UTC), "week5": week5})
    path = _write(tmp_path / "extensions.csv", "student,due\nann,2026-11-23T23:59:00Z\n")
    extensions = load_extensions(path, course)
    assert extension_of(extensions, "ann", "week5", week5) is None
    times = _write(tmp_path / "t.csv", "student,submitted_at\nann,2026-11-22T23:00:00Z\n")
    ann = class_view(course, [_record("ann")], load_records(course, submitted=times, extensions=path)).rows[0]
    assert (ann["score"], ann["adjustments"], ann["extended_to"]) == (20.0, [], "2026-11-23T23:59:00+00:00")
    later = course.model_copy(update={"late": course.late.model_copy(update={"due": {
        "course": datetime(2026, 11, 27, 23, 59, tzinfo=UTC), "week5": datetime(2026, 11, 20, 23, 59, tzinfo=UTC)}})})
    shown = class_view(later, [_record("ann")], load_records(later, submitted=times, extensions=path))
    assert shown.unapplied == [f"{path}:2: 2026-11-23T23:59:00+00:00 is not later than the due date of any record of "
                               "student 'ann': it extends nothing"]  # the review: loaded, then silently nothing
    records = load_records(later, submitted=times, extensions=path)  # and before grading a class of the whole
    assert _error(check_records, later, records, [("ann", None)]) == shown.unapplied[0]  # course (sixth walk-through);
    assert check_records(later, records, [("ann", "02_softmax")]) is None  # one of an assignment: its other records may
    early = _write(tmp_path / "early.csv", "student,due\nann,2026-11-19T23:59:00Z\n")
    assert "not later than the due date it extends (2026-11-20T23:59:00+00:00)" in _error(load_extensions, early, course)


@pytest.mark.parametrize("text, line, words", [
    ("student,due,why\nann,2026-11-23T23:59:00Z,ill\n", 1, "not 'why'"),
    ("student,Due Date\nann,2026-11-23T23:59:00Z\n", 1, "not 'Due Date'"),  # as written (instructor walk-through 6)
    ("student\nann\n", 1, "columns student, due"),
    ("student,due\nann,2026-11-23T23:59:00Z\n,2026-11-23T23:59:00Z\n", 3, "no student"),
    ("student,due\nann,next week\n", 2, "not a date and time"),
    ("student,due\nann,\n", 2, "no due date"),
    ("student,due\nann,2026-11-20T23:00:00Z\n", 2, "not later than the due date it extends"),
    ("student,due\nann,2026-11-23T23:59:00Z\nbob,2026-11-23T23:59:00Z\nann,2026-11-25T23:59:00Z\n", 4,
     "a second extension for student 'ann' (the other on line 2)"),
    ("student,assignment,due\nann,week9,2026-11-23T23:59:00Z\n", 2, "no assignment 'week9'"),
    ("student,assignment,due\nann,02_softmax,2026-11-23T23:59:00Z\n", 2, "no due date for 02_softmax"),
])
def test_a_bad_extension_is_one_line_naming_file_and_line(tmp_path, text, line, words):
    path = _write(tmp_path / "extensions.csv", text)
    message = _error(load_extensions, path, _late())
    assert message.startswith(f"{path}:{line}: ") and words in message


def test_extensions_need_a_late_policy_and_a_student_of_the_class(tmp_path):
    """Checked before grading (``check_records``) and again on the class graded (``class_view``): a student neither
    in the class nor on the roster, or without a record of the assignment named, is one line naming the line."""
    path = _write(tmp_path / "extensions.csv", "student,due\nann,2026-11-23T23:59:00Z\ndan,2026-11-23T23:59:00Z\n")
    assert "late policy has no due date for any record" in _error(load_extensions, path, COURSE)
    course_row = _write(tmp_path / "course.csv", "student,assignment,due\nann,course,2026-11-23T23:59:00Z\n")
    assert load_extensions(course_row, _late())[("ann", None)].due == datetime(2026, 11, 23, 23, 59, tzinfo=UTC)
    records = Records(extensions=load_extensions(path, _late()))
    assert _error(check_records, _late(), records, [("ann", None)]) == \
        f"{path}:3: no student 'dan' in this class or its roster"
    roster = load_roster(_write(tmp_path / "roster.csv", "id,name\nann,Ann Lee\ndan,Dan Roe\n"))
    assert check_records(_late(), Records(roster=roster, extensions=records.extensions),
                         [("ann", None)]) is None  # dan is on the roster: a missing record of the class
    assert class_view(_late(), [_record("ann")], records).unapplied == [f"{path}:3: no student 'dan' in this class or its roster"]
    per_assignment = COURSE.whole.model_copy(update={"late": Late(
        due={"02_softmax": datetime(2026, 11, 20, 23, 59, tzinfo=UTC)}, percent=10)})
    named = _write(tmp_path / "named.csv", "student,assignment,due\nann,02_softmax,2026-11-23T23:59:00Z\n")
    records = Records(extensions=load_extensions(named, per_assignment))
    assert "no student 'ann' with a record of 02_softmax" in _error(check_records, per_assignment, records,
                                                                    [("ann", "01_scores")])
    assert check_records(per_assignment, records, [("ann", "01_scores"), ("ann", "02_softmax")]) is None
    accents = _write(tmp_path / "accents.csv", "student,due\nzoe,2026-11-23T23:59:00Z\n")  # walk-through 7: unsaid
    assert _error(check_records, _late(), Records(extensions=load_extensions(accents, _late())), [("zo\u00eb", None)]) \
        == f"{accents}:2: no student 'zoe' in this class or its roster (ids are compared exactly: did you mean 'zo\u00eb'?)"


def test_an_extension_shows_in_the_students_table_feedback_gradebook_and_results(tmp_path):
    course = _late()
    times = _write(tmp_path / "t.csv", "student,submitted_at\nann,2026-11-22T23:00:00Z\n")
    extensions = _write(tmp_path / "e.csv", "student,due\nann,2026-11-23T23:59:00+01:00\n")
    publish(course, tmp_path, [_record("ann"), _record("bob")], load_records(course, submitted=times,
                                                                             extensions=extensions))
    said = "extended to 2026-11-23T23:59:00+01:00"
    assert f"Your due date was {said}." in (tmp_path / "feedback" / "ann.md").read_text(encoding="utf-8")
    assert f"<p id='extension'>Your due date was {said}.</p>" in \
        (tmp_path / "feedback" / "ann.html").read_text(encoding="utf-8")
    assert said not in (tmp_path / "feedback" / "bob.html").read_text(encoding="utf-8")
    summary = (tmp_path / "summary.html").read_text(encoding="utf-8")
    assert f"<td class='status'>graded; due date {said}</td>" in summary
    assert summary.count("due date extended") == 1
    ann = json.loads((tmp_path / "results" / "ann.json").read_text(encoding="utf-8"))
    assert (ann["extended_to"], ann["final_score"]) == ("2026-11-23T23:59:00+01:00", 20.0)
    with open(tmp_path / "gradebook.csv", newline="", encoding="utf-8-sig") as file:
        assert {row["student"]: row["extended_to"] for row in csv.DictReader(file)} == {
            "ann": "2026-11-23T23:59:00+01:00", "bob": ""}
    publish(course, tmp_path, [ann, _record("bob")], load_records(course, submitted=times))  # extension withdrawn
    assert "extended_to" not in json.loads((tmp_path / "results" / "ann.json").read_text(encoding="utf-8"))
    assert said not in (tmp_path / "feedback" / "ann.md").read_text(encoding="utf-8")


def test_nbgrader_timestamps_and_zip_entries_give_the_submission_time(tmp_path, capsys):
    """nbgrader's timestamp.txt in the notebook's folder; a zip's newest entry (read in the bounded intake), in the
    course's zone; a timestamp.txt that is a link, too long or holds no time is not read, and said so (one holding
    "next tuesday" was passed over unsaid: the seventh instructor walk-through); a missing one says nothing."""
    policy = _late(timezone="Europe/Berlin").late
    folder = tmp_path / "submitted" / "ann" / "02_softmax"
    folder.mkdir(parents=True)
    (folder / "02_softmax.ipynb").write_text("{}")
    (folder / "timestamp.txt").write_text("2026-11-20 14:03:12.000001 UTC\n")
    assert submission_time(folder / "02_softmax.ipynb", True, None, policy) == datetime(2026, 11, 20, 14, 3, 12, 1, tzinfo=UTC)
    assert submission_time(folder / "02_softmax.ipynb", False, None, policy) is None  # not an assignment's folder
    other = tmp_path / "other"
    other.mkdir()
    (other / "timestamp.txt").symlink_to(folder / "timestamp.txt")
    assert nbgrader_timestamp(other, policy) is None
    (folder / "timestamp.txt").write_text("2026-11-20 14:03:12 UTC" + " " * 300)
    assert nbgrader_timestamp(folder, policy) is None
    (folder / "timestamp.txt").write_text("next tuesday\n")
    assert nbgrader_timestamp(folder, policy) is None
    assert nbgrader_timestamp(tmp_path, policy) is None  # none there
    notes = capsys.readouterr().err.splitlines()
    assert notes == [f"grader: note: {path} holds no time nbgrader wrote: the lateness of that submission is judged "
                     "without it (give its time with --submitted)"
                     for path in (other / "timestamp.txt", folder / "timestamp.txt", folder / "timestamp.txt")], notes
    archive = tmp_path / "bob.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr(zipfile.ZipInfo("softmax.py", (2026, 11, 21, 10, 0, 0)), "x = 1\n")
        handle.writestr(zipfile.ZipInfo("scores.py", (2026, 11, 19, 10, 0, 0)), "x = 1\n")
    stamp = read_submission(archive, COURSE.grading.intake, COURSE).stamp
    assert zip_time(stamp, policy) == datetime(2026, 11, 21, 9, 0, tzinfo=UTC)  # 10:00 in Berlin
    assert submission_time(archive, False, stamp, policy) == zip_time(stamp, policy)


# ----------------------------------------------------------------- the class, its exports and a regrade

def _class(tmp_path):
    """ann on time, bob a day late, cy on the roster without a submission, dan not on the roster, eve a grader
    fault; a roster name that starts like a formula."""
    roster = _write(tmp_path / "roster.csv", "id,first_name,last_name,email,lms_user_id\n"
                                             "ann,Ann,Lee,ann@x.org,101\nbob,=HYPERLINK(1),Ray,bob@x.org,\n"
                                             "cy,Cy,Do,cy@x.org,103\neve,Eve,Ng,eve@x.org,\n")
    submitted = _write(tmp_path / "submitted.csv", "student,submitted_at\nann,2026-11-20T20:00:00Z\n"
                                                   "bob,2026-11-21T23:58:00Z\n")
    overrides = _write(tmp_path / "overrides.csv", "student,exercise,check,points,penalty,reason\n"
                                                   "ann,softmax,,,2,<b>used</b> torch.softmax\n")
    rows = [_record("ann"), _record("bob", softmax=5.0), _record("dan"),
            {**_record("eve", softmax=0, scores=0), "status": "error: grader error: BrokenPipe"}]
    course = _late(cap_percent=50)
    return course, rows, load_records(course, roster, overrides, submitted)


def _table(path):
    """A CSV export's rows; it starts with a UTF-8 byte-order mark (which Excel needs to read UTF-8)."""
    assert path.read_bytes().startswith("\ufeff".encode()), path
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return list(csv.reader(handle))


def test_the_exports_have_the_lms_columns_and_the_final_scores(tmp_path):
    """The final scores to two decimals; a grader fault blank; dan, not on the roster, is left out of the LMS files
    (he matches no LMS user) and flagged in the gradebook and the summary."""
    course, rows, records = _class(tmp_path)
    publish(course, tmp_path, rows, records)
    assert _table(tmp_path / "canvas.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Self-attention in PyTorch"],
        ["    Points Possible", "", "", "", "", "20"],
        ["Ann Lee", "101", "ann", "ann@x.org", "", "18"],
        ["'=HYPERLINK(1) Ray", "", "bob", "bob@x.org", "", "13"],  # 15 - 10% of 20 for one started day
        ["Cy Do", "103", "cy", "cy@x.org", "", "0"],
        ["Eve Ng", "", "eve", "eve@x.org", "", ""]]  # a grader fault: blank, Canvas keeps what it has
    moodle = _table(tmp_path / "moodle.csv")
    title = "Self-attention in PyTorch"
    assert moodle[0] == ["First name", "Last name", "ID number", "Email address", title, f"Feedback for {title}"]
    assert [row[:5] for row in moodle[1:]] == [["Ann", "Lee", "ann", "ann@x.org", "18"],
                                               ["'=HYPERLINK(1)", "Ray", "bob", "bob@x.org", "13"],
                                               ["Cy", "Do", "cy", "cy@x.org", "0"], ["Eve", "Ng", "eve", "eve@x.org", ""]]
    assert moodle[1][5] == "softmax: <b>used</b> torch.softmax (-2.00)" and moodle[2][5].startswith("late: submitted")
    header, *lines = _table(tmp_path / "gradebook.csv")
    gradebook = {row["student"]: row for row in (dict(zip(header, line)) for line in lines)}
    assert list(gradebook) == ["ann", "bob", "cy", "dan", "eve"]
    assert [(r["on_roster"], r["status"], r["score"], r["graded_score"], r["late_penalty"]) for r in gradebook.values()] == [
        ("yes", "graded", "18", "20", ""), ("yes", "graded", "13", "15", "2"), ("yes", "missing", "0", "", ""),
        ("no", "graded", "20", "20", ""), ("yes", "error: grader error: BrokenPipe", "", "", "")]
    assert gradebook["bob"]["submitted_at"] == "2026-11-21T23:58:00+00:00" and gradebook["bob"]["softmax"] == "5"
    summary = (tmp_path / "summary.html").read_text(encoding="utf-8")
    assert "id='missing'><thead><tr><th>student</th></tr></thead><tbody><tr><td>cy</td></tr></tbody>" in summary
    assert "id='unlisted'><thead><tr><th>student</th></tr></thead><tbody><tr><td>dan</td></tr></tbody>" in summary


def test_reports_are_refused_with_a_course_the_class_was_not_graded_with():
    """Another course's points or exercises: refused, naming the record and the exercise (written with it, canvas.csv
    said "out of 110" for a class graded out of 100: our instructor's walk-through); one that could not be graded has
    no points to compare."""
    assert check_graded_with(COURSE, [_record("ann"), {**_record("bob"), "status": "error: cannot grade: x"}]) is None
    more = {**_record("ann"), "exercises": {**_record("ann")["exercises"], "softmax": {"score": 5, "max_score": 15}}}
    assert str(_error_of(check_graded_with, COURSE, [more])) == (
        "the results were not graded with this course: ann's softmax is out of 15 points, the course gives 10: give "
        "--course the course.yaml they were graded with, or grade the class again with this one (`grader batch` with "
        "this --course and --force)")
    extra = {**_record("ann"), "exercises": {**_record("ann")["exercises"], "gqa": {"score": 0, "max_score": 10}}}
    assert "ann's gqa is out of 10 points, the course gives no such exercise" in str(_error_of(check_graded_with, COURSE, [extra]))
    fewer = {**_record("ann"), "exercises": {"softmax": {"score": 5, "max_score": 10}}}  # a course of one more exercise
    assert "ann's scores is not graded, the course gives 10" in str(_error_of(check_graded_with, COURSE, [fewer]))


def _error_of(call, *args) -> CourseError:
    with pytest.raises(CourseError) as caught:
        call(*args)
    return caught.value


def test_the_terminal_table_says_what_the_summary_says(monkeypatch, capsys):
    """The batch's table: no score for a submission that could not be graded ("-", as the summary and the LMS files:
    it printed 0/20), and the overrides and the late penalty in columns apart (its one column added them up, where the
    summary keeps them apart: our instructor's walk-through)."""
    from grader.reports.terminal import print_class

    monkeypatch.setenv("COLUMNS", "200")
    late = {**_record("ann"), "score": 15.0, "adjustments": [
        {"kind": "override", "target": "", "points": -1.0, "reason": "x", "source": "o.csv:2"},
        {"kind": "late", "target": "", "points": -4.0, "reason": "late", "source": "course.yaml late"}]}
    print_class([late, {**_record("gus"), "status": "error: cannot grade: gus.zip is not a zip file"}], "class", "out")
    rows = [line.replace("┃", "│").split("│")[1:-1] for line in capsys.readouterr().out.splitlines()
            if line.startswith(("│", "┃"))]
    lines = {cells[0].strip(): [cell.strip() for cell in cells] for cells in rows}
    assert lines["student"][2:5] == ["score", "adjusted", "late"]
    assert lines["ann"][2:5] == ["15/20", "-1", "-4"] and lines["gus"][2] == "-"


def test_a_gradebook_of_one_assignment_has_only_its_exercises_columns(tmp_path):
    """A batch of one assignment's submissions has a column for each of its exercises only (found by our instructor's
    walk-through: every other exercise of the course was a blank column)."""
    one = {"softmax": {"score": 10.0, "max_score": 10}}
    rows = [{**_record(student, assignment="02_softmax"), "exercises": one, "score": 10.0, "max_score": 10}
            for student in ("ann", "bob")]
    publish(COURSE, tmp_path, rows, Records())
    header, *lines = _table(tmp_path / "gradebook.csv")
    assert header[header.index("max_score") + 1:header.index("late_penalty")] == ["softmax"]
    assert [line[header.index("softmax")] for line in lines] == ["10", "10"]


def test_the_exports_read_as_a_person_and_an_lms_expect(tmp_path):
    """Excel reads names with accents (a byte-order mark), Moodle gets a first and a last name from a roster's one
    name, and a person reads at most two decimals where float sums leave noise; results.json keeps full precision."""
    roster = _write(tmp_path / "roster.csv", "id,name,email\nann,Ana María Díaz,ann@x.org\nbob,Müller,bob@x.org\n")
    noisy = 20.2898 + 20.2899 + 20.2899  # 60.869600000000005, as issue 30 found in gradebook.csv
    rows = [{**_record("ann"), "score": noisy, "max_score": 100}, _record("bob", softmax=1 / 3)]
    publish(COURSE, tmp_path, rows, load_records(COURSE, roster))
    moodle = _table(tmp_path / "moodle.csv")
    assert [row[:5] for row in moodle[1:]] == [["Ana María", "Díaz", "ann", "ann@x.org", "60.87"],
                                               ["Müller", "", "bob", "bob@x.org", "10.33"]]
    assert [row[0] for row in _table(tmp_path / "canvas.csv")[2:]] == ["Ana María Díaz", "Müller"]
    header, *lines = _table(tmp_path / "gradebook.csv")
    gradebook = [dict(zip(header, line)) for line in lines]
    assert [(r["name"], r["score"], r["softmax"]) for r in gradebook] == [("Ana María Díaz", "60.87", "10"),
                                                                         ("Müller", "10.33", "0.33")]
    assert json.loads((tmp_path / "results" / "ann.json").read_text(encoding="utf-8"))["final_score"] == noisy


def test_a_submission_that_could_not_be_graded_has_no_score_in_any_export(tmp_path):
    """A corrupt zip is left out of every statistic of the summary: the gradebook, the LMS files and the summary's
    final score leave it blank (an LMS keeps what it has), until an override gives it points (its graded points and
    exercises stay blank)."""
    corrupt = {**_record("cy", softmax=0, scores=0), "status": "error: cannot grade: not a zip file"}
    publish(COURSE, tmp_path, [_record("ann"), corrupt], Records())
    header, *lines = _table(tmp_path / "gradebook.csv")
    cy = dict(zip(header, lines[1]))
    assert (cy["score"], cy["graded_score"], cy["softmax"], cy["max_score"]) == ("", "", "", "20")
    assert [row[-1] for row in _table(tmp_path / "canvas.csv")[2:]] == ["20", ""]
    assert [row[4] for row in _table(tmp_path / "moodle.csv")[1:]] == ["20", ""]
    summary = (tmp_path / "summary.html").read_text(encoding="utf-8")
    assert "<td class='status'>could not be graded</td>" in summary
    assert "cy.html'>cy</a></td><td class='num' data-value='-1'>-</td>" in summary  # its final score
    graded_by_hand = _write(tmp_path / "o.csv", "student,points,reason\ncy,12,graded by hand from the e-mailed files\n")
    publish(COURSE, tmp_path, [_record("ann"), corrupt], load_records(COURSE, overrides=graded_by_hand))
    assert [row[-1] for row in _table(tmp_path / "canvas.csv")[2:]] == ["20", "12"]
    header, *lines = _table(tmp_path / "gradebook.csv")
    cy = dict(zip(header, lines[1]))  # the override's final score; nothing graded (it showed 0s and a hash of zeros)
    assert (cy["score"], cy["graded_score"], cy["softmax"], cy["submission_sha256"]) == ("12", "", "", "")
    said = {"cy.md": "+12: graded by hand", "cy.html": "+12</td><td>graded by hand"}
    for page, override in said.items():  # the student reads the score given by hand and why, never "submit again"
        text = (tmp_path / "feedback" / page).read_text(encoding="utf-8")
        assert "12 / 20" in text and override in text, text
        assert "The grader could not grade your submission:" in text and "not a zip file" in text, text
        assert "submit again" not in text and "graded, before the adjustments" not in text, text


def test_a_penalty_that_finds_nothing_to_take_reads_as_none(tmp_path):
    """A penalty on a submission that scored nothing takes nothing: the feedback page and the gradebook say 0 (they
    said "+0" and "(+0.00)", a bonus; found by our instructor's walk-through)."""
    penalty = _write(tmp_path / "o.csv", "student,penalty,reason\nann,5,late policy\n")
    publish(COURSE, tmp_path, [_record("ann", softmax=0, scores=0)], load_records(COURSE, overrides=penalty))
    page = (tmp_path / "feedback" / "ann.md").read_text(encoding="utf-8")
    assert "- 0: late policy" in page and "+0" not in page, page
    header, *lines = _table(tmp_path / "gradebook.csv")
    assert dict(zip(header, lines[0]))["adjustments"] == "late policy (0.00)"


def test_an_exercise_override_is_said_under_its_exercise(tmp_path):
    """The feedback page says under an overridden exercise what changed its points and why, so that its heading
    and its checks add up (the heading said 0 / 10 above checks that all passed)."""
    override = _write(tmp_path / "o.csv", "student,exercise,points,reason\nann,softmax,0,copied from bob\n")
    publish(COURSE, tmp_path, [_record("ann")], load_records(COURSE, overrides=override))
    markdown = (tmp_path / "feedback" / "ann.md").read_text(encoding="utf-8")
    assert "0 / 10 points\n\n- adjusted -10: copied from bob\n" in markdown, markdown
    assert "<p class='adjusted'>adjusted -10: copied from bob</p>" in (tmp_path / "feedback" / "ann.html").read_text(
        encoding="utf-8")


def test_a_regrade_keeps_the_adjustments_and_results_json_keeps_the_graded_record(tmp_path):
    """results.json keeps the graded score and adds the adjustments (full precision) and the final score; the
    feedback page shows them (two decimals, escaped); a regrade (a new record) gets them again."""
    course, rows, records = _class(tmp_path)
    publish(course, tmp_path, rows, records)
    bob = json.loads((tmp_path / "results" / "bob.json").read_text(encoding="utf-8"))
    assert (bob["score"], bob["final_score"]) == (15.0, 13.0)
    assert [(a["kind"], a["points"]) for a in bob["adjustments"]] == [("late", -2.0)]
    page = (tmp_path / "feedback" / "ann.html").read_text(encoding="utf-8")
    assert "<td class='num'>-2</td><td>softmax: &lt;b&gt;used&lt;/b&gt; torch.softmax</td>" in page
    assert "**Score: 18 / 20**" in (tmp_path / "feedback" / "ann.md").read_text(encoding="utf-8")
    regraded = [_record("ann", softmax=9.0), *rows[1:]]  # a regrade: a new graded record, no adjustments in it
    publish(course, tmp_path, regraded, records)
    ann = json.loads((tmp_path / "results" / "ann.json").read_text(encoding="utf-8"))
    assert (ann["score"], ann["final_score"], ann["exercises"]["softmax"]["score"]) == (19.0, 17.0, 9.0)
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "results").iterdir()}
    os.utime(tmp_path / "results" / "bob.json", ns=(1, 1))
    publish(course, tmp_path, [json.loads(p.read_text()) for p in sorted((tmp_path / "results").iterdir())], records)
    assert (tmp_path / "results" / "bob.json").stat().st_mtime_ns == 1  # unchanged adjustments: not written again
    assert set(before) == {"ann.json", "bob.json", "dan.json", "eve.json"}


def test_records_given_once_are_kept_for_later_runs(tmp_path):
    course, _, _ = _class(tmp_path)
    out = tmp_path / "out"
    records, used = kept_records(course, out, roster=tmp_path / "roster.csv", overrides=tmp_path / "overrides.csv")
    assert used == [] and not (out / "records").exists()  # kept only once the reports are written
    keep_records(out, roster=tmp_path / "roster.csv", overrides=tmp_path / "overrides.csv", submitted=None)
    again, used = kept_records(course, out)
    assert [(o.student, o.penalty, o.reason) for o in again.overrides] == [("ann", 2.0, "<b>used</b> torch.softmax")]
    assert again.roster == records.roster and again.overrides[0].where == f"{out / 'records' / 'overrides.csv'}:2"
    assert used == [str(out / "records" / "roster.csv"), str(out / "records" / "overrides.csv")]
    cleared, _ = kept_records(course, out, overrides=_write(tmp_path / "none.csv", "student,points,reason\n"))
    assert cleared.overrides == ()


def test_a_class_graded_per_assignment_misses_each_assignment_apart():
    """nbgrader's layout: a roster student gets a "missing" view for each assignment of the class they lack, out of
    that assignment's points; a late policy per assignment applies to that assignment only."""
    whole = load_course(COURSE_FILE)
    due = datetime(2026, 11, 20, 23, 59, tzinfo=UTC)
    course = whole.model_copy(update={"late": Late(due={"02_softmax": due}, percent=10)})
    rows = [_record("ann", assignment="01_scores"), _record("ann", assignment="02_softmax"),
            _record("bob", assignment="02_softmax")]
    roster = {sid: Student(sid) for sid in ("ann", "bob", "cy")}
    late = Times({("ann", "02_softmax"): due + timedelta(hours=1), ("bob", None): due + timedelta(hours=1)})
    shown = class_view(course, rows, Records(roster=roster, submitted=late))
    assert [v["key"] for v in shown.rows if v["status"] == "missing"] == ["bob/01_scores", "cy/01_scores", "cy/02_softmax"]
    views = {(v["student"], v["assignment"]): v for v in shown.rows}
    assert (views["cy", "01_scores"]["status"], views["cy", "01_scores"]["max_score"]) == ("missing", 10)
    assert views["ann", "02_softmax"]["score"] == 18 and views["bob", "02_softmax"]["score"] == 18
    assert views["ann", "01_scores"]["score"] == 20  # no due date for 01_scores
    assert all(view["on_roster"] for view in shown.rows)


def test_an_instructors_strings_are_cleaned_for_each_format(tmp_path):
    """A reason with a line break, a heading, an escape sequence and markup, and a roster name that starts a formula:
    one line in the Markdown (no heading, no tag), escaped in HTML, no formula in any CSV."""
    roster = _write(tmp_path / "roster.csv", 'id,name,email\nann,"@SUM(1)\n# x",=a@x.org\n')
    overrides = _write(tmp_path / "o.csv", 'student,exercise,penalty,reason\nann,softmax,1,"late fix\n# Hacked \x1b[31m<script>"\n')
    publish(COURSE, tmp_path, [_record("ann")], load_records(COURSE, roster, overrides))
    markdown = (tmp_path / "feedback" / "ann.md").read_text(encoding="utf-8")
    assert [line for line in markdown.splitlines() if line.startswith("#")] == ["# Feedback for ann", *(
        line for line in markdown.splitlines() if line.startswith("## "))]
    assert "softmax: late fix # Hacked &lt;script&gt;" in markdown and "\x1b" not in markdown
    assert "<script>" not in (tmp_path / "feedback" / "ann.html").read_text(encoding="utf-8")
    for name in ("gradebook.csv", "canvas.csv", "moodle.csv"):
        cells = [cell for row in _table(tmp_path / name) for cell in row]
        assert not [cell for cell in cells if cell.startswith(("=", "+", "@")) or "\n" in cell], name


def test_an_email_listed_twice_on_the_roster_is_refused(tmp_path):
    """Two roster rows with one e-mail (letter case aside): an LMS import matches students by it, so one would get
    the other's grade (found by our fourth instructor walk-through: accepted without a word)."""
    path = _write(tmp_path / "roster.csv", "id,name,email\nann,Ann Lee,ann@uni.edu\nbob,Bob Ray,ANN@uni.edu\n")
    with pytest.raises(TableError) as caught:
        load_roster(path)
    assert str(caught.value) == (f"{path}:3: the e-mail 'ANN@uni.edu' is also that of 'ann' (line 2): an LMS import matches "
                                 "students by it, so one would get the other's grade")
