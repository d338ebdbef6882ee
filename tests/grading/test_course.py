"""The course definition: course.yaml and its validation, and the doctests of the reference modules."""
from __future__ import annotations

import copy
import doctest
import importlib
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from courses import MODULES, course_variant  # noqa: E402

from grader.course import COURSE_FILE, DTYPES, CourseError, course, load_course  # noqa: E402


@pytest.fixture
def course_data() -> dict:
    """The project's course.yaml as plain data, to be broken by each test."""
    return yaml.safe_load(COURSE_FILE.read_text(encoding="utf-8"))


def write(tmp_path: Path, data) -> Path:
    """Write ``data`` as course.yaml in ``tmp_path``, beside the course's files (``course_variant``)."""
    return course_variant(tmp_path, yaml.safe_dump(data, sort_keys=False))


def course_error(path: Path) -> str:
    """The message of the CourseError that loading ``path`` raises: a line per problem, each naming the file."""
    with pytest.raises(CourseError) as info:
        load_course(path)
    message = str(info.value)
    assert all(str(path) in line for line in message.strip().splitlines()), message
    return message


@pytest.mark.parametrize("module", MODULES)
def test_solution_doctests_pass(module):
    """The examples in each reference module's docstrings (doctests) produce what they show."""
    solution = importlib.import_module(f"solutions.{module}")
    result = doctest.testmod(solution, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples of solutions/{module}.py fail"


def test_solutions_have_doctests():
    """The reference modules hold worked examples to check (at least one per module with a function)."""
    attempted = {module: doctest.testmod(importlib.import_module(f"solutions.{module}")).attempted for module in MODULES}
    assert sum(attempted.values()) >= 15, attempted
    assert not [m for m, n in attempted.items() if n == 0 and m != "multihead"], attempted


def test_course_yaml_validates():
    """course.yaml loads: the syllabus' exercises in syllabus order whose points add up to total_points, every dtype toleranced."""
    course = load_course()
    assert [e.module for e in course.exercises] == list(MODULES)
    assert sum(e.points for e in course.exercises) == course.total_points
    assert set(course.grading.tolerances) == set(DTYPES)
    assert course.tolerance("torch.float32").atol == course.grading.tolerances["float32"].atol
    assert {target.split(".")[0] for target in course.banned} <= set(MODULES)


def test_course_round_trip(tmp_path, course_data):
    """An unchanged copy of course.yaml written elsewhere validates too (the broken variants below differ only by their fault)."""
    copied, ours = load_course(write(tmp_path, course_data)), load_course()
    assert copied.model_dump() == ours.model_dump()
    assert copied.root == tmp_path and ours.root == COURSE_FILE.parent, "a course's files are found beside its course.yaml"


def test_unknown_top_level_key(tmp_path, course_data):
    """An unknown top-level key is named in a one-line CourseError."""
    course_data["colour"] = "blue"
    message = course_error(write(tmp_path, course_data))
    assert "colour" in message


@pytest.mark.parametrize("place, typo, meant, keys", [
    ((), "totl_points", "total_points", "title, total_points, seed, exercises"),
    (("exercises", 0), "titel", "title", "module, title, points, lesson"),
    (("grading", "limits"), "call_secs", "call_seconds", "call_seconds, import_seconds, submission_seconds"),
])
def test_a_misspelt_key_is_named_with_its_line_and_the_keys_allowed(tmp_path, course_data, place, typo, meant, keys):
    """A misspelt key is the problem named, in the instructor's words (not pydantic's "Field required (and 1 more)",
    which named the key it misspells as missing): its line, its key path, the key meant and the keys allowed there."""
    mapping = course_data
    for part in place:
        mapping = mapping[part]
    mapping[typo] = mapping.pop(meant)
    path = write(tmp_path, course_data)
    message = course_error(path)
    number = next(n for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if f"{typo}:" in text)
    where = ".".join(f"[{course_data[place[0]][part]['module']}]" if isinstance(part, int) else part
                     for part in (*place, typo)).replace(".[", "[")
    assert f"{path}: line {number}: {where}: unknown key (did you mean {meant}?); the keys here are {keys}" in message
    assert "more problem" not in message and "Field required" not in message and "Extra inputs" not in message


def test_a_misspelt_exercise_module_is_named_as_such(tmp_path, course_data):
    """An exercise's module misspelt leaves a banned entry naming no exercise: the error names the module, the
    exercises listed and the one misspelt (it said "banned names targets outside the exercises")."""
    exercise = next(e for e in course_data["exercises"] if any(t.startswith(e["module"] + ".") for t in course_data["banned"]))
    module = exercise["module"]
    exercise["module"] = misspelt = module[1] + module[0] + module[2:]
    message = course_error(write(tmp_path, course_data))
    assert f"names the exercise {module!r}, which is not among the exercises" in message
    assert message.endswith(f"; is {misspelt!r} misspelled?"), message


def test_every_problem_of_a_course_yaml_is_said_at_once(tmp_path, course_data):
    """Every problem is said, a line each, in one run (walk-through 7: four typos took four runs), never the key a typo
    misspells (which only the typo makes missing); a list's entry is named by its module, else counted from 1."""
    course_data["sed"] = course_data.pop("seed")
    del course_data["title"]
    course_data["exercises"][6]["pionts"] = course_data["exercises"][6].pop("points")
    module = course_data["exercises"][6]["module"]
    lines = course_error(path := write(tmp_path, course_data)).splitlines()
    assert len(lines) == 3 and all(line.startswith(f"{path}: ") for line in lines), lines
    assert sum(": sed: unknown key (did you mean seed?)" in line for line in lines[:2]) == 1
    assert sum(f": exercises[{module}].pionts: unknown key (did you mean points?)" in line for line in lines[:2]) == 1
    assert lines[2].startswith(f"{path}: title: missing: add it (the keys here are title, total_points, seed, ")
    del course_data["exercises"][6]["module"]
    assert ": exercises[7].pionts: unknown key" in course_error(write(tmp_path, course_data))


def test_a_missing_key_lists_the_keys(tmp_path, course_data):
    """A required key left out is named as missing, with the keys its mapping takes."""
    del course_data["grading"]["intake"]["max_files"]
    message = course_error(write(tmp_path, course_data))
    assert ": grading.intake.max_files: missing: add it (the keys here are max_file_mb, max_total_mb, max_files" in message


def test_unknown_nested_key(tmp_path, course_data):
    """An unknown key inside grading.limits is named with its full path."""
    course_data["grading"]["limits"]["gpu_count"] = 2
    message = course_error(write(tmp_path, course_data))
    assert "grading.limits.gpu_count" in message


def test_a_limit_that_is_not_positive(tmp_path, course_data):
    """A worker limit of zero or below is named in a one-line CourseError, and so is a limit of the wrong type."""
    course_data["grading"]["limits"]["call_seconds"] = 0
    message = course_error(write(tmp_path, course_data))
    assert "grading.limits" in message and "positive: call_seconds" in message
    course_data["grading"]["limits"].update(call_seconds=2, memory_mb=1.5)
    assert "grading.limits.memory_mb" in course_error(write(tmp_path, course_data))


def test_points_of_wrong_type(tmp_path, course_data):
    """points: "ten" gives a one-line CourseError naming exercises[<module>].points."""
    course_data["exercises"][1]["points"] = "ten"
    message = course_error(write(tmp_path, course_data))
    assert f"exercises[{course_data['exercises'][1]['module']}].points" in message and len(message.splitlines()) == 1


def test_points_do_not_add_up(tmp_path, course_data):
    """Exercise points that do not add up to total_points give a one-line CourseError naming total_points."""
    course_data["total_points"] = 99
    message = course_error(write(tmp_path, course_data))
    assert "total_points" in message and "100" in message and "99" in message


def test_a_course_of_fewer_exercises_loads(tmp_path, course_data):
    """course.yaml decides the exercises: one fewer (with its banned names) is a course of the others."""
    dropped = course_data["exercises"].pop()
    course_data["total_points"] -= dropped["points"]
    course_data["banned"] = {t: names for t, names in course_data["banned"].items() if not t.startswith(dropped["module"] + ".")}
    path = write(tmp_path, course_data)
    (tmp_path / "tests" / "course" / dropped["module"]).unlink()  # its folder goes with it
    assert load_course(path).modules == MODULES[:-1]


def test_a_ninth_exercise_loads_once_it_has_its_parts(tmp_path, course_data):
    """A new exercise is an entry (any lowercase identifier) and its parts: until each exists, loading names the first
    one missing; then it loads, its lesson defaulting to tests/course/<module>/lesson.md."""
    course_data["exercises"].append({"module": "layer_norm2", "title": "Layer norm", "points": 5})
    course_data["total_points"] += 5
    path = write(tmp_path, course_data)
    folder = tmp_path / "tests" / "course" / "layer_norm2"
    parts = [tmp_path / "solutions" / "layer_norm2.py", folder / "hidden_layer_norm2.py", folder / "test_layer_norm2.py",
             folder / "hints_layer_norm2.py", folder / "lesson.md"]
    (tmp_path / "solutions").unlink()
    (tmp_path / "solutions").mkdir()
    for reference in (COURSE_FILE.parent / "solutions").glob("*.py"):
        (tmp_path / "solutions" / reference.name).symlink_to(reference)
    folder.mkdir()
    for part in parts:
        message = course_error(path)
        assert f": {part.relative_to(tmp_path).as_posix()}: missing " in message, message
        assert "grader new-exercise layer_norm2" in message
        part.write_text("", encoding="utf-8")
    course = load_course(path)
    assert course.modules == (*MODULES, "layer_norm2")
    assert course.lesson_file("layer_norm2") == folder / "lesson.md"
    assert course.notebook_name("layer_norm2") == f"{len(MODULES) + 1:02d}_layer_norm2"


@pytest.mark.parametrize("command, status", [("grade", 3), ("batch", 2)])
def test_a_course_yaml_away_from_its_files_says_where_they_were_looked_for(tmp_path, capsys, command, status):
    """A copy of course.yaml alone, outside the course's repository, stops `grade` and `batch` before any grading with
    one line saying where the course's files were looked for and what to do (it used to be "cannot write
    results.json" from `grade`, and a "grader error" record for every student from `batch`); nothing is written."""
    from grader import cli

    copy = tmp_path / "elsewhere" / "course.yaml"
    copy.parent.mkdir()
    shutil.copy(COURSE_FILE, copy)
    target = ROOT / ("solutions" if command == "grade" else "examples/submissions")
    out = tmp_path / ("results.json" if command == "grade" else "out")
    assert cli.main([command, str(target), "--course", str(copy), "--out", str(out)]) == status
    error = capsys.readouterr().err.strip()
    assert error == (f"grader: {copy}: neither solutions/ nor tests/course/ is beside it (a course's files are found in "
                     f"the folder of its course.yaml, here {copy.parent}): keep course.yaml at the top of its course's "
                     "repository, and give --course that file"), error
    assert not out.exists()


def test_a_folder_of_no_exercise_is_a_course_error(tmp_path, course_data):
    """A folder in tests/course that course.yaml does not list (a removed exercise, a typo) stops loading with one line
    naming it; one that holds only Python's caches does not."""
    path = write(tmp_path, course_data)
    stray = tmp_path / "tests" / "course" / "soft_max"
    (stray / "__pycache__").mkdir(parents=True)
    load_course(path)
    (stray / "hidden_soft_max.py").write_text("", encoding="utf-8")
    message = course_error(path)
    assert "tests/course/soft_max: a folder of exercises that course.yaml does not list" in message


@pytest.mark.parametrize("module, why", [("Softmax", "lowercase identifier"), ("2d", "lowercase identifier"),
                                         ("soft-max", "lowercase identifier"), ("", "lowercase identifier"),
                                         ("x y", "lowercase identifier"), ("class", "Python keyword"),
                                         ("torch", "a module the exercises"), ("math", "a module the exercises")])
def test_a_module_that_cannot_be_an_exercise(tmp_path, course_data, module, why):
    """A module name that is not a lowercase identifier, is a keyword or would shadow a module the code imports is
    named in a one-line CourseError."""
    course_data["exercises"][0]["module"] = module
    course_data["banned"] = {}
    message = course_error(write(tmp_path, course_data))
    assert f"exercises[{module or 1}].module" in message and why in message


def test_assignments(tmp_path, course_data):
    """An assignment is graded out of its exercises' points; so is each notebook; the whole course is the default."""
    first, second = MODULES[:2]
    course_data["assignments"] = [{"name": "week1", "title": "Week 1", "exercises": [second, first]}]
    course = load_course(write(tmp_path, course_data))
    week = course.assignment("week1")
    assert week.modules == (first, second) and week.assignment_name == "week1"
    assert week.total_points == course.exercise(first).points + course.exercise(second).points
    assert {t.split(".")[0] for t in week.banned} <= {first, second}
    assert week.course_modules == course.modules == MODULES and week.whole is course
    notebook = course.assignment(course.notebook_name(second))
    assert notebook.modules == (second,) and notebook.total_points == course.exercise(second).points
    assert course.covering([first, second]).assignment_name == "week1"
    assert course.covering([second]).assignment_name == course.notebook_name(second)
    assert course.covering([first, MODULES[3]]).assignment_name is None
    with pytest.raises(CourseError, match="unknown assignment 'week2'"):
        course.assignment("week2")


@pytest.mark.parametrize("assignments, fault", [
    ([{"name": "w1", "title": "W", "exercises": ["nope"]}], "nope is not one"),
    ([{"name": "w1", "title": "W", "exercises": [MODULES[1][:-1]]}], f"is not one; did you mean {MODULES[1]}?"),
    ([{"name": "w1", "title": "W", "exercises": []}], "assignment w1 must list exercises"),
    ([{"name": "w1", "title": "W", "exercises": [MODULES[0]]}] * 2, "w1"),
    ([{"name": "01_" + MODULES[0], "title": "W", "exercises": [MODULES[1]]}], "01_" + MODULES[0]),
    ([{"name": "../up", "title": "W", "exercises": [MODULES[0]]}], "assignment name"),
])
def test_bad_assignments(tmp_path, course_data, assignments, fault):
    """An unknown exercise, no exercise, a name used twice (or a notebook's) or unfit for a file name: one line."""
    course_data["assignments"] = assignments
    message = course_error(write(tmp_path, course_data))
    assert "assignments" in message and fault in message


def test_a_misspelled_due_date_key_says_the_name_meant(tmp_path, course_data):
    """late.due naming a misspelled assignment says the one meant (walk-through 7: only the names allowed)."""
    course_data["assignments"] = [{"name": "week1", "title": "W", "exercises": [MODULES[0]]}]
    course_data["late"] = {"due": {"wek1": "2026-12-01T23:59:00+01:00"}, "percent": 10}
    assert "late.due names wek1: not an assignment" in (message := course_error(write(tmp_path, course_data)))
    assert message.endswith("; did you mean week1?"), message


def test_duplicate_exercise(tmp_path, course_data):
    """An exercise listed twice (in place of another) is rejected too."""
    course_data["exercises"][-1] = copy.deepcopy(course_data["exercises"][0]) | {"points": 15}
    message = course_error(write(tmp_path, course_data))
    assert "exercises" in message


def test_missing_dtype_tolerance(tmp_path, course_data):
    """A dtype without a tolerance gives a one-line CourseError naming the tolerances and the dtype."""
    del course_data["grading"]["tolerances"]["bfloat16"]
    message = course_error(write(tmp_path, course_data))
    assert "tolerances" in message and "bfloat16" in message


def test_missing_required_key(tmp_path, course_data):
    """A required key that is absent (seed) is named in a one-line CourseError."""
    del course_data["seed"]
    message = course_error(write(tmp_path, course_data))
    assert "seed" in message


def test_banned_target_outside_the_exercises(tmp_path, course_data):
    """A banned list for a module that is not an exercise is named in a one-line CourseError."""
    course_data["banned"]["attention.forward"] = ["matmul"]
    message = course_error(write(tmp_path, course_data))
    assert "banned" in message and "attention.forward" in message


def test_invalid_yaml(tmp_path):
    """A file that is not YAML gives a one-line CourseError with the line of the fault."""
    path = tmp_path / "course.yaml"
    path.write_text("title: Self-attention\nexercises: [\n  {module: scores,\n", encoding="utf-8")
    message = course_error(path)
    assert "not valid YAML" in message and "line" in message


def test_not_a_mapping(tmp_path):
    """A YAML file whose top level is a list, not a mapping of keys, is rejected."""
    path = tmp_path / "course.yaml"
    path.write_text("- scores\n- softmax\n", encoding="utf-8")
    assert "mapping" in course_error(path)


def test_missing_file(tmp_path):
    """A course.yaml that does not exist gives a one-line CourseError naming the path."""
    message = course_error(tmp_path / "nowhere" / "course.yaml")
    assert "cannot read" in message


def test_no_exercise_name_in_the_grader():
    """Nothing in grader/ (code, docstrings, templates, the public checks' machinery that ships in the handout) names
    an exercise: course.yaml is the one list. The only word allowed is torch's own function of the same name
    (``torch.<name>``), which is not the exercise."""
    grader_dir = COURSE_FILE.parent / "grader"
    files = sorted([*grader_dir.rglob("*.py"), *(p for p in (grader_dir / "authoring" / "templates").rglob("*") if p.is_file())])
    assert len(files) > 20
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(grader_dir.parent)}:{number}: {module}" for module in MODULES
                      if re.search(rf"(?<!torch\.)\b{module}\b", line)]
    assert not found, "exercise names in the grader:\n" + "\n".join(found)


