"""course.yaml: the course's exercises, points and grading policy, validated with pydantic."""
from __future__ import annotations

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
    ValidationError,
    model_validator,
)

from grader import ROOT
from grader.sandbox.limits import Limits

COURSE_FILE = ROOT / "course.yaml"
MODULES = ("scores", "softmax", "context", "qkv", "quiz", "dictionary", "causal", "multihead")
DTYPES = ("float64", "float32", "float16", "bfloat16")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


def assignment_name(module: str) -> str:
    """The nbgrader assignment (and notebook) name of an exercise: ``01_scores`` ... ``08_multihead``."""
    return f"{MODULES.index(module) + 1:02d}_{module}"


ASSIGNMENTS = {assignment_name(module): module for module in MODULES}


class CourseError(ValueError):
    """course.yaml is missing, not YAML, or does not follow the schema."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exercise(Strict):
    module: Literal[MODULES]
    title: str
    points: PositiveInt


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
    exercises: list[Exercise]
    grading: Grading
    banned: dict[str, list[str]]
    visibility: dict[str, Literal[VISIBILITIES]] = {"default": "visible"}

    @model_validator(mode="after")
    def _consistent(self):
        modules = [e.module for e in self.exercises]
        if sorted(modules) != sorted(MODULES):
            raise ValueError(f"exercises must list each of {', '.join(MODULES)} once, got {', '.join(modules)}")
        points = sum(e.points for e in self.exercises)
        if points != self.total_points:
            raise ValueError(f"exercise points add up to {points}, not total_points {self.total_points}")
        unknown = [target for target in self.banned if target.split(".")[0] not in MODULES]
        if unknown:
            raise ValueError(f"banned names targets outside the exercises: {', '.join(unknown)}")
        return self

    def exercise(self, module: str) -> Exercise:
        return next(e for e in self.exercises if e.module == module)

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
        return Course.model_validate(data)
    except ValidationError as error:
        raise CourseError(_describe(error, path)) from None


@cache
def course() -> Course:
    """The project's own course.yaml, loaded once."""
    return load_course()
