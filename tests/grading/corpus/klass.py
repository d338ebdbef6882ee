"""A class for the reports' tests and the docs' screenshots: correct, buggy, missing and ungradable submissions, in
folders, zips and a notebook, with the instructor's records beside them.

``build_class(target)`` writes one entry per student under ``target`` (a folder, a .zip or a .ipynb):
the three examples/submissions (ada: correct; ben: classic bugs and missing files; cy: a syntax error, an endless
loop, a hard-coded answer), three students sharing one softmax misconception (it normalizes the last dim whatever
``dim`` says) and two other buggy ones, a correct one whose id is HTML, an empty folder, a corrupt zip, a filled
04_qkv handout notebook handed in alone (``ivan.ipynb``), the handout's stubs untouched (kim) and a copy of ada's
files with every local name renamed and the code reordered (max).

``grade_class(root)`` builds it under ``root`` with its records and a course.yaml with a late policy and grades it
(``grader.batch.run_batch``), for the browser's tests and the docs' screenshots. ``write_records(folder)`` writes the
instructor's files for it: a roster (everyone but ada, and zoe, who handed in
nothing), overrides (one by exercise, one on the course record named ``course``, one on a whole submission without
an assignment column) and the submission times of all who handed something in (dee two days late, ben half an hour
late, the others on time), for the late policy of ``courses.late_course``.
"""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

from disguise import disguise
from variants import VARIANTS

ROOT = Path(__file__).resolve().parents[3]
HOSTILE_ID = "<img src=x onerror=alert(1)>&amp;"  # a student id a page must show as text
BUGS = {"dee": "buggy/softmax/last_dim_only", "eli": "buggy/softmax/last_dim_only",
        "fay": "buggy/softmax/last_dim_only", "gus": "buggy/softmax/temperature_multiplied",
        "hal": "buggy/scores/attention_scores_swapped"}
UNGRADABLE = {"ivy": "an empty folder", "jon.zip": "a corrupt zip"}
NOTEBOOK = ("ivan", "04_qkv")  # a student who hands in one filled handout notebook, and its assignment
STUBS = "kim"  # the handout's stubs, untouched
COPY = ("max", "ada")  # the copier and whose files they copied
GRADED = ["ada", "ben", "cy", *BUGS, HOSTILE_ID, NOTEBOOK[0], STUBS, COPY[0]]
NOT_ON_ROSTER, MISSING = "ada", "zoe"
ON_TIME, LATE = "2026-11-20T21:00:00+01:00", {"dee": "2026-11-22T12:00:00+01:00", "ben": "2026-11-21T00:30:00+01:00"}
OVERRIDES = [("ada", "", "softmax", "", "", "2.5", "<b>used</b> torch.softmax"),
             ("cy", "course", "causal", "", "5", "", "oral exam: explained the causal mask"),
             ("hal", "", "", "", "", "4", "handed in the wrong file first")]


def build_class(target: Path) -> Path:
    """The class's submissions under ``target`` (created); returns ``target``."""
    target.mkdir(parents=True)
    for example in sorted((ROOT / "examples" / "submissions").iterdir()):
        shutil.copytree(example, target / example.name, ignore=shutil.ignore_patterns("__pycache__"))
    by_id = {variant.id: variant for variant in VARIANTS}
    for student, variant_id in BUGS.items():
        variant = by_id[variant_id]
        folder = _references(target / student)
        (folder / f"{variant.module}.py").write_text(variant.source(), encoding="utf-8")
    _references(target / HOSTILE_ID)
    (target / "ivy").mkdir()
    (target / "jon.zip").write_bytes(b"PK\x03\x04 this is not a zip archive")
    student, assignment = NOTEBOOK
    shutil.copy(ROOT / "nbgrader" / "source" / assignment / f"{assignment}.ipynb", target / f"{student}.ipynb")
    shutil.copytree(ROOT / "exercises", target / STUBS, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    copier, source = COPY
    (target / copier).mkdir()
    for path in sorted((target / source).glob("*.py")):
        (target / copier / path.name).write_text(disguise(path.read_text(encoding="utf-8"), copier), encoding="utf-8")
    return target


def grade_class(root: Path) -> Path:
    """Build the class, its records and its course (``courses.late_course``) under ``root``, grade it with
    the records applied, and return the output folder (``root/out``)."""
    from courses import late_course

    from grader.batch import run_batch
    from grader.course import load_course
    from grader.records.adjust import load_records

    course_file = late_course(root / "course")
    records = load_records(load_course(course_file), **write_records(root / "records"))
    run_batch(build_class(root / "class"), root / "out", course_file=course_file, jobs=2, records=records)
    return root / "out"


def write_records(folder: Path) -> dict[str, Path]:
    """The roster, overrides and submission times of the class in ``folder`` (created); returns their paths by kind
    (``roster``, ``overrides``, ``submitted``), as ``records.adjust.load_records`` takes them."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {"ben": "Benjamín Díaz", "dee": "Dee Müller", "kim": "Kim Ng"}
    students = sorted({*(s for s in GRADED if s != NOT_ON_ROSTER), *(u.removesuffix(".zip") for u in UNGRADABLE),
                       MISSING})
    paths = {kind: folder / f"{kind}.csv" for kind in ("roster", "overrides", "submitted")}
    _write_csv(paths["roster"], [["id", "name", "email"],
                                 *([s, names.get(s, s.title()), f"{s}@example.org"] for s in students)])
    _write_csv(paths["overrides"], [["student", "assignment", "exercise", "check", "points", "penalty", "reason"],
                                    *OVERRIDES])
    handed_in = sorted({*GRADED, *(u.removesuffix(".zip") for u in UNGRADABLE)})
    _write_csv(paths["submitted"], [["student", "submitted_at"], *([s, LATE.get(s, ON_TIME)] for s in handed_in)])
    return paths


def _write_csv(path: Path, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def _references(folder: Path) -> Path:
    folder.mkdir()
    for path in sorted((ROOT / "solutions").glob("*.py")):
        shutil.copy(path, folder / path.name)
    return folder
