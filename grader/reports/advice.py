"""Advice: what a grade tells the student, in the words every report shares.

The score line, the overview (notes and points per exercise), whether an exercise is complete or not started
(``untouched``: only unfinished stubs failed), the one line for failures of one cause (``collapsed``: a problem
that stopped the exercise, unfinished stubs, one feedback shared by every failure), the stubs left, what to fix
first and the line its feedback names.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import stub_message

from grader.points import RULE, ExerciseScore, Grade, TestScore
from grader.text import clean

# Where feedback names a line of the student's files: "<module>.py, line 12" (tracebacks, import and syntax errors).
FEEDBACK_LINE = re.compile(r"\b(?P<file>\w+\.py), line (?P<line>\d+)")
# An unfinished stub, anywhere in a feedback: "not implemented yet: <module>.<function>: fill in this stub (see ...)".
NOT_IMPLEMENTED = re.compile("not implemented yet: " + stub_message.PATTERN.pattern)


def points(value: float) -> str:
    """Points as a person reads them: at most two decimals, no trailing zeros (``14.67``, ``2.5``, ``10``); the
    results files keep full precision."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def signed(value: float) -> str:
    """Points added or taken, with their sign (``+2.5``, ``-10``); none for none (``0``: a penalty that found nothing to
    take read "+0")."""
    if points(abs(value)) == "0":
        return "0"
    return f"{'+' if value >= 0 else '-'}{points(abs(value))}"


def score_line(grade: Grade) -> str:
    """The plain score line: ``Score: 83.5/100``."""
    return f"Score: {points(grade.score)}/{points(grade.max_score)}"


def overview(grade: Grade) -> str:
    """The notes, then one line per exercise: ``<module>: 7.5/10`` (and why it scored nothing, if so)."""
    lines = [f"{e.module}: {points(e.score)}/{points(e.max_score)}" + (f" ({clean(e.problem)})" if e.problem else "")
             for e in grade.exercises]
    return "\n".join([*map(clean, grade.notes), *lines])


def failures(exercise: ExerciseScore) -> list[TestScore]:
    """The exercise's failed tests, those that say what to fix first: the rules not judged yet (``deferred``) last."""
    failed = [t for t in exercise.tests if t.status == "failed"]
    return [t for t in failed if not t.deferred] + [t for t in failed if t.deferred]


def rules_line(tests: list[TestScore]) -> str:
    """The one line that says what the rules among ``tests`` earn while values are wrong (or ""): those that hold are
    paid the share of the values checks that pass, those not judged yet nothing (a summary's "0 / 15 | 11 / 18 checks
    passed" said neither: our sixth student walk-through; the eighth looked for the ✗ of checks so counted)."""
    held = [t for t in tests if t.kind == RULE and t.status == "passed" and t.score < t.max_score]
    waiting = sum(t.deferred for t in tests)
    parts = []
    if held:
        share = sum(t.score for t in held) / sum(t.max_score for t in held)
        one = len(held) == 1
        part = f"{share:.0%}" if share >= 0.005 else "less than 1%"
        paid = (f"earn{'s' * one} {part} of {'its' if one else 'their'} points" if share
                else f"earn{'s' * one} nothing yet")
        parts.append(f"{len(held)} rule{'s' * (not one)} that hold{'s' * one} {paid} (not counted as passed): a rule "
                     f"pays only the share of the values checks (by weight) that pass")
    if waiting:
        parts.append(f"{waiting} rule{'s are' if waiting != 1 else ' is'} judged once the values are right (the checks "
                     f"above say what to fix)")
    return "; ".join(parts)


def complete(exercise: ExerciseScore) -> bool:
    """Every check that applies passed (judged by the checks, not by the rounded points)."""
    return not exercise.problem and not failures(exercise)


def pending_stubs(feedbacks: list[str]) -> list[str]:
    """The stubs named by failures' feedbacks when every one of them is a stub not filled in yet (else none): an
    exercise in that state is reported in one line, ``not_started``."""
    if not feedbacks or not all(NOT_IMPLEMENTED.search(text) for text in feedbacks):
        return []
    return list(dict.fromkeys(match["target"] for text in feedbacks for match in NOT_IMPLEMENTED.finditer(text)))


def not_started(stubs: list[str]) -> str:
    """The one line that stands for every failure of an unfinished exercise."""
    return f"not implemented yet: fill in {', '.join(stubs)}"


def one_cause(feedbacks: list[str], stubs: Sequence[str] = ()) -> str:
    """The line that stands for every failure of an exercise when they all have one cause (else ""): its stubs not
    filled in yet (``not_started``: those the failures name, and ``stubs``, those left in its file, which a check
    that stops at the first stub it reaches never names), or the one feedback they all share (a name missing from the
    file, ...)."""
    named = pending_stubs(feedbacks)
    if named:
        return not_started(list(dict.fromkeys([*stubs, *named])))
    return feedbacks[0] if len(feedbacks) > 1 and len(set(feedbacks)) == 1 else ""


def collapsed(exercise: ExerciseScore) -> str:
    """What the student reads once for the whole exercise when its failures have one cause, else "": the problem
    that stopped it (a missing file, an import error, with its location), or ``one_cause``."""
    return exercise.problem or one_cause([t.feedback for t in failures(exercise)], exercise.stubs)


def untouched(exercise: ExerciseScore) -> bool:
    """True when every failure of the exercise comes from a stub not filled in yet."""
    return not exercise.problem and bool(pending_stubs([t.feedback for t in failures(exercise)]))


def stubs_left(exercise: ExerciseScore) -> list[str]:
    """The stubs its failures name as not implemented yet (``<module>.<function>``, ...), in order of appearance."""
    found = (match["target"] for t in failures(exercise) for match in NOT_IMPLEMENTED.finditer(t.feedback))
    return list(dict.fromkeys(found))


def failure_text(test: TestScore) -> str:
    """``doc: feedback`` of a failed test (its doc without the closing full stop)."""
    return f"{test.doc.rstrip('.')}: {test.feedback}" if test.feedback else test.doc


def what_to_fix(exercise: ExerciseScore, limit: int = 3) -> str:
    """One paragraph for the student: the exercise's problem, or its first failures with their feedback."""
    if collapsed(exercise):
        return collapsed(exercise)
    failed = [t for t in failures(exercise) if not t.deferred]
    lines = [failure_text(t) for t in failed[:limit]]
    if len(failed) > limit:
        lines.append(f"... and {len(failed) - limit} more failed check(s)")
    return "\n".join(filter(None, [*lines, rules_line(exercise.tests)]))


def feedback_line(exercise: ExerciseScore) -> tuple[str, int] | None:
    """The (file name, line) the exercise's feedback points at, e.g. ("<module>.py", 12), if it names one."""
    for text in [exercise.problem, *(t.feedback for t in failures(exercise))]:
        matches = list(FEEDBACK_LINE.finditer(text or ""))
        if matches:
            return matches[-1]["file"], int(matches[-1]["line"])
    return None
