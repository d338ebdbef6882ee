"""The similarity report: similarity.html (the flagged pairs rolled up by student pair and by group of students, then
per exercise the pairs joining each group side by side, matching lines highlighted), similarity.json and what the
class summary shows of it (the roll-ups, linking similarity.html); and reading a class's files for it.

Every string from a submission (student ids, code, function names, notes) goes through ``grader.text.html``.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
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
    """The id of a pair's place in similarity.html, its section or its row (``<module>-1``: the exercise's first)."""
    return f"{pair.exercise}-{rank}"


def pair_rows(report: Report) -> list[dict]:
    """One row per flagged pair, for the class summary: exercise, students (raw: escape them for the page), score
    (0..1), shared k-grams, matching lines in each file, and the anchor of its place in similarity.html."""
    rows = []
    for module in report.modules:
        for rank, pair in enumerate(report.pairs.get(module, []), 1):
            a_lines, b_lines = fragment_lines(pair.fragments)
            rows.append({"exercise": module, "a": pair.a, "b": pair.b, "score": pair.score, "shared": pair.shared,
                         "lines_a": len(a_lines), "lines_b": len(b_lines), "anchor": anchor(pair, rank)})
    return rows


def summary_rows(report: Report) -> dict:
    """What summary.html shows of the report: the student pairs flagged (``student_pairs``) and the groups
    (``class_groups``), each with its students (cleaned) and the exercises it was flagged in, each linking its place in
    similarity.html; similarity.json keeps it for `grader gradebook` (``saved_summary_rows``)."""
    def view(target: str) -> str:
        return f"similarity.html#{target}"

    return {"pairs": [{"students": [clean(s, MAX_NAME) for s in students],
                       "exercises": [{"exercise": pair.exercise, "score": pair.score, "view": view(anchor(pair, rank))}
                                     for pair, rank in flagged]} for students, flagged in student_pairs(report)],
            "groups": [{"students": [clean(s, MAX_NAME) for s in students],
                        "exercises": [{"exercise": module, "view": view(target)} for module, target in exercises]}
                       for students, exercises in class_groups(report)]}


def saved_summary_rows(out: Path) -> dict | None:
    """``summary_rows`` as the similarity.json a batch wrote to ``out`` keeps them (None when it is missing, unreadable
    or of an older shape)."""
    try:
        summary = json.loads((out / "similarity.json").read_text(encoding="utf-8"))["summary"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return summary if isinstance(summary, dict) else None


def write_report(report: Report, out: Path) -> None:
    """similarity.html and similarity.json (the rows, the groups of each exercise and the notes) in ``out``."""
    data = {"pairs": pair_rows(report), "compared": report.compared,
            "groups": [{"exercise": group.exercise, "students": [clean(s, MAX_NAME) for s in group.students],
                        "pairs": len(group.joining) + len(group.others)}
                       for module in report.modules for group in groups(module, report.pairs.get(module, []))],
            "notes": [{"student": clean(s, MAX_NAME), "exercise": m, "note": clean(n)} for s, m, n in report.notes],
            "summary": summary_rows(report)}
    for row in data["pairs"]:
        row["a"], row["b"] = clean(row["a"], MAX_NAME), clean(row["b"], MAX_NAME)
    write_atomic(json.dumps(data, indent=2) + "\n", out / "similarity.json")
    write_atomic(render(report), out / "similarity.html")


@dataclass(frozen=True)
class Group:
    """Students of one exercise joined by flagged pairs, each alike enough to some other (not necessarily all to
    all)."""

    exercise: str
    students: tuple[str, ...]
    joining: tuple[tuple[Pair, int], ...]  # (pair, rank) joining each student to the group by their closest
    others: tuple[tuple[Pair, int], ...]  # classmate (a maximum spanning tree), and the group's other pairs


def groups(exercise: str, pairs: list[Pair]) -> list[Group]:
    """The groups that ``pairs`` (one exercise's flagged pairs, best first) join, in the order of their best pair;
    each pair with its rank in ``pairs``."""
    leader: dict[str, str] = {}

    def find(student: str) -> str:
        leader.setdefault(student, student)
        while leader[student] != student:
            leader[student] = student = leader[leader[student]]
        return student

    joins = []
    for pair in pairs:
        a, b = find(pair.a), find(pair.b)
        joins.append(a != b)
        leader[b] = a
    found: dict[str, tuple[set, list, list]] = {}
    for rank, (pair, joining) in enumerate(zip(pairs, joins), 1):
        students, tree, others = found.setdefault(find(pair.a), (set(), [], []))
        students.update((pair.a, pair.b))
        (tree if joining else others).append((pair, rank))
    return [Group(exercise, tuple(sorted(students)), tuple(tree), tuple(others))
            for students, tree, others in found.values()]


def student_of(key: str) -> str:
    """The student a class's entry belongs to (a batch's entries of nbgrader assignments are ``student/assignment``)."""
    return key.partition("/")[0]


def student_pairs(report: Report) -> list[tuple[tuple[str, str], list[tuple[Pair, int]]]]:
    """Each two students flagged together, with their flagged pairs (and ranks) in the course's order: those
    flagged in most exercises first, then those who are a group by themselves in most (the fewer students share code,
    the less likely a common source explains it: a renamed copy ranked below ten pairs of students handing in the
    same published solution, found by our instructor's walk-through), then by their best score."""
    found: defaultdict[tuple[str, str], list[tuple[Pair, int]]] = defaultdict(list)
    for module in report.modules:
        for rank, pair in enumerate(report.pairs.get(module, []), 1):
            found[tuple(sorted((student_of(pair.a), student_of(pair.b))))].append((pair, rank))
    alone = Counter(students for students, exercises in class_groups(report) if len(students) == 2
                    for _ in exercises)
    return sorted(found.items(), key=lambda item: (-len(item[1]), -alone[item[0]], -max(p.score for p, _ in item[1]),
                                                   item[0]))


def class_groups(report: Report) -> list[tuple[tuple[str, ...], list[tuple[str, str]]]]:
    """Each set of students that is a group in some exercise, with those exercises (module, anchor of the group in
    similarity.html): those found in most exercises first, then the smaller (the fewer students share code, the less
    likely a common source explains it)."""
    found: defaultdict[tuple[str, ...], list[tuple[str, str]]] = defaultdict(list)
    for module in report.modules:
        for number, group in enumerate(groups(module, report.pairs.get(module, [])), 1):
            students = tuple(sorted({student_of(student) for student in group.students}))
            found[students].append((module, group_anchor(group, number)))
    return sorted(found.items(), key=lambda item: (-len(item[1]), len(item[0]), item[0]))


def group_anchor(group: Group, number: int) -> str:
    """The id of a group's place in similarity.html: its heading, or for two students their pair's section."""
    if len(group.students) == 2:
        return anchor(*group.joining[0])
    return f"{group.exercise}-group-{number}"


STYLE = ("body{font-family:sans-serif;max-width:90em;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;margin:.5em 0}th,td{text-align:left;padding:.2em .6em;"
         "border-bottom:1px solid #ddd;vertical-align:top}td{overflow-wrap:anywhere}.num{text-align:right}"
         ".pair{border:1px solid #ccc;border-radius:4px;padding:.5em 1em;margin:1em 0}"
         # minmax(0, 1fr): a long line scrolls inside its side instead of widening the column past the page
         ".side{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1em}"
         ".side h4{overflow-wrap:anywhere}"
         ".code{font-family:monospace;font-size:.85em;white-space:pre;overflow-x:auto;border:1px solid #eee}"
         ".code span{display:block}.code i{color:#888;font-style:normal;display:inline-block;width:3.5em}"
         ".code b{font-weight:normal;border-left:4px solid #555;padding-left:.3em}"
         ".f0{background:#ffe9a8}.f1{background:#c9e7ff}.f2{background:#d7f5d0}.f3{background:#f6d3f0}"
         ".f4{background:#ffd8c2}.f5{background:#e0dcff}.note{color:#555}"
         "@media print{.pair{break-inside:avoid}}")


def render(report: Report) -> str:
    """similarity.html: the pairs of students flagged across exercises, the groups, then per exercise its groups,
    the pairs joining each group side by side (best first) and its other pairs listed."""
    flagged = sum(len(pairs) for pairs in report.pairs.values())
    rolled = student_pairs(report)
    recurring = class_groups(report)
    parts = ["<h1>Similar submissions</h1>",
             "<p>Pairs whose code is alike after renaming, reformatting, reordering functions and removing comments, "
             "docstrings, the stub's code and code that nothing runs or uses; lines shared by many students count for "
             "nobody. A pair's score is the share of the smaller file's code found in the other. This is evidence to "
             "look at, never a penalty: it changes no score. Alike code of a small exercise can be honest; read the "
             "matching lines before concluding anything.</p>",
             f"<p>{flagged} pair{'s' * (flagged != 1)} of files flagged, between {len(rolled)} pair"
             f"{'s' * (len(rolled) != 1)} of students, in {len(recurring)} group{'s' * (len(recurring) != 1)}.</p>"]
    if recurring:
        parts += [_class_groups(recurring), _student_pairs(rolled)]
    for module in report.modules:
        pairs = report.pairs.get(module, [])
        compared = report.compared.get(module, 0)
        found = groups(module, pairs)
        parts.append(f"<h2 id='{module}'>{module}</h2><p>{compared} files compared ({compared * (compared - 1) // 2} "
                     f"pairs); {len(pairs) or 'no'} pair{'s' * (len(pairs) != 1)} flagged"
                     + (f", in {len(found)} group{'s' * (len(found) != 1)}" if pairs else "") + ".</p>")
        for number, group in enumerate(found, 1):
            parts.append(_group(report, group, number))
    if report.notes:
        parts.append("<h2>Files read only in part or not at all</h2><ul>")
        parts += [f"<li>{html(student, MAX_NAME)}, {module}: {html(note)}</li>"
                  for student, module, note in report.notes]
        parts.append("</ul>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Similar submissions</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def _names(students) -> str:
    return ", ".join(html(student, MAX_NAME) for student in students)


def _student_pairs(rolled: list[tuple[tuple[str, str], list[tuple[Pair, int]]]]) -> str:
    rows = []
    for students, flagged in rolled:
        links = ", ".join(f"<a href='#{anchor(pair, rank)}'>{pair.exercise} {pair.score:.0%}</a>"
                          for pair, rank in flagged)
        rows.append(f"<tr><td>{' and '.join(html(s, MAX_NAME) for s in students)}</td>"
                    f"<td class='num'>{len(flagged)}</td><td>{links}</td>"
                    f"<td class='num'>{max(pair.score for pair, _ in flagged):.0%}</td></tr>")
    return ("<h2 id='student-pairs'>Student pairs</h2><p>Each two students flagged together in some exercise, those "
            "flagged in most exercises first, then the two who share code with nobody else.</p>"
            "<table id='student-pairs-table'><thead><tr><th>students</th><th class='num'>exercises</th>"
            "<th>flagged in</th><th class='num'>highest</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _class_groups(recurring: list[tuple[tuple[str, ...], list[tuple[str, str]]]]) -> str:
    rows = [f"<tr><td>{_names(students)}</td><td class='num'>{len(students)}</td><td class='num'>{len(exercises)}</td>"
            "<td>" + ", ".join(f"<a href='#{target}'>{module}</a>" for module, target in exercises) + "</td></tr>"
            for students, exercises in recurring]
    return ("<h2 id='groups'>Groups</h2><p>Students joined by flagged pairs in one exercise (in a group of three or "
            "more, each alike enough to another, not necessarily all to all: one common source, or code passed on), "
            "those found in most exercises first, then the smaller groups.</p><table id='groups-table'><thead><tr>"
            "<th>students</th><th class='num'>size</th><th class='num'>exercises</th><th>flagged in</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _group(report: Report, group: Group, number: int) -> str:
    """A group: for three or more students a heading, the pairs joining it side by side, and its other pairs as
    rows (each with its pair's anchor); for two, their pair."""
    shown = "".join(_pair(report, pair, rank) for pair, rank in group.joining)
    if len(group.students) == 2:
        return shown
    others = len(group.others)
    rows = "".join(f"<tr id='{anchor(pair, rank)}'><td>{html(pair.a, MAX_NAME)} and {html(pair.b, MAX_NAME)}</td>"
                   f"<td class='num'>{pair.score:.0%}</td><td class='num'>{pair.shared}</td></tr>"
                   for pair, rank in group.others)
    return (f"<h3 id='{group_anchor(group, number)}'>Group {number}: {len(group.students)} students, "
            f"{len(group.joining) + others} pairs flagged</h3><p>{_names(group.students)}.</p>"
            f"<p class='note'>Side by side: the {len(group.joining)} pairs joining each student to the group by their "
            f"closest classmate" + (f"; the other {others} pair{'s' * (others != 1)} of the group below." if others
                                    else ".") + "</p>" + shown
            + (f"<table class='others'><thead><tr><th>students</th><th class='num'>score</th>"
               f"<th class='num'>shared fingerprints</th></tr></thead><tbody>{rows}</tbody></table>" if others else ""))


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
