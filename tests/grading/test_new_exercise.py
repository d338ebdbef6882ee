"""One exercise, one place: `grader new-exercise` scaffolds an exercise that works at once, and a ninth exercise
written over it as an author would (grouped-query attention, tests/grading/gqa.py) touches only its folder, its
reference, its course.yaml entry and generated files, passes `grader check-exercise`, and goes through stubs,
notebooks, release, grade and batch end to end: nothing in grader/ changes. The exercise lives in a copy of the
course only (the syllabus fixes eight)."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from gqa import FILES

ROOT = Path(__file__).resolve().parents[2]
COURSE_PARTS = ("solutions", "exercises", "nbgrader", "tests/course", "course.yaml")
NOTEBOOK = "09_gqa"
REPOSITORY = "school/attention-grader"  # the handout's workflow clones the grader from here

pytestmark = pytest.mark.slow


def copy_course(target: Path) -> Path:
    """A copy of the project's course (its files, not the grader) in ``target``."""
    for part in COURSE_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target / part)
    return target


def grader(*args: str, cwd: Path, status: int = 0) -> subprocess.CompletedProcess:
    """``python -m grader ARGS`` run from ``cwd`` with this checkout's grader; fails the test on another status."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    process = subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=env, capture_output=True, text=True,
                             timeout=900)
    assert process.returncode == status, f"grader {' '.join(args)}:\n{process.stdout[-4000:]}\n{process.stderr[-3000:]}"
    return process


def files_of(root: Path) -> dict[str, str]:
    """Relative path -> hash of every file of the course's parts under ``root``."""
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for part in COURSE_PARTS for path in ([root / part] if (root / part).is_file() else (root / part).rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts}


def test_a_new_exercise_works_at_once(tmp_path):
    """`grader new-exercise` writes a complete exercise (reference, hidden suite, public checks, a hint, variants,
    lesson, course.yaml entry, stub, notebook) that passes `grader check-exercise` as it is; a name that is taken,
    or no identifier, a Python keyword or a module the code imports (torch), is refused in one line, writing nothing."""
    root = copy_course(tmp_path)
    made = grader("new-exercise", "layer_scale", "--points", "5", "--course", "course.yaml", cwd=root)
    data = yaml.safe_load((root / "course.yaml").read_text(encoding="utf-8"))
    assert data["exercises"][-1] == {"module": "layer_scale", "title": "Layer scale", "points": 5}
    assert data["total_points"] == 105
    assert "# The course in one file" in (root / "course.yaml").read_text(encoding="utf-8")  # comments kept
    for part in ("hidden_layer_scale.py", "test_layer_scale.py", "hints_layer_scale.py", "variants_layer_scale.py",
                 "lesson.md"):
        assert f"wrote tests/course/layer_scale/{part}" in made.stdout
    checked = grader("check-exercise", "layer_scale", "--course", "course.yaml", cwd=root)
    assert checked.stdout.strip().splitlines()[-1].endswith("checks hold"), checked.stdout
    assert "course.yaml has assignments" not in made.stdout
    text = (root / "course.yaml").read_text(encoding="utf-8")  # a course of assignments: it says the new one is in none
    grouped_text = text.replace("# assignments:\n#   - {name: week1", "assignments:\n  - {name: week1")
    (root / "course.yaml").write_text(grouped_text, encoding="utf-8")
    grouped = grader("new-exercise", "layer_gain", "--course", "course.yaml", cwd=root)
    assert grouped.stdout.strip().splitlines()[-1] == (
        "course.yaml has assignments (week1): add layer_gain to the exercises of the one that should grade it (no "
        "assignment lists it yet; the whole course grades it)")
    for name, why in (("layer_scale", "already has an exercise layer_scale"), ("Bad-Name", "not a lowercase identifier"),
                      ("class", "is a Python keyword"), ("torch", "a module the exercises, the suites or the public checks "
                                                            "import")):  # class: half written, then a crash before
        refused = grader("new-exercise", name, "--course", "course.yaml", cwd=root, status=2)
        assert refused.stderr.startswith("grader: ") and why in refused.stderr and refused.stderr.count("\n") == 1
        assert name == "layer_scale" or not (root / "solutions" / f"{name}.py").exists()


def test_public_checks_with_a_misspelled_marker_do_not_pass(tmp_path):
    """Public checks whose ``pytestmark`` misspells the exercise run nothing under `pytest -m <exercise>` (the
    handout's command): `grader check-exercise` says so and names the fix (it said "public checks pass"; found by
    our instructor's walk-through)."""
    from grader.authoring.scaffold import public_checks_pass
    from grader.course import load_course

    course = load_course(copy_course(tmp_path) / "course.yaml")
    module = course.modules[1]
    assert public_checks_pass(course, module).ok
    test_file = course.exercise_dir(module) / f"test_{module}.py"
    text = test_file.read_text(encoding="utf-8")
    assert f"pytestmark = pytest.mark.{module}\n" in text
    test_file.write_text(text.replace(f"pytest.mark.{module}\n", f"pytest.mark.{module}x\n"), encoding="utf-8")
    check = public_checks_pass(course, module)
    assert not check.ok and check.detail == f"no public check is marked {module}: give its test file " \
                                            f"`pytestmark = pytest.mark.{module}`"


