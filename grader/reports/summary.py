"""summary.html, the instructor's view of a class: where does it struggle, and who needs help?

Rebuilt by batch from the results on disk: per-exercise score distributions (``plots``), the hardest checks by the
share of students passing them, the misconceptions (the known mistakes the suites diagnosed, by id, counted per
student), a sortable table of every student (name, status, the graded points of each exercise and in all, the
adjustments, the late penalty and the final score, which add up; a link to their feedback), the submissions that
could not be graded (with why, and outside every statistic), with a roster the students missing from the class and
those missing from the roster, and, when given, the students whose code is alike (rolled up by student pair and by
group across exercises, linking similarity.html). Exercises are read from the results, whatever assignment a batch
graded. A check counts only for the students whose exercise could run (a missing file or an import error says
nothing about the check) and was started, and only where it was judged: a failure from a stub not filled in yet or a
rule not judged yet (its values are wrong) says nothing about the check either; a check that did not apply (skipped,
e.g. CUDA-only on CPU) is not in the results at all.
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from grader.course import Course
from grader.points import DEFERRED
from grader.reports import plots
from grader.reports.advice import NOT_IMPLEMENTED, pending_stubs, points, signed
from grader.reports.feedback import GRADER_FAULT_STATUS, MISSING, final_score, graded, unreadable_reason
from grader.reports.files import write_atomic
from grader.reports.page import html_page
from grader.text import MAX_NAME, html

HINT = re.compile(r"\bHint: (?P<hint>.+)")
PICTURES = ("score_histogram.png", "exercise_scores.png")
HARDEST_SHOWN = 15
MISCONCEPTIONS_SHOWN = 25
NAMES_SHOWN = 8  # students named beside a misconception
SIMILAR_SHOWN = 10  # student pairs, and groups, of alike code shown (all of them: similarity.html)
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


def _judged(test: dict) -> bool:
    """Whether a test's outcome says something about its check: not a failure from a stub not filled in yet, nor a
    rule not judged yet because the values are wrong."""
    output = test.get("output") or ""
    return test["status"] == "passed" or not (NOT_IMPLEMENTED.search(output) or DEFERRED in output)


def _checks_by_student(row: dict) -> dict[tuple[str, str], bool]:
    """(exercise, check) -> whether every case of it passed, for the exercises that could run and were started, and
    the cases judged."""
    outcome: dict[tuple[str, str], bool] = {}
    idle = not_started(row)
    for test in row["tests"]:
        module, _, what = test["name"].partition(": ")
        if _ran(row, module) and module not in idle and _judged(test):
            outcome[module, what] = outcome.get((module, what), True) and test["status"] == "passed"
    return outcome


def not_started(row: dict) -> list[str]:
    """The exercises of a graded record with no points, whose every failure is a stub not filled in yet."""
    return [module for module, points in _stubbed(row).items() if not points]


def unfinished(row: dict) -> list[str]:
    """The exercises of a graded record with points for what is filled in, whose every failure is a stub not filled
    in yet (a function done, the module of the exercise still a stub)."""
    return [module for module, points in _stubbed(row).items() if points]


def _stubbed(row: dict) -> dict[str, float]:
    """The exercises whose every failure is a stub not filled in yet, and their points as graded."""
    failed: dict[str, list[str]] = {}
    for test in row["tests"]:
        if test["status"] == "failed":
            failed.setdefault(test["name"].partition(": ")[0], []).append(test.get("output") or "")
    return {module: graded_points(row, module) for module in row["exercises"]
            if _ran(row, module) and pending_stubs(failed.get(module, []))}


def graded_points(row: dict, module: str) -> float:
    """An exercise's points as graded, before the overrides of it or of its checks (``records.adjust``)."""
    return row["exercises"][module]["score"] - sum(a["points"] for a in row.get("adjustments", [])
                                                   if a["kind"] == "override" and a["target"].partition(": ")[0] == module)


def adjusted(row: dict, kind: str) -> float:
    """The points the adjustments of ``kind`` ("override" or "late") gave a record, signed."""
    return sum(a["points"] for a in row.get("adjustments", []) if a["kind"] == kind)


