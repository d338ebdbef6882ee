"""GitHub Actions: every output of `grader ci` for a graded (or ungradable) checkout (``report``).

The job summary (``markdown.markdown_summary``) appended to ``$GITHUB_STEP_SUMMARY``; the GitHub Classroom result
(``classroom``) and the points in ``$GITHUB_OUTPUT``; optionally results.json and JUnit XML; the terminal summary,
then workflow commands: an annotation per exercise that lost points (``annotations``), and last the score line.
"""
from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console

from grader.points import Grade
from grader.reports.advice import complete, points, score_line, untouched, what_to_fix
from grader.reports.classroom import classroom, classroom_output
from grader.reports.files import write_atomic, write_json
from grader.reports.junit import junit_xml
from grader.reports.markdown import markdown_summary
from grader.reports.results import results
from grader.reports.terminal import print_summary
from grader.text import markdown, workflow_data, workflow_property

# GitHub shows at most 10 error (and 10 warning, 10 notice) annotations per step; one per exercise stays under it.
MAX_ANNOTATIONS = 10


@dataclass
class CiResult:
    grade: Grade
    status: str  # pass, fail or error (the submission could not be graded)
    message: str  # why it could not be graded, for status "error"
    files: dict[str, tuple[str, int]]  # exercise -> (path from the repository's root, line or 0)
    execution_time: float
    sha256: str


def workflow_command(level: str, message: str, *, file: str | None = None, line: int = 0, title: str = "") -> str:
    """``::error file=exercises/<module>.py,line=12,title=...::message``, escaped as GitHub's toolkit does.

    The message keeps its lines (each one ``clean``), which GitHub shows in the annotation; properties are one line."""
    properties = [f"file={workflow_property(file)}"] if file else []
    if file and line:
        properties.append(f"line={int(line)}")
    if title:
        properties.append(f"title={workflow_property(title)}")
    return f"::{level}{' ' + ','.join(properties) if properties else ''}::{workflow_data(message, lines=True)}"


def annotations(outcome: CiResult) -> list[str]:
    """One annotation per exercise with a failed check: a notice for an unstarted one, else an error."""
    if outcome.status == "error":
        return [workflow_command("error", outcome.message, title="The grader could not grade this commit")]
    lines = []
    for exercise in outcome.grade.exercises:
        if complete(exercise):
            continue
        path, line = outcome.files[exercise.module]
        level = "notice" if untouched(exercise) else "error"
        title = f"{exercise.module}: {points(exercise.score)}/{points(exercise.max_score)} points"
        lines.append(workflow_command(level, what_to_fix(exercise), file=path, line=line, title=title))
    return lines[:MAX_ANNOTATIONS]


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")


def report(outcome: CiResult, *, title: str, env: Mapping[str, str], stdout: TextIO, device: str = "cpu",
           results_path: str | None = None, junit_path: str | None = None) -> None:
    """Write every output of `grader ci` for a graded (or ungradable) checkout."""
    grade = outcome.grade
    _append(env.get("GITHUB_STEP_SUMMARY"), markdown_summary(grade, title=title, files=outcome.files))
    result = classroom(grade, files=outcome.files, status=outcome.status, message=outcome.message)
    _append(env.get("GITHUB_OUTPUT"), f"result={classroom_output(result)}\nscore={grade.score:g}\nmax-score={grade.max_score:g}")
    if results_path:
        write_json(results(grade, execution_time=outcome.execution_time, device=device, sha256=outcome.sha256), results_path)
    if junit_path:
        write_atomic(junit_xml(grade, name=title, execution_time=outcome.execution_time), junit_path)
    on_actions = env.get("GITHUB_ACTIONS") == "true"
    if on_actions:  # the summary repeats what student code said (exception messages): no workflow command in it counts
        resume = secrets.token_hex(16)
        print(f"::stop-commands::{resume}", file=stdout)
    print_summary(grade, Console(file=stdout, width=120, highlight=False))
    if on_actions:
        print(f"::{resume}::", file=stdout)
        for line in annotations(outcome):
            print(line, file=stdout)
    print(score_line(grade), file=stdout, flush=True)


def report_fault(message: str, *, title: str, env: Mapping[str, str], stdout: TextIO) -> None:
    """What `grader ci` writes when the grader failed (a grader fault): the job summary and an error say why, and no
    score is given anywhere (no Classroom result or score in ``$GITHUB_OUTPUT``, no score line)."""
    _append(env.get("GITHUB_STEP_SUMMARY"), f"## {markdown(title)}: not graded\n\n{markdown(message)}")
    if env.get("GITHUB_ACTIONS") == "true":
        print(workflow_command("error", message, title="The grader failed on this commit"), file=stdout)
    print("No score: the grader failed on this commit", file=stdout, flush=True)