@pytest.mark.parametrize("command", [["grade", "solutions"], ["batch", "solutions", "--out", "OUT"],
                                     ["release", "OUT", "--grader-repository", "school/attention-grader"],
                                     ["ci", "."]])
def test_an_unknown_assignment_is_one_line(tmp_path, capsys, command):
    """`--assignment` naming no assignment of course.yaml stops every command at once with one line naming them."""
    from grader import cli

    args = [str(tmp_path / "out") if arg == "OUT" else str(ROOT / arg) if arg in ("solutions", ".") else arg
            for arg in command]
    # `grader grade` says 3 (a grader fault: graded again, never a final 0 on Gradescope), the other commands 2
    assert cli.main([*args, "--assignment", "nope"]) == (cli.GRADER_FAULT_STATUS if command[0] == "grade" else 2)
    error = capsys.readouterr().err.strip()
    assert error.startswith("grader: unknown assignment 'nope': course.yaml has 01_") and "\n" not in error
    assert not (tmp_path / "out").exists()


def test_a_banned_builtin_is_banned_under_its_other_names():
    """A built-in banned in course.yaml is banned under the other names torch calls it by too: its in-place method
    (``addmm_``), its torch.special and torch.linalg aliases (``special_softmax``): the worker matches the name of
    each call, so an alias left out would be a way around the rule."""
    import torch

    names = {getattr(f, "__name__", "") for fs in torch.overrides.get_overridable_functions().values() for f in fs}
    for target, banned in course().banned.items():
        aliases = {f"{prefix}{name}{suffix}" for name in banned for prefix, suffix in (("", "_"), ("special_", ""),
                                                                                      ("linalg_", ""))}
        assert sorted((aliases & names) - set(banned)) == [], target


