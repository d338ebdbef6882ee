"""Feedback pages: a student's feedback as Markdown and HTML (batch writes ``feedback/<student>.md`` and ``.html``).

Per exercise: its points, what passed and what to fix, read from the student's results.json.
"""
from __future__ import annotations

from pathlib import Path

from grader.reports.files import write_atomic
from grader.text import MAX_NAME, clean, html, markdown


def write_feedback(data: dict, out: Path) -> str | None:
    """Per-student feedback as Markdown and HTML: per exercise, what passed and what to fix.

    Returns None, or why the pages could not be written (never raises: one student's pages do not stop a batch).
    """
    try:
        sections = _feedback_sections(data)
        write_atomic(_feedback_markdown(data, sections), out / "feedback" / f"{data['student']}.md")
        write_atomic(_feedback_html(data, sections), out / "feedback" / f"{data['student']}.html")
    except Exception as error:  # noqa: BLE001 - a full disk, a results file of an older grader, ...
        return f"feedback not written: {type(error).__name__}: {clean(str(error))}"
    return None


def _feedback_sections(data: dict) -> list[tuple[str, str, list[tuple[bool, str, str]]]]:
    """Per exercise: its name, its points ("7.5 / 10") and its tests as (passed, what it checks, feedback)."""
    by_exercise: dict[str, list[dict]] = {}
    for test in data["tests"]:
        by_exercise.setdefault(test["name"].split(":", 1)[0], []).append(test)
    return [(module, f"{result['score']:g} / {result['max_score']:g}",
             [(test["status"] == "passed", test["name"].split(": ", 1)[-1], test["output"])
              for test in by_exercise.get(module, [])])
            for module, result in data["exercises"].items()]


def _feedback_markdown(data: dict, sections) -> str:
    lines = [f"# Feedback for {markdown(data['student'], MAX_NAME)}", "",
             f"**Score: {data['score']:g} / {data['max_score']:g}**", ""]
    if data.get("status", "graded") != "graded":
        lines += [markdown(data["output"]), ""]
    for module, points, tests in sections:
        lines += [f"## {markdown(module, MAX_NAME)}: {points}", ""]
        lines += [f"- ✅ {markdown(what)}" if passed else f"- ❌ {markdown(what)}  \n  {markdown(output)}"
                  for passed, what, output in tests]
        lines.append("")
    return "\n".join(lines)


def _feedback_html(data: dict, sections) -> str:
    parts = [f"<h1>Feedback for {html(data['student'], MAX_NAME)}</h1>",
             f"<p>Score: {data['score']:g} / {data['max_score']:g}</p>"]
    if data.get("status", "graded") != "graded":
        parts.append(f"<p>{html(data['output'])}</p>")
    for module, points, tests in sections:
        parts.append(f"<h2>{html(module, MAX_NAME)}: {points}</h2>")
        parts += [f"<p class='test'>✅ {html(what)}</p>" if passed else
                  f"<p class='test'>❌ {html(what)}</p>\n<p class='hint'>{html(output)}</p>"
                  for passed, what, output in tests]
    return html_page(f"Feedback for {clean(data['student'], MAX_NAME)}", "\n".join(parts))


def html_page(title: str, body: str) -> str:
    """A whole HTML page (feedback pages, the class summary) in one style."""
    style = "body{font-family:sans-serif;max-width:60em;margin:2em auto}.hint{margin-left:2em;color:#a33}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em}"
    return f"<!doctype html><html><head><meta charset='utf-8'><title>{html(title)}</title><style>{style}</style></head><body>{body}</body></html>\n"
