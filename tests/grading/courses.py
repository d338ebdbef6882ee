"""The courses of the project's tests, in one place.

* The live course (course.yaml): ``MODULES`` and ``TOTAL``, for the tests that grade it; they follow the course when
  an exercise is added or removed.
* ``sample_course()``: a frozen course of eight exercises and 100 points, for the tests of formats and reports, whose
  figures ("Score: 60/100") must not change when course.yaml does; it grades nothing, so it needs no files.
* ``course_variant``: another course.yaml beside the live course's files (shorter limits, say): a folder of its own
  holding links to the course's solutions/, exercises/ and nbgrader/, and a tests/course/ of links to each
  exercise's folder and shared file (so that a test can add an exercise of its own beside them).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from grader.course import COURSE_FILE, EXERCISES_FOLDER, Course, course

MODULES = course().modules  # the live course's exercises, in order
TOTAL = course().total_points

SAMPLE_COURSE = """\
title: Self-attention in PyTorch
total_points: 100
seed: 20261121
exercises:
- {module: scores, title: Dot-product scores, points: 10}
- {module: softmax, title: Softmax, points: 10}
- {module: context, title: Attention without trainable weights, points: 10}
- {module: qkv, title: 'Query, key and value projections', points: 20}
- {module: quiz, title: The decoder-attention quiz, points: 10}
- {module: dictionary, title: A dictionary made of attention, points: 10}
- {module: causal, title: Causal attention, points: 15}
- {module: multihead, title: Multi-head attention, points: 15}
grading:
  tolerances:
    float64: {rtol: 1.0e-07, atol: 1.0e-09}
    float32: {rtol: 0.0001, atol: 1.0e-05}
    float16: {rtol: 0.01, atol: 0.002}
    bfloat16: {rtol: 0.02, atol: 0.01}
  devices: [cpu, cuda]
  limits: {call_seconds: 2, import_seconds: 5, submission_seconds: 300, memory_mb: 4096, cpu_seconds: 120, processes: 64,
    file_size_mb: 16, open_files: 256, tmp_mb: 64, replies_mb: 16}
  intake: {max_file_mb: 1, max_total_mb: 20, max_files: 500, seconds: 10, memory_mb: 512}
"""


def sample_course() -> Course:
    """The frozen sample course (no files are read: it describes grades, it does not grade)."""
    return Course.model_validate(yaml.safe_load(SAMPLE_COURSE))

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


# A day late loses 10% (at most 30%) after 10 minutes of grace, due 2026-11-20 23:59 in Berlin.
LATE_POLICY = """
late:
  due: {course: "2026-11-20T23:59:00+01:00"}
  percent: 10
  per: day
  cap_percent: 30
  grace_minutes: 10
  timezone: Europe/Berlin
"""


def late_course(folder: Path) -> Path:
    """The project's course.yaml with ``LATE_POLICY``, as ``course_variant`` writes it in ``folder``."""
    return course_variant(folder, COURSE_FILE.read_text(encoding="utf-8") + LATE_POLICY)
