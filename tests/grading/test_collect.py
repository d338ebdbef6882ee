"""`grader collect`: the grade of record from the students' repositories, cloned safely at the deadline (local bare
repositories through file:// URLs; no network)."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from courses import TOTAL

from grader.collect import CollectError, Repository, collect, fetch, parse_deadline, read_roster, write_collected
from grader.course import COURSE_FILE, course

ROOT = Path(__file__).resolve().parents[2]
BEFORE, DEADLINE, AFTER = "2026-12-01T12:00:00+00:00", "2026-12-01T23:59:00+00:00", "2026-12-02T09:00:00+00:00"


def repository(tmp_path: Path, name: str, commits: list[tuple[dict[str, str | bytes], str]]) -> str:
    """A bare repository whose default branch holds ``commits`` (files written over the previous ones, committed
    at the given time); its file:// URL."""
    work = tmp_path / "work" / name
    work.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    run = lambda *args, **extra: subprocess.run(["git", *args], cwd=work, check=True, capture_output=True,  # noqa: E731
                                                env={**env, **extra})
    run("init", "-q", "-b", "main")
    for files, when in commits:
        for relative, content in files.items():
            target = work / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
        run("add", "-A")
        run("-c", "user.name=s", "-c", "user.email=s@example.org", "commit", "-qm", f"work of {when}",
            GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    bare = tmp_path / "remote" / f"{name}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True, env=env)
    return bare.as_uri()


class Plumbing:
    """A bare repository written with git's plumbing, which takes what porcelain refuses: trees that reuse one blob
    at many paths, the names '..' and '.git', one name twice. Entries are (mode, object id, name)."""

    KINDS = {"040000": "tree", "160000": "commit"}  # any other mode names a blob (a file, or a link's target)

    def __init__(self, tmp_path: Path, name: str):
        self.bare = tmp_path / "remote" / f"{name}.git"
        self.bare.mkdir(parents=True)
        self.git("init", "-q", "--bare", "-b", "main")

    def git(self, *args: str, data: bytes = b"") -> str:
        env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "s",
               "GIT_AUTHOR_EMAIL": "s@example.org", "GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@example.org",
               "GIT_AUTHOR_DATE": BEFORE, "GIT_COMMITTER_DATE": BEFORE}
        return subprocess.run(["git", *args], cwd=self.bare, input=data, check=True, capture_output=True,
                              env=env).stdout.decode().strip()

    def blob(self, data: bytes) -> str:
        return self.git("hash-object", "-w", "--stdin", data=data)

    def tree(self, entries: list[tuple[str, str, str]]) -> str:
        lines = "".join(f"{mode} {self.KINDS.get(mode, 'blob')} {oid}\t{name}\n" for mode, oid, name in entries)
        return self.git("mktree", "--missing", data=lines.encode())  # a submodule's commit is not in the repository

    def fan_out(self, oid: str, widths: tuple[int, ...]) -> str:
        """A tree holding ``oid`` (a blob) at prod(widths) paths: each level reuses the one tree below it."""
        mode = "100644"
        for width in reversed(widths):
            oid, mode = self.tree([(mode, oid, f"{'f' if mode == '100644' else 'd'}{i}") for i in range(width)]), "040000"
        return oid

    def commit(self, tree: str, committer: str | None = None) -> str:
        """Commit ``tree`` (dated before the deadline) on main, or with the raw ``committer`` line given (which git
        writes without checking it); the repository's file:// URL."""
        if committer is None:
            oid = self.git("commit-tree", tree, "-m", "crafted")
        else:
            oid = self.git("hash-object", "-t", "commit", "--literally", "-w", "--stdin",
                           data=f"tree {tree}\nauthor s <s@example.org> 1 +0000\n{committer}\n\ncrafted\n".encode())
        self.git("update-ref", "refs/heads/main", oid)
        return self.bare.as_uri()