def status(row: dict) -> str:
    """A record's status in a few words: graded (with the exercises not started and those unfinished), missing, could
    not be graded, a grader fault; then the student's extended due date, and not on the roster."""
    if row.get("status") == MISSING:
        text = "missing: nothing handed in"
    elif str(row.get("status", "")).startswith(GRADER_FAULT_STATUS):
        text = "grader fault: graded again by the next run"
    elif not graded(row):
        text = "could not be graded"
    else:
        states = ((not_started(row), "not started"), (unfinished(row), "unfinished"))
        text = "graded" + "".join(f", {len(modules)} exercise{'s' * (len(modules) != 1)} {state}"
                                  for modules, state in states if modules)
    return (text + (f"; due date extended to {row['extended_to']}" if row.get("extended_to") else "")
            + ("; not on the roster" if row.get("on_roster") is False else ""))


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


def write_summary(course: Course, out: Path, rows: list[dict], similar: Mapping | None = None,
                  missing: Sequence[dict] = (), unlisted: Sequence[str] = (), unapplied: Sequence[str] = ()) -> None:
    """summary.html and its pictures (``PICTURES``) in ``out``, for the class ``rows`` (records as
    ``records.adjust`` shows them).

    ``missing``: the records of the roster's students without a submission (status "missing"); ``unlisted``: students
    with a submission who are not on the roster; ``unapplied``: why each line of the instructor's records that the
    class contradicts was left out (each section is left out when empty).

    ``similar``: the students whose code is alike (``similarity.report.summary_rows``: ``pairs`` and ``groups``, each
    with its ``students`` and the ``exercises`` it was flagged in, each with a ``view`` link relative to ``out``); the
    section is left out without any.
    """
    done = [row for row in rows if graded(row)]
    failed = [row for row in rows if not graded(row)]
    modules = exercise_modules(rows)
    titles = {exercise.module: exercise.title for exercise in course.exercises}
    most = {module: max(row["exercises"][module]["max_score"] for row in rows if module in row["exercises"])
            for module in modules}
    total = max((row["max_score"] for row in rows), default=course.total_points)
    body = [f"<h1>{html(course.title)}: class summary</h1>", _lead(done, failed, total, len(missing))]
    if unapplied:
        items = "".join(f"<li>{html(line, 600)}</li>" for line in unapplied)
        body.append("<h2 id='unapplied'>Records not applied</h2><p>These lines of your files do not apply to the class "
                    "as graded, and no grade shows them: fix them and give the file to <code>grader gradebook</code> "
                    f"(<code>--overrides FILE</code> or <code>--extensions FILE</code>).</p><ul>{items}</ul>")
    if done:
        plots.score_histogram([row["score"] for row in done], total, out / PICTURES[0])
        plots.exercise_histograms([(m, [graded_points(row, m) for row in done if m in row["exercises"]], most[m])
                                   for m in modules], out / PICTURES[1])
        body += [f"<h2>Scores</h2><img src='{PICTURES[0]}' alt='histogram of the final grades'>",
                 _exercise_table(done, modules, titles, most),
                 f"<img src='{PICTURES[1]}' alt='histogram of the graded points of each exercise'>",
                 _hardest_section(hardest_checks(done)), _misconception_section(misconceptions(done))]
    if rows or missing:
        body.append(_student_table([*rows, *missing], modules, most))
    if failed:
        body.append(_ungradable_section(failed))
    if missing or unlisted:
        body.append(_roster_section([row.get("key") or row["student"] for row in missing], unlisted))
    if similar and (similar.get("pairs") or similar.get("groups")):
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


def _lead(done: list[dict], failed: list[dict], total: float, missing: int) -> str:
    count = len(done) + len(failed)
    text = f"{count} submission{'s' * (count != 1)}: {len(done)} graded"
    if failed:
        text += (f", {len(failed)} could not be graded (<a href='#ungradable'>listed below</a>, left out of every "
                 "statistic)")
    if missing:
        text += f"; {missing} on the roster handed in nothing (<a href='#roster'>listed below</a>)"
    if done:
        marks = [row["score"] for row in done]
        text += (f". Graded work, final points after adjustments: mean {points(statistics.fmean(marks))}, median "
                 f"{points(statistics.median(marks))} "
                 f"of {points(total)}; {sum(s >= total for s in marks)} with full marks")
    return f"<p>{text}.</p>"