# ---------------------------------------------------------------- errors in the suites: the course's, never a student's

def _softmax_suite_marked(tmp_path: Path, marker: str) -> None:
    """In the course copy at ``tmp_path``, softmax's folder as a real copy whose hidden suite carries ``marker``."""
    folder = tmp_path / "tests" / "course" / "softmax"
    folder.unlink()
    shutil.copytree(COURSE_FILE.parent / "tests" / "course" / "softmax", folder, ignore=shutil.ignore_patterns("__pycache__"))
    suite = folder / "hidden_softmax.py"
    suite.write_text(suite.read_text(encoding="utf-8").replace("pytestmark = pytest.mark.softmax",
                                                               f"pytestmark = pytest.mark.{marker}"), encoding="utf-8")


COURSE_ERRORS = {  # what is wrong -> (how to make it in the copy, what the one line says)
    "a banned name that is no torch call": (
        lambda data, tmp_path: data["banned"]["softmax.softmax"].append("sofmax"),
        "banned: softmax.softmax: sofmax is no torch function, method or operator (list the names"),
    "a rule without its banned entry": (
        lambda data, tmp_path: data["banned"].pop("scores.dot"),
        "scores: dot says what to do instead of a built-in, but course.yaml's banned: has no entry scores.dot"),
    "a suite marked with no exercise of course.yaml": (
        lambda data, tmp_path: _softmax_suite_marked(tmp_path, "softmaxx"),
        "a test of the suites needs exactly one exercise marker of course.yaml (pytestmark = pytest.mark.<module>); "
        "it has none (softmaxx: no exercise of course.yaml)"),
    "a banned entry no check reads": (  # found by our instructor's walk-through: a misspelled function banned nothing
        lambda data, tmp_path: data["banned"].update({"scores.pairwise_score": ["matmul"]}),
        "banned: scores.pairwise_score: no check of scores reads this entry, so it bans nothing"),
    "a banned entry misspelled": (  # the fourth walk-through: "has no entry scores.dot" invited a second entry
        lambda data, tmp_path: data["banned"].update({"scores.dott": data["banned"].pop("scores.dot")}),
        "banned: scores.dott: no check of scores reads this entry; did you mean scores.dot?"),
    "a suite with a syntax error": (  # found by our instructor's walk-through: a traceback, exit status 1
        lambda data, tmp_path: _softmax_suite_marked(tmp_path, "softmax\ndef broken(:"),
        "tests/course/softmax/hidden_softmax.py:14: a suite of the course cannot be imported: SyntaxError"),
    "a suite importing a module that is not there": (
        lambda data, tmp_path: _softmax_suite_marked(tmp_path, "softmax\nimport nonexistent_helper"),
        "tests/course/softmax/hidden_softmax.py:14: a suite of the course cannot be imported: ModuleNotFoundError: No "
        "module named 'nonexistent_helper'"),
}