def solutions(broken: bool = False) -> dict[str, str]:
    """A handout checkout's exercise files: the references (or a file that does not compile)."""
    files = {f"exercises/{p.name}": p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    if broken:
        files["exercises/softmax.py"] = "def softmax(:\n"
    return files


def test_roster_lines_and_errors(tmp_path):
    """A roster takes 'URL' and 'STUDENT URL' lines, names a student after the repository, and refuses bad lines,
    names that are no folder the batch names after them among them (red team 15: a repository named '...git' made
    collect delete its whole output folder, one named 'hw1.zip' left the class ungraded)."""
    roster = tmp_path / "roster.txt"
    roster.write_text("# class of 2026\nhttps://github.com/org/week1-ada.git\nben git@github.com:org/week1-ben.git\n\n")
    assert [(r.student, r.url) for r in read_roster(roster)] == [
        ("week1-ada", "https://github.com/org/week1-ada.git"), ("ben", "git@github.com:org/week1-ben.git")]
    for bad, reason in (("ext::sh -c touch% /tmp/x\n", "expected 'URL'"), ("a b c\n", "expected 'URL'"),
                        ("--upload-pack=touch /tmp/x\n", "expected 'URL'"),
                        ("ann file:///a\nann file:///b\n", "listed twice"), ("# nobody\n", "lists no repository")):
        roster.write_text(bad)
        with pytest.raises(CollectError, match=reason):
            read_roster(roster)
    for url in ("file:///srv/...git", "file:///srv/..git", "file:///srv/.git", "https://h.org/x/hw1.zip.git",
                "https://h.org/x/.hw1.git", "a/b file:///srv/x.git", "Notes.IPYNB file:///srv/x.git"):
        roster.write_text(f"ann file:///srv/ann.git\n{url}\n")  # a name the batch would name otherwise, or a path
        with pytest.raises(CollectError, match=r"roster.txt:2: .* cannot name a student's folder .*'STUDENT URL'"):
            read_roster(roster)
    roster.write_bytes("\ufeff# week 1\r\nhttps://github.com/org/week1-ada.git\r\n".encode())  # Notepad's, Excel's
    assert [r.student for r in read_roster(roster)] == ["week1-ada"]  # walk-through 8: the comment was a bad URL
    roster.write_bytes(b"ann file:///srv/ann.git\n\xff\n")
    with pytest.raises(CollectError, match="is not UTF-8 text"):
        read_roster(roster)
    with pytest.raises(CollectError, match="time zone"):
        parse_deadline("2026-12-01T23:59:00")
    with pytest.raises(CollectError, match="ISO 8601"):
        parse_deadline("tomorrow")


def test_collected_csv_reads_back_as_the_times_whatever_the_ids(tmp_path):
    """collected.csv, written safe for spreadsheets, reads back as the class's submission times: an id a spreadsheet
    would run as a formula ('-mallory) is the student's own (red team 16: the whole class went ungraded)."""
    from grader.records.late import load_submitted

    repositories = [Repository(student, f"file:///srv/{student}.git", "abc1", "2026-12-01T12:00:00+00:00", "collected")
                    for student in ("-mallory", "=eve", "ann")]
    write_collected(tmp_path / "collected.csv", repositories)
    assert "'-mallory" in (tmp_path / "collected.csv").read_text(encoding="utf-8")
    times = load_submitted(tmp_path / "collected.csv", course())
    assert sorted(student for student, _ in times) == ["-mallory", "=eve", "ann"]


def test_the_last_commit_before_the_deadline_is_taken(tmp_path):
    """The files are those of the last commit at or before the deadline; a later commit is not taken, and the status
    says so (walk-through 8: late work was ignored without a word, and the late policy could never apply)."""
    url = repository(tmp_path, "ada", [({"exercises/scores.py": "first\n"}, BEFORE),
                                       ({"exercises/scores.py": "late\n"}, AFTER)])
    roster = tmp_path / "roster.txt"
    roster.write_text(f"ada {url}\n")
    [ada] = collect(roster, tmp_path / "out", deadline=DEADLINE, course_file=ROOT / "course.yaml", grade=False).repositories
    status = "collected; 1 later commit past the deadline not taken"
    assert ada.status == status and ada.commit_time == "2026-12-01T12:00:00+00:00"
    assert (tmp_path / "out" / "submissions" / "ada" / "exercises" / "scores.py").read_text() == "first\n"
    assert not (tmp_path / "out" / "submissions" / "ada" / ".git").exists()
    [row] = csv.DictReader((tmp_path / "out" / "collected.csv").open())
    assert row == {"student": "ada", "url": url, "commit": ada.commit, "commit_time": ada.commit_time,
                   "status": status}


def test_nothing_of_the_repository_runs_or_leaves_its_folder(tmp_path, monkeypatch):
    """No smudge filter runs (even one the instructor's git configures for LFS), no submodule is fetched, and a link
    pointing outside the student's folder is not extracted."""
    marker = tmp_path / "smudged"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[filter \"lfs\"]\n\tsmudge = touch {marker}\n\trequired = true\n"
                                     f"[core]\n\thooksPath = {tmp_path / 'hooks'}\n")
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "post-checkout").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (tmp_path / "hooks" / "post-checkout").chmod(0o755)
    other = repository(tmp_path, "other", [({"secret.txt": "not for grading\n"}, BEFORE)])
    url = repository(tmp_path, "eve", [({".gitattributes": "*.py filter=lfs\n", "exercises/scores.py": "x = 1\n",
                                         ".gitmodules": f'[submodule "sub"]\n\tpath = sub\n\turl = {other}\n'}, BEFORE)])
    work = tmp_path / "work" / "eve"
    (work / "outside").symlink_to("/etc/passwd")
    subprocess.run(["git", "add", "outside"], cwd=work, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-qm", "link"], cwd=work, check=True,
                   capture_output=True, env={**os.environ, "GIT_COMMITTER_DATE": BEFORE, "GIT_AUTHOR_DATE": BEFORE})
    bare = Path(url.removeprefix("file://"))
    subprocess.run(["git", "push", "-q", str(bare), "HEAD:main"], cwd=work, check=True, capture_output=True)
    monkeypatch.setenv("HOME", str(home))
    roster = tmp_path / "roster.txt"
    roster.write_text(f"{url}\n")
    [eve] = collect(roster, tmp_path / "out", deadline=DEADLINE, course_file=ROOT / "course.yaml", grade=False).repositories
    folder = tmp_path / "out" / "submissions" / "eve"
    assert eve.status == "collected", eve.status
    assert (folder / "exercises" / "scores.py").read_text() == "x = 1\n"
    assert not marker.exists()
    assert not (folder / "sub" / "secret.txt").exists()
    assert not (folder / "outside").exists()