def _exercise_table(done: list[dict], modules: list[str], titles: Mapping[str, str], most: Mapping[str, float]) -> str:
    rows = []
    for module in modules:
        marks = [graded_points(row, module) for row in done if module in row["exercises"]]
        broken = sum(not _ran(row, module) for row in done if module in row["exercises"])
        idle = sum(module in not_started(row) for row in done)
        rows.append(f"<tr><td>{html(module, MAX_NAME)}</td><td>{html(titles.get(module, ''), MAX_NAME)}</td>"
                    f"<td class='num'>{points(statistics.fmean(marks)) if marks else '-'}</td>"
                    f"<td class='num'>{points(statistics.median(marks)) if marks else '-'}</td>"
                    f"<td class='num'>{points(most[module])}</td>"
                    f"<td class='num'>{sum(s >= most[module] for s in marks)}</td>"
                    f"<td class='num'>{sum(s == 0 for s in marks)}</td><td class='num'>{idle}</td>"
                    f"<td class='num'>{broken}</td></tr>")
    return ("<h2>Exercises</h2><div class='wide'><table id='exercises'><thead><tr><th>exercise</th><th>title</th>"
            "<th class='num'>mean</th><th class='num'>median</th><th class='num'>points</th>"
            "<th class='num'>full marks</th><th class='num'>zero</th><th class='num'>not started</th>"
            "<th class='num'>could not run</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>"
            "<p class='muted'>Students per exercise score, as graded (before overrides); &ldquo;not started&rdquo;: "
            "no points, and every failure is a stub not filled in yet; &ldquo;could not run&rdquo;: a missing file or "
            "an import error.</p>")


