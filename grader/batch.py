"""Batch: grade a whole class in parallel, resumably, and write the gradebook, feedback pages and class summary
(``reports.gradebook``, ``reports.feedback``, ``reports.summary``, the LMS exports), with the instructor's roster,
overrides and late penalties applied on top of the graded records (``records``).

Every student's results.json is written atomically as soon as it is graded,
together with a fingerprint of the submission's raw bytes (``rerun.submission_fingerprint``: bounded, nothing
parsed) and of the grading material (suites, references, course.yaml, grader version); a rerun skips students
whose fingerprint is unchanged, so a batch killed at any point loses nothing, and reads nothing it read before.
Reading and parsing a submission happen in its job, in parallel with the others; a student's submissions are
read one after another, within one ``grading.intake.seconds`` for them all per run. ``taken/<key>.json`` keeps
the files each read took (for the similarity report) and the zip's time, under the same fingerprint.
The gradebook and the summary are rebuilt from the results on disk, for the class on disk.
A record is final when grading completed or the submission's own content cannot be graded: a refusal stands until
its bytes change, and a submission left unread because its student's reading time ran out stands until any of that
student's submissions changes (it is recorded under a fingerprint of them all). A grader fault (a "grader error", a
job process that died) is recorded without a fingerprint, so the next run grades it again. A job
process that dies is replaced; the submissions it was grading are graded again, each alone, and the one that kills
its job process even alone gets a non-final error record while every classmate is graded. A job process's
memory is bounded (``grader.memory``), and one that runs out of it dies the same way. Two submissions for one
student (``bob/`` and ``bob.zip``) are one error record for that student, naming both.

A class is graded on the whole course or on one assignment (``--assignment``): one record per student, whatever
each handed in (a folder, a zip, a notebook, a folder of notebooks). A class of notebooks alone is graded per
assignment: in nbgrader's ``submitted/<student>/<assignment>/`` layout each notebook is its own submission, graded
as its assignment (a .ipynb as the one it carries): the gradebook has a row per student and assignment, and the
results and feedback of one are ``results/<student>/<assignment>.json`` and ``feedback/<student>/<assignment>.md``.
The reports are written once the class is graded, and those of an earlier run are withdrawn as soon as anything is
graded (``records.publish``).
"""
from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from functools import lru_cache
from multiprocessing import get_context
from pathlib import Path
from typing import NamedTuple

from grader import __version__
from grader.course import Course, load_course
from grader.entries import Entry, check_class, discover, entry_course, hold_out
from grader.extras import need
from grader.intake import IntakeError, IntakeTimeout
from grader.intake.submission import read_submission
from grader.memory import bound_grading_memory, out_of_memory
from grader.records.adjust import NotApplied, Records, check_override_checks, check_records
from grader.records.late import submission_time
from grader.records.publish import publish, withdraw_reports
from grader.reports.feedback import write_feedback
from grader.reports.files import write_json
from grader.rerun import Taken, keep_taken, load_taken, material_fingerprint, submission_fingerprint
from grader.sandbox.host.zygote import ZygoteTemplate
from grader.sandbox.jail.confine import require_namespaces
from grader.sandbox.jail.lifeline import die_with_parent
from grader.similarity.report import class_report, summary_rows
from grader.text import MAX_NAME, clean

GRADER_FAULT = "grader error"
PROCESS_DIED = (f"{GRADER_FAULT}: could not be graded: the grading process died while grading this submission alone; "
                "the next run tries again")
RUNNING = "running"  # staging/running/<pid of a job process>: the student it is grading
NOT_READ = "cannot grade: not read"  # its student's reading time ran out: final until any of their submissions changes


# ----------------------------------------------------------------- the job (runs in a pool process or a Dask worker)

_zygote = None
_template: ZygoteTemplate | None = None  # the batch's, where its jobs are forked from it (a local pool)
# pytest's run and the zygote serve one submission at a time: threads of one process (a Dask worker started with
# several) take turns, or their grades would mix.
_one_at_a_time = threading.Lock()


class Graded(NamedTuple):
    """A job's outcome: the results record, the files intake took (module -> source) and a zip's newest entry, and
    the CPU seconds reading took (charged to the student's reading time)."""

    results: dict
    files: dict[str, str] = {}
    stamp: str | None = None
    reading: float = 0.0


