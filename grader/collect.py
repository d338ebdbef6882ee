"""`grader collect ROSTER --deadline T --out DIR`: the grade of record, from the students' repositories.

A student controls their own CI runner, so the grade a workflow reports is feedback; the grade of record is the
instructor's: each repository of the roster (GitHub Classroom's, by clone URL) is cloned on the instructor's machine,
the last commit of its default branch at or before the deadline is taken, and the class is graded in one batch
(``grader.batch``). ``DIR/submissions/<student>/`` holds each student's files at that commit, ``DIR/collected.csv``
says which commit (student, url, commit, commit_time, status) and ``DIR/grades/`` holds the batch's output.

Cloning trusts nothing of the repository: no hooks (an empty template, ``core.hooksPath`` pointing nowhere), no
submodules, no LFS or other smudge filter (the files are taken with ``git archive``, extracted with tarfile's ``data``
filter: no links out, no special files), only the file, https, ssh and git protocols, never a credential prompt
(``GIT_TERMINAL_PROMPT=0``, ssh in batch mode), each clone bounded in size (``RLIMIT_FSIZE``) and time. A clone that
fails is recorded with its reason and the others go on.
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
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from grader.batch import BatchError, run_batch, student_id
from grader.reports.files import write_atomic
from grader.text import clean, csv_cell

CLONE_SECONDS = 120
CLONE_MB = 200  # largest file a clone may write (its pack: the repository's whole history)
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


def read_roster(path: str | os.PathLike) -> list[Repository]:
    """The roster: one repository per line, ``URL`` or ``STUDENT URL`` (blank lines and ``#`` comments skipped); a
    student without a name is named after the repository (GitHub Classroom's ``assignment-username``)."""
    path = Path(path)
    if not path.is_file():
        raise CollectError(f"{path} is not a file of clone URLs")
    repositories, seen = [], {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        words = line.split("#", 1)[0].split() if not line.lstrip().startswith("#") else []
        if not words:
            continue
        if len(words) > 2 or not URL.match(words[-1]):
            raise CollectError(f"{path}:{number}: expected 'URL' or 'STUDENT URL' (https, ssh, git or file), "
                               f"got {clean(line, 80)!r}")
        url = words[-1]
        name = words[0] if len(words) == 2 else url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
        student = student_id(name)
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


def git(*args: str, cwd: Path | None = None, seconds: float = CLONE_SECONDS, megabytes: int = CLONE_MB,
        binary: bool = False):
    """Run git with the safety options, no prompt, and bounds on time and file size; its stdout (raises
    CollectError with git's last line of error)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    try:
        process = subprocess.run(["git", *GIT_SAFETY, *args], cwd=cwd, env=env, capture_output=True,
                                 stdin=subprocess.DEVNULL, timeout=seconds, start_new_session=True,
                                 preexec_fn=_limit_file_size(megabytes))
    except subprocess.TimeoutExpired:
        raise CollectError(f"git {args[0]} took more than {seconds:g} s") from None
    if process.returncode != 0 and b"File too large" in process.stderr:
        raise CollectError(f"git {args[0]}: the repository is larger than {megabytes} MB")
    if process.returncode != 0:
        lines = process.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {process.returncode}"]
        raise CollectError(f"git {args[0]} failed: {clean(lines[-1], 200)}")
    return process.stdout if binary else process.stdout.decode(errors="replace").strip()


def fetch(repository: Repository, deadline: datetime, folder: Path, seconds: float = CLONE_SECONDS,
          megabytes: int = CLONE_MB) -> None:
    """Clone ``repository`` (bare, default branch, into a temporary folder) and write its files at the last commit
    at or before ``deadline`` into ``folder``; sets its commit and commit time (committer date, UTC)."""
    with tempfile.TemporaryDirectory(prefix="grader-collect-") as scratch:
        bare = Path(scratch) / "repo.git"
        template = Path(scratch) / "template"
        template.mkdir()
        git("clone", "--bare", "--single-branch", "--no-tags", f"--template={template}", "--", repository.url,
            str(bare), seconds=seconds, megabytes=megabytes)
        found = git("log", "-1", "--first-parent", f"--before={deadline.isoformat()}", "--format=%H %ct", "HEAD",
                    cwd=bare)
        if not found:
            raise CollectError(f"no commit at or before the deadline {deadline.isoformat()}")
        commit, stamp = found.split()
        archive = git("archive", "--format=tar", commit, cwd=bare, binary=True, megabytes=megabytes)
        staged = Path(scratch) / "files"
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(staged, filter=_safe_member)
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(staged, folder)
    repository.commit = commit
    repository.commit_time = datetime.fromtimestamp(int(stamp), timezone.utc).isoformat()


def _safe_member(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, skipping (rather than failing on) a link that points outside or a special file."""
    try:
        return tarfile.data_filter(member, path)
    except tarfile.FilterError:
        return None


def write_collected(path: Path, repositories: list[Repository]) -> None:
    """collected.csv: student, url, commit, commit_time, status (cells made safe for spreadsheets)."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(FIELDS)
    for r in repositories:
        writer.writerow([csv_cell(str(getattr(r, name))) for name in FIELDS])
    write_atomic(text.getvalue(), path)


def collect(roster: str | os.PathLike, out: str | os.PathLike, *, deadline: str, course_file: Path,
            grade: bool = True, seconds: float = CLONE_SECONDS, megabytes: int = CLONE_MB, **batch) -> list[Repository]:
    """Clone every repository of ``roster`` at ``deadline`` into ``out``/submissions, write ``out``/collected.csv, and
    (``grade``) grade the collected class into ``out``/grades with ``run_batch`` (``batch``: its options)."""
    out = Path(out)
    when = parse_deadline(deadline)
    repositories = read_roster(roster)
    submissions = out / "submissions"
    for repository in repositories:
        try:
            fetch(repository, when, submissions / repository.student, seconds, megabytes)
            repository.status = "collected"
        except (CollectError, tarfile.TarError, OSError) as error:
            shutil.rmtree(submissions / repository.student, ignore_errors=True)  # never grade an older copy
            repository.status = f"not collected: {clean(str(error), 300)}"
    write_collected(out / "collected.csv", repositories)
    if grade and any(r.commit for r in repositories):
        try:
            run_batch(submissions, out / "grades", course_file=course_file, **batch)
        except BatchError as error:
            raise CollectError(str(error)) from None
    return repositories
