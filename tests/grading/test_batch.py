"""Batch grading: outputs, resumability, determinism across --jobs and Dask, crash safety."""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from cluster import dask_cluster
from courses import MODULES, TOTAL, course_variant

import grader.intake.submission
from grader import ROOT
from grader.batch import NOT_READ, _course, run_batch
from grader.course import COURSE_FILE, course, load_course
from grader.entries import BatchError, discover

pytestmark = pytest.mark.slow
SOLUTIONS = ROOT / "solutions"
BUGGY_SOFTMAX = '''import torch


def softmax(x, dim=-1, temperature=1.0):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    e = torch.exp(x / temperature)
    return e / e.sum(dim=0, keepdim=True)
'''


def _copy_solutions(target: Path) -> Path:
    target.mkdir(parents=True)
    for module in MODULES:
        shutil.copy(SOLUTIONS / f"{module}.py", target / f"{module}.py")
    return target


@pytest.fixture
def klass(tmp_path) -> Path:
    """A class of three: a correct folder, a buggy zip, an empty folder."""
    root = tmp_path / "submissions"
    _copy_solutions(root / "good")
    buggy = _copy_solutions(tmp_path / "buggy")
    (buggy / "softmax.py").write_text(BUGGY_SOFTMAX)
    with zipfile.ZipFile(root / "buggy.zip", "w") as archive:
        for path in sorted(buggy.iterdir()):
            archive.write(path, f"exercises/{path.name}")
    (root / "empty").mkdir()
    return root


class Recorder:
    """A progress sink that remembers the counts it was given."""

    def start(self, total, counts):
        self.total, self.counts = total, dict(counts)

    def advance(self, counts):
        self.counts = dict(counts)
        self.done = getattr(self, "done", 0) + 1

    def again(self, count, counts):
        self.counts, self.done = dict(counts), self.done - count


def _scores(rows):
    return {r["student"]: (r["score"], tuple(sorted((m, e["score"]) for m, e in r["exercises"].items()))) for r in rows}


def test_batch_writes_results_gradebook_feedback_and_summary(klass, tmp_path):
    """Every student gets results.json and feedback; the gradebook and summary cover the class; a bad one is an error row."""
    out = tmp_path / "out"
    rows = run_batch(klass, out, course_file=COURSE_FILE, jobs=2)
    by_student = {r["student"]: r for r in rows}
    assert by_student["good"]["score"] == by_student["good"]["max_score"] == TOTAL
    assert 0 < by_student["buggy"]["score"] < 100 and by_student["buggy"]["exercises"]["softmax"]["score"] < 10
    assert all(by_student["buggy"]["exercises"][m]["score"] == by_student["good"]["exercises"][m]["score"] for m in MODULES if m != "softmax")
    assert by_student["empty"]["status"].startswith("error") and by_student["empty"]["score"] == 0
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as handle:
        gradebook = list(csv.DictReader(handle))
    assert [row["student"] for row in gradebook] == ["buggy", "empty", "good"]
    assert set(MODULES) <= set(gradebook[0]) and {"status", "graded_at", "submission_sha256"} <= set(gradebook[0])
    for student in ("good", "buggy", "empty"):
        assert (out / "results" / f"{student}.json").is_file()
        assert (out / "feedback" / f"{student}.md").is_file() and (out / "feedback" / f"{student}.html").is_file()
    assert "- **failed** (0 / " in (out / "feedback" / "buggy.md").read_text()
    assert "could not be graded" in (out / "feedback" / "empty.md").read_text()
    summary = (out / "summary.html").read_text()
    for picture in ("score_histogram.png", "exercise_scores.png"):
        assert f"src='{picture}'" in summary and (out / picture).stat().st_size > 0
    similar = json.loads((out / "similarity.json").read_text(encoding="utf-8"))  # good and buggy hold the same code
    assert {(row["a"], row["b"]) for row in similar["pairs"]} == {("buggy", "good")}
    assert "<table id='similar-pairs'>" in summary and "similarity.html#" in summary, "the summary lists and links the pair"


def test_the_late_policy_regrades_nobody_and_a_grading_setting_everybody(tmp_path):
    """The late policy is applied when the reports are written: changing it leaves the material's fingerprint (a
    new late percent regraded the whole class: our instructor's walk-through); the seed of the drawn cases changes
    it."""
    from courses import LATE_POLICY

    from grader.rerun import material_fingerprint
    text = COURSE_FILE.read_text(encoding="utf-8")
    plain = material_fingerprint(course_variant(tmp_path / "a", text))
    assert material_fingerprint(course_variant(tmp_path / "b", text + LATE_POLICY)) == plain
    assert material_fingerprint(course_variant(tmp_path / "c", text + LATE_POLICY.replace("percent: 10", "percent: 20"))) == plain
    assert material_fingerprint(course_variant(tmp_path / "d", text.replace("seed: 20261121", "seed: 1"))) != plain


