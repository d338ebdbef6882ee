"""course.yaml: the course's exercises, assignments, points and grading policy, validated with pydantic.

course.yaml is the one definition of the course: nothing in the grader lists the exercises. The course's files
are found relative to the folder of its course.yaml (``Course.root``): ``solutions/<module>.py``,
``exercises/<module>.py`` (generated), ``nbgrader/`` (generated) and one folder per exercise,
``tests/course/<module>/`` (``Course.exercise_dir``), holding everything else of it: its hidden suite
``hidden_<module>.py``, its public checks ``test_<module>.py``, its known mistakes ``hints_<module>.py`` and its
lesson ``lesson.md``. Beside the folders, ``tests/course/`` holds what the exercises share (``SHARED_FILES``).
"""
from __future__ import annotations

import difflib
import keyword
import re
import sys
from dataclasses import fields, is_dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from types import UnionType
from typing import Literal, Union, get_args, get_origin

import yaml
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from grader import COURSE_FILE, ROOT, course_root
from grader.sandbox.limits import Limits

DTYPES = ("float64", "float32", "float16", "bfloat16")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
MODULE_NAME = re.compile(r"[a-z][a-z0-9_]*")
# Names an exercise's file cannot take: it would shadow what the exercises, the suites or the handout's checks import.
TAKEN_NAMES = frozenset({"torch", "solutions", "exercises", "conftest", "hints"} | set(sys.stdlib_module_names)
                        | {path.stem for path in (Path(__file__).parent / "suites" / "public").glob("*.py")})
WHOLE_COURSE = "course"  # late.due's key for a batch graded on the whole course
ASSIGNMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # part of file names (results/<student>/<name>.json)
EXERCISES_FOLDER = "tests/course"  # the exercises' folders, relative to the course root
SUITE_PREFIX = "hidden_"  # an exercise's hidden suite: hidden_<module>.py in its folder
# What tests/course holds beside the exercises' folders: the known mistakes several exercises share, the public
# checks' set-up when run from the course repository, the suite of the shared contract, and the texts every
# notebook shares.
SHARED_FILES = ("hints.py", "conftest.py", "hidden_contract.py", "notebook.md")


def module_name_problem(module: str) -> str | None:
    """Why ``module`` cannot name an exercise (its file, its marker, its folder), or None."""
    if not MODULE_NAME.fullmatch(module):
        return f"{module!r} is not a lowercase identifier (letters, digits and _, a letter first)"
    if keyword.iskeyword(module):
        return f"{module!r} is a Python keyword: no module can be imported by that name"
    if module in TAKEN_NAMES:
        return (f"{module!r} is the name of a module the exercises, the suites or the public checks import: choose "
                "another")
    return None


