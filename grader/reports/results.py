"""results.json: Gradescope's format plus a few fields of ours, each test with its visibility from course.yaml.

``RESULTS_SCHEMA`` is what ``results`` writes; ``GRADESCOPE_SCHEMA`` is Gradescope's own format, which Gradescope
reads (the fields of ours, ``OUR_RESULTS_FIELDS``, it stores and ignores). Batch keeps one per student, `grader grade`
and `grader ci --results` write one, and the Gradescope templates hand it to Gradescope.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from grader import __version__
from grader.course import VISIBILITIES
from grader.points import Grade, TestScore
from grader.reports.advice import overview
from grader.text import clean

# The results.json this grader writes: Gradescope's format plus the fields marked (ours).
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["score", "max_score", "execution_time", "output", "tests", "exercises", "grader_version", "device",
                 "submission_sha256"],
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "max_score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "visibility": {"enum": list(VISIBILITIES)},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "score", "max_score", "status", "output", "visibility"],
            "properties": {
                "name": {"type": "string"}, "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]}, "output": {"type": "string"},
                "visibility": {"enum": list(VISIBILITIES)},
                "tags": {"type": "array", "items": {"type": "string"}},
            }}},
        "exercises": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["score", "max_score"],
            "properties": {"score": {"type": "number"}, "max_score": {"type": "number"},
                           "problem": {"type": "string"},  # (ours): why the whole exercise scored nothing, if so
                           "stubs": {"type": "array", "items": {"type": "string"}}}}},  # (ours): stubs left, in order
        "grader_version": {"type": "string"},  # (ours)
        "device": {"type": "string"},  # (ours)
        "submission_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},  # (ours)
        "notes": {"type": "array", "items": {"type": "string"}},  # (ours): about the submission as a whole
    },
}


def check_key(module: str, doc: str) -> str:
    """A check's name as the results give it (and an override's exercise and check columns name it): its exercise,
    then its docstring's line."""
    return f"{module}: {clean(doc)}"


def _node_glob(pattern: str) -> re.Pattern:
    """A glob over node ids: ``*`` and ``?`` are wildcards, everything else (brackets too) is literal."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def visibility_of(test: TestScore, rules: Mapping[str, str] | None = None) -> str:
    """Gradescope's visibility of one test under course.yaml's ``visibility`` rules.

    A rule's key is a glob over the test's node id in the suites (``test_softmax.py::test_large_*``,
    ``*[float16]``: only ``*`` and ``?`` are wildcards; the first that matches wins), else the test's
    exercise (its module), else ``default``;
    without rules every test is ``visible``.
    """
    rules = rules or {}
    for key, value in rules.items():
        if key != "default" and key != test.exercise and _node_glob(key).fullmatch(test.name):
            return value
    return rules.get(test.exercise, rules.get("default", "visible"))


def results(grade: Grade, *, execution_time: float, device: str, sha256: str,
            visibility: Mapping[str, str] | None = None, notes: Sequence[str] = ()) -> dict:
    """Gradescope's results.json for a grade, with ``exercises``, ``grader_version``, ``device``, ``submission_sha256``
    and ``notes`` (what intake says about the submission as a whole, for its feedback page: which notebook cells were
    taken; not the grading machine's notes, which ``output`` holds with the others).

    ``visibility`` holds course.yaml's visibility rules (see ``visibility_of``); without them every test is visible.
    """
    tests = []
    for exercise in grade.exercises:
        for test in exercise.tests:
            if test.status == "skipped":
                continue
            tests.append({"name": check_key(exercise.module, test.doc), "score": test.score,
                          "max_score": test.max_score, "status": test.status, "output": clean(test.feedback),
                          "visibility": visibility_of(test, visibility),
                          "tags": [exercise.module],
                          **({"extra_data": {"misconception": clean(test.misconception)}} if test.misconception else {})})
    return {
        "score": grade.score, "max_score": grade.max_score, "execution_time": round(execution_time, 3),
        "output": overview(grade), "visibility": "visible", "tests": tests,
        "exercises": {e.module: {"score": e.score, "max_score": e.max_score,
                                 **({"problem": clean(e.problem)} if e.problem else {}),
                                 **({"stubs": [clean(stub) for stub in e.stubs]} if e.stubs else {})}
                      for e in grade.exercises},
        "grader_version": __version__, "device": device, "submission_sha256": sha256,
        "notes": [clean(note) for note in notes],
    }


# Gradescope's own fields (gradescope-autograders.readthedocs.io, "Autograder Specifications"): results()
# writes these plus the fields of ours listed in OUR_RESULTS_FIELDS, which Gradescope stores and ignores.
GRADESCOPE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "test_output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "test_name_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": {"enum": list(VISIBILITIES)},
        "stdout_visibility": {"enum": list(VISIBILITIES)},
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]},
                "name": {"type": "string"}, "name_format": {"type": "string"}, "number": {"type": "string"},
                "output": {"type": "string"}, "output_format": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "visibility": {"enum": list(VISIBILITIES)}, "extra_data": {"type": "object"},
            },
            "additionalProperties": False}},
        "leaderboard": {"type": "array"},
    },
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
}
OUR_RESULTS_FIELDS = ("max_score", "exercises", "grader_version", "device", "submission_sha256", "notes")
