"""course.yaml: the course's exercises, assignments, points and grading policy, validated with pydantic.

course.yaml is the one definition of the course: nothing in the grader lists the exercises. The course's files
are found relative to the folder of its course.yaml (``Course.root``): ``solutions/``, ``exercises/``,
``lessons/``, ``tests/course/hidden``, ``tests/course/public`` and ``nbgrader/``.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from grader import ROOT
from grader.sandbox.limits import Limits

COURSE_FILE = ROOT / "course.yaml"
DTYPES = ("float64", "float32", "float16", "bfloat16")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
MODULE_NAME = re.compile(r"[a-z][a-z0-9_]*")
ASSIGNMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # part of file names (results/<student>/<name>.json)


class CourseError(ValueError):
    """course.yaml is missing, not YAML, or does not follow the schema."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exercise(Strict):
    module: str  # the file students write (<module>.py) and the suites' marker
    title: str
    points: PositiveInt
    lesson: str | None = None  # the lesson file, relative to the course root (default lessons/<module>.md)

    @field_validator("module")
    @classmethod
    def _identifier(cls, module: str) -> str:
        if not MODULE_NAME.fullmatch(module):
            raise ValueError(f"module {module!r} is not a lowercase identifier (letters, digits and _, a letter first)")
        return module


class Assignment(Strict):
    """A named group of exercises, graded out of the sum of their points."""

    name: str
    title: str
    exercises: list[str]

    @field_validator("name")
    @classmethod
    def _file_name(cls, name: str) -> str:
        if not ASSIGNMENT_NAME.fullmatch(name):
            raise ValueError(f"assignment name {name!r} must be letters, digits, _, . and - (a letter or digit first)")
        return name


class Tolerance(Strict):
    rtol: float = Field(ge=0)
    atol: float = Field(ge=0)


class Intake(Strict):
    max_file_mb: PositiveFloat
    max_total_mb: PositiveFloat
    max_files: PositiveInt
    seconds: PositiveFloat = 10  # CPU time and wall clock of reading one submission
    memory_mb: PositiveInt = 512  # address space reading one submission may add


class Grading(Strict):
    tolerances: dict[Literal[DTYPES], Tolerance]
    devices: list[Literal["cpu", "cuda"]]
    limits: Limits
    intake: Intake

    @model_validator(mode="after")
    def _every_dtype_has_a_tolerance(self):
        missing = [d for d in DTYPES if d not in self.tolerances]
        if missing:
            raise ValueError(f"tolerances lack {', '.join(missing)}")
        return self


