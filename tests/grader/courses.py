"""Variants of the project's course for the tests: another course.yaml, the same files.

A course's files are found beside its course.yaml, so a variant (shorter limits, say) is written into a folder of
its own holding links to the course's solutions/, exercises/ and tests/.
"""
from __future__ import annotations

from pathlib import Path

from grader.course import COURSE_FILE

LINKED = ("solutions", "exercises", "tests", "lessons", "nbgrader")


def course_variant(folder: Path, text: str) -> Path:
    """Write ``text`` as ``folder/course.yaml`` beside links to the project course's files; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        (folder / name).symlink_to(COURSE_FILE.parent / name, target_is_directory=True)
    path = folder / "course.yaml"
    path.write_text(text, encoding="utf-8")
    return path
