"""A class's entries: what ``grader batch`` and ``grader similarity`` find in a folder of submissions (or a list of
paths), one per student, or per student and assignment in a class of notebooks alone, and the course each is graded
on. Nothing of a submission is read here but the names of its folder's entries."""
from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from grader.course import Course
from grader.intake import IntakeError, IntakeFault
from grader.intake.notebooks import assignment_notebook
from grader.intake.submission import Read, read_submission
from grader.records.kept import KEPT, KEPT_COURSE
from grader.text import MAX_NAME, clean, student_id

SUBMISSION_SUFFIXES = (".zip", ".ipynb")
LOCK = ".lock"  # OUT/.lock: held while a batch (or a collect) writes OUT


@dataclass(frozen=True)
class Entry:
    student: str
    path: Path
    assignment: str | None = None  # graded as this assignment (None: as the batch's course)
    problem: str | None = None  # why it cannot be graded, known before reading it (two submissions for one student)
    whole_course: bool = False  # a notebook graded on the batch's whole course, not as the assignment it carries

    @property
    def key(self) -> str:
        """Its results file, relative to results/ and without .json: ``<student>`` or ``<student>/<assignment>``."""
        return self.student if self.assignment is None else f"{self.student}/{self.assignment}"


class BatchError(ValueError):
    """The batch's input cannot be read (one line, for the instructor)."""


def submission_name(path: Path) -> str:
    """The student a submission at ``path`` is of: its name less a .zip or .ipynb suffix (``_stem``), as
    ``text.student_id`` makes an id of it (``discover`` leaves out names that start with a dot)."""
    return student_id(_stem(path))


def _stem(path: Path) -> str:
    return path.name.removesuffix(path.suffix) if path.suffix.lower() in SUBMISSION_SUFFIXES else path.name


def discover(source: str | os.PathLike, course: Course, assignment: str | None = None) -> list[Entry]:
    """The submissions of a class: the entries of a folder (subfolders, .zip, .ipynb; the name is the student id),
    or a text file listing one path per line.

    A class that is mostly notebooks (more than half of its entries) is graded per assignment: a student's folder
    that holds folders named after the course's assignments (nbgrader's ``submitted/<student>/<assignment>/``) gives
    one entry per assignment, graded as that assignment, and a .ipynb is graded as the assignment it carries; any
    other entry there (a folder of files, an empty folder, a zip) is refused on its own, saying so. Any other class
    is graded on the whole course, one entry per student: each entry, a notebook or a folder of notebooks included,
    is that student's attempt at the course, out of its points, so that the class is one row per student in every
    report (``Entry.whole_course``). What most entries are decides, so that no one student's entry changes how
    the others are graded (a class split evenly is graded on the course, as before). An ``assignment`` named by the
    instructor decides instead: no entry is refused for its shape (each is graded as that assignment)."""
    source = Path(source)
    if source.is_file():
        lines = enumerate((line.strip() for line in source.read_text(encoding="utf-8").splitlines()), 1)
        named = [(n, line) for n, line in lines if line and not line.startswith("#")]
        missing = next(((n, line) for n, line in named if not os.path.lexists(source.parent / line)), None)
        if missing is not None:  # the instructor's typo, not a student's row (walk-through 7)
            raise BatchError(f"{source}:{missing[0]}: {clean(missing[1], MAX_NAME)} does not exist")
        paths = [source.parent / line for _, line in named]
    elif source.is_dir():
        paths = sorted(p for p in source.iterdir() if not p.name.startswith(".")
                       and (p.is_dir() or p.suffix.lower() in SUBMISSION_SUFFIXES))
    else:
        raise BatchError(f"{source} does not exist")
    shaped = []
    for path in paths:
        name = submission_name(path)
        shaped.append((name, path, _nbgrader_entries(name, path, course)))
    def is_notebook(path: Path, notebooks: list[Entry]) -> bool:
        return bool(notebooks) or path.suffix.lower() == ".ipynb"

    by_assignment = 2 * sum(is_notebook(path, notebooks) for _, path, notebooks in shaped) > len(shaped)
    found: dict[str, list[Entry]] = {}
    for name, path, notebooks in shaped:
        if assignment is None and not by_assignment:
            entries = [Entry(name, path, whole_course=True)]
        elif assignment is not None:
            entries = _as_assignment(name, path, notebooks, course, assignment)
        elif is_notebook(path, notebooks) or not path.exists():  # intake says it is not there
            entries = notebooks or [Entry(name, path)]
        else:
            entries = [Entry(name, path, problem=_not_a_notebook(path, course))]
        for entry in entries:
            found.setdefault(entry.key, []).append(entry)
    base = source if source.is_dir() else source.parent
    return [same[0] if len(same) == 1 else _several(same, base) for same in found.values()]


def _several(entries: list[Entry], base: Path) -> Entry:
    """The one entry of a student who handed in several submissions (``bob/`` and ``bob.zip``): not graded, and
    saying which (their paths relative to ``base``, a folder with a trailing ``/``), and how their names differ where
    they do beyond a suffix (red team 19: a folder named after a classmate's id; 'zoë' composed and decomposed)."""
    shown = [clean(os.path.relpath(e.path, base), MAX_NAME) + ("/" if e.path.is_dir() else "") for e in entries]
    count = "two" if len(entries) == 2 else str(len(entries))
    stems = sorted({_stem(e.path) for e in entries})
    differ = (f" (their names differ: {', '.join(clean(ascii(stem), MAX_NAME) for stem in stems)})"
              if len(stems) > 1 else "")
    problem = (f"could not be graded: {count} submissions for {entries[0].key}: {', '.join(shown[:-1])} and {shown[-1]}"
               f"{differ}; keep one")
    return replace(entries[0], problem=problem)