class Course(Strict):
    title: str
    suite_version: PositiveInt
    total_points: PositiveInt
    seed: int
    exercises: list[Exercise] = Field(min_length=1)
    assignments: list[Assignment] = []
    grading: Grading
    banned: dict[str, list[str]] = {}
    visibility: dict[str, Literal[VISIBILITIES]] = {"default": "visible"}

    _root: Path = PrivateAttr(default=ROOT)
    _assignment: str | None = PrivateAttr(default=None)
    _whole: Course | None = PrivateAttr(default=None)  # the course an assignment is restricted from

    @model_validator(mode="after")
    def _consistent(self):
        modules = [e.module for e in self.exercises]
        twice = sorted({m for m in modules if modules.count(m) > 1})
        if twice:
            raise ValueError(f"exercises list {', '.join(twice)} more than once")
        points = sum(e.points for e in self.exercises)
        if points != self.total_points:
            raise ValueError(f"exercise points add up to {points}, not total_points {self.total_points}")
        unknown = [target for target in self.banned if target.split(".")[0] not in modules]
        if unknown:
            raise ValueError(f"banned names targets outside the exercises: {', '.join(unknown)}")
        names = [a.name for a in self.assignments] + [self.notebook_name(m) for m in modules]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"assignment names must differ from each other and from the notebooks' "
                             f"({', '.join(self.notebook_name(m) for m in modules)}): {', '.join(twice)}")
        for assignment in self.assignments:
            unknown = [m for m in assignment.exercises if m not in modules]
            if unknown or not assignment.exercises or len(set(assignment.exercises)) < len(assignment.exercises):
                raise ValueError(f"assignment {assignment.name} must list exercises of the course once each"
                                 + (f": {', '.join(unknown)} is not one" if unknown else ""))
        return self

    # -- the exercises

    @property
    def modules(self) -> tuple[str, ...]:
        """The exercises' modules, in course order (of this assignment only, for an assignment)."""
        return tuple(e.module for e in self.exercises)

    @property
    def whole(self) -> Course:
        """The whole course (itself, unless restricted to an assignment)."""
        return self._whole or self

    @property
    def course_modules(self) -> tuple[str, ...]:
        """The modules of every exercise of course.yaml, an assignment's or not (the suites' markers)."""
        return self.whole.modules

    def exercise(self, module: str) -> Exercise:
        return next(e for e in self.exercises if e.module == module)

    # -- the course's files

    @property
    def root(self) -> Path:
        """The folder of course.yaml: the course's files are found relative to it."""
        return self._root

    @property
    def solutions_dir(self) -> Path:
        return self._root / "solutions"

    @property
    def exercises_dir(self) -> Path:
        return self._root / "exercises"

    @property
    def lessons_dir(self) -> Path:
        return self._root / "lessons"

    @property
    def hidden_dir(self) -> Path:
        return self._root / "tests" / "course" / "hidden"

    @property
    def public_dir(self) -> Path:
        return self._root / "tests" / "course" / "public"

    @property
    def nbgrader_dir(self) -> Path:
        return self._root / "nbgrader"

    def lesson_file(self, module: str) -> Path:
        return self._root / (self.exercise(module).lesson or f"lessons/{module}.md")

    # -- assignments

    def notebook_name(self, module: str) -> str:
        """The nbgrader assignment (and notebook) of an exercise: its number in course order and its module."""
        return f"{self.course_modules.index(module) + 1:02d}_{module}"

    @property
    def assignment_name(self) -> str | None:
        """The assignment this course is restricted to (None: the whole course)."""
        return self._assignment

    def assignment_modules(self) -> dict[str, tuple[str, ...]]:
        """Assignment name -> its exercises: course.yaml's assignments, then one per notebook."""
        named = {a.name: tuple(a.exercises) for a in self.assignments}
        return named | {self.notebook_name(m): (m,) for m in self.course_modules}

    def assignment(self, name: str) -> Course:
        """The course restricted to one assignment's exercises, graded out of their points."""
        modules = self.assignment_modules()
        if name not in modules:
            raise CourseError(f"unknown assignment {name!r}: course.yaml has {', '.join(modules)}")
        return self._restricted(modules[name], name)

    def covering(self, modules) -> Course:
        """The course restricted to ``modules`` (a notebook's exercises): named after the assignment of exactly
        those exercises, if there is one."""
        wanted = [m for m in self.course_modules if m in set(modules)]
        name = next((n for n, listed in self.assignment_modules().items() if sorted(listed) == sorted(wanted)), None)
        return self._restricted(wanted, name)

    def _restricted(self, modules, name: str | None) -> Course:
        chosen = [e for e in self.exercises if e.module in modules]
        restricted = self.model_copy(update={
            "exercises": chosen, "total_points": sum(e.points for e in chosen),
            "banned": {t: names for t, names in self.banned.items() if t.split(".")[0] in modules}})
        restricted._assignment, restricted._whole = name, self.whole
        return restricted

    def tolerance(self, dtype) -> Tolerance:
        return self.grading.tolerances[str(dtype).removeprefix("torch.")]


def _describe(error: ValidationError, path: Path) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{path}: {where}: {first['msg']}{more}"


def load_course(path: str | Path = COURSE_FILE) -> Course:
    """Read and validate course.yaml; raise CourseError with a one-line message naming the bad key."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CourseError(f"{path}: cannot read: {error.strerror}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise CourseError(f"{path}:{where} is not valid YAML: {getattr(error, 'problem', error)}") from None
    if not isinstance(data, dict):
        raise CourseError(f"{path}: expected a mapping of keys at the top level")
    try:
        loaded = Course.model_validate(data)
    except ValidationError as error:
        raise CourseError(_describe(error, path)) from None
    loaded._root = path.resolve().parent
    return loaded


@cache
def course() -> Course:
    """The project's own course.yaml, loaded once."""
    return load_course()
