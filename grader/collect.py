"""`grader collect ROSTER --deadline T --out DIR`: the grade of record, from the students' repositories.

A student controls their own CI runner, so the grade a workflow reports is feedback; the grade of record is the
instructor's: each repository of the roster (GitHub Classroom's, by clone URL) is cloned on the instructor's machine,
the last commit of its default branch at or before the deadline is taken, and the class is graded in one batch
(``grader.batch``). ``DIR/submissions/<student>/`` holds each student's files at that commit, ``DIR/collected.csv``
says which commit (student, url, commit, commit_time, status) and ``DIR/grades/`` holds the batch's output.

Cloning trusts nothing of the repository: no hooks (an empty template, ``core.hooksPath`` pointing nowhere), no
submodules, no LFS or other smudge filter, only the file, https, ssh and git protocols, never a credential prompt
(``GIT_TERMINAL_PROMPT=0``, ssh in batch mode), each clone bounded in size (``RLIMIT_FSIZE``) and time, in a scratch
folder under ``DIR``. Its tree is listed before anything is written and refused over the intake's caps on files and
bytes (course.yaml's ``grading.intake``, as intake refuses a zip); then only the files intake reads (exercise files,
notebooks; no link, no submodule) are written, blob by blob as git sends them, and moved into place whole. A
repository that fails or is refused is recorded with its reason, nothing of it is left, and the others go on.
"""
from __future__ import annotations

import csv
import io
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from grader.batch import run_batch
from grader.course import Course, Intake, load_course
from grader.entries import BatchError, hold_out, submission_name
from grader.intake.walk import intake_reads
from grader.records.adjust import load_records
from grader.records.kept import class_course, keep_course, keep_records
from grader.records.late import NOT_COLLECTED
from grader.reports.files import write_atomic
from grader.text import MAX_NAME, clean, csv_cell, student_id

CLONE_SECONDS = 120
CLONE_MB = 200  # largest file a clone may write (its pack: the repository's whole history)
MAX_RECORD = 4096  # longest line of `git ls-tree -z`: a path and its mode, kind, id and size
FIELDS = ("student", "url", "commit", "commit_time", "status")
URL = re.compile(r"(https://|ssh://|git://|file://|[\w.-]+@[\w.-]+:)\S+$")
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false", "SSH_ASKPASS": "/bin/false",
           "GIT_SSH_COMMAND": "ssh -o BatchMode=yes", "GIT_LFS_SKIP_SMUDGE": "1", "GIT_ALLOW_PROTOCOL": "file:https:ssh:git",
           "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
GIT_SAFETY = ("-c", "core.hooksPath=/dev/null", "-c", "core.symlinks=false", "-c", "core.fsmonitor=false",
              "-c", "submodule.recurse=false", "-c", "filter.lfs.process=", "-c", "filter.lfs.smudge=",
              "-c", "filter.lfs.required=false", "-c", "protocol.file.allow=always")


class CollectError(ValueError):
    """The roster or the deadline cannot be used (one line, for the instructor)."""


@dataclass
class Repository:
    student: str
    url: str
    commit: str = ""
    commit_time: str = ""
    status: str = ""
    later: int = 0  # commits past the deadline, not taken


