"""Benchmark: the cost of recording a class, per record, as the class grows (no grading: synthetic finished records).

For each class size, each record goes through what batch does once a submission is graded (``batch.store``: its
feedback pages, the files it gave, its results.json), then the class's reports are written once
(``records.publish``: gradebook.csv, the LMS files, summary.html, each results.json and feedback page again with its
adjustments), then a rerun's reading of the records (``batch.load_results``, ``rerun.load_taken``: what a batch
killed mid-way reads to resume). Flat figures per record mean that recording grows linearly with the class. Each
figure is the best of ``--rounds`` (the machine is shared: a classmate's load only ever adds time).

Beside them, the old code's: it rewrote gradebook.csv after every record, a gradebook of the class so far, so each
record cost a gradebook of half the class on average (measured here: it grows with the class, and the whole class's
writing with its square).

    python benchmarks/recording.py --students 1000 4000 10000 --rounds 2
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from grader.batch import Graded, load_results, store  # noqa: E402
from grader.course import load_course  # noqa: E402
from grader.records.adjust import Records  # noqa: E402
from grader.records.publish import publish  # noqa: E402
from grader.reports.gradebook import write_gradebook  # noqa: E402
from grader.rerun import load_taken  # noqa: E402

CHECKS = 6  # per exercise: a small submission's record


def finished(course, student: str, number: int) -> Graded:
    """A graded record as a job returns it: every exercise with ``CHECKS`` checks, one failed where ``number`` says."""
    tests, exercises = [], {}
    for index, exercise in enumerate(course.exercises):
        share = exercise.points / CHECKS
        failed = (number + index) % 3 == 0
        for check in range(CHECKS):
            lost = failed and check == 0
            tests.append({"name": f"{exercise.module}: check {check}", "score": 0.0 if lost else share,
                          "max_score": share, "status": "failed" if lost else "passed",
                          "output": "the rows do not sum to 1 (largest error 0.5)" if lost else "",
                          "visibility": "visible", "tags": [exercise.module]})
        exercises[exercise.module] = {"score": exercise.points - share * failed, "max_score": exercise.points}
    score = sum(e["score"] for e in exercises.values())
    results = {"score": score, "max_score": course.total_points, "execution_time": 1.0, "output": "", "tests": tests,
               "exercises": exercises, "grader_version": "bench", "device": "cpu", "submission_sha256": "0" * 64,
               "status": "graded", "student": student, "graded_at": "2026-11-20T12:00:00+00:00",
               "fingerprint": f"{number:064x}"}
    return Graded(results, {exercise.module: "def f():\n    return 1\n" for exercise in course.exercises})


def measure(course, students: int, folder: Path) -> dict[str, float]:
    """Seconds per record of each phase for a class of ``students``."""
    titles = {e.module: e.title for e in course.exercises}
    keys = [f"s{number:05d}" for number in range(students)]
    graded = [finished(course, key, number) for number, key in enumerate(keys)]
    (folder / "results").mkdir()
    started = time.perf_counter()
    for key, job in zip(keys, graded):
        store(folder, key, job.results, job, titles)
    stored = time.perf_counter() - started
    started = time.perf_counter()
    shown = publish(course, folder, [job.results for job in graded], Records())
    published = time.perf_counter() - started
    started = time.perf_counter()
    loaded, taken = load_results(folder), load_taken(folder, keys, course)
    resumed = time.perf_counter() - started
    assert len(loaded) == len(taken) == students
    started = time.perf_counter()
    for _ in range(3):
        write_gradebook(course, folder, shown.rows[:students // 2])
    gradebook = (time.perf_counter() - started) / 3
    return {"store": stored / students, "publish": published / students, "resume": resumed / students,
            "old gradebook": gradebook}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, nargs="+", default=[1000, 4000, 10000])
    parser.add_argument("--rounds", type=int, default=1, help="measurements per class size; the best is shown")
    parser.add_argument("--course", default=str(ROOT / "course.yaml"))
    args = parser.parse_args()
    course = load_course(args.course)
    print("ms per record: store (each record's files), publish (the reports, once), resume (a rerun's reading); "
          "new = their sum; old = new + a gradebook.csv of half the class (the old code rewrote the class's after each "
          "record)")
    print(f"{'students':>9} {'store':>8} {'publish':>8} {'resume':>8} {'new':>8} {'old':>8} {'old/new':>8}")
    for students in args.students:
        rounds = []
        for _ in range(args.rounds):
            folder = Path(tempfile.mkdtemp(prefix="recording-"))
            try:
                rounds.append(measure(course, students, folder))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        cost = {phase: min(measured[phase] for measured in rounds) * 1000 for phase in rounds[0]}
        new = cost["store"] + cost["publish"] + cost["resume"]
        old = new + cost["old gradebook"]
        print(f"{students:>9} {cost['store']:>8.2f} {cost['publish']:>8.2f} {cost['resume']:>8.2f} {new:>8.2f} "
              f"{old:>8.2f} {old / new:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
