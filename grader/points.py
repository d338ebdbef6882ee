"""Scores: points per test and per exercise, from pytest-json-report's report and course.yaml.

Each test of the hidden suites is a *values* check (results equal the reference's) or a *rule* (marked ``rule``:
errors raised, inputs not modified, device and dtype kept, autograd, vectorized, own implementation, ...). A rule
holds for any result, zeros included, so it pays only as far as the results are right: a passed rule earns its
share times the fraction of the exercise's values weight that passed. Zeros, constants and stubs earn nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from grader.course import Course

STAGES = ("setup", "call", "teardown")
VALUES, RULE = "values", "rule"
# What a rule's check says when it was not judged because the exercise's values are wrong (the suites write it):
# the values checks say what to fix, and the reports list such rules last, in one line.
DEFERRED = ("not judged yet: this rule is checked once the values are right on the same inputs (the values checks "
            "say what is wrong)")


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
    kind: str = VALUES  # values or rule
    misconception: str = ""  # the id of the known mistake the feedback names (its result reproduces the student's)

    @property
    def deferred(self) -> bool:
        """A rule not judged yet because the exercise's values are wrong (it says nothing the values checks do not)."""
        return self.status == "failed" and DEFERRED in self.feedback


@dataclass
class ExerciseScore:
    module: str
    title: str
    score: float
    max_score: float
    problem: str = ""  # why the whole exercise scored nothing (missing file, import error), if so
    tests: list[TestScore] = field(default_factory=list)
    stubs: tuple[str, ...] = ()  # the handout's stubs left in its file (``<module>.<function>``), in the file's order

    @property
    def checks_passed(self) -> tuple[int, int]:
        """(passed, applicable): the checks that apply (not skipped), and those that passed and earned their share, as
        the feedback pages count them; a rule that holds pays only as far as the values are right (a stub's import
        rule: nothing) and is not counted as passed."""
        applicable = [t for t in self.tests if t.status != "skipped"]
        return sum(t.status == "passed" and t.score >= t.max_score for t in applicable), len(applicable)


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


def _kind(test: dict) -> str:
    return test.get("metadata", {}).get("kind", VALUES)


def values_right(tests: list[dict]) -> float:
    """The share of the values checks' weight that passed (skipped checks do not apply): what the rules are paid
    (nothing where no values check ran, e.g. a selection of rules alone)."""
    values = [t for t in tests if _kind(t) == VALUES and _status(t) != "skipped"]
    total = sum(t["metadata"]["weight"] for t in values)
    return sum(t["metadata"]["weight"] for t in values if _status(t) == "passed") / total if total else 0.0


def _rule_note(right: float) -> str:
    if right == 0:
        return "this rule holds, and earns credit once the values checks pass (rules pay only with right results)"
    return (f"this rule holds, and earns {right:.0%} of its credit, as {right:.0%} of the values checks (by weight) "
            f"pass (rules pay only with right results)")


def score(report: dict, course: Course, problems: dict[str, str] | None = None) -> Grade:
    """Points for every test and exercise. A skipped test does not apply; a rule pays as far as the values are right."""
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
        right = values_right(tests)
        scored, earned = [], 0.0
        for test in tests:
            status, weight, kind = _status(test), test["metadata"]["weight"], _kind(test)
            share = exercise.points * weight / applicable if applicable and status != "skipped" else 0.0
            paid = share * (right if kind == RULE else 1.0) if status == "passed" else 0.0
            earned += paid
            feedback = _rule_note(right) if kind == RULE and status == "passed" and right < 1 else _feedback(test)
            scored.append(TestScore(exercise.module, test["nodeid"], test["metadata"].get("doc", ""), weight, status,
                                    round(paid, 4), round(share, 4), feedback, kind,
                                    str(test["metadata"].get("misconception", "")) if status == "failed" else ""))
        exercises.append(ExerciseScore(exercise.module, exercise.title, round(earned, 4), exercise.points,
                                       problems.get(exercise.module, ""), scored))
    return Grade(exercises)