def _hardest_section(checks: list[HardCheck]) -> str:
    if not checks:
        return "<h2>Hardest checks</h2><p>Every graded student passed every check.</p>"
    rows = "".join(f"<tr><td class='num'>{round(100 * c.rate)}%</td><td class='num'>{c.passed} of {c.applied}</td>"
                   f"<td>{html(c.exercise, MAX_NAME)}</td><td>{html(c.what)}</td></tr>" for c in checks[:HARDEST_SHOWN])
    more = len(checks) - HARDEST_SHOWN
    return ("<h2>Hardest checks</h2><div class='wide'><table id='hardest'><thead><tr><th class='num'>passing</th>"
            "<th class='num'>students</th><th>exercise</th><th>check</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div><p class='muted'>Share of the students whose exercise could run "
            "who passed every case of the check, counting only the cases judged (not those failed by a stub not "
            "filled in yet, nor the rules not judged yet because the values are wrong)"
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


def _student_table(rows: list[dict], modules: list[str], most: Mapping[str, float]) -> str:
    """Every record, each adding up: its exercises as graded sum to ``graded``; graded, the overrides (``adjusted``)
    and the late penalty make ``final``."""
    named = any("name" in row for row in rows)
    head = "".join(f"<th class='num'>{html(m, MAX_NAME)}</th>" for m in modules)
    lines = []
    for row in sorted(rows, key=lambda row: (row["student"], row.get("assignment") or "")):
        ran = graded(row)
        cells = "".join(_score_cell(graded_points(row, m) if ran and m in row["exercises"] else None, most[m])
                        for m in modules)
        sums = (_score_cell(row.get("graded_score", row["score"]) if ran else None, row["max_score"])
                + _signed_cell(adjusted(row, "override")) + _signed_cell(adjusted(row, "late")))
        name = f"<td>{html(row.get('name', ''), MAX_NAME)}</td>" if named else ""
        link = row_link(row) if row.get("status") != MISSING else html(row.get("key") or row["student"], MAX_NAME)
        lines.append(f"<tr><td>{link}</td>{name}{_score_cell(final_score(row), row['max_score'])}{sums}"
                     f"<td class='status'>{html(status(row))}</td>{cells}</tr>")
    return ("<h2>Students</h2><p class='muted'>The <em>final</em> score (the one the gradebook and the LMS files hold) "
            "is the <em>graded</em> one, the sum of the exercises as graded, with the overrides (<em>adjusted</em>) "
            "and the late penalty. Click a column's heading to sort by it; a student opens their feedback.</p>"
            "<div class='wide'><table id='students' class='sortable'><thead><tr><th>student</th>"
            + ("<th>name</th>" if named else "") + "<th class='num'>final</th><th class='num'>graded</th>"
            f"<th class='num'>adjusted</th><th class='num'>late</th><th>status</th>{head}</tr></thead>"
            f"<tbody>{''.join(lines)}</tbody></table></div>")


def _score_cell(score: float | None, most: float) -> str:
    if score is None:
        return "<td class='num' data-value='-1'>-</td>"
    return f"<td class='num' data-value='{score!r}'>{points(score)}</td>" if score < most else \
        f"<td class='num' data-value='{score!r}'><strong>{points(score)}</strong></td>"


def _signed_cell(change: float) -> str:
    """Points added or taken (blank when none)."""
    shown = signed(change) if round(change, 2) else ""
    return f"<td class='num' data-value='{change!r}'>{shown}</td>"


def _ungradable_section(failed: list[dict]) -> str:
    rows = "".join(f"<tr><td>{row_link(row)}</td><td>{html(unreadable_reason(row)[0])}</td></tr>"
                   for row in failed)
    return ("<h2 id='ungradable'>Could not be graded</h2><p class='muted'>Left out of every statistic above.</p>"
            "<div class='wide'><table id='ungradable-table'><thead><tr><th>student</th><th>why</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def _roster_section(missing: Sequence[str], unlisted: Sequence[str]) -> str:
    parts = ["<h2 id='roster'>Roster</h2>"]
    for what, ids, table in (("On the roster, no submission (0 points in the gradebook)", missing, "missing"),
                             ("Submitted, not on the roster (check the id)", unlisted, "unlisted")):
        if ids:
            rows = "".join(f"<tr><td>{html(key, MAX_NAME)}</td></tr>" for key in ids)
            parts.append(f"<p>{what}: {len(ids)}</p><div class='wide'><table id='{table}'><thead><tr><th>student</th>"
                         f"</tr></thead><tbody>{rows}</tbody></table></div>")
    return "".join(parts)


def _similar_section(similar: Mapping) -> str:
    """The student pairs and the groups of three or more whose code is alike, the most exercises first, at most
    SIMILAR_SHOWN of each, linking their place in similarity.html."""
    def exercises(flagged: Sequence[Mapping]) -> str:
        return ", ".join(f"<a href='{html(e['view'])}'>{html(e['exercise'], MAX_NAME)}</a>"
                         + (f" {round(100 * e['score'])}%" if "score" in e else "") for e in flagged)

    pairs, groups = similar.get("pairs", []), [g for g in similar.get("groups", []) if len(g["students"]) > 2]
    parts = ["<h2 id='similar'>Similar code</h2><p class='muted'>Evidence to look at, not a verdict: the pairs of "
             "students whose code is alike, then the groups of three or more, those flagged in most exercises first; "
             "every pair side by side in <a href='similarity.html'>similarity.html</a>.</p>"]
    for what, found, table in (("student pairs", pairs, "similar-pairs"), ("groups", groups, "similar-groups")):
        if not found:
            continue
        rows = "".join(f"<tr><td>{', '.join(html(s, MAX_NAME) for s in item['students'])}</td>"
                       f"<td class='num'>{len(item['exercises'])}</td><td>{exercises(item['exercises'])}</td></tr>"
                       for item in found[:SIMILAR_SHOWN])
        more = len(found) - SIMILAR_SHOWN
        parts.append(f"<div class='wide'><table id='{table}'><thead><tr><th>{what}</th><th class='num'>exercises</th>"
                     f"<th>flagged in</th></tr></thead><tbody>{rows}</tbody></table></div>"
                     + (f"<p class='muted'>{more} more {what} in <a href='similarity.html'>similarity.html</a>.</p>"
                        if more > 0 else ""))
    return "".join(parts)
