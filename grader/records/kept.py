"""What a class's output folder keeps of the instructor's files (the roster, overrides, submission times and
extensions last given, in ``out/records/``) and of the course it was graded with (``out/records/course.txt``), so
that a later ``batch`` or ``gradebook`` naming none of them uses the same."""
from __future__ import annotations

import os
from dataclasses import astuple, replace
from pathlib import Path

from grader.course import COURSE_FILE, Course, CourseError
from grader.records.adjust import KEPT, Records, load_records
from grader.records.late import load_extensions, load_submitted
from grader.records.overrides import load_overrides
from grader.records.table import TableError
from grader.reports.files import write_atomic

KEPT_COURSE = "course.txt"  # out/records/course.txt: the course.yaml the class was graded with, from out


def kept_records(course: Course, out: str | Path, roster: str | Path | None = None, overrides: str | Path | None = None,
                 submitted: str | Path | None = None, extensions: str | Path | None = None) -> tuple[Records, list[str]]:
    """The records for a class's output folder: each file given, else the copy ``keep_records`` kept of its kind
    in ``out/records/`` by an earlier run (so a regrade keeps the overrides without naming them again; a file of
    only its header line clears them). Returns the records and the kept copies used."""
    given = {"roster": roster, "overrides": overrides, "submitted": submitted, "extensions": extensions}
    kept = {kind: Path(out) / KEPT / f"{kind}.csv" for kind in given}
    paths = {kind: given[kind] or (kept[kind] if kept[kind].is_file() else None) for kind in given}
    return load_records(course, **paths), [str(kept[kind]) for kind in given if given[kind] is None and paths[kind]]


def replaced_rows(course: Course, out: str | Path, **given: str | Path | None) -> list[str]:
    """A note for each file given (``overrides``, ``extensions``, ``submitted``) that replaces the one kept in
    ``out/records/`` by an earlier run without some of its rows (compared as read: columns in any order, a reason
    added; an extension or a time by its student and assignment, a new date being no row dropped): they no longer
    apply (a file of one new override dropped every earlier one without a word: our sixth instructor walk-through; a
    file of one student's time, every other student's late penalty: the seventh).
    A file that does not load says nothing here: loading it says why."""
    readers = {"overrides": lambda path: [(astuple(replace(o, where="")), o.where)
                                          for o in load_overrides(path, course)],
               "extensions": lambda path: [(key, e.where) for key, e in load_extensions(path, course).items()],
               "submitted": lambda path: [(key, times.where[key]) for times in [load_submitted(path, course)]
                                          for key in times]}
    notes = []
    for kind, path in given.items():
        kept = Path(out) / KEPT / f"{kind}.csv"
        if path is None or not kept.is_file() or Path(path).resolve() == kept.resolve():
            continue
        try:
            new = {row for row, _ in readers[kind](path)}
            gone = [where for row, where in readers[kind](kept) if row not in new]
        except TableError:
            continue
        if gone:
            notes.append(f"{path} replaces {kept} (kept from an earlier run): {len(gone)} of its rows are not in it "
                         f"and no longer apply ({', '.join(gone[:5])}{' ...' if len(gone) > 5 else ''}); add them to "
                         f"{path} to keep them")
    return notes


def class_course(out: str | Path, given: str | Path | None) -> tuple[Path, bool]:
    """The course.yaml of a class's output folder, and whether it is the one kept there: ``given`` (``--course``),
    else the one an earlier run of ``out`` was graded with (``keep_course``), else the project's. A ``given`` course
    other than the kept one is refused (``CourseError``): a class's records are of one course, and a re-export or a
    rerun without ``--course`` took the project's course instead, its late policy (penalties vanished) and points
    (found by our instructor's walk-through)."""
    kept_file = Path(out) / KEPT / KEPT_COURSE
    kept = _kept_course(out, kept_file) if kept_file.is_file() else None
    if given is not None:
        chosen = Path(given).resolve()
        if not chosen.is_file():  # a typo: said as such, not as a course other than the kept one
            raise CourseError(f"{given}: cannot read: no such file")
        if kept is not None and kept != chosen and kept.is_file():
            raise CourseError(f"{out} was graded with {kept}, not {chosen}: give --course {kept} (or another --out; "
                              f"to move this class to the other course, remove {kept_file})")
        return chosen, False
    if kept is None:
        return COURSE_FILE, False
    if not kept.is_file():
        raise CourseError(f"{out} was graded with {kept}, which is gone: give --course (kept in {kept_file})")
    return kept, True


def _kept_course(out: str | Path, kept_file: Path) -> Path:
    """The course.yaml ``keep_course`` noted: where it lies from ``out`` (a class moved with its course), else where
    it was (a class copied alone), else the last of them (for the error); where both are there and say different
    things (a class copied beside another course), neither is taken for it (``CourseError``)."""
    relative, *recorded = kept_file.read_text(encoding="utf-8").splitlines() or [""]
    places = [(Path(out) / relative.strip()).resolve(), *(Path(line.strip()) for line in recorded[:1]
                                                          if Path(line.strip()).is_absolute())]
    found = [place for place in places if place.is_file()]
    if len(found) == 2 and found[0] != found[1] and found[0].read_bytes() != found[1].read_bytes():
        raise CourseError(f"{out} was graded with {found[1]}, and {found[0]} lies where that was from {out}: give "
                          "--course the one to use")
    return found[0] if found else places[-1]


def keep_course(out: str | Path, course_file: str | Path) -> None:
    """Keep the path of the course.yaml ``out``'s class was graded with (``class_course``): from ``out`` (a class
    copied or moved with its course keeps it), then as it is (a class copied or moved alone)."""
    course_file = Path(course_file).resolve()
    write_atomic(f"{os.path.relpath(course_file, Path(out).resolve())}\n{course_file}\n", Path(out) / KEPT / KEPT_COURSE)


def keep_records(out: str | Path, **given: str | Path | None) -> None:
    """Keep a copy of each file given (``roster``, ``overrides``, ``submitted``, ``extensions``) in ``out/records/``,
    once the reports were written with it."""
    for kind, path in given.items():
        target = Path(out) / KEPT / f"{kind}.csv"
        if path is not None and Path(path).resolve() != target.resolve():
            write_atomic(Path(path).read_bytes(), target)
