"""Variants of an exercise's reference: the proof that its suite and its hints grade right.

An exercise's folder may hold ``variants_<module>.py``, whose calls register variants of ``solutions/<module>.py``:
each is the reference with a few exact text edits (one real bug, another correct style, or right values that break a
rule: a Python loop, a banned built-in, an answer typed in) and a title naming what it is; a style that rewrites the
whole exercise (code in the manner of a known project: nanoGPT, the Annotated Transformer, d2l, ...) is the one edit
``style(name)``, the file ``styles/<name>.py`` of the exercise's folder. `grader check-exercise` grades each one (``buggy``: the exercise loses points and its
feedback names the mistakes it ``shows``; ``correct``: full marks; ``partial``: only the small share of its rules is
lost), and so do the project's corpus tests (tests/grading/test_mutants.py) for the whole course. An edit whose text
no longer occurs exactly once in the reference is an error naming the variant.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.points import RULE

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
KINDS = ("buggy", "correct", "partial")
STYLE = "<the whole file>"  # the edit that replaces the whole reference


@dataclass(frozen=True)
class Variant:
    kind: str  # buggy, correct or partial
    module: str
    name: str
    title: str  # "Bug: ...", "Correct: ..." or "Partial: ..."
    edits: tuple[tuple[str, str], ...]
    shows: tuple[str, ...] = ()  # the ids of the known mistakes (hints_<module>.py) its feedback names: its bug's own
    reference: Path = field(default=Path(), compare=False)  # solutions/<module>.py of the course it belongs to

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.module}/{self.name}"

    def source(self) -> str:
        """The reference with the edits applied, the title as its docstring's first line, markers removed."""
        text = self.reference.read_text(encoding="utf-8")
        for old, new in self.edits:
            if old == STYLE:  # the whole file, in another project's manner; later edits apply to it
                text = new
                continue
            count = text.count(old)
            if count != 1:
                raise StaleEdit(f"{self.id}: {old!r} occurs {count} times in solutions/{self.module}.py")
            text = text.replace(old, new)
        lines = text.splitlines(keepends=True)
        tree = ast.parse(text)
        has_docstring = tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
        rest = "".join(lines[tree.body[0].end_lineno if has_docstring else 0:])  # the module's docstring is replaced
        body = f'"""{self.title}\n\nA variant of exercise {self.module}: the reference with one change.\n"""\n' + rest
        return "\n".join(line for line in body.splitlines() if line.strip() not in MARKERS) + "\n"


class StaleEdit(ValueError):
    """A variant's edit no longer occurs exactly once in the reference (its author changed the reference since)."""


class Variants:
    """The variants one ``variants_<module>.py`` registers: ``bug``, ``ok`` and ``part`` add one each, ``style`` is
    the edit to a whole file of the folder's ``styles/``."""

    def __init__(self, variants_file: str | Path):
        self.folder = Path(variants_file).resolve().parent
        self.variants: list[Variant] = []

    def style(self, name: str) -> tuple[str, str]:
        """The edit that replaces the whole reference by styles/<name>.py (its first line: a docstring)."""
        return STYLE, (self.folder / "styles" / f"{name}.py").read_text(encoding="utf-8")

    def bug(self, module, name, title, *edits, shows=()):
        """One real bug: the exercise must lose points, and no other exercise; its feedback names the mistakes
        ``shows`` (ids of its hints), each somewhere, and no other."""
        self.variants.append(Variant("buggy", module, name, "Bug: " + title, edits, tuple(shows)))

    def ok(self, module, name, title, *edits):
        """Another correct style: full marks."""
        self.variants.append(Variant("correct", module, name, "Correct: " + title, edits))

    def part(self, module, name, title, *edits):
        """Right values that break a rule (a Python loop, a banned built-in, an answer typed in): only the small share
        of the rules it breaks is lost."""
        self.variants.append(Variant("partial", module, name, "Partial: " + title, edits))


def variants_of(course, module: str) -> list[Variant]:
    """The variants of one exercise of ``course`` (none where its folder has no ``variants_<module>.py``)."""
    path = course.exercise_dir(module) / f"variants_{module}.py"
    if not path.is_file():
        return []
    spec = importlib.util.spec_from_file_location(f"variants_{module}", path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    reference = course.solutions_dir / f"{module}.py"
    return [replace(variant, reference=reference) for variant in loaded.variants.variants]


def corpus(course) -> list[Variant]:
    """Every variant of every exercise of ``course``, in course order."""
    return [variant for module in course.modules for variant in variants_of(course, module)]


GENERIC_FEEDBACK = "a check of this property failed"  # what a bare assert says: never enough for a bug
PARTIAL_KEEPS = 0.8  # the share of its exercise a partial variant (a loop, a built-in, ...) keeps at least
VALUES = re.compile(r"tensor\([\s\[]*-?(\d|nan|inf)")  # a printed tensor in feedback would show hidden values


def function_of(test) -> str:
    """A test's function: 'hidden_contract.py::test_vectorized[<module>]' -> 'test_vectorized'."""
    return test.name.split("::")[-1].split("[")[0]


def judge(variant: Variant, grade) -> list[str]:
    """What is wrong in how ``grade`` (of the references with the variant's file swapped in) treats ``variant``;
    empty when it is graded as it declares: a bug loses points in its own exercise only, with specific feedback that
    names exactly the mistakes it ``shows``; a correct style earns full marks; a partial one (a loop, a built-in, an
    answer typed in) fails only rules, the small share of its exercise, and keeps most of it; none gets a hint that
    is not its bug's."""
    mine = next(e for e in grade.exercises if e.module == variant.module)
    failed = [test for test in mine.tests if test.status == "failed"]
    named = {test.misconception for test in grade.tests if test.misconception}
    problems = [f"costs points in {e.module} ({e.score}/{e.max_score})" for e in grade.exercises
                if e.module != variant.module and e.score < e.max_score]
    if variant.kind == "buggy":
        if mine.score >= mine.max_score:
            problems.append("not caught: full marks")
        problems += [f"{test.name} gives no specific feedback" for test in failed
                     if not test.feedback or test.feedback == GENERIC_FEEDBACK]
        problems += [f"{test.name} shows values: {test.feedback}" for test in failed if VALUES.search(test.feedback)]
        problems += [f"its mistake {hint} is never named" for hint in sorted(set(variant.shows) - named)]
    elif variant.kind == "correct":
        if mine.score < mine.max_score:
            problems.append(f"loses points: {'; '.join(f'{test.name}: {test.feedback}' for test in failed)}")
    else:
        if not failed:
            problems.append("not caught: what it breaks costs nothing")
        values = sorted({function_of(test) for test in failed if test.kind != RULE})
        if values:
            problems.append(f"fails more than rules: {values}")
        if mine.score < PARTIAL_KEEPS * mine.max_score:
            problems.append(f"keeps only {mine.score}/{mine.max_score}")
    problems += [f"names a hint that is not its bug's: {hint}" for hint in sorted(named - set(variant.shows))]
    return problems
