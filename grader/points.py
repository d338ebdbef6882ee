"""Scores: points per test and per exercise, from pytest-json-report's report and course.yaml."""
from __future__ import annotations

from dataclasses import dataclass, field

from grader.course import Course

STAGES = ("setup", "call", "teardown")


@dataclass
class TestScore:
    exercise: str
    name: str  # the test's node id inside the suites
    doc: str  # the property it checks, one line
    weight: float
    status: str  # passed, failed or skipped (setup and teardown errors count as failed)
    score: float
    max_score: float
    feedback: str = ""


@dataclass
class ExerciseScore:
    module: str
    title: str
    score: float
    max_score: float
    problem: str = ""  # why the whole exercise scored nothing (missing file, import error), if so
    tests: list[TestScore] = field(default_factory=list)


@dataclass
class Grade:
    exercises: list[ExerciseScore]
    notes: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return round(sum(e.score for e in self.exercises), 4)

    @property
    def max_score(self) -> float:
        return round(sum(e.max_score for e in self.exercises), 4)

    @property
    def tests(self) -> list[TestScore]:
        return [t for e in self.exercises for t in e.tests]


def _status(test: dict) -> str:
    if test.get("outcome") == "passed" and all(test.get(s, {}).get("outcome", "passed") == "passed" for s in STAGES):
        return "passed"
    if test.get("outcome") == "skipped":
        return "skipped"
    return "failed"


def _feedback(test: dict) -> str:
    metadata = test.get("metadata", {})
    return next((metadata[f"feedback_{s}"] for s in STAGES if metadata.get(f"feedback_{s}")), "")


def score(report: dict, course: Course, problems: dict[str, str] | None = None) -> Grade:
    """Points for every test and exercise. A skipped test does not apply (e.g. a CUDA-only check on CPU)."""
    problems = problems or {}
    by_exercise: dict[str, list[dict]] = {}
    for test in report.get("tests", []):
        by_exercise.setdefault(test.get("metadata", {}).get("exercise"), []).append(test)
    exercises = []
    for exercise in course.exercises:
        tests = by_exercise.get(exercise.module, [])
        if not tests:
            raise ValueError(f"the hidden suites hold no test of {exercise.module}")
        applicable = sum(t["metadata"]["weight"] for t in tests if _status(t) != "skipped")
        scored = []
        for test in tests:
            status, weight = _status(test), test["metadata"]["weight"]
            share = exercise.points * weight / applicable if applicable and status != "skipped" else 0.0
            scored.append(TestScore(exercise.module, test["nodeid"], test["metadata"].get("doc", ""), weight, status,
                                    round(share if status == "passed" else 0.0, 4), round(share, 4), _feedback(test)))
        passed = sum(t["metadata"]["weight"] for t in tests if _status(t) == "passed")
        earned = round(exercise.points * passed / applicable, 4) if applicable else 0.0
        exercises.append(ExerciseScore(exercise.module, exercise.title, earned, exercise.points,
                                       problems.get(exercise.module, ""), scored))
    return Grade(exercises)
