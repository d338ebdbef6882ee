"""The similarity report: similarity.html (each flagged pair side by side, matching lines highlighted),
similarity.json and the rows the class summary shows; and reading a class's files for it.

Every string from a submission (student ids, code, function names, notes) goes through ``grader.text.html``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from grader.course import Course
from grader.reports.files import write_atomic
from grader.similarity import Report, compare_class
from grader.similarity.compare import THRESHOLD, Fragment, Pair
from grader.text import MAX_NAME, clean, html

MAX_SHOWN_LINES = 2000  # lines of a file shown side by side (a file is read up to tokens.MAX_SOURCE_CHARS)
MAX_LINE = 300  # characters of a line shown
COLOURS = 6  # fragments are told apart by colour, cycling


def class_report(sources: Mapping[str, Mapping[str, bytes]], course: Course, out: Path,
                 threshold: float = THRESHOLD) -> Report:
    """Compare a class's files (student -> {module: source}, as the intake read them) exercise by exercise of
    ``course``; write similarity.html and similarity.json to ``out``."""
    report = compare_class(sources, course, threshold=threshold)
    write_report(report, out)
    return report


def anchor(pair: Pair, rank: int) -> str:
    """The id of a pair's section in similarity.html (``<module>-1`` for the exercise's first pair)."""
    return f"{pair.exercise}-{rank}"


def pair_rows(report: Report) -> list[dict]:
    """One row per flagged pair, for the class summary: exercise, students (raw: escape them for the page), score
    (0..1), shared k-grams, matching lines in each file, and the anchor of its section in similarity.html."""
    rows = []
    for module in report.modules:
        for rank, pair in enumerate(report.pairs.get(module, []), 1):
            a_lines, b_lines = fragment_lines(pair.fragments)
            rows.append({"exercise": module, "a": pair.a, "b": pair.b, "score": pair.score, "shared": pair.shared,
                         "lines_a": len(a_lines), "lines_b": len(b_lines), "anchor": anchor(pair, rank)})
    return rows


def summary_rows(report: Report) -> list[dict]:
    """The flagged pairs in the shape summary.html shows them, each linking its side-by-side view."""
    return _summary_shape(pair_rows(report))


def saved_summary_rows(out: Path) -> list[dict]:
    """``summary_rows`` of the similarity.json a batch wrote to ``out`` (none when it is missing or unreadable)."""
    try:
        rows = json.loads((out / "similarity.json").read_text(encoding="utf-8"))["pairs"]
        return _summary_shape(rows)
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _summary_shape(rows: list[dict]) -> list[dict]:
    return [{"exercise": row["exercise"], "students": (row["a"], row["b"]), "similarity": row["score"],
             "view": f"similarity.html#{row['anchor']}"} for row in rows]


def write_report(report: Report, out: Path) -> None:
    """similarity.html and similarity.json (the rows and the notes) in ``out``."""
    data = {"pairs": pair_rows(report), "compared": report.compared,
            "notes": [{"student": clean(s, MAX_NAME), "exercise": m, "note": clean(n)} for s, m, n in report.notes]}
    for row in data["pairs"]:
        row["a"], row["b"] = clean(row["a"], MAX_NAME), clean(row["b"], MAX_NAME)
    write_atomic(json.dumps(data, indent=2) + "\n", out / "similarity.json")
    write_atomic(render(report), out / "similarity.html")


STYLE = ("body{font-family:sans-serif;max-width:90em;margin:2em auto;padding:0 1em}"
         ".pair{border:1px solid #ccc;border-radius:4px;padding:.5em 1em;margin:1em 0}"
         ".side{display:grid;grid-template-columns:1fr 1fr;gap:1em}"
         ".code{font-family:monospace;font-size:.85em;white-space:pre;overflow-x:auto;border:1px solid #eee}"
         ".code span{display:block}.code i{color:#888;font-style:normal;display:inline-block;width:3.5em}"
         ".code b{font-weight:normal;border-left:4px solid #555;padding-left:.3em}"
         ".f0{background:#ffe9a8}.f1{background:#c9e7ff}.f2{background:#d7f5d0}.f3{background:#f6d3f0}"
         ".f4{background:#ffd8c2}.f5{background:#e0dcff}.note{color:#555}"
         "@media print{.pair{break-inside:avoid}}")


def render(report: Report) -> str:
    """similarity.html: per exercise, the flagged pairs, best first, each with both files side by side."""
    flagged = sum(len(pairs) for pairs in report.pairs.values())
    parts = ["<h1>Similar submissions</h1>",
             "<p>Pairs whose code is alike after renaming, reformatting, reordering functions and removing comments, "
             "docstrings and the stub's code; lines shared by many students count for nobody. This is evidence to "
             "look at, never a penalty: it changes no score. Alike code of a small exercise can be honest; read the "
             "matching lines before concluding anything.</p>",
             f"<p>{flagged} pair{'s' * (flagged != 1)} flagged.</p>"]
    for module in report.modules:
        pairs = report.pairs.get(module, [])
        parts.append(f"<h2 id='{module}'>{module}</h2><p>{report.compared.get(module, 0)} files compared; "
                     f"{len(pairs) or 'no'} pair{'s' * (len(pairs) != 1)} flagged.</p>")
        parts += [_pair(report, pair, rank) for rank, pair in enumerate(pairs, 1)]
    if report.notes:
        parts.append("<h2>Files read only in part or not at all</h2><ul>")
        parts += [f"<li>{html(student, MAX_NAME)}, {module}: {html(note)}</li>"
                  for student, module, note in report.notes]
        parts.append("</ul>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Similar submissions</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def _pair(report: Report, pair: Pair, rank: int) -> str:
    a, b = html(pair.a, MAX_NAME), html(pair.b, MAX_NAME)
    units = "".join(f"<li><code>{html(x, MAX_NAME)}</code> ~ <code>{html(y, MAX_NAME)}</code>: {score:.0%}</li>"
                    for x, y, score in pair.units)
    return (f"<section class='pair' id='{anchor(pair, rank)}'><h3>{a} and {b}: {pair.score:.0%} alike</h3>"
            f"<p class='note'>{pair.shared} shared fingerprints; {len(pair.fragments)} matching fragment"
            f"{'s' * (len(pair.fragments) != 1)}, coloured alike on both sides.</p>"
            + (f"<p>Closest functions:</p><ul>{units}</ul>" if units else "")
            + "<div class='side'>"
            + _code(pair.a, report.sources[pair.a, pair.exercise], [f.a_lines for f in pair.fragments])
            + _code(pair.b, report.sources[pair.b, pair.exercise], [f.b_lines for f in pair.fragments])
            + "</div></section>")


def _code(student: str, source: str, spans: list[tuple[int, int]]) -> str:
    """One file, numbered, the lines of fragment ``n`` marked with colour ``n % COLOURS``."""
    fragment_of = {}
    for number, (first, last) in enumerate(spans):
        for line in range(first, last + 1):
            fragment_of.setdefault(line, number)
    lines = source.splitlines()
    shown = []
    for number, line in enumerate(lines[:MAX_SHOWN_LINES], 1):
        text = html(line.expandtabs(4), MAX_LINE) or " "
        fragment = fragment_of.get(number)
        shown.append(f"<span><i>{number}</i>{text}</span>" if fragment is None else
                     f"<span class='f{fragment % COLOURS}'><i>{number}</i><b>{text}</b></span>")
    if len(lines) > MAX_SHOWN_LINES:
        shown.append(f"<span class='note'>… {len(lines) - MAX_SHOWN_LINES} more lines not shown</span>")
    return f"<div><h4>{html(student, MAX_NAME)}</h4><div class='code'>{''.join(shown)}</div></div>"


def fragment_lines(fragments: tuple[Fragment, ...]) -> tuple[set[int], set[int]]:
    """The lines of each file that some fragment covers."""
    a_lines = {line for f in fragments for line in range(f.a_lines[0], f.a_lines[1] + 1)}
    b_lines = {line for f in fragments for line in range(f.b_lines[0], f.b_lines[1] + 1)}
    return a_lines, b_lines
