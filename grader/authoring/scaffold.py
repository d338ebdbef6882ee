"""An exercise from nothing, and what its author must verify: `grader new-exercise NAME`, `grader check-exercise NAME`.

``new_exercise`` writes a complete exercise that works at once (a small example, scaling a tensor, for the author to
replace): its reference with solution markers, its folder (hidden suite with a contract, public checks, one hint,
a buggy and a correct variant, a lesson) from ``templates/exercise``, its course.yaml entry, and the generated stub
and notebook. ``check_exercise`` verifies an exercise as a course author must before a release: stub and notebook
fresh, public checks green on the reference, the reference full marks and the stub none (the contract's rules
included), and each variant graded as it declares: a bug caught and its hints named, no hint on a correct one, every
hint id the exercise's hints file names shown by some buggy variant.
"""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader import COURSE_FILE
from grader.authoring.notebooks import generate_course, render_course, stale_notebooks
from grader.authoring.release import render
from grader.authoring.stubs import stale_files, write_exercises
from grader.course import Course, CourseError, load_course, module_name_problem

TEMPLATES = "exercise"  # grader/authoring/templates/exercise/<part>.tmpl
PARTS = {"reference.py.tmpl": "solutions/{module}.py", "hidden.py.tmpl": "{folder}/hidden_{module}.py",
         "public.py.tmpl": "{folder}/test_{module}.py", "hints.py.tmpl": "{folder}/hints_{module}.py",
         "variants.py.tmpl": "{folder}/variants_{module}.py", "lesson.md.tmpl": "{folder}/lesson.md"}
EXERCISE_LINE = re.compile(r"^(?P<indent>\s*)- \{\s*module:.*\}\s*$")


class ScaffoldError(ValueError):
    """The exercise cannot be made as asked (one line, naming why)."""


def new_exercise(course_file: Path, module: str, title: str, points: int) -> list[Path]:
    """Make exercise ``module`` in the course of ``course_file``; return the files written (course.yaml included)."""
    course = load_course(course_file)
    problem = module_name_problem(module)
    if problem:
        raise ScaffoldError(problem)
    if module in course.course_modules:
        raise ScaffoldError(f"course.yaml already has an exercise {module}")
    if points < 1:
        raise ScaffoldError(f"points must be a positive number, not {points}")
    values = {"MODULE": module, "TITLE": title, "NUMBER": str(len(course.course_modules) + 1), "POINTS": str(points)}
    folder = course.exercise_dir(module).relative_to(course.root).as_posix()
    targets = {template: course.root / target.format(module=module, folder=folder) for template, target in PARTS.items()}
    taken = [path for path in targets.values() if path.exists()]
    if taken or course.exercise_dir(module).exists():
        raise ScaffoldError(f"{(taken or [course.exercise_dir(module)])[0]} exists already: choose another name")
    render_course(course)  # the course's lessons build as they are (a LessonError names one): before anything is written
    original = Path(course_file).read_text(encoding="utf-8")
    try:
        for template, path in targets.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(f"{TEMPLATES}/{template}", values), encoding="utf-8")
        Path(course_file).write_text(_with_entry(original, module, title, points), encoding="utf-8")
        course = load_course(course_file)
        written = [*targets.values(), Path(course_file)]
        written += [course.exercises_dir / name for name in write_exercises(course=course)]
        written += [course.nbgrader_dir / name for name in generate_course(course=course)]
    except BaseException:  # nothing of the exercise is left half made: a rerun starts afresh
        for path in targets.values():
            path.unlink(missing_ok=True)
        shutil.rmtree(course.exercise_dir(module), ignore_errors=True)
        (course.exercises_dir / f"{module}.py").unlink(missing_ok=True)
        Path(course_file).write_text(original, encoding="utf-8")
        raise
    return written


def _with_entry(text: str, module: str, title: str, points: int) -> str:
    """course.yaml's text with the exercise appended to ``exercises:`` (after its last one-line entry, in the same
    style) and ``total_points`` raised by ``points``; comments and layout are kept."""
    lines = text.splitlines(keepends=True)
    entries = [n for n, line in enumerate(lines) if EXERCISE_LINE.match(line)]
    total = [n for n, line in enumerate(lines) if re.match(r"^total_points:\s*\d+\s*(#.*)?$", line)]
    if not entries or len(total) != 1:
        raise ScaffoldError("course.yaml's exercises are not written one per line as `- {module: ..., title: ..., "
                            f"points: ...}}` (or total_points is missing): add `- {{module: {module}, title: ..., "
                            f"points: {points}}}` and its points by hand, then run `grader check-exercise {module}`")
    indent = EXERCISE_LINE.match(lines[entries[-1]])["indent"]
    quoted = '"' + title.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines.insert(entries[-1] + 1, f"{indent}- {{module: {module}, title: {quoted}, points: {points}}}\n")
    old = int(re.search(r"\d+", lines[total[0]])[0])
    lines[total[0]] = lines[total[0]].replace(str(old), str(old + points), 1)
    return "".join(lines)


# ----------------------------------------------------------------- check-exercise

@dataclass
class Check:
    """One verification of ``check_exercise``: what it verifies, whether it holds, and what to do when it does not."""
    name: str
    ok: bool
    detail: str = ""