def test_new_exercise_on_a_course_whose_lessons_do_not_build_writes_nothing(tmp_path):
    """A course whose lesson's graded tests disagree with course.yaml's points (an exercise re-weighted): new-exercise
    says which lesson and what to edit, and writes nothing (it wrote the reference, the folder, the stub and the
    course.yaml entry, then failed, and a rerun was refused as "already has an exercise": our fourth instructor
    walk-through)."""
    root = copy_course(tmp_path / "course")
    text = (root / "course.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    module, points, total = data["exercises"][0]["module"], data["exercises"][0]["points"], data["total_points"]
    entry = next(line for line in text.splitlines() if f"module: {module}" in line)
    text = text.replace(entry, entry.replace(f"points: {points}", f"points: {points + 1}"))
    (root / "course.yaml").write_text(text.replace(f"total_points: {total}", f"total_points: {total + 1}"),
                                      encoding="utf-8")
    before = files_of(root)
    refused = grader("new-exercise", "layer_scale", "--points", "5", "--course", "course.yaml", cwd=root, status=2)
    assert f"the graded tests add up to {points} points, course.yaml gives {points + 1}: make the points" \
        in refused.stderr, refused.stderr
    assert files_of(root) == before
    # and `release` refuses to ship notebooks that state, and grade, the old points (it wrote them, exit 0)
    released = grader("release", str(tmp_path / "handout"), "--grader-repository", REPOSITORY, "--course",
                      "course.yaml", cwd=root, status=2)
    assert "course.yaml gives" in released.stderr and not (tmp_path / "handout").exists(), released.stderr


@pytest.fixture(scope="module")
def with_gqa(tmp_path_factory) -> tuple[Path, set[str]]:
    """A copy of the course with gqa made by `grader new-exercise`, then written as its author would (tests/grading/
    gqa.py) and its stub and notebook generated again; and the files that differ from the original course."""
    root = copy_course(tmp_path_factory.mktemp("gqa"))
    before = files_of(root)
    grader("new-exercise", "gqa", "--title", "Grouped-query attention", "--points", "10", "--course", "course.yaml",
           cwd=root)
    for relative, text in FILES.items():
        (root / relative).write_text(text, encoding="utf-8")
    grader("stubs", "--course", "course.yaml", cwd=root)
    grader("notebooks", "--course", "course.yaml", cwd=root)
    after = files_of(root)
    return root, {path for path in after.keys() | before.keys() if before.get(path) != after.get(path)}


def test_the_exercise_touches_only_its_folder_reference_entry_and_generated_files(with_gqa):
    """Adding gqa changed its folder, its reference, course.yaml, and the generated stub and notebook: nothing of
    another exercise, no shared suite module, nothing of the grader."""
    _, changed = with_gqa
    expected = {*FILES, "course.yaml", "exercises/gqa.py", f"nbgrader/source/{NOTEBOOK}/{NOTEBOOK}.ipynb",
                "nbgrader/nbgrader_config.py"}
    assert changed == expected, sorted(changed ^ expected)
    print(f"\nfiles changed by adding the exercise: {len(changed)}")


def test_check_exercise_passes(with_gqa):
    """`grader check-exercise gqa`: stub and notebook fresh, public checks green on the reference, the reference full
    marks and the stub none, each variant graded as it declares, every hint shown by a buggy variant."""
    root, _ = with_gqa
    checked = grader("check-exercise", "gqa", "--course", "course.yaml", cwd=root)
    last = checked.stdout.strip().splitlines()[-1]
    assert last.endswith("checks hold") and "failed" not in last, checked.stdout
    assert "variant buggy/gqa/kv_tiled" in checked.stdout and "variant correct/gqa/expand" in checked.stdout
    assert "a loop variant is caught by the loop rule" in checked.stdout


def test_check_exercise_names_what_fails(with_gqa, tmp_path):
    """A variant whose hint is not the one named, a variant whose edit the reference no longer holds (a traceback
    before our instructor's walk-through), a stale stub and no loop variant (nothing proved the loop rule sees a loop:
    instructor walk-through 8) fail check-exercise (status 1), each named."""
    root = tmp_path / "course"
    shutil.copytree(with_gqa[0], root, ignore=shutil.ignore_patterns("__pycache__"))
    variants = root / "tests" / "course" / "gqa" / "variants_gqa.py"
    variants.write_text(variants.read_text(encoding="utf-8").replace('shows=("gqa.no_scaling",)',
                                                                     'shows=("gqa.scale_by_d",)'), encoding="utf-8")
    variants.write_text(variants.read_text(encoding="utf-8") + 'bug("gqa", "stale", "an edit of an older reference", '
                        '("this line is not in the reference", "x"))\n', encoding="utf-8")
    variants.write_text(variants.read_text(encoding="utf-8").replace('part("gqa", "head_loop"', 'ok("gqa", "head_loop"'),
                        encoding="utf-8")  # the loop, declared correct: it fails, and nothing proves the loop rule
    stub = root / "exercises" / "gqa.py"
    stub.write_text(stub.read_text(encoding="utf-8") + "\n# edited by hand\n", encoding="utf-8")
    checked = grader("check-exercise", "gqa", "--course", "course.yaml", cwd=root, status=1)
    assert "stub up to date" in checked.stdout and "run `grader stubs --course course.yaml`" in checked.stdout
    assert "its mistake gqa.scale_by_d is never named" in checked.stdout
    assert "names a hint that is not its bug's: gqa.no_scaling" in checked.stdout
    assert "buggy/gqa/stale" in checked.stdout and "occurs 0 times" in checked.stdout  # a table row, not a traceback
    assert "no partial variant of variants_gqa.py is caught by the no-loop rule" in checked.stdout


def test_public_checks_run_on_the_reference(with_gqa):
    """The public checks know the new exercise from course.yaml: `-m gqa --strict-markers` passes on the reference."""
    root, _ = with_gqa
    process = subprocess.run([sys.executable, "-m", "pytest", "tests/course", "-m", "gqa", "--impl", "solutions",
                              "--strict-markers", "-q", "-p", "no:cacheprovider"], cwd=root, capture_output=True,
                             text=True, timeout=300)
    assert process.returncode == 0 and "5 passed" in process.stdout, process.stdout[-3000:]


def test_release(with_gqa, tmp_path):
    """The handout holds the exercise's stub, public checks, hints and notebook, and its README lists it; the handout
    of its notebook's assignment holds it alone, and its Gradescope zip grades it."""
    root, _ = with_gqa
    grader("release", str(tmp_path / "handout"), "--course", "course.yaml", "--grader-repository", REPOSITORY, cwd=root)
    handout = tmp_path / "handout"
    for path in ("exercises/gqa.py", "tests/public/test_gqa.py", "tests/public/hints_gqa.py",
                 f"notebooks/{NOTEBOOK}/{NOTEBOOK}.ipynb"):
        assert (handout / path).is_file(), path
    assert "`exercises/gqa.py`" in (handout / "README.md").read_text(encoding="utf-8")
    assert list(json.loads((handout / "tests/public/exercises.json").read_text()))[-1] == "gqa"
    grader("release", str(tmp_path / "week"), "--course", "course.yaml", "--grader-repository", REPOSITORY,
           "--assignment", NOTEBOOK, "--gradescope", str(tmp_path / "week.zip"), cwd=root)
    week = tmp_path / "week"
    assert sorted(p.name for p in (week / "exercises").glob("*.py")) == ["__init__.py", "gqa.py"]
    assert sorted(p.name for p in (week / "tests" / "public").glob("test_*.py")) == ["test_gqa.py"]
    with zipfile.ZipFile(tmp_path / "week.zip") as archive:
        assert f"--assignment {NOTEBOOK}" in archive.read("run_autograder").decode()
        assert {"solutions/gqa.py", "tests/course/gqa/hidden_gqa.py", "course.yaml"} <= set(archive.namelist())


def test_grade_and_batch(with_gqa, tmp_path):
    """The reference earns full marks on the ninth exercise and the whole course, the stub none; its notebook alone is
    graded out of its own points; a batch's gradebook has its column."""
    root, _ = with_gqa

    def grade(submission: Path, name: str) -> dict:
        out = tmp_path / f"{name}.json"
        grader("grade", str(submission), "--course", "course.yaml", "--out", str(out), cwd=root)
        return json.loads(out.read_text(encoding="utf-8"))

    reference = grade(root / "solutions", "reference")
    assert reference["exercises"]["gqa"] == {"score": 10, "max_score": 10}
    assert reference["score"] == reference["max_score"] == 110
    stub = grade(root / "exercises", "stub")
    assert stub["exercises"]["gqa"] == {"score": 0, "max_score": 10, "stubs": ["gqa.GroupedQueryAttention.__init__",
                                                                             "gqa.GroupedQueryAttention.forward"]}
    assert stub["score"] == 0
    notebook = grade(root / "nbgrader" / "source" / NOTEBOOK / f"{NOTEBOOK}.ipynb", "notebook")
    assert (notebook["score"], notebook["max_score"], notebook["assignment"]) == (10, 10, NOTEBOOK)
    klass = tmp_path / "class"
    shutil.copytree(root / "solutions", klass / "ada")
    shutil.copytree(root / "exercises", klass / "ben")
    grader("batch", str(klass), "--course", "course.yaml", "--out", str(tmp_path / "out"), "--jobs", "1", cwd=root)
    with open(tmp_path / "out" / "gradebook.csv", newline="", encoding="utf-8-sig") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert float(rows["ada"]["gqa"]) == 10 and float(rows["ada"]["score"]) == 110
    assert float(rows["ben"]["gqa"]) == 0 and float(rows["ben"]["max_score"]) == 110