def grade_job(student: str, path: str, course_file: str, device: str, require_sandbox: bool,
              staging: str | None = None, assignment: str | None = None, reading: float | None = None,
              whole_course: bool = False) -> Graded:
    """Read and grade one submission, in at most ``reading`` seconds of reading (the student's time left; default
    ``grading.intake.seconds``); always returns a results record (an error record when it cannot be graded, or was
    left unread because that time ran out: ``not_read``). ``whole_course``: a notebook is graded on the whole course
    (``Entry.whole_course``).

    ``staging`` is where private copies of submissions go (the batch wipes it at start, so copies left by a
    killed batch do not pile up), and ``staging/running/<pid>`` names the student this process is grading (so a
    batch whose pool broke knows whom to suspect); None keeps the system's temporary folder (remote Dask workers).
    """
    global _zygote
    from grader.grade import grade_submission
    from grader.sandbox.host.client import Zygote

    with _one_at_a_time:
        if staging:
            tempfile.tempdir = staging
            running = Path(staging, RUNNING, str(os.getpid()))
            running.write_text(student if assignment is None else f"{student}/{assignment}", encoding="utf-8")
        course = _course(course_file)
        if assignment:
            course = course.assignment(assignment)
        limits = course.grading.intake
        seconds = limits.seconds if reading is None else min(limits.seconds, reading)
        read, took = None, 0.0
        try:
            try:
                read = read_submission(path, limits.model_copy(update={"seconds": seconds}), course)
                took = read.cpu_seconds
            except IntakeError as error:
                took = error.cpu_seconds
                raise
            if _zygote is None:
                _give_this_process_its_own_sandbox_uid()
                bound_grading_memory(device)
                _zygote = Zygote(hide=(course.root,), template=_template)
            data = grade_submission(path, course, _zygote, device, require_sandbox, read=read,
                                    whole_course=whole_course).results
            data["status"] = "graded"
            if not gc.get_freeze_count():  # what the first grade imported and built stays: the collector's full
                gc.collect()  # passes skip it from now on (about 0.1 s each, one every ten submissions)
                gc.freeze()
        except IntakeError as error:
            cut_short = isinstance(error, IntakeTimeout) and seconds < limits.seconds
            data = error_results(course, device, not_read(student, limits.seconds) if cut_short else f"cannot grade: {error}")
        except Exception as error:  # a grader fault must not stop the batch: record it, start afresh
            if out_of_memory(error):  # past its bound (grader.memory): it dies, and the batch grades this one alone
                os._exit(1)
            if _zygote is not None:
                _zygote.close()
            _zygote = None
            data = error_results(course, device, f"{GRADER_FAULT}: {type(error).__name__}: {error}")
        if staging:
            running.unlink()
    data["student"] = student
    if assignment:
        data["assignment"] = assignment
    files = {module: source.decode("utf-8") for module, source in read.files.items()} if read else {}
    return Graded(data, files, read.stamp if read else None, took)


class BatchFailed(RuntimeError):
    """Every submission of the class ended in a grader fault: nothing is final, and no report is written."""


def not_read(student: str, seconds: float) -> str:
    """The status of a submission left unread: its student's submissions took all the reading time they get."""
    return (f"{NOT_READ}: reading {clean(student, MAX_NAME)}'s submissions took the {seconds:g} s all of a student's "
            "submissions get (grading.intake.seconds); hand in only the exercise files or the course's notebooks")


