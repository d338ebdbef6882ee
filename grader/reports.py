"""Reports: the grade as Gradescope's results.json (plus our fields) and as a terminal summary."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from . import __version__
from .scores import Grade

# The results.json this grader writes: Gradescope's format plus the fields marked (ours).
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["score", "max_score", "execution_time", "output", "tests", "exercises", "grader_version", "device",
                 "submission_sha256"],
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "max_score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "score", "max_score", "status", "output", "visibility"],
            "properties": {
                "name": {"type": "string"}, "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]}, "output": {"type": "string"},
                "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
                "tags": {"type": "array", "items": {"type": "string"}},
            }}},
        "exercises": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["score", "max_score"],
            "properties": {"score": {"type": "number"}, "max_score": {"type": "number"}}}},  # (ours)
        "grader_version": {"type": "string"},  # (ours)
        "device": {"type": "string"},  # (ours)
        "submission_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},  # (ours)
    },
}


def results(grade: Grade, *, execution_time: float, device: str, sha256: str) -> dict:
    """Gradescope's results.json for a grade, with ``exercises``, ``grader_version``, ``device`` and ``submission_sha256``."""
    tests = []
    for exercise in grade.exercises:
        for test in exercise.tests:
            if test.status == "skipped":
                continue
            tests.append({"name": f"{exercise.module}: {test.doc}", "score": test.score, "max_score": test.max_score,
                          "status": test.status, "output": test.feedback, "visibility": "visible",
                          "tags": [exercise.module]})
    lines = [f"{e.module}: {e.score:g}/{e.max_score:g}" + (f" ({e.problem})" if e.problem else "") for e in grade.exercises]
    return {
        "score": grade.score, "max_score": grade.max_score, "execution_time": round(execution_time, 3),
        "output": "\n".join([*grade.notes, *lines]), "visibility": "visible", "tests": tests,
        "exercises": {e.module: {"score": e.score, "max_score": e.max_score} for e in grade.exercises},
        "grader_version": __version__, "device": device, "submission_sha256": sha256,
    }


def write_json(data: dict, path: str | os.PathLike) -> None:
    """Write JSON atomically: readers see the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False, encoding="utf-8") as out:
        json.dump(data, out, indent=2)
        out.write("\n")
    os.replace(out.name, path)


def print_summary(grade: Grade, console: Console | None = None) -> None:
    """A table per exercise, then each failure's message."""
    console = console or Console()
    table = Table(title="Grade", show_footer=True)
    table.add_column("exercise", footer="total")
    table.add_column("points", justify="right", footer=f"{grade.score:g}/{grade.max_score:g}")
    table.add_column("tests passed", justify="right")
    table.add_column("note")
    for exercise in grade.exercises:
        applicable = [t for t in exercise.tests if t.status != "skipped"]
        passed = sum(t.status == "passed" for t in applicable)
        style = "green" if exercise.score == exercise.max_score else "red" if exercise.score == 0 else "yellow"
        table.add_row(exercise.module, f"[{style}]{exercise.score:g}/{exercise.max_score:g}[/]",
                      f"{passed}/{len(applicable)}", exercise.problem)
    for note in grade.notes:
        console.print(f"[bold yellow]note:[/] {note}")
    console.print(table)
    for test in grade.tests:
        if test.status == "failed":
            console.print(f"[red]✗[/] [bold]{test.exercise}[/]: {test.doc}\n    {test.feedback}", highlight=False)
