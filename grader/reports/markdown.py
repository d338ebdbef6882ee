"""Markdown: the job summary (a table of exercises and points, then what to fix), e.g. GitHub's step summary."""
from __future__ import annotations

from collections.abc import Mapping

from grader.points import Grade
from grader.reports.advice import (
    collapsed,
    complete,
    failures,
    points,
    rules_line,
    what_to_fix,
)
from grader.text import MAX_NAME, markdown


def markdown_summary(grade: Grade, *, title: str = "Grade", files: Mapping[str, tuple[str, int]] | None = None) -> str:
    """A job summary: a table of exercises and points, then what to fix, exercise by exercise."""
    files = files or {}
    out = [f"## {markdown(title)}: {points(grade.score)} / {points(grade.max_score)}", ""]
    out += [f"> **Note:** {markdown(note)}" for note in grade.notes]
    if grade.notes:
        out.append("")
    out += ["| # | exercise | file | points | checks passed |", "|---:|---|---|---:|---:|"]
    for number, exercise in enumerate(grade.exercises, 1):
        passed, applicable = exercise.checks_passed
        mark = "✅" if complete(exercise) else "❌" if exercise.score == 0 else "⚠️"
        path = files.get(exercise.module, (f"exercises/{exercise.module}.py", 0))[0]
        out.append(f"| {number} | {markdown(exercise.title)} | `{markdown(path, MAX_NAME, code=True)}` | "
                   f"{mark} {points(exercise.score)} / {points(exercise.max_score)} "
                   f"| {passed} / {applicable} |")
    out += [f"| | **total** | | **{points(grade.score)} / {points(grade.max_score)}** | |", ""]
    todo = [e for e in grade.exercises if not complete(e)]
    if not todo:
        out += ["Every check passed: full marks. 🎉", ""]
        return "\n".join(out)
    out += ["### What to fix", ""]
    for number, exercise in enumerate(grade.exercises, 1):
        if exercise not in todo:
            continue
        path, line = files.get(exercise.module, (f"exercises/{exercise.module}.py", 0))
        where = f"`{markdown(path, MAX_NAME, code=True)}`" + (f" line {line}" if line else "")
        out.append(f"**{number}. {markdown(exercise.title)}** ({where}): "
                   f"{points(exercise.score)} / {points(exercise.max_score)}")
        if collapsed(exercise):
            out += [f"- {markdown(what_to_fix(exercise))}", ""]
            continue
        out += [f"- {markdown(test.doc)}" + (f"  \n  {markdown(test.feedback)}" if test.feedback else "")
                for test in failures(exercise) if not test.deferred]  # the property, then what is wrong with it
        out += [f"- {markdown(line)}" for line in [rules_line(exercise.tests)] if line]
        out.append("")
    return "\n".join(out)