def _course(course_file: str) -> Course:
    """course.yaml, read and validated again only when the file changed: a job grades many submissions under it."""
    stat = os.stat(course_file)
    return _validated_course(course_file, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _validated_course(course_file: str, mtime_ns: int, size: int) -> Course:
    return load_course(course_file)


_sandbox_uid_lease: tuple[int, int] = (0, -1)  # (pid, fd): the lock that holds that process's sandbox uid


def _give_this_process_its_own_sandbox_uid():
    """Workers of parallel jobs run as different uids, so one student's fork bomb (RLIMIT_NPROC counts per uid)
    cannot starve another's: each job process leases, for as long as it lives, a uid above ``GRADER_SANDBOX_UID``
    that no other live process holds (a lock file per uid; see ``sandbox.lease_sandbox_uid``)."""
    global _sandbox_uid_lease
    if _sandbox_uid_lease[0] != os.getpid():  # a forked process shares its parent's lock: it needs its own
        from grader.sandbox.jail.uids import SANDBOX_UID, lease_sandbox_uid

        uid, fd = lease_sandbox_uid(SANDBOX_UID + 1)
        _sandbox_uid_lease = (os.getpid(), fd)
        os.environ["GRADER_SANDBOX_UID"] = str(uid)


def is_final(data: dict) -> bool:
    """Whether a record stands: grading completed, or the submission itself cannot be graded; not a grader fault."""
    return not str(data.get("status", "")).startswith(f"error: {GRADER_FAULT}")


def error_results(course: Course, device: str, message: str) -> dict:
    message = clean(message)
    named = {"assignment": course.assignment_name} if course.assignment_name else {}
    return {**named, "score": 0, "max_score": course.total_points, "execution_time": 0, "output": message, "tests": [],
            "exercises": {e.module: {"score": 0, "max_score": e.points} for e in course.exercises},
            "grader_version": __version__, "device": device, "submission_sha256": "0" * 64, "status": f"error: {message}"}


# ----------------------------------------------------------------- the results on disk

def load_results(out: Path) -> dict[str, dict]:
    """Entry key -> results of every readable results file in ``out`` (an unreadable one is as good as missing)."""
    rows = {}
    results = out / "results"
    for path in sorted([*results.glob("*.json"), *results.glob("*/*.json")]):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        parts = path.relative_to(results).with_suffix("").parts  # (student,) or (student, assignment)
        if isinstance(data, dict) and data.get("student") == parts[0] and parts[1:] in ((), (data.get("assignment"),)):
            rows["/".join(parts)] = data
    return rows


# ----------------------------------------------------------------- the driver

@contextmanager
def make_executor(jobs: int, dask: str | None) -> Iterator[Executor]:
    """A local process pool, or a Dask cluster's executor ('local' starts a LocalCluster of ``jobs`` workers)."""
    if dask is None:
        _import_grading_stack()
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork"), initializer=_job_process,
                                 initargs=(os.getpid(),)) as pool:
            yield pool
        return
    need("dask", "grader batch --dask")
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None) if dask == "local" else None
    with Client(cluster or dask) as client:
        yield client.get_executor()
    if cluster is not None:
        cluster.close()


def _import_grading_stack():
    """Import torch, pytest and hypothesis here, once, so that the forked jobs inherit them instead of each
    importing them again (about 2 s of CPU per job)."""
    import hypothesis  # noqa: F401  (the suites' strategies)

    import grader.grade  # noqa: F401  (torch, pytest, pytest-json-report, the worker's client)


def _job_process(batch: int):
    """A job process dies with the batch (pid ``batch``), even one killed before this ran; it computes on one thread."""
    import torch

    die_with_parent(batch)
    torch.set_num_threads(1)


