"""PrairieLearn: the external grader's results.json (score 0..1, one test per hidden test with its points)."""
from __future__ import annotations

from grader.points import Grade
from grader.reports.advice import overview, score_line
from grader.reports.results import check_key
from grader.text import clean

# PrairieLearn's external grader results (prairielearn.readthedocs.io, "External Grading": "Grading results").
# ``points`` and ``max_points`` at the top level are extra data, which PrairieLearn allows.
PRAIRIELEARN_SCHEMA = {
    "type": "object",
    "required": ["gradable", "score", "points", "max_points", "message", "output", "tests"],
    "properties": {
        "gradable": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "points": {"type": "number", "minimum": 0},
        "max_points": {"type": "number", "minimum": 0},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "format_errors": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "images": {"type": "array"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "description", "points", "max_points", "message", "output"],
            "properties": {
                "name": {"type": "string"}, "description": {"type": "string"},
                "points": {"type": "number", "minimum": 0}, "max_points": {"type": "number", "minimum": 0},
                "message": {"type": "string"}, "output": {"type": "string"}, "images": {"type": "array"},
            },
            "additionalProperties": False}},
    },
}


def prairielearn(grade: Grade, *, gradable: bool = True, message: str = "") -> dict:
    """PrairieLearn's results.json: ``score`` in 0..1, one test per hidden test with its points and feedback.

    ``gradable=False`` (the submission could not be graded at all) puts ``message`` in ``format_errors`` too.
    """
    tests = [{"name": check_key(exercise.module, test.doc), "description": clean(exercise.title),
              "points": test.score, "max_points": test.max_score, "message": clean(test.feedback), "output": ""}
             for exercise in grade.exercises for test in exercise.tests if test.status != "skipped"]
    message = clean(message)
    data = {"gradable": gradable, "score": round(grade.score / grade.max_score, 6) if grade.max_score else 0.0,
            "points": grade.score, "max_points": grade.max_score,
            "message": message or score_line(grade), "output": overview(grade), "tests": tests}
    if not gradable:
        data["format_errors"] = [message]
    return data