def public_checks_pass(course: Course, module: str) -> Check:
    """Whether the public checks of ``module`` marked for it (what `pytest -m <module>` runs in the handout) pass on
    the reference."""
    public = subprocess.run([sys.executable, "-m", "pytest", str(course.exercise_dir(module)), "--impl", "solutions",
                             "-m", module, "-q", "-p", "no:cacheprovider"], cwd=course.root, capture_output=True, text=True)
    unmarked = public.returncode == 5  # pytest's status when no test is selected
    return Check("public checks pass on the reference (those marked for the exercise)", public.returncode == 0,
                 f"no public check is marked {module}: give its test file `pytestmark = pytest.mark.{module}`"
                 if unmarked else _last_lines(public.stdout + public.stderr))


def check_exercise(course_file: Path, module: str, progress=None) -> list[Check]:
    """Every verification of exercise ``module`` (see the module's docstring); ``progress(text)`` hears of each."""
    from grader.grade import grade_submission
    from grader.sandbox.host.zygote import Zygote
    from grader.suites.contract import contract_of
    from grader.suites.plugin import check_suites
    from grader.suites.variants import StaleEdit, function_of, judge, variants_of

    course = load_course(course_file)
    if module not in course.course_modules:
        raise CourseError(f"{course_file}: no exercise {module} in course.yaml (it has {', '.join(course.course_modules)})")
    check_suites(course)
    alone = course.assignment(course.notebook_name(module))
    say = progress or (lambda text: None)
    flag = "" if course.file.resolve() == COURSE_FILE.resolve() else f" --course {course_file}"  # the command to run
    checks = [Check("stub up to date", f"{module}.py" not in stale_files(course=alone),
                    f"run `grader stubs{flag}`"),
              Check("notebook up to date", not [n for n in stale_notebooks(course=course)
                                                if n.startswith(f"source/{course.notebook_name(module)}/")],
                    f"run `grader notebooks{flag}`")]
    say("public checks on the reference")
    checks.append(public_checks_pass(course, module))
    zygote = Zygote(hide=(course.root,))
    try:
        with tempfile.TemporaryDirectory(prefix="check-exercise-") as scratch:
            def grade(variant=None, base: Path = course.solutions_dir):
                folder = Path(tempfile.mkdtemp(dir=scratch))
                for name in alone.course_modules:
                    if (base / f"{name}.py").is_file():
                        shutil.copy(base / f"{name}.py", folder / f"{name}.py")
                if variant is not None:
                    (folder / f"{module}.py").write_text(variant.source(), encoding="utf-8")
                return grade_submission(folder, alone, zygote).grade

            say("the reference")
            reference = grade()
            checks.append(Check("the reference earns full marks (the contract's rules included)",
                                reference.score == reference.max_score, _failed(reference)))
            say("the stub")
            stub = grade(base=course.exercises_dir)
            checks.append(Check("the stub earns nothing", stub.score == 0,
                                f"{stub.score}/{stub.max_score}: the suite pays for an unfinished stub"))
            variants = variants_of(course, module)
            shown: set[str] = set()
            broken: set[str] = set()  # the rules partial variants were caught breaking
            for variant in variants:
                say(variant.id)
                try:
                    graded = grade(variant)
                    problems = judge(variant, graded)
                except StaleEdit as error:  # the reference changed under it: the other checks still run
                    checks.append(Check(f"variant {variant.id}", False,
                                        f"{error}: write its edit again for the reference as it is now "
                                        f"(variants_{module}.py)"))
                    continue
                checks.append(Check(f"variant {variant.id}", not problems, "; ".join(problems)))
                shown |= set(variant.shows)
                if variant.kind == "partial":
                    broken |= {function_of(test) for test in graded.tests if test.status == "failed"}
    finally:
        zygote.close()
    declared = contract_of(module)
    if declared is not None and declared.applies("vectorized"):  # instructor walk-through 8: a loop it cannot see
        checks.append(Check("a loop variant is caught by the loop rule", "test_vectorized" in broken,
                            f"no partial variant of variants_{module}.py is caught by the no-loop rule: add one that "
                            f"loops in Python (part(...)); where one is not caught, grow every dim its loop could run "
                            f"over in the CONTRACT's sizes"))
    unproven = sorted(hint_ids(course, module) - shown)
    checks.append(Check("every hint is shown by a buggy variant", not unproven,
                        f"no buggy variant of variants_{module}.py names {', '.join(unproven)}: add one whose bug is "
                        f"that mistake (bug(..., shows=(id,)))"))
    return checks


def print_checks(checks: list[Check], module: str, console) -> bool:
    """The table of ``checks`` (what to do where one fails) and a last line counting them; whether all hold."""
    from rich.table import Table

    table = Table(title=f"check-exercise {module}")
    for column in ("check", "", "what to do"):
        table.add_column(column, overflow="fold")
    for check in checks:
        table.add_row(check.name, "ok" if check.ok else "FAILED", "" if check.ok else check.detail)
    console.print(table)
    failed = sum(not check.ok for check in checks)
    console.print(f"{len(checks) - failed} of {len(checks)} checks hold" + (f"; {failed} failed" if failed else ""))
    return not failed


def hint_ids(course: Course, module: str) -> set[str]:
    """The ids the exercise's hints file writes out in full (``"<module>.<mistake>"``); ids built at run time (the
    shared mistakes of hints.py, named by group) are the variants' to show."""
    tree = ast.parse(course.hints_file(module).read_text(encoding="utf-8"))
    pattern = re.compile(rf"{re.escape(module)}\.\w+")
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.fullmatch(node.value)}


def _failed(grade) -> str:
    return "; ".join(f"{test.name}: {test.feedback}" for test in grade.tests if test.status == "failed")[:1500]


def _last_lines(output: str, count: int = 12) -> str:
    return "\n".join(output.strip().splitlines()[-count:])
