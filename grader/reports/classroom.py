"""GitHub Classroom: the autograding result, one test per exercise scored with its points.

``classroom_output`` is the ``result`` output of a runner step (base64 JSON), which Classroom's grading reporter reads.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from grader.points import Grade
from grader.reports.advice import complete, what_to_fix
from grader.text import clean

# GitHub Classroom: the JSON a runner step encodes in base64 as its output ``result``, read by
# classroom-resources/autograding-grading-reporter (the command, io and python graders write the same shape).
# The reporter sums the tests' ``score`` for the points it sends to Classroom, and fails its step when
# ``status`` is "fail" or "error".
CLASSROOM_SCHEMA = {
    "type": "object",
    "required": ["version", "status", "max_score", "tests"],
    "properties": {
        "version": {"const": 1},
        "status": {"enum": ["pass", "fail", "error"]},
        "max_score": {"type": "number", "minimum": 0},
        "message": {"type": "string"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "status", "score", "message", "test_code", "filename", "line_no", "duration"],
            "properties": {
                "name": {"type": "string"}, "status": {"enum": ["pass", "fail", "error"]},
                "score": {"type": "number", "minimum": 0}, "message": {"type": "string"},
                "test_code": {"type": "string"}, "filename": {"type": "string"},
                "line_no": {"type": "integer", "minimum": 0}, "duration": {"type": "number", "minimum": 0},
            },
            "additionalProperties": False}},
    },
    "additionalProperties": False,
}


def classroom(grade: Grade, *, files: Mapping[str, tuple[str, int]] | None = None, status: str | None = None,
              message: str = "") -> dict:
    """GitHub Classroom's autograding result: one test per exercise, scored with its points.

    ``files`` maps an exercise to the (path, line) its feedback points at (default ``exercises/<module>.py``, 0);
    ``status`` defaults to "pass" when every check passed and "fail" otherwise ("error": it could not be graded).
    """
    files = files or {}
    tests = []
    for number, exercise in enumerate(grade.exercises, 1):
        path, line = files.get(exercise.module, (f"exercises/{exercise.module}.py", 0))
        full = complete(exercise)
        tests.append({"name": f"{number}. {clean(exercise.title)} ({exercise.module})", "status": "pass" if full else "fail",
                      "score": exercise.score, "message": "" if full else clean(what_to_fix(exercise)),
                      "test_code": "", "filename": path, "line_no": line, "duration": 0})
    data = {"version": 1, "status": status or ("pass" if all(map(complete, grade.exercises)) else "fail"),
            "max_score": grade.max_score, "tests": tests}
    if message:
        data["message"] = clean(message)
    return data


def classroom_output(data: dict) -> str:
    """The value of the runner step's ``result`` output: base64 of the compact JSON."""
    return base64.b64encode(json.dumps(data, separators=(",", ":")).encode()).decode("ascii")