def test_a_failing_clone_is_recorded_and_the_others_go_on(tmp_path):
    """A missing repository, one without a commit before the deadline, one over the size bound and one whose commit
    has a committer date git cannot read (red team 14: it stopped the whole class) are recorded with their reason in
    collected.csv and in the class's reports (a row each that could not be graded); the good one is graded (the
    references at the deadline: full marks)."""
    good = repository(tmp_path, "ada", [(solutions(), BEFORE), (solutions(broken=True), AFTER)])
    late = repository(tmp_path, "cy", [(solutions(), AFTER)])
    big = repository(tmp_path, "dan", [({"blob.bin": os.urandom(3 << 20)}, BEFORE)])
    forged = Plumbing(tmp_path, "eve")
    undated = forged.commit(forged.tree([("100644", forged.blob(b"x"), "README")]), "committer s <s@example.org> soon +0000")
    roster = tmp_path / "roster.txt"
    roster.write_text(f"eve {undated}\nada {good}\nben {(tmp_path / 'nowhere.git').as_uri()}\ncy {late}\ndan {big}\n")
    out = tmp_path / "out"
    process = subprocess.run([sys.executable, "-m", "grader", "collect", str(roster), "--deadline", DEADLINE,
                              "--out", str(out), "--jobs", "1", "--clone-mb", "1"], cwd=ROOT, capture_output=True,
                             text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    rows = {row["student"]: row for row in csv.DictReader((out / "collected.csv").open())}
    assert rows["ada"]["status"] == "collected; 1 later commit past the deadline not taken"  # walk-through 8: unsaid
    assert rows["ben"]["status"].startswith("not collected: git clone failed: fatal: ") and not rows["ben"]["commit"]
    assert rows["cy"]["status"] == f"not collected: no commit at or before the deadline {DEADLINE}"
    assert rows["dan"]["status"] == "not collected: git clone: the repository is larger than 1 MB"
    assert rows["eve"]["status"] == "not collected: the last commit at or before the deadline has no commit time git can read"
    assert sorted(p.name for p in (out / "submissions").iterdir()) == ["ada"]
    grades = {row["student"]: row for row in csv.DictReader((out / "grades" / "gradebook.csv").open(encoding="utf-8-sig"))}
    assert set(grades) == {"ada", "ben", "cy", "dan", "eve"} and float(grades["ada"]["score"]) == TOTAL
    for student in ("ben", "cy", "dan", "eve"):  # each a row that could not be graded, saying why (instructor walk-
        assert rows[student]["status"] in grades[student]["status"] and not grades[student]["score"], grades[student]
    assert "collected 1 of 5 repositories" in process.stdout  # through 7: they were left out of every report


def test_collect_with_grader_errors_exits_3_naming_them(tmp_path, grader_faults, capsys):
    """A class collected and graded where one grading failed by the grader's fault: `grader collect` exits 3 naming
    it, as `grader batch` does (it said nothing and exited 0, so a CI job or a script took the grades as final)."""
    from grader import cli

    roster = tmp_path / "roster.txt"
    roster.write_text("".join(f"{name} {repository(tmp_path, name, [(solutions(), BEFORE)])}\n" for name in ("ada", "bo")))
    grader_faults({"bo"})
    out = tmp_path / "out"
    assert cli.main(["collect", str(roster), "--deadline", DEADLINE, "--out", str(out), "--jobs", "1"]) == cli.GRADER_FAULT_STATUS
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "grader: 1 of 2 records are grader errors, not final (bo): the reports show them so; run the batch again to "
        "grade them")
    # the course is kept with the grades, as a batch keeps it (a later `grader gradebook OUT/grades` uses it)
    from grader.records.kept import class_course
    assert class_course(out / "grades", None) == (COURSE_FILE.resolve(), True)