def test_rerun_skips_unchanged_and_regrades_changed(klass, tmp_path):
    """A rerun grades nothing unchanged; a changed submission is regraded; --force regrades all."""
    out = tmp_path / "out"
    run_batch(klass, out, course_file=COURSE_FILE, jobs=2)
    progress = Recorder()
    run_batch(klass, out, course_file=COURSE_FILE, jobs=2, progress=progress)
    assert progress.total == 0 and progress.counts["up to date"] == 3
    (klass / "good" / "softmax.py").write_text(BUGGY_SOFTMAX)
    rows = run_batch(klass, out, course_file=COURSE_FILE, jobs=2, progress=progress)
    assert progress.total == 1 and {r["student"]: r["score"] for r in rows}["good"] < 100
    run_batch(klass, out, course_file=COURSE_FILE, jobs=2, force=True, progress=progress)
    assert progress.total == 3


def test_scores_do_not_depend_on_jobs_or_dask(klass, tmp_path):
    """--jobs 1, --jobs 2 and a Dask LocalCluster give the same scores."""
    one = run_batch(klass, tmp_path / "one", course_file=COURSE_FILE, jobs=1)
    two = run_batch(klass, tmp_path / "two", course_file=COURSE_FILE, jobs=2)
    dask = run_batch(klass, tmp_path / "dask", course_file=COURSE_FILE, jobs=2, dask="local")
    assert _scores(one) == _scores(two) == _scores(dask)


THREADED_JOBS = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from grader.batch import grade_job
from grader.course import COURSE_FILE

def job(path):
    return grade_job("student", path, str(COURSE_FILE), "cpu", False).results["score"]

with ThreadPoolExecutor(len(sys.argv) - 1) as pool:
    together = list(pool.map(job, sys.argv[1:]))
print(json.dumps([together, [job(path) for path in sys.argv[1:]]]))
"""


def test_threads_of_one_process_grade_as_if_alone(klass):
    """Jobs run by several threads of one process (a Dask worker with several threads) grade as if alone."""
    paths = [str(klass / "good"), str(klass / "buggy.zip")] * 2
    out = subprocess.run([sys.executable, "-c", THREADED_JOBS, *paths], capture_output=True, text=True, timeout=600,
                         check=True).stdout
    together, alone = json.loads(out.splitlines()[-1])
    assert together == alone
    assert alone[0] == TOTAL and alone[1] < TOTAL


WARM_POOL = """
import json, sys
from grader.batch import make_executor


def torch_in_job(_):
    return id(sys.modules.get("torch"))

before = "torch" in sys.modules
with make_executor(2, None) as pool:
    print(json.dumps([before, id(sys.modules["torch"]), sorted(set(pool.map(torch_in_job, range(4))))]))
"""


def test_jobs_inherit_torch_from_the_batch_instead_of_importing_it():
    """The local pool's jobs are forked after torch is imported once, so none of them imports it again."""
    out = subprocess.run([sys.executable, "-c", WARM_POOL], capture_output=True, text=True, timeout=300, check=True).stdout
    before, parent, jobs = json.loads(out.splitlines()[-1])
    assert not before
    assert jobs == [parent]