def read_roster(path: str | os.PathLike) -> list[Repository]:
    """The roster: one repository per line, ``URL`` or ``STUDENT URL`` (blank lines and ``#`` comments skipped); a
    student without a name is named after the repository (GitHub Classroom's ``assignment-username``)."""
    path = Path(path)
    if not path.is_file():
        raise CollectError(f"{path} is not a file of clone URLs")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Notepad's, Excel's) is no part of line 1
    except UnicodeDecodeError as error:
        raise CollectError(f"{path} is not UTF-8 text (byte {error.start}): save it as UTF-8") from None
    repositories, seen = [], {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split() if not line.lstrip().startswith("#") else []
        if not words:
            continue
        if len(words) > 2 or not URL.match(words[-1]):
            raise CollectError(f"{path}:{number}: expected 'URL' or 'STUDENT URL' (https, ssh, git or file), "
                               f"got {clean(line, 80)!r}")
        url = words[-1]
        name = words[0] if len(words) == 2 else url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
        student = student_id(name)
        if not student or student.startswith(".") or submission_name(Path(student)) != student:
            raise CollectError(f"{path}:{number}: {clean(student, MAX_NAME)!r} cannot name a student's folder (empty, a "
                               "dot first, a slash, or .zip or .ipynb last, the batch would name it otherwise): write "
                               "the student's name before the URL ('STUDENT URL')")
        if student in seen:
            raise CollectError(f"{path}:{number}: student {student!r} is listed twice (line {seen[student]})")
        seen[student] = number
        repositories.append(Repository(student, url))
    if not repositories:
        raise CollectError(f"{path} lists no repository")
    return repositories


def parse_deadline(text: str) -> datetime:
    """An ISO 8601 time with its offset (``2026-12-01T23:59:00+01:00``, or ``Z``)."""
    try:
        deadline = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CollectError(f"--deadline must be an ISO 8601 time such as 2026-12-01T23:59:00+01:00, not {text!r}") from None
    if deadline.tzinfo is None:
        raise CollectError(f"--deadline {text!r} needs its time zone (e.g. +01:00 or Z)")
    return deadline


def _limit_file_size(megabytes: int):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (megabytes << 20, megabytes << 20))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG, which git reports
    return limit


def _git_options(megabytes: int) -> dict:
    """subprocess's arguments for every git command: the environment without the caller's GIT_ variables and with
    ``GIT_ENV``, its own session, a bound on the size of the files it writes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    return {"env": env, "start_new_session": True, "preexec_fn": _limit_file_size(megabytes)}


def git(*args: str, cwd: Path | None = None, seconds: float = CLONE_SECONDS, megabytes: int = CLONE_MB) -> str:
    """Run git with the safety options, no prompt, and bounds on time and file size; its stdout (raises
    CollectError with git's line of error: its ``fatal:`` or ``error:`` line, else its last)."""
    try:
        process = subprocess.run(["git", *GIT_SAFETY, *args], cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL,
                                 timeout=seconds, **_git_options(megabytes))
    except subprocess.TimeoutExpired:
        raise CollectError(f"git {args[0]} took more than {seconds:g} s") from None
    if process.returncode != 0 and b"File too large" in process.stderr:
        raise CollectError(f"git {args[0]}: the repository is larger than {megabytes} MB")
    if process.returncode != 0:
        lines = process.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {process.returncode}"]
        said = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1])
        raise CollectError(f"git {args[0]} failed: {clean(said, 200)}")
    return process.stdout.decode(errors="replace").strip()


@contextmanager
def git_stream(*args: str, cwd: Path, seconds: float, stdin=subprocess.DEVNULL) -> Iterator[subprocess.Popen]:
    """git with the safety options, its stdout a pipe read as it comes; killed after ``seconds`` or when the reader
    leaves early. CollectError when it ran out of time or failed."""
    process = subprocess.Popen(["git", *GIT_SAFETY, *args], cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, **_git_options(CLONE_MB))
    expired = threading.Event()
    timer = threading.Timer(seconds, lambda: (expired.set(), process.kill()))
    timer.start()
    try:
        yield process
        if process.stdin:
            process.stdin.close()  # git cat-file --batch ends at the end of its input
        process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
    if expired.is_set():
        raise CollectError(f"git {args[0]} took more than {seconds:g} s")
    if process.returncode != 0:
        raise CollectError(f"git {args[0]} failed (exit status {process.returncode})")