def test_a_clone_that_takes_too_long_is_stopped(tmp_path):
    """A clone past its time bound is stopped and reported as such."""
    url = repository(tmp_path, "slow", [({"exercises/scores.py": "x = 1\n"}, BEFORE)])
    roster = tmp_path / "one.txt"
    roster.write_text(f"{url}\n")
    with pytest.raises(CollectError, match="took more than"):
        fetch(read_roster(roster)[0], parse_deadline(DEADLINE), tmp_path / "out", course(), seconds=0.001)


COLLECT_AND_MEASURE = """
import json, resource, sys
from pathlib import Path
from grader.collect import collect
from grader.course import COURSE_FILE
rows = collect(sys.argv[1], sys.argv[2], deadline=sys.argv[3], course_file=COURSE_FILE, jobs=1).repositories
io = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
print(json.dumps({"status": {r.student: r.status for r in rows}, "written": int(io["wchar"]),
                  "peak": int(status["VmHWM"].split()[0]) << 10,
                  "children_peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10}))
"""  # VmHWM, not ru_maxrss, which counts the memory of the process that started this one before its exec


def test_a_repository_bomb_is_refused_before_anything_is_written(tmp_path):
    """A few KiB of repository whose trees reuse one 1 MiB blob at 256 paths (256 MiB unpacked), and one holding 4096
    empty files, are each refused by their listed tree, over the intake's caps on bytes and files, with one line in
    collected.csv and nothing left on disk; the honest classmate is graded. The collecting process stays far below
    the 549 MB it reached (and the 514 MB it wrote) when it unpacked the archive whole."""
    big, empty = Plumbing(tmp_path, "big"), Plumbing(tmp_path, "empty")
    roster = tmp_path / "roster.txt"
    roster.write_text(f"big {big.commit(big.fan_out(big.blob(b'#' * (1 << 20)), (16, 16)))}\n"
                      f"empty {empty.commit(empty.fan_out(empty.blob(b''), (16, 16, 16)))}\n"
                      f"ada {repository(tmp_path, 'ada', [(solutions(), BEFORE)])}\n")
    assert sum(p.stat().st_size for p in (tmp_path / "remote").rglob("*") if p.is_file()) < 1 << 20
    out = tmp_path / "out"
    process = subprocess.run([sys.executable, "-c", COLLECT_AND_MEASURE, str(roster), str(out), DEADLINE], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    measured = json.loads(process.stdout.splitlines()[-1])
    assert measured["status"] == {
        "big": "not collected: the files of the repository at its commit add up to more than 20 MiB (the course's "
               "grading.intake.max_total_mb)",
        "empty": "not collected: the repository holds more than 500 files at its commit (the course's "
                 "grading.intake.max_files)",
        "ada": "collected"}
    rows = {row["student"]: row["status"] for row in csv.DictReader((out / "collected.csv").open())}
    assert rows == measured["status"]
    assert [p.name for p in (out / "submissions").iterdir()] == ["ada"]
    assert max(measured["peak"], measured["children_peak"]) < 400 << 20, measured
    assert measured["written"] < 50 << 20, measured
    grades = {row["student"]: row for row in csv.DictReader((out / "grades" / "gradebook.csv").open(encoding="utf-8-sig"))}
    assert set(grades) == {"ada", "big", "empty"} and float(grades["ada"]["score"]) == 100.0
    assert not grades["big"]["score"] and not grades["empty"]["score"]  # rows that could not be graded, saying why


def test_only_what_intake_reads_is_written_and_never_outside(tmp_path, monkeypatch):
    """Of a crafted tree, only the exercise files and notebooks intake may read are written: not a link (even one
    pointing inside), a submodule, a README, or what lies under '..' or '.git'; nothing goes through TMPDIR."""
    crafted = Plumbing(tmp_path, "eve")
    good, evil = crafted.blob(b"x = 1\n"), crafted.blob(b"evil = 1\n")
    evil_exercises = crafted.tree([("040000", crafted.tree([("100644", evil, "scores.py")]), "exercises")])
    exercises = crafted.tree([("100644", good, "scores.py"), ("120000", crafted.blob(b"scores.py"), "context.py"),
                              ("160000", "1" * 40, "qkv.py")])
    notebook = crafted.tree([("100644", good, "02_softmax.ipynb")])
    url = crafted.commit(crafted.tree([("040000", evil_exercises, ".."), ("040000", evil_exercises, ".git"),
                                       ("040000", exercises, "exercises"), ("100644", good, "README.md"),
                                       ("040000", crafted.tree([("040000", notebook, "02_softmax")]), "notebooks")]))
    nowhere = tmp_path / "no-temporary-folder"
    monkeypatch.setattr(tempfile, "tempdir", str(nowhere))
    monkeypatch.setenv("TMPDIR", str(nowhere))
    roster = tmp_path / "roster.txt"
    roster.write_text(f"eve {url}\n")
    [eve] = collect(roster, tmp_path / "out" / "week1", deadline=DEADLINE, course_file=ROOT / "course.yaml", grade=False).repositories
    assert eve.status == "collected", eve.status
    folder = tmp_path / "out" / "week1" / "submissions" / "eve"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()) == [
        "exercises/scores.py", "notebooks/02_softmax/02_softmax.ipynb"]
    assert (folder / "exercises" / "scores.py").read_text() == "x = 1\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["week1"]
    assert sorted(p.name for p in (tmp_path / "out" / "week1" / "submissions").iterdir()) == ["eve"]