@pytest.mark.parametrize("error", COURSE_ERRORS)
def test_an_error_in_the_suites_is_the_courses_never_a_grade(tmp_path, course_data, capsys, error):
    """A course error found in the suites stops `grader grade` with one line naming course.yaml and what to change
    (status 3: never recorded as the student's score) and `grader batch` before it grades anyone (status 2); the
    references never get a partial score out of it."""
    from grader import cli

    make, said = COURSE_ERRORS[error]
    path = write(tmp_path, course_data)
    make(course_data, tmp_path)
    path = write(tmp_path, course_data)
    assert cli.main(["grade", str(COURSE_FILE.parent / "solutions"), "--course", str(path),
                     "--out", str(tmp_path / "results.json")]) == cli.GRADER_FAULT_STATUS
    message = capsys.readouterr().err.strip()
    assert message.startswith(f"grader: {path}: ") and said in message and "\n" not in message, message
    assert not (tmp_path / "results.json").exists()
    assert cli.main(["batch", str(COURSE_FILE.parent / "examples" / "submissions"), "--course", str(path),
                     "--out", str(tmp_path / "out"), "--jobs", "1"]) == 2
    message = capsys.readouterr().err.strip()
    assert said in message and "\n" not in message, message
    assert not list((tmp_path / "out").glob("results/*.json"))