def test_kill_9_loses_nothing(klass, tmp_path):
    """A batch killed with SIGKILL resumes: finished students are kept, the rest graded, the gradebook agrees."""
    for n in range(4):
        _copy_solutions(klass / f"extra{n}")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "grader", "batch", str(klass), "--out", str(out), "--jobs", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list((out / "results").glob("*.json"))) < 2:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished = {p.name: json.loads(p.read_text())["graded_at"] for p in (out / "results").glob("*.json")}
    assert 2 <= len(finished) < 7, "the batch should have been killed part-way"
    assert subprocess.run(command, capture_output=True).returncode == 0
    results = {p.name: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    assert len(results) == 7
    assert all(results[name]["graded_at"] == graded_at for name, graded_at in finished.items())
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as handle:
        assert sorted(row["student"] for row in csv.DictReader(handle)) == sorted(r["student"] for r in results.values())


def test_discover_reads_folders_zips_and_lists(klass, tmp_path):
    """Student ids come from folder and file names; a list file names paths; two submissions for one student are one
    entry that says so, naming both; a missing source is refused."""
    assert [e.student for e in discover(klass, course())] == ["buggy", "empty", "good"]
    listing = tmp_path / "class.txt"
    listing.write_text("# one path per line\nsubmissions/good\n\nsubmissions/buggy.zip\n")
    assert [(e.student, e.path.name) for e in discover(listing, course())] == [("good", "good"), ("buggy", "buggy.zip")]
    assert all(e.problem is None for e in discover(listing, course()))
    (klass / "good.zip").write_bytes((klass / "buggy.zip").read_bytes())
    assert [(e.student, e.problem) for e in discover(klass, course())] == [
        ("buggy", None), ("empty", None),
        ("good", "could not be graded: two submissions for good: good/ and good.zip; keep one")]
    listing.write_text("submissions/good\nsubmissions/good.zip\nsubmissions/buggy.zip\n")
    assert [(e.student, e.problem) for e in discover(listing, course())] == [
        ("good", "could not be graded: two submissions for good: submissions/good/ and submissions/good.zip; keep one"),
        ("buggy", None)]
    with pytest.raises(BatchError, match="does not exist"):
        discover(tmp_path / "nowhere", course())
    listing.write_text("submissions/good\nsubmissions/nobody\n")  # the instructor's typo (walk-through 7)
    with pytest.raises(BatchError, match=r"class.txt:2: submissions/nobody does not exist"):
        discover(listing, course())
    (klass / "good.zip").unlink()
    shutil.copytree(klass / "good", klass / "zoe\u0308")  # macOS's decomposed name, and the composed one
    shutil.copytree(klass / "good", klass / "zo\u00eb")
    problem = {e.student: e.problem for e in discover(klass, course())}["zo\u00eb"]
    assert problem.endswith("(their names differ: 'zoe\\u0308', 'zo\\xeb'); keep one"), problem


def test_a_class_without_submissions_or_with_its_reports_inside_is_refused_before_any_work(tmp_path):
    """A folder of no submission (empty, or one student's submission given for the class's) and an --out inside the
    class's folder stop the batch in one line before anything is graded or written: they gave "0 submissions" and
    empty reports with exit 0, and reports graded as a student called `grades` (instructor walk-through 7)."""
    from grader.batch import run_batch
    one = tmp_path / "alice"
    shutil.copytree(SOLUTIONS, one, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BatchError, match="alice holds exercise files, as one student's submission"):
        run_batch(one, tmp_path / "out", course_file=COURSE_FILE)
    checkout = tmp_path / "checkout"  # a handout's checkout: exercises/ and tests/ were graded as two students
    shutil.copytree(one, checkout / "exercises")
    (checkout / "tests").mkdir()
    with pytest.raises(BatchError, match="checkout holds exercise files, as one student's submission"):
        run_batch(checkout, tmp_path / "out", course_file=COURSE_FILE)
    with pytest.raises(BatchError, match=r"empty holds no submissions \(a folder, .zip or .ipynb per student"):
        run_batch(tmp_path / "empty", tmp_path / "out", course_file=COURSE_FILE)
    with pytest.raises(BatchError, match="is inside the class's folder"):
        run_batch(tmp_path, tmp_path / "grades", course_file=COURSE_FILE)
    assert not (tmp_path / "out").exists() and not (tmp_path / "grades").exists()
    graded = tmp_path / "graded"  # a batch's output given as the class: its folders were four students (walk-through 8)
    (graded / "records").mkdir(parents=True)
    (graded / "records" / "course.txt").write_text("../course.yaml\n")
    (graded / "results").mkdir()
    with pytest.raises(BatchError, match=r"graded is a batch's output folder \(it holds records/course.txt\)"):
        run_batch(graded, tmp_path / "again", course_file=COURSE_FILE)
    (graded / "records" / "course.txt").unlink()  # a batch that did not end: its lock is there from its start
    (graded / ".lock").touch()
    with pytest.raises(BatchError, match=r"graded is a batch's output folder \(it holds .lock\)"):
        run_batch(graded, tmp_path / "again", course_file=COURSE_FILE)
    assert not (tmp_path / "again").exists()


def test_a_second_batch_into_a_folder_being_written_is_refused(tmp_path):
    """While a batch writes a class's folder (its lock held), another batch into it stops in one line: two at once
    broke each other's staging, one ending in a traceback (instructor walk-through 7); the lock is freed however the
    batch ends."""
    import fcntl

    from grader.batch import run_batch
    from grader.entries import hold_out
    klass, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(SOLUTIONS, klass / "ada", ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    out.mkdir()
    with open(out / ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(BatchError, match="another grader batch is writing to"):
            run_batch(klass, out, course_file=COURSE_FILE)
    assert not (out / "results" / "ada.json").exists()
    with hold_out(out):  # a batch that raised frees its lock, though its exception is kept (review 11)
        pass
    for odd in ("fifo", "folder", "link"):  # a lock that is none is refused in one line, never waited on or followed
        other = tmp_path / odd
        other.mkdir()
        {"fifo": lambda: os.mkfifo(other / ".lock"), "folder": lambda: (other / ".lock").mkdir(),
         "link": lambda: (other / ".lock").symlink_to(tmp_path / "elsewhere")}[odd]()
        with pytest.raises(BatchError, match=r"\.lock cannot be the batch's lock"):
            with hold_out(other):
                pass
    assert not (tmp_path / "elsewhere").exists()
    try:
        with hold_out(out):
            raise BatchError("a failure while the lock is held")
    except BatchError as kept:
        with hold_out(out):
            assert str(kept) == "a failure while the lock is held"


def test_a_job_validates_course_yaml_again_only_when_it_changes(tmp_path):
    """A job grading many submissions reads course.yaml once, and again as soon as the file changes."""
    text = COURSE_FILE.read_text(encoding="utf-8")
    course_file = course_variant(tmp_path, text)
    first = _course(str(course_file))
    assert _course(str(course_file)) is first
    course_file.write_text(text.replace("title: Self-attention in PyTorch", "title: Attention, again", 1), encoding="utf-8")
    assert _course(str(course_file)).title == "Attention, again"


def nbgrader_submitted(root: Path) -> Path:
    """nbgrader's submitted/ folder: ada hands in the softmax notebook done and the quiz's stub, ben the softmax stub."""
    from grader.authoring.release import release_notebook

    def hand_in(student: str, module: str, done: bool) -> None:
        name = course().notebook_name(module)
        source = json.loads((course().nbgrader_dir / "source" / name / f"{name}.ipynb").read_text(encoding="utf-8"))
        notebook = source if done else release_notebook(source, module)
        target = root / student / name / f"{name}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(notebook), encoding="utf-8")

    hand_in("ada", "softmax", True)
    hand_in("ada", "quiz", False)
    hand_in("ben", "softmax", False)
    return root


def test_discover_finds_one_entry_per_student_and_notebook(tmp_path):
    """In nbgrader's layout every notebook of every student is its own entry, graded as its assignment."""
    submitted = nbgrader_submitted(tmp_path / "submitted")
    softmax, quiz = course().notebook_name("softmax"), course().notebook_name("quiz")
    assert [(e.student, e.assignment, e.path.name) for e in discover(submitted, course())] == [
        ("ada", softmax, f"{softmax}.ipynb"), ("ada", quiz, f"{quiz}.ipynb"), ("ben", softmax, f"{softmax}.ipynb")]


def test_what_most_entries_are_decides_how_the_class_is_graded(tmp_path):
    """A class that is more than half notebooks (nbgrader folders, .ipynb) is graded per assignment, and its other
    entries (a folder of files, an empty folder, a zip) are refused each on its own, saying why; a class mostly of
    folders and zips is graded on the whole course, every student one entry, notebooks included. One student's folder
    (even an empty one, or one holding only another course's assignment) made a class of notebooks one of the course:
    every classmate's 10/10 recorded as 10/100 (red team). An assignment the instructor names (--assignment) refuses
    no entry for its shape."""
    submitted = nbgrader_submitted(tmp_path / "submitted")
    assert {e.whole_course for e in discover(submitted, course())} == {False}
    shutil.copy(course().nbgrader_dir / "source" / "04_qkv" / "04_qkv.ipynb", submitted / "ivan.ipynb")
    _copy_solutions(submitted / "cy")
    (submitted / "dave" / "ps0_intro").mkdir(parents=True)
    entries = discover(submitted, course())
    assert [(e.student, e.assignment, e.whole_course) for e in entries] == [
        ("ada", "02_softmax", False), ("ada", "05_quiz", False), ("ben", "02_softmax", False), ("cy", None, False),
        ("dave", None, False), ("ivan", None, False)]
    refused = {e.student: e.problem for e in entries if e.problem}
    assert list(refused) == ["cy", "dave"]
    assert all("this class is graded per assignment (most of its entries are notebooks)" in p for p in refused.values())
    first, *_, last = course().assignment_modules()
    assert refused["dave"].startswith(f"could not be graded: dave/ holds no assignment folder of the course ({first}, ")
    assert f", {last}), and this class is graded per assignment" in refused["dave"]
    shutil.copy(submitted / "ivan.ipynb", submitted / "gus.ipynb")
    (submitted / "eve.zip").write_bytes(b"PK")
    entries = discover(submitted, course())  # 4 notebooks of 7 entries: still per assignment
    assert [e.problem.split(",")[0] for e in entries if e.student == "eve"] == ["could not be graded: eve.zip is not a notebook"]
    named = discover(submitted, course(), "02_softmax")  # the instructor's assignment: no entry refused for its shape
    assert [(e.student, e.problem is None, e.whole_course) for e in named if e.student in ("cy", "dave", "eve")] == [
        ("cy", True, False), ("dave", True, False), ("eve", True, False)]
    _copy_solutions(submitted / "fay")
    entries = discover(submitted, course())  # 4 of 8, split evenly: the course
    assert [(e.student, e.assignment, e.path.name, e.whole_course, e.problem) for e in entries] == [
        (name, None, path, True, None) for name, path in (
            ("ada", "ada"), ("ben", "ben"), ("cy", "cy"), ("dave", "dave"), ("eve", "eve.zip"), ("fay", "fay"),
            ("gus", "gus.ipynb"), ("ivan", "ivan.ipynb"))]


def test_a_students_notebook_folders_are_graded_as_the_assignment_that_groups_them(tmp_path):
    """`--assignment week1` in a course whose week1 groups scores and softmax: a student who handed in the handout's
    notebook folders (01_scores/, 02_softmax/, ...) is graded as week1 on their whole folder, not left out without a
    word (the sixth instructor walk-through); one whose folders hold none of week1's exercises is left out (nothing
    of week1 handed in), and a week1/ folder is still taken alone."""
    text = COURSE_FILE.read_text(encoding="utf-8").replace(
        "# assignments:\n#   - {name: week1", "assignments:\n  - {name: week1")
    week = course_variant(tmp_path / "course", text)
    submitted = nbgrader_submitted(tmp_path / "submitted")  # ada: softmax (done) and quiz; ben: softmax (a stub)
    (submitted / "cy" / "week1").mkdir(parents=True)
    shutil.copy(SOLUTIONS / "softmax.py", submitted / "cy" / "week1" / "softmax.py")
    shutil.rmtree(submitted / "ada" / course().notebook_name("softmax"))  # ada: the quiz alone, no exercise of week1
    entries = discover(submitted, load_course(week), "week1")
    assert [(e.student, e.path.relative_to(submitted).as_posix(), e.assignment) for e in entries] == [
        ("ada", f"ada/{course().notebook_name('quiz')}/{course().notebook_name('quiz')}.ipynb",
         course().notebook_name("quiz")), ("ben", "ben", None), ("cy", "cy/week1", "week1")]
    rows = run_batch(submitted, tmp_path / "out", course_file=week, jobs=1, assignment="week1")
    assert [(r["student"], r["assignment"], r["exercises"]["softmax"]["score"]) for r in rows] == [
        ("ben", "week1", 0), ("cy", "week1", course().exercise("softmax").points)]


def test_a_file_for_a_notebook_costs_no_classmate_their_assignments(tmp_path):
    """In nbgrader's layout an assignment folder holding the exercise's file instead of its notebook is graded as that
    assignment, on that file: the class stays one of assignments. It made the whole class one of the course (every
    classmate's 10/10 recorded as 10/100, the LMS files' assignment columns gone: red team)."""
    submitted = nbgrader_submitted(tmp_path / "submitted")
    softmax = course().notebook_name("softmax")
    (submitted / "mallory" / softmax).mkdir(parents=True)
    shutil.copy(SOLUTIONS / "softmax.py", submitted / "mallory" / softmax / "softmax.py")
    entries = discover(submitted, course())
    assert {e.whole_course for e in entries} == {False}
    assert [(e.student, e.assignment) for e in entries] == [
        ("ada", softmax), ("ada", course().notebook_name("quiz")), ("ben", softmax), ("mallory", softmax)]
    shutil.rmtree(submitted / "ada"), shutil.rmtree(submitted / "ben")
    rows = run_batch(submitted, tmp_path / "out", course_file=COURSE_FILE, jobs=1)
    assert [(r["student"], r["assignment"], r["score"], r["max_score"]) for r in rows] == [
        ("mallory", softmax, course().exercise("softmax").points, course().exercise("softmax").points)]


def test_nbgrader_notebooks_are_graded_as_their_own_assignments(tmp_path):
    """Each notebook is graded out of its own points with feedback about its own exercise only (and which cell was
    taken): a gradebook row per student and assignment, results/<student>/<assignment>.json,
    feedback/<student>/<assignment>.md."""
    submitted = nbgrader_submitted(tmp_path / "submitted")
    out = tmp_path / "out"
    softmax, quiz = course().notebook_name("softmax"), course().notebook_name("quiz")
    (submitted / "ada" / softmax / "timestamp.txt").write_text("2026-11-20 14:03:12.500000 UTC", encoding="utf-8")
    rows = run_batch(submitted, out, course_file=COURSE_FILE, jobs=1)
    points = {m: course().exercise(m).points for m in ("softmax", "quiz")}
    assert [(r["student"], r["assignment"], r["score"], r["max_score"], list(r["exercises"])) for r in rows] == [
        ("ada", softmax, points["softmax"], points["softmax"], ["softmax"]),
        ("ada", quiz, 0, points["quiz"], ["quiz"]),
        ("ben", softmax, 0, points["softmax"], ["softmax"])]
    assert json.loads((out / "results" / "ada" / f"{softmax}.json").read_text())["score"] == points["softmax"]
    feedback = (out / "feedback" / "ada" / f"{softmax}.md").read_text(encoding="utf-8")
    assert f"/ {points['softmax']}" in feedback
    assert not any(f"## {m}" in feedback for m in MODULES if m != "softmax"), feedback
    assert "not in the submission" not in feedback
    page = (out / "feedback" / "ada" / f"{softmax}.html").read_text(encoding="utf-8")
    assert f"<p class='note'>Note: exercise code taken from the solution cells of {softmax}.ipynb: softmax (cell " in page
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as handle:
        gradebook = list(csv.DictReader(handle))

    def cell(text: str) -> float | None:
        return float(text) if text else None  # blank: the exercise is not the row's assignment

    assert [(r["student"], r["assignment"], cell(r["softmax"]), cell(r["quiz"])) for r in gradebook] == [
        ("ada", softmax, points["softmax"], None), ("ada", quiz, None, 0), ("ben", softmax, 0, None)]
    assert [r["submitted_at"] for r in gradebook] == ["2026-11-20T14:03:12.500000+00:00", "", ""]  # nbgrader's time
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as handle:  # a column per assignment, ben has no quiz
        canvas = list(csv.reader(handle))
    titles = [course().exercise(m).title for m in ("softmax", "quiz")]
    assert canvas[:2] == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *titles],
                          ["    Points Possible", "", "", "", "", str(points["softmax"]), str(points["quiz"])]]
    assert [row[2:3] + row[5:] for row in canvas[2:]] == [["ada", str(points["softmax"]), "0"], ["ben", "0", ""]]
    recorder = Recorder()
    run_batch(submitted, out, course_file=COURSE_FILE, jobs=1, progress=recorder)
    assert recorder.counts == {"graded": 0, "errored": 0, "up to date": 3}, "a rerun regrades nothing"


def _outcomes(rows):
    """Everything a record says about the submission, without timings."""
    return {r["student"]: (r["score"], r.get("status"), r["output"],
                           [(t["name"], t["status"], t["score"], t.get("output")) for t in r["tests"]]) for r in rows}


def test_a_dask_cluster_of_separate_processes_grades_exactly_like_the_local_pool(klass, tmp_path):
    """`dask scheduler` and two `dask worker --nworkers 1 --nthreads 1` started as processes of their own (as on a
    university cluster or Kubernetes) give the same records, test by test, as the local pool."""
    local = run_batch(klass, tmp_path / "local", course_file=COURSE_FILE, jobs=2)
    with dask_cluster(hosts=2, processes=1) as address:
        remote = run_batch(klass, tmp_path / "cluster", course_file=COURSE_FILE, jobs=2, dask=address)
    assert _outcomes(remote) == _outcomes(local)
    scores = {r["student"]: (r["score"], r["max_score"], r.get("status")) for r in remote}
    assert scores["good"][0] == scores["good"][1] and scores["good"][2] == "graded"  # not a class of errors
    assert 0 < scores["buggy"][0] < scores["buggy"][1]


def test_two_submissions_for_one_student_cost_only_that_student(tmp_path):
    """bob/ and bob.zip: one clear error row for bob naming both, his classmate graded; `grader similarity` leaves bob
    out with a note and compares the others."""
    root = tmp_path / "class"
    _copy_solutions(root / "ann")
    _copy_solutions(root / "bob")
    with zipfile.ZipFile(root / "bob.zip", "w") as archive:
        for module in MODULES:
            archive.write(SOLUTIONS / f"{module}.py", f"{module}.py")
    rows = {r["student"]: r for r in run_batch(root, tmp_path / "out", course_file=COURSE_FILE, jobs=1)}
    assert rows["ann"]["status"] == "graded" and rows["ann"]["score"] == 100
    assert rows["bob"]["status"] == "error: could not be graded: two submissions for bob: bob/ and bob.zip; keep one"
    assert rows["bob"]["score"] == 0 and "bob/ and bob.zip" in (tmp_path / "out" / "feedback" / "bob.md").read_text()
    similarity = subprocess.run([sys.executable, "-m", "grader", "similarity", str(root), "--out", str(tmp_path / "sim")],
                                cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert similarity.returncode == 0, similarity.stderr
    assert "note: bob left out of the comparison: could not be graded: two submissions for bob" in similarity.stderr
    assert (tmp_path / "sim" / "similarity.json").is_file()


def log_reads(monkeypatch, log: Path, slow: dict[str, float] | None = None) -> None:
    """Make every reading of a submission (intake's ``_read``, in whichever process runs it: the patch is inherited
    by forked jobs and readers) append its process id, its parent's and the path to ``log``; a path through a folder
    named in ``slow`` takes that many seconds of CPU time longer (read when the reading starts)."""
    original = grader.intake.submission._read

    def logged(path, *args):
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {os.getppid()} {path}\n")
        burn = max([seconds for folder, seconds in (slow or {}).items() if folder in Path(path).parts], default=0)
        end = time.process_time() + burn
        while time.process_time() < end:
            pass
        return original(path, *args)

    monkeypatch.setattr(grader.intake.submission, "_read", logged)


def reads(log: Path) -> list[tuple[int, int, str]]:
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [(int(pid), int(parent), path) for pid, parent, path in (line.split(" ", 2) for line in lines)]


def test_the_batch_process_reads_and_parses_no_submission(tmp_path, monkeypatch):
    """Every submission, notebooks included, is read and parsed in its job (by a reader the job forks), never in the
    batch's own process nor in a reader it forks itself; the class is graded."""
    submitted = nbgrader_submitted(tmp_path / "submitted")
    _copy_solutions(submitted / "cy")
    log = tmp_path / "reads.log"
    log_reads(monkeypatch, log)
    rows = run_batch(submitted, tmp_path / "out", course_file=COURSE_FILE, jobs=2)
    softmax, quiz = course().notebook_name("softmax"), course().notebook_name("quiz")
    assert {(r["student"], r.get("assignment")): r["score"] for r in rows if r["status"] == "graded"} == {
        ("ada", softmax): course().exercise("softmax").points, ("ada", quiz): 0, ("ben", softmax): 0}
    assert [r["student"] for r in rows if r["status"] != "graded"] == ["cy"]  # a folder of files, refused unread
    assert len(reads(log)) == 3
    assert [read for read in reads(log) if os.getpid() in read[:2]] == []


def test_a_rerun_reads_nothing_it_read_before_refusals_included(klass, tmp_path, monkeypatch):
    """A rerun with nothing changed reads no submission at all, not even those refused for their own content (an
    empty folder, a corrupt zip), which stay refused; a refused submission whose bytes change is read again."""
    (klass / "corrupt.zip").write_bytes(b"PK\x03\x04 not a zip")
    out = tmp_path / "out"
    first = {r["student"]: r for r in run_batch(klass, out, course_file=COURSE_FILE, jobs=2)}
    assert first["empty"]["status"].startswith("error: cannot grade:") and "fingerprint" in first["empty"]
    assert first["corrupt"]["status"].startswith("error: cannot grade: corrupt.zip is not a readable zip file")
    log = tmp_path / "reads.log"
    log_reads(monkeypatch, log)
    progress = Recorder()
    rerun = {r["student"]: r for r in run_batch(klass, out, course_file=COURSE_FILE, jobs=2, progress=progress)}
    assert reads(log) == [] and progress.total == 0
    assert {s: r["graded_at"] for s, r in rerun.items()} == {s: r["graded_at"] for s, r in first.items()}
    (klass / "corrupt.zip").write_bytes(b"PK\x03\x04 still not a zip")
    run_batch(klass, out, course_file=COURSE_FILE, jobs=2, progress=progress)
    assert [Path(path).name for *_, path in reads(log)] == ["corrupt.zip"] and progress.total == 1


def test_a_students_submissions_share_one_reading_time(tmp_path, monkeypatch):
    """A student whose four notebooks each take 2 s of CPU to read gets 7 s of reading (grading.intake.seconds) for them
    all: what is left unread is refused as such, final until any of that student's submissions changes, and the
    classmates are graded; a rerun reads nothing; once one of them changes, the next run reads that one and those left
    unread, and no other."""
    course_file = course_variant(tmp_path / "course", COURSE_FILE.read_text().replace("seconds: 10 ", "seconds: 7  ", 1))
    submitted = nbgrader_submitted(tmp_path / "submitted")
    for module in ("scores", "softmax", "context", "qkv"):
        name = course().notebook_name(module)
        (submitted / "slow" / name).mkdir(parents=True)
        shutil.copy(course().nbgrader_dir / "source" / name / f"{name}.ipynb", submitted / "slow" / name)
    log, slow, out = tmp_path / "reads.log", {"slow": 2}, tmp_path / "out"
    log_reads(monkeypatch, log, slow)
    # The wall-clock backstop (a busy machine: a grader fault, read again) far away: on a loaded machine it came first.
    monkeypatch.setattr(grader.intake.submission, "WALL_FACTOR", 100)

    def batch() -> dict[str, dict]:
        log.unlink(missing_ok=True)
        return {f"{r['student']}/{r['assignment']}": r for r in run_batch(submitted, out, course_file=course_file, jobs=2)}

    first = batch()
    assert all(r["status"] == "graded" for key, r in first.items() if not key.startswith("slow/"))
    slow_ones = {key: r["status"] for key, r in first.items() if key.startswith("slow/")}
    not_read = {key for key, status in slow_ones.items() if status.startswith(f"error: {NOT_READ}: reading slow's "
                                                                              "submissions took the 7 s")}
    assert not_read and set(slow_ones.values()) - {"graded"} == {slow_ones[key] for key in not_read}
    assert all(r.get("fingerprint") for r in first.values()), "every record is final"
    rerun = batch()
    assert reads(log) == [] and {k: r["graded_at"] for k, r in rerun.items()} == {k: r["graded_at"] for k, r in first.items()}
    changed = sorted(not_read)[0]
    notebook = submitted / changed / f"{changed.split('/')[1]}.ipynb"
    notebook.write_text(notebook.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    slow["slow"] = 0
    last = batch()
    assert sorted(str(Path(path).parent.relative_to(submitted)) for *_, path in reads(log)) == sorted(not_read)
    assert all(r["status"] == "graded" for r in last.values())


def test_a_batch_where_every_grading_failed_is_a_failure_without_reports(tmp_path, grader_faults, capsys):
    """Every submission ending in a grader error is a failed batch: exit status 3 with one line saying so and naming
    the first fault, no report left that could look final (the earlier run's withdrawn, none written), and records
    that are not final, so the next run grades them again. It used to exit 0 with a gradebook of "grader error"s."""
    from grader import cli
    from grader.batch import is_final

    root, out = tmp_path / "class", tmp_path / "out"
    (root / "ann").mkdir(parents=True)
    (root / "bob").mkdir()
    for student in ("ann", "bob"):
        shutil.copy(SOLUTIONS / f"{MODULES[0]}.py", root / student)
    out.mkdir()
    (out / "gradebook.csv").write_text("student,score\nann,100\n")  # an earlier run's
    grader_faults()
    assert cli.main(["batch", str(root), "--out", str(out), "--jobs", "1"]) == cli.GRADER_FAULT_STATUS
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("grader: no submission was graded: all 2 ended in a grader error (the first, ann: error: "
                            "grader error: FileNotFoundError: [Errno 2] No such file or directory: "), error
    assert error.endswith("nothing is final and no report was written: fix the cause and run the batch again")
    assert not [name for name in ("gradebook.csv", "canvas.csv", "moodle.csv", "summary.html") if (out / name).exists()]
    records = [json.loads(path.read_text()) for path in (out / "results").glob("*.json")]
    assert len(records) == 2 and not any(is_final(record) for record in records)
    for page in (out / "feedback" / "ann.md", out / "feedback" / "bob.html"):  # the grader's files are not the students'
        text = page.read_text()
        assert "the grader failed while grading it" in text and "pytest.ini" not in text, text


def test_lines_left_out_are_said_beside_grader_errors(tmp_path, grader_faults, capsys):
    """A batch with a grader error and an override line the graded class contradicts exits 3 (not final) and still
    names the line left out (it was said only in summary.html)."""
    from grader import cli

    root, out = tmp_path / "class", tmp_path / "out"
    _copy_solutions(root / "ann")
    _copy_solutions(root / "bob")
    overrides = tmp_path / "overrides.csv"
    check = "softmax(x) normalizes the last dim at temperature 1; positional (x, dim, temperature) work too."
    overrides.write_text(f'student,exercise,check,points,reason\nbob,softmax,"{check}",9,x\n', encoding="utf-8")
    grader_faults({"ann"})
    assert cli.main(["batch", str(root), "--out", str(out), "--jobs", "1", "--overrides", str(overrides)]) == \
        cli.GRADER_FAULT_STATUS
    error = " ".join(capsys.readouterr().err.split())
    assert f"{overrides}:2: 9 points is more than the 0.42 of check" in error
    assert "1 of 2 records are grader errors, not final (ann)" in error


def test_a_grader_fault_is_graded_again_in_the_same_run(tmp_path, grader_faults, capsys):
    """A submission whose grading failed by the grader's fault (a GPU that did not start in one worker, say) is
    graded again once, in new job processes, before the batch ends: a passing fault costs no rerun, and the counts
    and the progress bar count it once."""
    root, out = tmp_path / "class", tmp_path / "out"
    for student in ("ann", "bob", "cy"):
        _copy_solutions(root / student)
    grader_faults({"bob", "cy"}, once=True)
    progress = Recorder()
    rows = run_batch(root, out, course_file=COURSE_FILE, jobs=2, progress=progress)
    assert {row["student"]: (row["status"], row["score"]) for row in rows} == {
        student: ("graded", 100) for student in ("ann", "bob", "cy")}
    assert progress.done == progress.total == 3 and progress.counts == {"graded": 3, "errored": 0, "up to date": 0}
    said = " ".join(capsys.readouterr().err.split())
    assert re.search(r"grader: 2 of 3 gradings ended in a grader fault \(the first, (bob|cy): error: grader error: "
                     r"FileNotFoundError: .*\); grading them again", said), said


def test_a_batch_with_some_grader_errors_exits_3_naming_them(tmp_path, grader_faults, capsys):
    """A batch where some gradings failed by the grader's fault writes the reports of the class (the faults shown as
    such: their details to the instructor, in the summary, never on the student's page) but exits 3, naming them:
    they are not final, and the next run grades them."""
    from grader import cli

    root, out = tmp_path / "class", tmp_path / "out"
    _copy_solutions(root / "ann")
    _copy_solutions(root / "bob")
    grader_faults({"bob"})
    assert cli.main(["batch", str(root), "--out", str(out), "--jobs", "1"]) == cli.GRADER_FAULT_STATUS
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == ("grader: 1 of 2 records are grader errors, not final (bob): the reports show them so; run the "
                     "batch again to grade them")
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as file:
        rows = {row["student"]: row for row in csv.DictReader(file)}
    assert rows["ann"]["status"] == "graded" and rows["bob"]["status"].startswith("error: grader error: FileNotFound")
    assert "pytest.ini" in (out / "summary.html").read_text() and "pytest.ini" not in (out / "feedback" / "bob.md").read_text()