def fetch(repository: Repository, deadline: datetime, folder: Path, course: Course, seconds: float = CLONE_SECONDS,
          megabytes: int = CLONE_MB) -> None:
    """Clone ``repository`` (bare, default branch, into a scratch folder beside ``folder``) and write the files intake
    reads (exercise files, notebooks) of its last commit at or before ``deadline`` into ``folder``, refusing a tree
    over the intake's caps before writing anything; sets its commit and commit time (committer date, UTC)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))  # on OUT's disk, never TMPDIR
    try:
        bare = scratch / "repo.git"
        template = scratch / "template"
        template.mkdir()
        git("clone", "--bare", "--single-branch", "--no-tags", f"--template={template}", "--", repository.url,
            str(bare), seconds=seconds, megabytes=megabytes)
        found = git("log", "-1", "--no-show-signature", "--first-parent", f"--before={deadline.isoformat()}",
                    "--format=%H %ct", "HEAD", cwd=bare)  # one line, whatever the instructor's git configuration
        if not found:
            raise CollectError(f"no commit at or before the deadline {deadline.isoformat()}")
        commit, committed = read_commit(found)
        later = git("rev-list", "--count", "--first-parent", f"--since={deadline.isoformat()}", "HEAD", cwd=bare)
        blobs = taken_blobs(bare, commit, course.grading.intake, course.modules, seconds)
        staged = scratch / "files"
        write_blobs(bare, blobs, staged, seconds)
        if folder.exists():
            shutil.rmtree(folder)
        staged.rename(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    repository.commit = commit
    repository.commit_time = committed.isoformat()
    repository.later = int(later) if later.isdigit() else 0


def read_commit(line: str) -> tuple[str, datetime]:
    """The commit and its committer date (UTC) from ``git log --format='%H %ct'``; a commit whose date git cannot
    read (a forged committer line, which a plain clone does not check) is a CollectError of that repository alone."""
    match = re.fullmatch(r"([0-9a-f]{40}|[0-9a-f]{64}) ([0-9]{1,11})", line)
    if match is None:
        raise CollectError("the last commit at or before the deadline has no commit time git can read")
    return match[1], datetime.fromtimestamp(int(match[2]), timezone.utc)


class Blob(NamedTuple):
    path: tuple[str, ...]  # inside the repository, split
    oid: str
    size: int


def taken_blobs(bare: Path, commit: str, intake: Intake, modules: tuple[str, ...], seconds: float) -> list[Blob]:
    """The files of ``commit`` that intake reads, listed (``git ls-tree -r -l``, read as it comes) before anything
    is written. As intake refuses a zip, CollectError when the tree holds more than ``max_files`` entries (files,
    links, submodules; the listing stops there) or its files add up to more than ``max_total_mb``. Links,
    submodules and every other file are left out."""
    taken, count, total = [], 0, 0
    with git_stream("ls-tree", "-r", "-l", "-z", "--full-tree", commit, cwd=bare, seconds=seconds) as process:
        for record in _records(process.stdout):
            count += 1
            if count > intake.max_files:
                raise CollectError(f"the repository holds more than {intake.max_files} files at its commit (the "
                                   "course's grading.intake.max_files)")
            header, _, name = record.partition(b"\t")
            mode, kind, oid, size = header.decode("ascii", "replace").split()
            if kind != "blob":  # a submodule's commit
                continue
            total += int(size)
            if total > intake.max_total_mb * 2**20:
                raise CollectError(f"the files of the repository at its commit add up to more than "
                                   f"{intake.max_total_mb:g} MiB (the course's grading.intake.max_total_mb)")
            path = tuple(os.fsdecode(name).split("/"))
            if mode in ("100644", "100755") and intake_reads(path, modules):
                taken.append(Blob(path, oid, int(size)))
    return taken


def _records(stream) -> Iterator[bytes]:
    """The NUL-terminated records of ``stream``, read a block at a time (CollectError for one past MAX_RECORD)."""
    rest = b""
    while block := stream.read1(1 << 16):
        *records, rest = (rest + block).split(b"\0")
        yield from records
        if len(rest) > MAX_RECORD:
            raise CollectError(f"the repository's tree lists an entry longer than {MAX_RECORD} bytes")


def write_blobs(bare: Path, blobs: list[Blob], folder: Path, seconds: float) -> None:
    """Write ``blobs`` into ``folder`` (created) a block at a time as ``git cat-file --batch`` sends them: the raw
    content, no filter or attribute applied. CollectError when git sends other than the blob listed, or a file cannot
    be written (a path listed twice, a file where a folder must be)."""
    folder.mkdir()
    with git_stream("cat-file", "--batch", cwd=bare, seconds=seconds, stdin=subprocess.PIPE) as process:
        for blob in blobs:
            shown = clean("/".join(blob.path), MAX_NAME)
            process.stdin.write(f"{blob.oid}\n".encode("ascii"))
            process.stdin.flush()
            if process.stdout.readline(200) != f"{blob.oid} blob {blob.size}\n".encode("ascii"):
                raise CollectError(f"git cat-file did not send {shown} as listed")
            target = folder.joinpath(*blob.path)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                with open(fd, "wb") as out:
                    left = blob.size
                    while left and (block := process.stdout.read(min(left, 1 << 16))):
                        out.write(block)
                        left -= len(block)
            except OSError as error:
                raise CollectError(f"cannot write {shown}: {error.strerror or error}") from None
            if left or process.stdout.read(1) != b"\n":
                raise CollectError(f"git cat-file ended before the end of {shown}")


def shared_repositories(repositories: list[Repository]) -> dict[str, list[str]]:
    """Each repository listed for more than one student (a team's, or a line pasted twice), and its students."""
    students: dict[str, list[str]] = {}
    for repository in repositories:
        students.setdefault(repository.url.rstrip("/").removesuffix(".git"), []).append(repository.student)
    return {url: names for url, names in students.items() if len(names) > 1}


def write_collected(path: Path, repositories: list[Repository]) -> None:
    """collected.csv: student, url, commit, commit_time, status (cells made safe for spreadsheets)."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(FIELDS)
    for r in repositories:
        writer.writerow([csv_cell(str(getattr(r, name))) for name in FIELDS])
    write_atomic(text.getvalue(), path)


class Collected(NamedTuple):
    """What `grader collect` did: each repository (its commit and status) and the graded class's rows."""

    repositories: list[Repository]
    rows: list[dict]


def collect(roster: str | os.PathLike, out: str | os.PathLike, *, deadline: str, course_file: Path | None,
            grade: bool = True, seconds: float = CLONE_SECONDS, megabytes: int = CLONE_MB, **batch) -> Collected:
    """Clone every repository of ``roster`` at ``deadline`` into ``out``/submissions, write ``out``/collected.csv, and
    (``grade``) grade the collected class into ``out``/grades with ``run_batch`` (``batch``: its options; the course
    ``course_file``, else the one kept with the grades, ``kept.class_course``; a repository not collected is its
    student's row that could not be graded, saying why): the repositories, and the class's rows as the batch shows
    them (none when nothing was graded)."""
    out = Path(out)
    when = parse_deadline(deadline)
    repositories = read_roster(roster)
    course_file, _ = class_course(out / "grades", course_file)  # kept with the grades, as a batch keeps it
    course = load_course(course_file)
    out.mkdir(parents=True, exist_ok=True)
    with hold_out(out):  # never two collects replacing the folders of one class at once
        return _collect_locked(repositories, when, out, course, course_file, grade, seconds, megabytes, batch)


def _collect_locked(repositories: list[Repository], when: datetime, out: Path, course: Course, course_file: Path,
                    grade: bool, seconds: float, megabytes: int, batch: dict) -> Collected:
    """``collect``'s work, ``out`` held: fetch every repository, write collected.csv, grade the class."""
    submissions = out / "submissions"
    for repository in repositories:
        try:
            fetch(repository, when, submissions / repository.student, course, seconds, megabytes)
            repository.status = "collected" + (f"; {repository.later} later commit{'s' * (repository.later > 1)} "
                                               "past the deadline not taken" if repository.later else "")
        except (CollectError, OSError) as error:
            shutil.rmtree(submissions / repository.student, ignore_errors=True)  # never grade an older copy
            repository.status = f"{NOT_COLLECTED}: {clean(str(error), 300)}"
    write_collected(out / "collected.csv", repositories)
    rows = []
    if grade and any(r.commit for r in repositories):
        absent = {r.student: r.status for r in repositories if not r.commit}  # a row each: no student left out
        try:  # each commit's time is its submission's: course.yaml's late policy applies, as with batch --submitted
            rows = run_batch(submissions, out / "grades", course_file=course_file,
                             records=load_records(course, submitted=out / "collected.csv"), absent=absent, **batch)
        except BatchError as error:
            raise CollectError(str(error)) from None
        keep_course(out / "grades", course_file)
        keep_records(out / "grades", submitted=out / "collected.csv")  # a later gradebook keeps the late penalties
    return Collected(repositories, rows)
