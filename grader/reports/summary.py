"""summary.html, the instructor's view of a class: where does it struggle?

Rebuilt by batch from the results on disk: per-exercise score distributions (``plots``), the hardest checks by the
share of students passing them, the misconceptions (the known mistakes the suites diagnosed, by id, counted per
student), a sortable table of the
students linking their feedback pages, the submissions that could not be graded (with why, and outside every
statistic), and, when given, the pairs of similar submissions. Exercises are read from the results, whatever
assignment a batch graded; a check counts only for the students whose exercise could run (a missing file or an
import error says nothing about the check), and a check that did not apply (skipped, e.g. CUDA-only on CPU) is
not in the results at all.
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from grader.course import Course
from grader.reports import plots
from grader.reports.advice import points
from grader.reports.feedback import graded, unreadable_reason
from grader.reports.files import write_atomic
from grader.reports.page import html_page
from grader.text import MAX_NAME, html

HINT = re.compile(r"\bHint: (?P<hint>.+)")
HARDEST_SHOWN = 15
MISCONCEPTIONS_SHOWN = 25
NAMES_SHOWN = 8  # students named beside a misconception
SORTING = """
document.querySelectorAll('table.sortable').forEach(table => {
  const headers = [...table.tHead.rows[0].cells];
  headers.forEach((th, column) => {
    th.classList.add('sortable');
    th.addEventListener('click', () => {
      const ascending = th.getAttribute('aria-sort') !== 'ascending';
      const key = row => row.cells[column].dataset.value ?? row.cells[column].textContent;
      const rows = [...table.tBodies[0].rows].sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        const order = row => row.cells[column].dataset.value === undefined;
        const cmp = order(a) || order(b) ? x.localeCompare(y) : Number(x) - Number(y);
        return ascending ? cmp : -cmp;
      });
      headers.forEach(other => other.removeAttribute('aria-sort'));
      th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      table.tBodies[0].append(...rows);
    });
  });
});
"""


@dataclass(frozen=True)
class HardCheck:
    exercise: str
    what: str  # the student-facing name (the check's docstring line)
    passed: int  # students who passed every case of it
    applied: int  # students whose exercise could run

    @property
    def rate(self) -> float:
        return self.passed / self.applied


@dataclass(frozen=True)
class Misconception:
    exercise: str
    id: str  # the known mistake's id (<exercise>.<mistake>)
    hint: str  # what the feedback said about it
    students: tuple[str, ...]


def exercise_modules(rows: Sequence[dict]) -> list[str]:
    """The exercises the results hold, in their order (the first row's first)."""
    return list(dict.fromkeys(module for row in rows for module in row["exercises"]))


def _ran(row: dict, module: str) -> bool:
    """Whether the exercise could run for this student (graded, no missing file or import error)."""
    return module in row["exercises"] and not row["exercises"][module].get("problem")


def _checks_by_student(row: dict) -> dict[tuple[str, str], bool]:
    """(exercise, check) -> whether every case of it passed, for the exercises that could run."""
    outcome: dict[tuple[str, str], bool] = {}
    for test in row["tests"]:
        module, _, what = test["name"].partition(": ")
        if _ran(row, module):
            outcome[module, what] = outcome.get((module, what), True) and test["status"] == "passed"
    return outcome


def hardest_checks(rows: Sequence[dict]) -> list[HardCheck]:
    """Every check some student failed, the lowest share of students passing first."""
    applied: dict[tuple[str, str], list[bool]] = {}
    for row in rows:
        for key, passed in _checks_by_student(row).items():
            applied.setdefault(key, []).append(passed)
    order = {module: n for n, module in enumerate(exercise_modules(rows))}
    checks = [HardCheck(module, what, sum(outcomes), len(outcomes))
              for (module, what), outcomes in applied.items() if not all(outcomes)]
    return sorted(checks, key=lambda c: (c.rate, -c.applied, order[c.exercise], c.what))


def misconceptions(rows: Sequence[dict]) -> list[Misconception]:
    """The known mistakes the suites diagnosed (a failure's ``extra_data.misconception``: a mistake whose result
    reproduced the student's), by id, each with the students who made it and the hint's text, the most common first."""
    students: dict[tuple[str, str], dict[str, None]] = {}
    texts: dict[tuple[str, str], str] = {}
    for row in rows:
        for test in row["tests"]:
            extra = test.get("extra_data")
            mistake = extra.get("misconception") if test["status"] == "failed" and isinstance(extra, dict) else None
            if mistake:
                key = (test["name"].partition(": ")[0], str(mistake))
                students.setdefault(key, {})[row["student"]] = None
                match = HINT.search(test.get("output", ""))
                texts.setdefault(key, match["hint"].strip().rstrip(".") if match else "")
    order = {module: n for n, module in enumerate(exercise_modules(rows))}
    found = [Misconception(module, mistake, texts[module, mistake], tuple(names))
             for (module, mistake), names in students.items()]
    return sorted(found, key=lambda m: (-len(m.students), order.get(m.exercise, 0), m.id))


def write_summary(course: Course, out: Path, rows: list[dict], similar: Sequence[Mapping] = ()) -> None:
    """summary.html and its pictures (score_histogram.png, exercise_scores.png) in ``out``, for the class ``rows``.

    ``similar``: pairs of similar submissions to show (each a mapping with ``exercise``, ``students`` (two ids),
    ``similarity`` (0..1) and optionally ``view``, a link relative to ``out``); the section is left out without any.
    """
    done = [row for row in rows if graded(row)]
    failed = [row for row in rows if not graded(row)]
    modules = exercise_modules(rows)
    titles = {exercise.module: exercise.title for exercise in course.exercises}
    most = {module: max(row["exercises"][module]["max_score"] for row in rows if module in row["exercises"])
            for module in modules}
    total = max((row["max_score"] for row in rows), default=course.total_points)
    body = [f"<h1>{html(course.title)}: class summary</h1>", _lead(done, failed, total)]
    if done:
        plots.score_histogram([row["score"] for row in done], total, out / "score_histogram.png")
        plots.exercise_histograms([(m, [row["exercises"][m]["score"] for row in done if m in row["exercises"]], most[m])
                                   for m in modules], out / "exercise_scores.png")
        body += ["<h2>Scores</h2><img src='score_histogram.png' alt='histogram of the total marks'>",
                 _exercise_table(done, modules, titles, most),
                 "<img src='exercise_scores.png' alt='histogram of the marks of each exercise'>",
                 _hardest_section(hardest_checks(done)), _misconception_section(misconceptions(done)),
                 _student_table(done, modules, most, total)]
    if failed:
        body.append(_ungradable_section(failed))
    if similar:
        body.append(_similar_section(similar))
    write_atomic(html_page(f"{course.title}: class summary", "\n".join(body), SORTING), out / "summary.html")


def feedback_link(student: str, assignment: str | None = None) -> str:
    """A batch entry (a student, or a student's assignment) as a link to its feedback page, relative to summary.html:
    ``feedback/<student>.html`` or ``feedback/<student>/<assignment>.html``."""
    href = "/".join(quote(part, safe="") for part in (student, assignment) if part is not None)
    label = student if assignment is None else f"{student} / {assignment}"
    return f"<a href='feedback/{html(href)}.html'>{html(label, MAX_NAME)}</a>"


def row_link(row: Mapping) -> str:
    """The feedback link of a results record: batch writes ``key`` (``<student>/<assignment>``) when the record is
    an assignment's rather than the student's."""
    return feedback_link(row["student"], row["assignment"] if row.get("key") else None)


def _lead(done: list[dict], failed: list[dict], total: float) -> str:
    count = len(done) + len(failed)
    text = f"{count} submission{'s' * (count != 1)}: {len(done)} graded"
    if failed:
        text += (f", {len(failed)} could not be graded (<a href='#ungradable'>listed below</a>, left out of every "
                 "statistic)")
    if done:
        marks = [row["score"] for row in done]
        text += (f". Graded work: mean {points(statistics.fmean(marks))}, median {points(statistics.median(marks))} "
                 f"of {points(total)}; {sum(s >= total for s in marks)} with full marks")
    return f"<p>{text}.</p>"


def _exercise_table(done: list[dict], modules: list[str], titles: Mapping[str, str], most: Mapping[str, float]) -> str:
    rows = []
    for module in modules:
        marks = [row["exercises"][module]["score"] for row in done if module in row["exercises"]]
        broken = sum(not _ran(row, module) for row in done if module in row["exercises"])
        rows.append(f"<tr><td>{html(module, MAX_NAME)}</td><td>{html(titles.get(module, ''), MAX_NAME)}</td>"
                    f"<td class='num'>{points(statistics.fmean(marks)) if marks else '-'}</td>"
                    f"<td class='num'>{points(statistics.median(marks)) if marks else '-'}</td>"
                    f"<td class='num'>{points(most[module])}</td>"
                    f"<td class='num'>{sum(s >= most[module] for s in marks)}</td>"
                    f"<td class='num'>{sum(s == 0 for s in marks)}</td><td class='num'>{broken}</td></tr>")
    return ("<h2>Exercises</h2><div class='wide'><table id='exercises'><thead><tr><th>exercise</th><th>title</th>"
            "<th class='num'>mean</th><th class='num'>median</th><th class='num'>points</th>"
            "<th class='num'>full marks</th><th class='num'>zero</th><th class='num'>could not run</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>"
            "<p class='muted'>Students per exercise score; &ldquo;could not run&rdquo;: a missing file or an import "
            "error.</p>")


def _hardest_section(checks: list[HardCheck]) -> str:
    if not checks:
        return "<h2>Hardest checks</h2><p>Every graded student passed every check.</p>"
    rows = "".join(f"<tr><td class='num'>{round(100 * c.rate)}%</td><td class='num'>{c.passed} of {c.applied}</td>"
                   f"<td>{html(c.exercise, MAX_NAME)}</td><td>{html(c.what)}</td></tr>" for c in checks[:HARDEST_SHOWN])
    more = len(checks) - HARDEST_SHOWN
    return ("<h2>Hardest checks</h2><div class='wide'><table id='hardest'><thead><tr><th class='num'>passing</th>"
            "<th class='num'>students</th><th>exercise</th><th>check</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div><p class='muted'>Share of the students whose exercise could run "
            "who passed every case of the check"
            + (f"; {more} more check{'s' * (more != 1)} failed for someone" if more > 0 else "") + ".</p>")


def _misconception_section(found: list[Misconception]) -> str:
    if not found:
        return "<h2>Misconceptions</h2><p>No failure was diagnosed as a known mistake.</p>"
    rows = []
    for item in found[:MISCONCEPTIONS_SHOWN]:
        names = ", ".join(html(s, MAX_NAME) for s in item.students[:NAMES_SHOWN])
        if len(item.students) > NAMES_SHOWN:
            names += f" and {len(item.students) - NAMES_SHOWN} more"
        rows.append(f"<tr><td class='num'>{len(item.students)}</td><td>{html(item.exercise, MAX_NAME)}</td>"
                    f"<td><code>{html(item.id, MAX_NAME)}</code> {html(item.hint)}<br>"
                    f"<span class='muted'>{names}</span></td></tr>")
    return ("<h2>Misconceptions</h2><div class='wide'><table id='misconceptions'><thead><tr>"
            "<th class='num'>students</th><th>exercise</th><th>known mistake (its hint)</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _student_table(done: list[dict], modules: list[str], most: Mapping[str, float], total: float) -> str:
    head = "".join(f"<th class='num'>{html(m, MAX_NAME)}</th>" for m in modules)
    rows = []
    for row in done:
        cells = "".join(_score_cell(row["exercises"].get(m, {}).get("score"), most[m]) for m in modules)
        rows.append(f"<tr><td>{row_link(row)}</td>{_score_cell(row['score'], total)}{cells}</tr>")
    return ("<h2>Students</h2><p class='muted'>Click a column's heading to sort by it; a name opens the student's "
            "feedback.</p><div class='wide'><table id='students' class='sortable'><thead><tr><th>student</th>"
            f"<th class='num'>total</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def _score_cell(score: float | None, most: float) -> str:
    if score is None:
        return "<td class='num' data-value='-1'>-</td>"
    return f"<td class='num' data-value='{score!r}'>{points(score)}</td>" if score < most else \
        f"<td class='num' data-value='{score!r}'><strong>{points(score)}</strong></td>"


def _ungradable_section(failed: list[dict]) -> str:
    rows = "".join(f"<tr><td>{row_link(row)}</td><td>{html(unreadable_reason(row)[0])}</td></tr>"
                   for row in failed)
    return ("<h2 id='ungradable'>Could not be graded</h2><p class='muted'>Left out of every statistic above.</p>"
            "<div class='wide'><table id='ungradable-table'><thead><tr><th>student</th><th>why</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def _similar_section(similar: Sequence[Mapping]) -> str:
    rows = []
    for pair in similar:
        first, second = pair["students"]
        view = f" <a href='{html(pair['view'])}'>side by side</a>" if pair.get("view") else ""
        rows.append(f"<tr><td>{html(pair['exercise'], MAX_NAME)}</td><td>{feedback_link(*first.split('/', 1))}</td>"
                    f"<td>{feedback_link(*second.split('/', 1))}</td>"
                    f"<td class='num'>{round(100 * pair['similarity'])}%{view}</td></tr>")
    return ("<h2>Similar pairs</h2><p class='muted'>Evidence to look at, not a verdict.</p><div class='wide'>"
            "<table id='similar'><thead><tr><th>exercise</th><th>student</th><th>student</th>"
            f"<th class='num'>similarity</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