def run_batch(source, out, *, course_file: Path, jobs: int = 1, device: str = "cpu", force: bool = False,
              require_sandbox: bool = True, dask: str | None = None, progress=None,
              assignment: str | None = None, records: Records | None = None,
              absent: Mapping[str, str] | None = None) -> list[dict]:
    """Grade every submission of ``source`` without a final record under the same fingerprint, on the whole course
    or as ``assignment`` (nbgrader's layout: each notebook as its own assignment, only ``assignment``'s if given);
    write the class's reports with the instructor's ``records`` (roster, overrides, submission times) applied
    (``records.publish``; they are checked against the class before anything is graded: TableError) and return the
    class's rows as they show it (BatchFailed, and no report, when every record is a grader fault; NotApplied, the
    reports written, when the graded class contradicts a line of the records). With
    ``require_sandbox``, a machine where no sandbox can be built stops the batch before anyone is graded
    (SandboxUnavailable; on a remote Dask cluster, each worker's own refusal is a grader fault of that submission,
    recorded as not final). ``absent``: students of the class with nothing in ``source`` to grade, and why (`grader
    collect`'s repositories not collected): each is a row that could not be graded, saying why."""
    out = Path(out)
    course = load_course(course_file)
    records = records or Records()
    if assignment:
        course.assignment(assignment)  # an unknown name stops the batch before it starts
    entries = [e if e.assignment else replace(e, assignment=assignment) for e in discover(source, course, assignment)
               if assignment in (None, e.assignment) or e.assignment is None]
    absent = absent or {}
    entries += [Entry(student, Path(source) / student, assignment, why, whole_course=assignment is None)
                for student, why in absent.items()]
    check_class(Path(source), out, entries, course)
    decided = [e for e in entries if e.assignment or e.whole_course]  # else graded as the assignment it carries
    check_records(course, records, [(e.student, e.assignment) for e in decided],
                  {e.student for e in entries} - {e.student for e in decided}, assignment)
    from grader.suites.plugin import check_suites  # torch and pytest: imported here anyway, before the jobs fork

    check_override_checks(records, check_suites(course))  # and an error in the course's suites: no submission is
    # graded against them; and an override naming a check the suites do not have
    if require_sandbox and dask in (None, "local"):  # the jobs run on this machine
        require_namespaces()
    material = material_fingerprint(Path(course_file))
    (out / "results").mkdir(parents=True, exist_ok=True)
    with hold_out(out):  # one batch writes a class's folder at a time
        staging = out / ".staging"
        shutil.rmtree(staging, ignore_errors=True)
        (staging / RUNNING).mkdir(mode=0o700, parents=True)
        os.chmod(staging, 0o700)
        results = load_results(out)
        fingerprints = {e.key: submission_fingerprint(e.path, e.problem, entry_course(course, e),
                                                      material + ":whole course" * e.whole_course) for e in entries}
        taken = load_taken(out, [e.key for e in entries], course)
        titles = {e.module: e.title for e in course.exercises}
        by_student: dict[str, list[str]] = {}
        for entry in entries:
            by_student.setdefault(entry.student, []).append(fingerprints[entry.key])
        students = {student: hashlib.sha256("\0".join(own).encode()).hexdigest() for student, own in by_student.items()}
        todo = [e for e in entries if force or not _up_to_date(results.get(e.key), taken.get(e.key),
                                                              (fingerprints[e.key], students[e.student]))]
        counts = {"graded": 0, "errored": 0, "up to date": len(entries) - len(todo)}
        reading_left = {e.student: course.grading.intake.seconds for e in todo}  # each student's, for all their entries

        def class_rows() -> list[dict]:
            return [results[e.key] for e in sorted(entries, key=lambda e: (e.student, e.key)) if e.key in results]

        faulted: dict[str, Entry] = {}  # key -> entry of a grading that was a grader fault, to grade again

        def record(entry: Entry, graded: Graded) -> None:
            data = {**graded.results, "student": entry.student,
                    "graded_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            if entry.assignment:
                data["assignment"] = entry.assignment
            if entry.key != entry.student:
                data["key"] = entry.key  # results/<key>.json, feedback/<key>.html
            if is_final(data):  # a submission left unread stands for what all its student's submissions are
                unread = data["status"].startswith(f"error: {NOT_READ}")
                data["fingerprint"] = students[entry.student] if unread else fingerprints[entry.key]
            kept = store(out, entry.key, data, graded, titles)
            if kept:
                taken[entry.key] = kept
            results[entry.key] = data
            if not is_final(data) and data["status"] != f"error: {PROCESS_DIED}":  # that one was graded alone already
                faulted[entry.key] = entry  # its reading is the grader's loss, not its student's
            else:
                reading_left[entry.student] -= graded.reading
            counts["graded" if data.get("status") == "graded" else "errored"] += 1
            if progress:
                progress.advance(counts)

        def record_error(entry: Entry, message: str) -> None:
            record(entry, Graded(error_results(entry_course(course, entry), device, message)))

        def start(executor: Executor, entry: Entry) -> Future | None:
            """Submit ``entry``'s job with its student's reading time left; None, and a record saying so, when none
            is."""
            if reading_left[entry.student] <= 0:
                record_error(entry, not_read(entry.student, course.grading.intake.seconds))
                return None
            # The entry's path as written (abspath): resolving it follows the student's links, and a loop would raise.
            return executor.submit(grade_job, entry.student, os.path.abspath(entry.path),
                                   str(Path(course_file).resolve()),
                                   device, require_sandbox, None if dask else str(staging.resolve()), entry.assignment,
                                   reading_left[entry.student], entry.whole_course)

        if todo:
            withdraw_reports(out)
        if progress:
            progress.start(len(todo), counts)
        for entry in todo:
            if entry.problem:
                record_error(entry, entry.problem)
        readable = [e for e in todo if not e.problem]
        for again in (False, True):  # a grading that was a grader fault is graded again once (a local pool: new jobs)
            if readable and dask:
                with make_executor(jobs, dask) as executor:
                    _grade(executor, readable, start, record, record_error)
            elif readable:
                _grade_in_local_pools(readable, jobs, staging / RUNNING, start, record, record_error)
            if again or not faulted:
                break
            readable = list(faulted.values())
            first = readable[0]
            print(f"grader: {len(readable)} of {len(todo)} gradings ended in a grader fault (the first, "
                  f"{clean(first.key, MAX_NAME)}: {clean(results[first.key]['status'], 300)}); grading them again",
                  file=sys.stderr)
            counts["errored"] -= len(readable)
            faulted.clear()
            if progress:
                progress.again(len(readable), counts)
        shutil.rmtree(staging, ignore_errors=True)
        similar = class_report({key: taken[key].files for key in fingerprints if key in taken and taken[key].files},
                               course, out)
        stamps = {e.key: submission_time(e.path, e.path.parent.name == e.assignment,
                                         taken[e.key].stamp if e.key in taken else None, course.late) for e in entries}
        rows = class_rows()
        graded = [row for row in rows if row["student"] not in absent]  # the absent's rows hold no grade either
        if graded and not any(is_final(row) for row in graded):  # the reports would hold none: they are not written
            first = graded[0]
            raise BatchFailed(f"no submission was graded: all {len(graded)} ended in a grader error (the first, "
                              f"{clean(first.get('key') or first['student'], MAX_NAME)}: "
                              f"{clean(first['status'], 300)}); nothing is final and no report was written: fix the "
                              "cause and run the batch again")
        shown = publish(course, out, rows, records, stamps, summary_rows(similar), assignment)
        if shown.unapplied:
            raise NotApplied(shown, out)
        return shown.rows


def store(out: Path, key: str, data: dict, graded: Graded, titles: Mapping[str, str]) -> Taken | None:
    """Record one finished submission (``data``, its results record): its feedback pages, the files it gave (under
    its fingerprint), then ``results/<key>.json``, so that a batch killed before that last write grades it again.
    Each write is of this record's files alone: a class's recording grows linearly with it (``benchmarks/recording.py``).
    Returns the files kept, or None when the record has no fingerprint (graded again by the next run)."""
    problem = write_feedback(data, out, titles, key)
    if problem:  # recorded, and retried by the next run
        data["feedback"], data["fingerprint"] = problem, None
    kept = Taken(data["fingerprint"], graded.files, graded.stamp) if data.get("fingerprint") else None
    if kept:  # before the record: a record under this fingerprint has its files kept
        keep_taken(out, key, kept)
    write_json(data, out / "results" / f"{key}.json")
    return kept


def _up_to_date(data: dict | None, taken: Taken | None, fingerprints: tuple[str, str]) -> bool:
    """Whether a record stands under one of ``fingerprints`` (its submission's, its student's), its files kept."""
    return (data is not None and is_final(data) and data.get("fingerprint") in fingerprints
            and taken is not None and taken.fingerprint == data["fingerprint"])


def _grade(executor: Executor, entries: list[Entry], start, record, record_error) -> list[Entry]:
    """Grade ``entries`` on ``executor``: the students in parallel, each student's entries one after another (they
    share the student's reading time; ``start`` submits one, or records it not read), recording each as it finishes;
    return those lost to a broken local pool."""
    queues: dict[str, list[Entry]] = {}
    for entry in entries:
        queues.setdefault(entry.student, []).append(entry)
    futures: dict[Future, Entry] = {}
    lost: list[Entry] = []

    def next_of(student: str) -> None:
        while queues[student]:
            entry = queues[student].pop(0)
            try:
                future = start(executor, entry)
            except BrokenProcessPool:
                lost.append(entry)
                continue
            if future is not None:
                futures[future] = entry
                return

    for student in queues:
        next_of(student)
    while futures:
        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        for future in done:
            entry = futures.pop(future)
            try:
                graded = future.result()
            except BrokenProcessPool:
                lost.append(entry)
            except Exception as error:  # noqa: BLE001 - e.g. Dask's KilledWorker: a grader fault, retried by the next run
                record_error(entry, f"{GRADER_FAULT}: {type(error).__name__}: {error}")
            else:
                record(entry, graded)
            next_of(entry.student)
    return lost


def _grade_in_local_pools(entries: list[Entry], jobs: int, running: Path, start, record, record_error) -> None:
    """Grade ``entries`` in local process pools. When a job process dies (the pool breaks), the submissions being
    graded at that moment are graded again, each alone in a pool of its own: one that breaks that pool too gets a
    non-final error record. The other submissions the broken pool lost go to a new pool. The jobs of every pool take
    their zygotes from one template (``ZygoteTemplate``): torch is imported once, not once a job."""
    global _template
    _template, pending = ZygoteTemplate(), entries
    try:
        while pending:
            for marker in running.iterdir():
                marker.unlink()
            with make_executor(jobs, None) as pool:
                lost = _grade(pool, pending, start, record, record_error)
            being_graded = {marker.read_text(encoding="utf-8") for marker in running.iterdir()}
            suspects = [e for e in lost if e.key in being_graded] or lost
            for entry in suspects:
                with make_executor(1, None) as pool:
                    if _grade(pool, [entry], start, record, record_error):
                        record_error(entry, PROCESS_DIED)
            pending = [e for e in lost if e not in suspects]
    finally:
        _template.close()
        _template = None
