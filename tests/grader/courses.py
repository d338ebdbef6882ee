"""Variants of the project's course for the tests: another course.yaml, the same files.

A course's files are found beside its course.yaml, so a variant (shorter limits, say) is written into a folder of
its own holding links to the course's solutions/, exercises/ and nbgrader/, and a tests/course/ of links to each
exercise's folder and shared file (so that a test can add an exercise of its own beside them).
"""
from __future__ import annotations

from pathlib import Path

from grader.course import COURSE_FILE, EXERCISES_FOLDER

LINKED = ("solutions", "exercises", "nbgrader")


def course_variant(folder: Path, text: str) -> Path:
    """Write ``text`` as ``folder/course.yaml`` beside links to the project course's files (made once per folder);
    return its path."""
    suites = folder / EXERCISES_FOLDER
    if not suites.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        for name in LINKED:
            (folder / name).symlink_to(COURSE_FILE.parent / name, target_is_directory=True)
        suites.mkdir(parents=True)
        for entry in (COURSE_FILE.parent / EXERCISES_FOLDER).iterdir():
            if entry.name != "__pycache__":
                (suites / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    path = folder / "course.yaml"
    path.write_text(text, encoding="utf-8")
    return path
