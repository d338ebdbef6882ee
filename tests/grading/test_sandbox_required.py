"""No sandbox, no grade: where the kernel refuses namespaces (``no_namespaces.py``, as a container's seccomp profile
does), `grader grade`, `batch` and `ci` run no student code: each exits with status 3 (a grader fault) saying what is
missing and how to allow it, and records no score anywhere; with --allow-unsandboxed (code one trusts) they grade with
resource limits only, and say so in a WARNING. Gradescope's run_autograder: tests/grading/test_release.py."""
from __future__ import annotations

import base64
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from no_namespaces import refused

from grader import ROOT
from grader.cli import GRADER_FAULT_STATUS
from grader.course import course
from grader.sandbox import TRUSTED_OPTION
from grader.sandbox.jail import confine as sandbox

EXERCISE = "scores"
ASSIGNMENT = course().notebook_name(EXERCISE)  # one exercise: each grading stays short
POINTS = next(e.points for e in course().exercises if e.module == EXERCISE)
REFUSED = "no sandbox can be built here (unshare("
WARNING = "WARNING: no sandbox could be built here"


def grader(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m grader ARGS` where namespaces are refused."""
    return subprocess.run(refused([sys.executable, "-m", "grader", *args]), cwd=cwd, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=300)


def assert_refused(run: subprocess.CompletedProcess) -> None:
    """Exit status 3, and stderr says what is missing, how to allow it, and which option grades trusted code."""
    assert run.returncode == GRADER_FAULT_STATUS, run.stdout[-2000:] + run.stderr[-2000:]
    message = " ".join(run.stderr.split())
    assert REFUSED in message and "student code never runs without one" in message, message
    assert ("CAP_SYS_ADMIN" if os.geteuid() == 0 else "kernel.apparmor_restrict_unprivileged_userns") in message
    assert TRUSTED_OPTION in message, message


def submission(folder: Path) -> Path:
    """A handout checkout whose exercise is the reference's."""
    (folder / "exercises").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / f"{EXERCISE}.py", folder / "exercises")
    return folder


def test_the_refusal_names_what_is_missing_and_how_to_allow_it(monkeypatch):
    """One line: the probe's reason, the sysctls that allow unprivileged user namespaces (a non-root grader) or the
    capability a root grader lacks, and the option for trusted code."""
    monkeypatch.setattr(sandbox.sys, "platform", "linux")
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    text = sandbox.refusal("unshare(CLONE_NEWUSER|CLONE_NEWPID) failed: Operation not permitted")
    assert text.startswith("no sandbox can be built here (unshare(CLONE_NEWUSER|CLONE_NEWPID) failed")
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in text and "kernel.unprivileged_userns_clone=1" in text
    assert text.endswith(f"grade with {TRUSTED_OPTION} (resource limits only)") and "\n" not in text
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    assert "CAP_SYS_ADMIN" in sandbox.refusal("x") and "sysctl" not in sandbox.refusal("x")


def test_grade_refuses_and_writes_no_results(tmp_path):
    folder = submission(tmp_path / "ada")
    out = tmp_path / "results.json"
    run = grader("grade", str(folder), "--out", str(out), "--assignment", ASSIGNMENT, cwd=tmp_path)
    assert_refused(run)
    assert not out.exists()
    trusted = grader("grade", str(folder), "--out", str(out), "--assignment", ASSIGNMENT, TRUSTED_OPTION, cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr[-2000:]
    results = json.loads(out.read_text())
    assert results["score"] == POINTS and WARNING in results["output"]


def test_batch_refuses_before_anyone_is_graded(tmp_path):
    submission(tmp_path / "class" / "ada")
    out = tmp_path / "grades"
    run = grader("batch", str(tmp_path / "class"), "--out", str(out), "--assignment", ASSIGNMENT, "--jobs", "1",
                 cwd=tmp_path)
    assert_refused(run)
    assert not list(out.rglob("*.json")) and not (out / "gradebook.csv").exists(), sorted(out.rglob("*"))
    trusted = grader("batch", str(tmp_path / "class"), "--out", str(out), "--assignment", ASSIGNMENT, "--jobs", "1",
                     TRUSTED_OPTION, cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr[-2000:]
    [row] = csv.DictReader((out / "gradebook.csv").open(encoding="utf-8-sig"))
    assert row["student"] == "ada" and float(row["score"]) == POINTS and row["status"] == "graded"
    [results] = (out / "results").rglob("*.json")
    assert WARNING in json.loads(results.read_text())["output"]


@pytest.mark.parametrize("trusted", [False, True], ids=["required", "trusted"])
def test_ci_gives_no_score_without_a_sandbox(tmp_path, trusted):
    """Refused: no Classroom result and no score in $GITHUB_OUTPUT (so the workflow's reporter step never runs), no
    score line; the job summary and an error annotation say why. Trusted: graded, with the WARNING."""
    checkout = submission(tmp_path / "checkout")
    output, summary = tmp_path / "output.txt", tmp_path / "summary.md"
    output.write_text("")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)}
    run = grader("ci", str(checkout), "--assignment", ASSIGNMENT, *([TRUSTED_OPTION] if trusted else []), cwd=tmp_path,
                 env=env)
    if trusted:
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.splitlines()[-1] == f"Score: {POINTS}/{POINTS}"
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
        assert json.loads(base64.b64decode(outputs["result"]))["status"] == "pass" and WARNING in summary.read_text()
        return
    assert_refused(run)
    assert output.read_text() == "", "no Classroom result and no score"
    assert "Score:" not in run.stdout and run.stdout.splitlines()[-1] == "No score: the grader failed on this commit"
    assert "::error title=The grader failed on this commit::" in run.stdout
    text = " ".join(summary.read_text().split())
    assert ": not graded" in text and REFUSED in text