def _not_a_notebook(path: Path, course: Course) -> str:
    """Why an entry that is no notebook is refused in a class graded per assignment."""
    shown, names = clean(path.name, MAX_NAME), list(course.assignment_modules())
    named = ", ".join(names if len(names) <= 3 else [names[0], "…", names[-1]])
    what = f"{shown}/ holds no assignment folder of the course ({named})" if path.is_dir() else f"{shown} is not a notebook"
    return (f"could not be graded: {what}, and this class is graded per assignment (most of its entries are"
            " notebooks): hand in each notebook, in nbgrader's submitted/<student>/<assignment>/ or as one .ipynb")


def _as_assignment(student: str, path: Path, notebooks: list[Entry], course: Course, assignment: str) -> list[Entry]:
    """A student's entries where the batch grades one ``assignment``: its nbgrader folder; else, where the student's
    assignment folders are others that hold exercises of it (the handout's notebooks, a folder each, in a course
    whose assignments group them), the student's whole folder, which the batch grades as ``assignment``; else their
    other assignments, which the batch leaves out (found by our sixth instructor walk-through: a student handing in
    01_scores/ ... 08_alibi/ was left out of `--assignment part1` without a word)."""
    if not notebooks or any(entry.assignment == assignment for entry in notebooks):
        return notebooks or [Entry(student, path)]
    modules = course.assignment_modules()
    if any(set(modules[entry.assignment]) & set(modules[assignment]) for entry in notebooks):
        return [Entry(student, path)]
    return notebooks


def _nbgrader_entries(student: str, folder: Path, course: Course) -> list[Entry]:
    """One entry per assignment folder of the course in an nbgrader student folder, graded on what it holds (its
    notebook, or the assignment's files). The folder's name, not what a student put in it, makes it one: nbgrader
    names it, so no student turns the class into a class of the course by handing in a file for a notebook."""
    entries = []
    try:
        if folder.is_symlink() or not folder.is_dir():
            return []
        for name in course.assignment_modules():
            assignment = folder / name
            if assignment.is_dir() and not assignment.is_symlink():
                entries.append(Entry(student, assignment_notebook(assignment) or assignment, name))
    except OSError:  # a folder the grader may not read (a student's mode 000): intake refuses it, saying why
        return []
    return entries


def read_entry(entry: Entry, course: Course) -> Read | None:
    """The entry's exercise files as intake reads them (in a bounded child), or None when they cannot be read (for
    ``grader similarity``, which leaves it out)."""
    try:
        return read_submission(entry.path, course.grading.intake, course)
    except (IntakeError, IntakeFault):
        return None


def entry_course(course: Course, entry: Entry) -> Course:
    """The course an entry is graded on: its assignment's, else the batch's."""
    return course.assignment(entry.assignment) if entry.assignment else course


@contextmanager
def hold_out(out: Path) -> Iterator[None]:
    """While the block runs, the lock on ``out`` (``flock`` on ``out/.lock``): one batch writes a class's folder at a
    time (BatchError when another holds it; two at once broke each other's staging), freed whatever way it ends."""
    path = out / LOCK
    try:  # never through a link, never blocked by a FIFO: a regular file, or a one-line refusal (red team 18)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise BatchError(f"{path} cannot be the batch's lock ({error.strerror}): remove it") from None
    with os.fdopen(fd, "rb") as lock:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BatchError(f"{path} cannot be the batch's lock (not a regular file): remove it")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BatchError(f"another grader batch is writing to {out}: wait for it to end, or choose another "
                             "--out") from None
        yield


def check_class(source: Path, out: Path, entries: list[Entry], course: Course) -> None:
    """A class to grade (BatchError, one line, before any work): ``out`` is not inside its folder (its reports would be
    graded as a student's), it is no batch's output (walk-through 8: its folders were graded as four students) and no
    student's submission or checkout (its folders graded as students), and it holds at least one submission."""
    if source.is_dir() and out.resolve().is_relative_to(source.resolve()):
        raise BatchError(f"--out {out} is inside the class's folder {source}: the reports would be graded as a "
                         "student's submission on the next run; write them outside it")
    kept = next((name for name in (LOCK, f"{KEPT}/{KEPT_COURSE}") if (source / name).is_file()), None)
    if source.is_dir() and kept:  # its lock is there from a batch's start (review 12), its course once it ended
        raise BatchError(f"{source} is a batch's output folder (it holds {kept}), not a class's: give the class's "
                         "folder of submissions, or run `grader gradebook` on this one to write its reports again")
    if source.is_dir() and any((folder / f"{module}.py").is_file() for module in course.modules
                               for folder in (source, source / "exercises")):
        raise BatchError(f"{source} holds exercise files, as one student's submission (or checkout) does, not a "
                         "class's: give the class's folder (a folder, .zip or .ipynb per student), or grade this one "
                         "with `grader grade`")
    if not entries:
        raise BatchError(f"{source} holds no submissions (a folder, .zip or .ipynb per student, or a text file "
                         "listing their paths)")