class CourseError(ValueError):
    """course.yaml is missing, not YAML, or does not follow the schema."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exercise(Strict):
    module: str  # the file students write (<module>.py) and the suites' marker
    title: str
    points: PositiveInt
    lesson: str | None = None  # the lesson file, relative to the course root (default tests/course/<module>/lesson.md)

    @field_validator("module")
    @classmethod
    def _identifier(cls, module: str) -> str:
        problem = module_name_problem(module)
        if problem:
            raise ValueError(f"module {problem}")
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
        if name == WHOLE_COURSE:
            raise ValueError(f"{WHOLE_COURSE!r} names the whole course (late.due): give the assignment another name")
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


class Late(Strict):
    """Late penalties: ``percent`` of the points possible per started ``per`` (day or hour) past the due date, at most
    ``cap_percent``; nothing within ``grace_minutes`` of it. ``due``: assignment name (``course``: the whole course)
    -> due date, with its time zone; ``timezone`` reads the times that name none (a zip's entries)."""

    due: dict[str, AwareDatetime]
    percent: float = Field(gt=0, le=100)
    per: Literal["day", "hour"] = "day"
    cap_percent: float = Field(default=100, gt=0, le=100)
    grace_minutes: NonNegativeFloat = 0
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _zone(cls, name: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {name!r} (an IANA name such as Europe/Berlin or UTC)") from None
        return name

    @property
    def period(self) -> timedelta:
        return timedelta(days=1) if self.per == "day" else timedelta(hours=1)


class Course(Strict):
    title: str
    total_points: PositiveInt
    seed: int
    exercises: list[Exercise] = Field(min_length=1)
    assignments: list[Assignment] = []
    grading: Grading
    banned: dict[str, list[str]] = {}
    visibility: dict[str, Literal[VISIBILITIES]] = {"default": "visible"}
    late: Late | None = None

    _root: Path = PrivateAttr(default=ROOT)
    _file: Path = PrivateAttr(default=COURSE_FILE)
    _assignment: str | None = PrivateAttr(default=None)
    _whole: Course | None = PrivateAttr(default=None)  # the course an assignment is restricted from

    @model_validator(mode="before")
    @classmethod
    def _no_retired_keys(cls, data):
        if isinstance(data, dict) and "suite_version" in data:
            raise ValueError("suite_version is no longer read: a batch regrades whenever the suites, hints, references "
                             "or grader change (remove the line)")
        return data

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
            module = unknown[0].split(".")[0]
            close = difflib.get_close_matches(module, modules, n=1)
            raise ValueError(f"banned: {unknown[0]} names the exercise {module!r}, which is not among the exercises ("
                             f"{', '.join(modules)})" + (f"; is {close[0]!r} misspelled?" if close else ""))
        names = [a.name for a in self.assignments] + [self.notebook_name(m) for m in modules]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"assignment names must differ from each other and from the notebooks' "
                             f"({', '.join(self.notebook_name(m) for m in modules)}): {', '.join(twice)}")
        for assignment in self.assignments:
            unknown = [m for m in assignment.exercises if m not in modules]
            if unknown or not assignment.exercises or len(set(assignment.exercises)) < len(assignment.exercises):
                said = f": {', '.join(unknown)} is not one{_meant(unknown[0], modules)}" if unknown else ""
                raise ValueError(f"assignment {assignment.name} must list exercises of the course once each{said}")
        unknown = [name for name in (self.late.due if self.late else ()) if name != WHOLE_COURSE and name not in names]
        if unknown:
            raise ValueError(f"late.due names {', '.join(unknown)}: not an assignment ({WHOLE_COURSE}, "
                             f"{', '.join(names)}){_meant(unknown[0], [WHOLE_COURSE, *names])}")
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
    def file(self) -> Path:
        """The course.yaml it was loaded from: what a course error names."""
        return self._file

    @property
    def solutions_dir(self) -> Path:
        return self._root / "solutions"

    @property
    def exercises_dir(self) -> Path:
        return self._root / "exercises"

    @property
    def suites_dir(self) -> Path:
        """tests/course: a folder per exercise, and the files they share (``SHARED_FILES``)."""
        return self._root / EXERCISES_FOLDER

    def exercise_dir(self, module: str) -> Path:
        """Everything of one exercise but its reference: suite, public checks, hints and lesson."""
        return self.suites_dir / module

    def hidden_suite(self, module: str) -> Path:
        return self.exercise_dir(module) / f"{SUITE_PREFIX}{module}.py"

    def public_checks(self, module: str) -> Path:
        return self.exercise_dir(module) / f"test_{module}.py"

    def hints_file(self, module: str) -> Path:
        return self.exercise_dir(module) / f"hints_{module}.py"

    @property
    def contract_suite(self) -> Path:
        """The suite of the contract every exercise shares (grader/suites/contract.py's tests, run on each)."""
        return self.suites_dir / "hidden_contract.py"

    @property
    def notebook_texts(self) -> Path:
        """What every generated notebook shares (set-up, how to work, the public checks' cell)."""
        return self.suites_dir / "notebook.md"

    @property
    def nbgrader_dir(self) -> Path:
        return self._root / "nbgrader"

    def lesson_file(self, module: str) -> Path:
        lesson = self.exercise(module).lesson
        return self._root / lesson if lesson else self.exercise_dir(module) / "lesson.md"

    def check_files(self, course_file: Path) -> None:
        """Every exercise has its reference and its folder's parts, and every folder of tests/course is an exercise
        of course.yaml: a course error names the first file missing or left over, and what to do (a course.yaml
        with none of the course's folders beside it: where they were looked for)."""
        if not self.solutions_dir.is_dir() and not self.suites_dir.is_dir():
            raise CourseError(f"{course_file}: neither solutions/ nor {EXERCISES_FOLDER}/ is beside it (a course's files "
                              f"are found in the folder of its course.yaml, here {self._root}): keep course.yaml at the "
                              f"top of its course's repository, and give --course that file")
        for module in self.course_modules:
            parts = {"reference": self.solutions_dir / f"{module}.py", "hidden suite": self.hidden_suite(module),
                     "public checks": self.public_checks(module), "hints": self.hints_file(module),
                     "lesson": self.lesson_file(module)}
            for part, path in parts.items():
                if not path.is_file():
                    raise CourseError(f"{course_file}: {shown(path, self._root)}: missing {part} of exercise {module} "
                                      f"(course.yaml lists it: restore the file from version control, or, for a new "
                                      f"exercise, take it out of course.yaml and run `grader new-exercise {module}`, "
                                      f"which writes every part and lists it)")
        if not self.suites_dir.is_dir():
            return
        for entry in sorted(self.suites_dir.iterdir()):
            if (entry.is_dir() and entry.name not in self.course_modules and not entry.name.startswith(("_", "."))
                    and any(part.name != "__pycache__" for part in entry.iterdir())):
                raise CourseError(f"{course_file}: {shown(entry, self._root)}: a folder of exercises that course.yaml does "
                                  f"not list (add {{module: {entry.name}, ...}} to its exercises, or remove the folder)")

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


def _meant(name: str, names) -> str:
    """'; did you mean X?' where one of ``names`` is close to a misspelled ``name`` (walk-through 7), else ''."""
    close = difflib.get_close_matches(name, list(names), n=1)
    return f"; did you mean {close[0]}?" if close else ""


UNKNOWN_KEY = ("extra_forbidden", "unexpected_keyword_argument")  # pydantic's error types of a key no model has


MAX_PROBLEMS = 9  # problems of course.yaml said, a line each, before "and N more" (text.MAX_LINES lines in all)


def _describe(error: ValidationError, path: Path, text: str, data: dict) -> str:
    """Every problem of course.yaml in the instructor's words, a line each: the line and key path, what is wrong and
    what to write instead. An unknown key comes first, and the key it misspells is not also said to be missing."""
    problems = sorted(error.errors(), key=lambda problem: problem["type"] not in UNKNOWN_KEY)
    said, meant = [], set()
    for problem in problems:
        loc = problem["loc"]
        if problem["type"] == "missing" and loc in meant:
            continue
        allowed = _keys_at(loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1) if problem["type"] in UNKNOWN_KEY else []
        meant.update((*loc[:-1], key) for key in close)
        line = _line(text, loc)
        place = f"{path}: line {line}: {_where(loc, data)}" if line else f"{path}: {_where(loc, data)}"
        said.append(f"{place}: {_what(problem, allowed, close)}")
    more = len(said) - MAX_PROBLEMS
    return "\n".join(said[:MAX_PROBLEMS] + ([f"{path}: and {more} more problem{'s' * (more > 1)}"] if more > 0 else []))


def _what(problem: dict, allowed: list[str], close: list[str]) -> str:
    """What is wrong with one value of course.yaml, and what to write instead."""
    if problem["type"] in UNKNOWN_KEY:
        return f"unknown key{f' (did you mean {close[0]}?)' if close else ''}; the keys here are {', '.join(allowed)}"
    if problem["type"] == "missing":
        return f"missing: add it (the keys here are {', '.join(allowed)})" if allowed else "missing: add it"
    if problem["type"] == "timezone_aware":  # pydantic said "Input should have timezone info"
        return "a time without its UTC offset: write it with one, as 2026-12-01T23:59:00+01:00"
    if problem["type"].startswith(("datetime_", "date_")):  # "invalid character in year" and its kind
        return "not a date and time: write it as ISO 8601 with its UTC offset, as 2026-12-01T23:59:00+01:00"
    return str(problem["msg"]).removeprefix("Value error, ")


def _where(loc: tuple, data) -> str:
    """A key path of pydantic's as course.yaml reads: an entry of a list by its module or name where it has one
    (``exercises[<module>].pionts``), else by its place counted from 1 (``exercises[7]``)."""
    where, node = "", data
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and part < len(node) else None
            label = next((item[key] for key in ("module", "name") if isinstance(item, dict)
                          and isinstance(item.get(key), str)), None)
            where, node = f"{where}[{label[:40] if label else part + 1}]", item
        else:
            where, node = f"{where}.{part}" if where else str(part), node.get(part) if isinstance(node, dict) else None
    return where or "(top level)"


def _keys_at(loc: tuple) -> list[str]:
    """The keys course.yaml allows in the mapping at ``loc`` (a key path of pydantic's), [] where that is no mapping
    of known keys (a dict of names, a list)."""
    kind = Course
    for part in (*loc, None):
        while get_origin(kind) in (Union, UnionType):  # an optional part: the model it is when present
            kind = next(arg for arg in get_args(kind) if arg is not type(None))
        if get_origin(kind) in (list, dict):
            kind = get_args(kind)[-1]  # the part is an index or a key of the list's or dict's items
        elif isinstance(kind, type) and issubclass(kind, BaseModel):
            if part is None:
                return list(kind.model_fields)
            kind = kind.model_fields[part].annotation if part in kind.model_fields else None
        elif is_dataclass(kind):  # grading.limits: a plain dataclass, made of numbers
            return [field.name for field in fields(kind)] if part is None else []
        else:
            return []
    return []


def _line(text: str, loc: tuple) -> int | None:
    """The line of course.yaml where ``loc`` is (the key's, or that of the nearest key above it that is there; None
    at the top level)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = next(((key, value) for key, value in node.value if key.value == str(part)), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def load_course(path: str | Path = COURSE_FILE) -> Course:
    """Read and validate course.yaml; raise CourseError naming each bad key, a line each."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
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
        raise CourseError(_describe(error, path, text, data)) from None
    loaded._root, loaded._file = course_root(path), path
    loaded.check_files(path)
    return loaded


def shown(path: Path, root: Path) -> str:
    """``path`` relative to the course root where it lies inside it."""
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


@cache
def course() -> Course:
    """The project's own course.yaml, loaded once."""
    return load_course()
