"""What a rerun of a batch goes by: fingerprints that change whenever a grade could (the grading material's, each
submission's raw bytes, hashed within the intake's caps and parsed nowhere), and the files each submission's intake
took, kept under its fingerprint in ``OUT/taken/<key>.json`` (for the similarity report, with a zip's newest entry),
so that a rerun reads no submission it read before."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import NamedTuple

import yaml

from grader import ROOT, __version__
from grader.course import EXERCISES_FOLDER, Course
from grader.intake.submission import STAMP
from grader.intake.walk import raw_digest
from grader.reports.files import write_json

# What decides a grade besides course.yaml, in the course root: the references, and the exercises' folders (suites,
# hints); and the grader's own code (its suites' machinery, points, intake, worker).
MATERIAL = ("solutions", EXERCISES_FOLDER)
# course.yaml's sections that only the reports read (the late policy is applied when they are written): a change to
# them regrades nobody (a new late percent regraded the whole class: our instructor's walk-through).
REPORTS_ONLY = ("late",)
TAKEN = "taken"  # out/taken/<key>.json: the files intake took from a submission, under its fingerprint


def material_fingerprint(course_file: Path) -> str:
    """Changes whenever anything that decides a grade changes: course.yaml (but its ``REPORTS_ONLY`` sections), the
    course's references, suites and hints, the grader's code."""
    course_file = Path(course_file).resolve()
    root = course_file.parent
    hasher = hashlib.sha256(__version__.encode())
    settings = yaml.safe_load(course_file.read_text(encoding="utf-8"))
    if isinstance(settings, dict):
        settings = {key: value for key, value in settings.items() if key not in REPORTS_ONLY}
    hasher.update(json.dumps(settings, sort_keys=True, default=str).encode())
    files = [(root, p) for d in MATERIAL for p in sorted((root / d).rglob("*.py"))]
    files += [(ROOT, p) for p in sorted((ROOT / "grader").rglob("*.py"))]
    for top, path in files:
        hasher.update(str(path.relative_to(top)).encode())
        hasher.update(path.read_bytes())
    return hasher.hexdigest()


def submission_fingerprint(path: Path, problem: str | None, course: Course, material: str) -> str:
    """Changes whenever the grading ``material`` or the submission's raw bytes change (``raw_digest``: what intake may
    read of it, read within the intake's caps of ``course``, the one it is graded on, and parsed nowhere), or the
    ``problem`` found before reading it."""
    if problem:
        return f"{material}:{hashlib.sha256(problem.encode()).hexdigest()}"
    return f"{material}:{raw_digest(path, course.grading.intake, course)}"


class Taken(NamedTuple):
    """What intake took from a submission, kept under the fingerprint it was read at: module -> source, and a zip's
    newest entry (``Read.stamp``)."""

    fingerprint: str
    files: dict[str, str]
    stamp: str | None


def load_taken(out: Path, keys: list[str], course: Course) -> dict[str, Taken]:
    """Entry key -> what an earlier run's intake took from it (``out/taken/<key>.json``); a file that is missing,
    unreadable or not of that shape is left out, so its entry is graded again."""
    taken = {}
    for key in keys:
        try:
            data = json.loads((out / TAKEN / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (isinstance(data, dict) and set(data) == set(Taken._fields) and isinstance(data["fingerprint"], str)
                and isinstance(data["files"], dict) and set(data["files"]) <= set(course.modules)
                and all(isinstance(text, str) for text in data["files"].values())
                and (data["stamp"] is None or isinstance(data["stamp"], str) and STAMP.fullmatch(data["stamp"]))):
            taken[key] = Taken(**data)
    return taken


def keep_taken(out: Path, key: str, taken: Taken) -> None:
    """Write ``out/taken/<key>.json`` (atomically)."""
    write_json(taken._asdict(), out / TAKEN / f"{key}.json")
