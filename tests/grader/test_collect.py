"""`grader collect`: the grade of record from the students' repositories, cloned safely at the deadline (local bare
repositories through file:// URLs; no network)."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from courses import TOTAL

from grader.collect import CollectError, collect, fetch, parse_deadline, read_roster

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


def solutions(broken: bool = False) -> dict[str, str]:
    """A handout checkout's exercise files: the references (or a file that does not compile)."""
    files = {f"exercises/{p.name}": p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    if broken:
        files["exercises/softmax.py"] = "def softmax(:\n"
    return files


def test_roster_lines_and_errors(tmp_path):
    """A roster takes 'URL' and 'STUDENT URL' lines, names a student after the repository, and refuses bad lines."""
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
    with pytest.raises(CollectError, match="time zone"):
        parse_deadline("2026-12-01T23:59:00")
    with pytest.raises(CollectError, match="ISO 8601"):
        parse_deadline("tomorrow")


def test_the_last_commit_before_the_deadline_is_taken(tmp_path):
    """The files are those of the last commit at or before the deadline; a later commit is ignored."""
    url = repository(tmp_path, "ada", [({"exercises/scores.py": "first\n"}, BEFORE),
                                       ({"exercises/scores.py": "late\n"}, AFTER)])
    roster = tmp_path / "roster.txt"
    roster.write_text(f"ada {url}\n")
    [ada] = collect(roster, tmp_path / "out", deadline=DEADLINE, course_file=ROOT / "course.yaml", grade=False)
    assert ada.status == "collected" and ada.commit_time == "2026-12-01T12:00:00+00:00"
    assert (tmp_path / "out" / "submissions" / "ada" / "exercises" / "scores.py").read_text() == "first\n"
    assert not (tmp_path / "out" / "submissions" / "ada" / ".git").exists()
    [row] = csv.DictReader((tmp_path / "out" / "collected.csv").open())
    assert row == {"student": "ada", "url": url, "commit": ada.commit, "commit_time": ada.commit_time,
                   "status": "collected"}


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
    [eve] = collect(roster, tmp_path / "out", deadline=DEADLINE, course_file=ROOT / "course.yaml", grade=False)
    folder = tmp_path / "out" / "submissions" / "eve"
    assert eve.status == "collected", eve.status
    assert (folder / "exercises" / "scores.py").read_text() == "x = 1\n"
    assert not marker.exists()
    assert not (folder / "sub" / "secret.txt").exists()
    assert not (folder / "outside").exists()


def test_a_failing_clone_is_recorded_and_the_others_go_on(tmp_path):
    """A missing repository, one without a commit before the deadline and one over the size bound are recorded with
    their reason in collected.csv; the good one is graded (the references at the deadline: full marks)."""
    good = repository(tmp_path, "ada", [(solutions(), BEFORE), (solutions(broken=True), AFTER)])
    late = repository(tmp_path, "cy", [(solutions(), AFTER)])
    big = repository(tmp_path, "dan", [({"blob.bin": os.urandom(3 << 20)}, BEFORE)])
    roster = tmp_path / "roster.txt"
    roster.write_text(f"ada {good}\nben {(tmp_path / 'nowhere.git').as_uri()}\ncy {late}\ndan {big}\n")
    out = tmp_path / "out"
    process = subprocess.run([sys.executable, "-m", "grader", "collect", str(roster), "--deadline", DEADLINE,
                              "--out", str(out), "--jobs", "1", "--clone-mb", "1"], cwd=ROOT, capture_output=True,
                             text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    rows = {row["student"]: row for row in csv.DictReader((out / "collected.csv").open())}
    assert rows["ada"]["status"] == "collected"
    assert rows["ben"]["status"].startswith("not collected: git clone failed") and not rows["ben"]["commit"]
    assert rows["cy"]["status"] == f"not collected: no commit at or before the deadline {DEADLINE}"
    assert rows["dan"]["status"] == "not collected: git clone: the repository is larger than 1 MB"
    assert sorted(p.name for p in (out / "submissions").iterdir()) == ["ada"]
    grades = {row["student"]: row for row in csv.DictReader((out / "grades" / "gradebook.csv").open())}
    assert set(grades) == {"ada"} and float(grades["ada"]["score"]) == TOTAL
    assert "collected 1 of 4 repositories" in process.stdout


def test_a_clone_that_takes_too_long_is_stopped(tmp_path):
    """A clone past its time bound is stopped and reported as such."""
    url = repository(tmp_path, "slow", [({"exercises/scores.py": "x = 1\n"}, BEFORE)])
    roster = tmp_path / "one.txt"
    roster.write_text(f"{url}\n")
    with pytest.raises(CollectError, match="took more than"):
        fetch(read_roster(roster)[0], parse_deadline(DEADLINE), tmp_path / "out", seconds=0.001)