def test_a_path_listed_twice_refuses_the_repository(tmp_path):
    """A tree that names one exercise file twice (git's plumbing writes it) is refused whole, and nothing is left."""
    crafted = Plumbing(tmp_path, "eve")
    first, second = crafted.blob(b"x = 1\n"), crafted.blob(b"x = 2\n")
    url = crafted.commit(crafted.tree([("100644", first, "scores.py"), ("100644", second, "scores.py")]))
    roster = tmp_path / "roster.txt"
    roster.write_text(f"eve {url}\n")
    [eve] = collect(roster, tmp_path / "out", deadline=DEADLINE, course_file=ROOT / "course.yaml", grade=False).repositories
    assert eve.status == "not collected: cannot write scores.py: File exists"
    assert list((tmp_path / "out" / "submissions").iterdir()) == []


def test_a_commit_after_the_due_date_costs_the_late_penalty(tmp_path):
    """collect grades each repository as of its commit's time: a commit past course.yaml's due date loses the late
    penalty, as a batch given the times does (found by our fourth instructor walk-through: it scored full marks
    without a word, the times only in collected.csv), and a later gradebook of its grades too."""
    from courses import course_variant

    course_file = course_variant(tmp_path / "course", COURSE_FILE.read_text(encoding="utf-8") + (
        "\nlate:\n  due: {course: \"2026-12-01T00:00:00+00:00\"}\n  percent: 10\n  per: day\n"))
    roster = tmp_path / "roster.txt"
    roster.write_text(f"ada {repository(tmp_path, 'ada', [(solutions(), BEFORE)])}\n")
    _, rows = collect(roster, tmp_path / "out", deadline=DEADLINE, course_file=course_file, jobs=1)
    [ada] = rows
    assert ada["graded_score"] == TOTAL and ada["score"] == pytest.approx(TOTAL * 0.9), ada["adjustments"]
    assert ada["submitted_at"] == BEFORE and [a["kind"] for a in ada["adjustments"]] == ["late"]
    # a later gradebook of the grades (new overrides, say) keeps the commit times, and so the penalty (the sixth
    # instructor walk-through: it lost every late penalty, exit 0)
    from grader import cli

    assert cli.main(["gradebook", str(tmp_path / "out" / "grades")]) == 0
    with open(tmp_path / "out" / "grades" / "gradebook.csv", newline="", encoding="utf-8-sig") as handle:
        [row] = csv.DictReader(handle)
    assert (row["late_penalty"], row["submitted_at"]) == (f"{TOTAL * 0.1:g}", BEFORE)


def test_one_repository_listed_for_two_students_is_noted(tmp_path, capsys):
    """A repository listed twice (a line pasted twice, the second without its name) is graded for both and noted in
    one line naming both: it was graded twice without a word (instructor walk-through 7)."""
    from grader import cli

    url = repository(tmp_path, "ada", [(solutions(), BEFORE)])
    roster = tmp_path / "roster.txt"
    roster.write_text(f"ada {url}\nbo {repository(tmp_path, 'bo', [(solutions(), BEFORE)])}\nada-2 {url.removesuffix('.git')}/\n")
    assert cli.main(["collect", str(roster), "--deadline", DEADLINE, "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "is listed for" in line]
    assert notes == [f"grader: note: one repository, {url.removesuffix('.git')}, is listed for ada, ada-2: each has a "
                     "grade of it (a line pasted twice?)"], notes
