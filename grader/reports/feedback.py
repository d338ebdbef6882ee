"""Feedback pages: a student's feedback as Markdown and HTML (batch writes ``feedback/<student>.md`` and ``.html``).

The score is the final one; the student's extended due date follows it where they have one, and the overrides and
the late penalty applied to it (``records.adjust``) are listed under it, each with its points and reason. The
exercises with something to fix come first, then those whose every check passed. Per exercise: its points, and each
check with a badge (a word and a colour, not an emoji: "failed", "not judged yet" for a rule that waits for right
values, "holds" for a rule that holds but pays once the values are right, "passed"), its points and, when it failed,
its feedback, the failures first and the rules not judged yet after them; an exercise that could not run at all
shows why, once, and one whose failures have one cause (unfinished stubs, a missing name) says it once; then their
checks are one collapsed line (in HTML, a ``<details>`` that lists them). A submission that could not be graded gets
one paragraph: what was wrong and what to do. Everything is read from the student's
results.json; points are shown to two decimals (``advice.points``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wording import same_reason

from grader.points import DEFERRED
from grader.reports.advice import one_cause, points, signed
from grader.reports.files import write_atomic
from grader.reports.page import html_page
from grader.text import MAX_NAME, clean, html, markdown

GRADER_FAULT_STATUS = "error: grader error"
MISSING = "missing"  # the status of a roster student's record without a submission (``records.adjust``)
RESUBMIT = ("Check that you handed in the right thing (your exercise files, a .zip of them or your notebook), that "
            "it opens on your computer, and submit again; ask your instructor if this message stays.")
REGRADE = "This is a fault of the grader, not of your work: your submission will be graded again."
GRADER_FAULT = "the grader failed while grading it"  # what a student's page says of a grader fault


@dataclass(frozen=True)
class Check:
    passed: bool
    what: str  # the check's student-facing name (its docstring line)
    points: str  # "0 / 2.5"
    feedback: str
    earned: bool = True  # a passed check earned all its points (a rule earns them as far as the values are right)
    overridden: bool = False  # its points are the instructor's (an override), whatever the grader found

    @property
    def deferred(self) -> bool:
        """A rule not judged yet: the exercise's values are wrong (the values checks say what)."""
        return not self.passed and DEFERRED in self.feedback

    @property
    def word(self) -> str:
        """Its badge: adjusted (by an override), failed, not judged yet, holds (pays once the values are right) or
        passed."""
        if self.overridden:
            return "adjusted"
        if self.passed:
            return "passed" if self.earned else "holds"
        return "not judged yet" if self.deferred else "failed"

    @property
    def order(self) -> int:
        """Where it is listed: what to fix first, then the rules that wait for it, then what holds."""
        return ("failed", "adjusted", "not judged yet", "holds", "passed").index(self.word)


@dataclass(frozen=True)
class Section:
    module: str
    title: str
    points: str  # "7.5 / 10"
    problem: str  # why the whole exercise could not run, if so
    checks: list[Check]
    cause: str = ""  # the one cause of every failed check, said once ("not implemented yet: fill in ...", ...)


def write_feedback(data: dict, out: Path, titles: Mapping[str, str] | None = None, key: str | None = None) -> str | None:
    """Per-student feedback as Markdown and HTML (``titles``: exercise module -> title, for the headings).

    ``key`` names the pages (feedback/<key>.md): the batch entry's key, by default the student.
    Returns None, or why the pages could not be written (never raises: one student's pages do not stop a batch).
    """
    try:
        sections = feedback_sections(data, titles or {})
        key = key or data["student"]
        write_atomic(_feedback_markdown(data, sections), out / "feedback" / f"{key}.md")
        write_atomic(_feedback_html(data, sections), out / "feedback" / f"{key}.html")
    except Exception as error:  # noqa: BLE001 - a full disk, a results file of an older grader, ...
        return f"feedback not written: {type(error).__name__}: {clean(str(error))}"
    return None


@dataclass(frozen=True)
class Adjustment:
    points: str  # "-10" or "+2.5"
    text: str  # what it changed and why ("<module>: regraded by hand")


def exercise_adjustments(data: dict, module: str) -> list[Adjustment]:
    """The overrides of one exercise or of its checks (their points are in the exercise's), each with its reason."""
    return [Adjustment(signed(a["points"]),
                       (a["target"].partition(": ")[2] + ": " if ": " in a["target"] else "") + a["reason"])
            for a in data.get("adjustments") or [] if a["target"].partition(": ")[0] == module]


def adjustments(data: dict) -> list[Adjustment]:
    """The record's adjustments (``records.adjust``: overrides, late penalty), each with its points to two
    decimals, after a first line "graded N" when there are any."""
    found = data.get("adjustments") or []
    if not found:
        return []
    return [Adjustment(points(data.get("graded_score", data["score"])), "graded, before the adjustments below"),
            *(Adjustment(signed(a["points"]),
                         (f"{a['target']}: " if a["target"] else "") + a["reason"]) for a in found)]


def extended(data: dict) -> str:
    """The student's own due date (``records.adjust``: their extension), in words."""
    return f"Your due date was extended to {clean(data['extended_to'], MAX_NAME)}"


def notes(data: dict) -> list[str]:
    """What grading says about the submission as a whole (which notebook cells were taken, IPython lines left out,
    ...), as results.json keeps them, already capped in number (a record of an older grader has none)."""
    kept = data.get("notes")
    return [str(note) for note in kept] if isinstance(kept, list) else []


def graded(data: dict) -> bool:
    """Whether a results record is a graded submission (not one that could not be graded)."""
    return data.get("status", "graded") == "graded"


def final_score(data: dict) -> float | None:
    """The score the gradebook, the LMS files and the summary give a record: its final one; None (a blank cell, which
    an LMS leaves as it is) for a grader fault (graded again by the next run) and for a submission that could not be
    graded (left out of every statistic) unless an override gave it points (the instructor graded it by hand)."""
    status = str(data.get("status", "graded"))
    overridden = any(a["kind"] == "override" for a in data.get("adjustments", []))
    if graded(data) or status == MISSING or (overridden and not status.startswith(GRADER_FAULT_STATUS)):
        return data["score"]
    return None


def unreadable_reason(data: dict, student: bool = False) -> tuple[str, str]:
    """Why a submission could not be graded, and what the student should do about it; for the ``student``, a grader
    fault is only that: its details (the grader's files, its exceptions) are the instructor's."""
    status = str(data.get("status", ""))
    if status.startswith(GRADER_FAULT_STATUS):
        return (GRADER_FAULT if student else str(data.get("output") or status)), REGRADE
    return str(data.get("output") or status).removeprefix("cannot grade: "), RESUBMIT


def feedback_sections(data: dict, titles: Mapping[str, str]) -> list[Section]:
    """Per exercise of the results: its points, its problem, and its checks; the exercises with something to fix
    first, then those whose every check passed (each group in the results' order)."""
    by_exercise: dict[str, list[dict]] = {}
    for test in data["tests"]:
        by_exercise.setdefault(test["name"].split(":", 1)[0], []).append(test)
    sections = []
    for module, result in data["exercises"].items():
        checks = sorted((Check(test["status"] == "passed", test["name"].split(": ", 1)[-1],
                               f"{points(test.get('score', 0))} / {points(test.get('max_score', 0))}", test["output"],
                               test.get("score", 0) >= test.get("max_score", 0), bool(test.get("overridden")))
                         for test in by_exercise.get(module, [])), key=lambda check: check.order)
        sections.append(Section(module, titles.get(module, ""), f"{points(result['score'])} / "
                                f"{points(result['max_score'])}", result.get("problem", ""), checks,
                                one_cause([check.feedback for check in checks if not check.passed],
                                          [str(stub) for stub in result.get("stubs", [])])))
    return sorted(sections, key=lambda section: not (section.problem or any(not c.passed for c in section.checks)))


def _feedback_markdown(data: dict, sections: list[Section]) -> str:
    lines = [f"# Feedback for {markdown(data['student'], MAX_NAME)}", ""]
    if not graded(data):
        reason, action = unreadable_reason(data, student=True)
        if final_score(data) is None:
            return "\n".join([*lines, f"Your submission could not be graded: {markdown(reason)}", "", action, ""])
        lines += [f"**Score: {points(data['score'])} / {points(data['max_score'])}**", ""]  # given by hand
        lines += [f"- {a.points}: {markdown(a.text)}" for a in adjustments(data)[1:]]  # nothing was graded
        return "\n".join([*lines, "", f"The grader could not grade your submission: {markdown(reason)}", ""])
    lines += [f"**Score: {points(data['score'])} / {points(data['max_score'])}**", ""]
    if data.get("extended_to"):
        lines += [f"{markdown(extended(data))}.", ""]
    noted = [f"Note: {markdown(note)}" for note in notes(data)]
    lines += noted + [""] * bool(noted)
    shown = adjustments(data)
    if shown:
        lines += [f"- {a.points}: {markdown(a.text)}" for a in shown] + [""]
    for section in sections:
        title = f" ({markdown(section.title, MAX_NAME)})" if section.title else ""
        lines += [f"## {markdown(section.module, MAX_NAME)}{title}: {section.points} points", ""]
        adjusted = exercise_adjustments(data, section.module)
        if adjusted:
            lines += [f"- adjusted {a.points}: {markdown(a.text)}" for a in adjusted] + [""]
        if section.problem or section.cause:
            said = f"This exercise could not run: {markdown(section.problem)}" if section.problem else \
                f"{_passed(section)}{markdown(section.cause)}"
            lines += [said, "", f"{_same_reason(section)}.", ""]
            continue
        for check in section.checks:
            if check.overridden:
                lines.append(f"- {check.word} ({check.points}): {markdown(check.what)} (your instructor's points)")
            elif check.deferred:
                lines.append(f"- {check.word} ({check.points}): {markdown(check.what)}")
            elif check.passed:
                pays = "" if check.earned else " (pays once the values are right)"
                lines.append(f"- {check.word} ({check.points}): {markdown(check.what)}{pays}")
            else:
                lines.append(f"- **failed** ({check.points}): {markdown(check.what)}  \n  {markdown(check.feedback)}")
        lines.append("")
    return "\n".join(lines)


def _feedback_html(data: dict, sections: list[Section]) -> str:
    title = f"Feedback for {clean(data['student'], MAX_NAME)}"
    parts = [f"<h1>Feedback for {html(data['student'], MAX_NAME)}</h1>"]
    if not graded(data):
        reason, action = unreadable_reason(data, student=True)
        if final_score(data) is None:
            parts.append(f"<p class='problem'>Your submission could not be graded: {html(reason)}</p><p>{html(action)}</p>")
            return html_page(title, "\n".join(parts))
        parts.append(f"<p>Score: <strong>{points(data['score'])} / {points(data['max_score'])}</strong></p>")  # by hand
        parts.append(_adjustments_table(adjustments(data)[1:]))  # nothing was graded
        parts.append(f"<p class='problem'>The grader could not grade your submission: {html(reason)}</p>")
        return html_page(title, "\n".join(parts))
    parts.append(f"<p>Score: <strong>{points(data['score'])} / {points(data['max_score'])}</strong></p>")
    if data.get("extended_to"):
        parts.append(f"<p id='extension'>{html(extended(data))}.</p>")
    parts += [f"<p class='note'>Note: {html(note)}</p>" for note in notes(data)]
    shown = adjustments(data)
    if shown:
        parts.append(_adjustments_table(shown))
    for section in sections:
        heading = html(section.module, MAX_NAME) + (f": {html(section.title, MAX_NAME)}" if section.title else "")
        parts.append(f"<h2>{heading} <span class='muted'>{section.points} points</span></h2>")
        adjusted = exercise_adjustments(data, section.module)
        if adjusted:
            parts += [f"<p class='adjusted'>adjusted {a.points}: {html(a.text)}</p>" for a in adjusted]
        if section.problem or section.cause:
            parts.append(f"<p class='problem'>This exercise could not run: {html(section.problem)}</p>" if section.problem
                         else f"<p>{_passed(section)}{html(section.cause)}</p>")
            names = "".join(f"<li>{html(check.what)}</li>" for check in section.checks if not check.passed)
            parts.append(f"<details><summary>{_same_reason(section)}</summary><ul>{names}</ul></details>")
            continue
        rows = [f"<tr class='{_css(check)}'><td><span class='badge {_css(check)}'>{check.word}</span></td>"
                f"<td>{html(check.what)}" + (f"<p class='feedback'>{html(check.feedback)}</p>"
                                             if check.word == "failed" else "")
                + f"</td><td class='num'>{check.points}</td></tr>" for check in section.checks]
        parts.append(f"<div class='wide'><table class='checks' id='checks-{html(section.module, MAX_NAME)}'><thead><tr>"
                     "<th>result</th><th>check</th>"
                     f"<th class='num'>points</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
    return html_page(title, "\n".join(parts))


def _adjustments_table(shown: list[Adjustment]) -> str:
    rows = "".join(f"<tr><td class='num'>{a.points}</td><td>{html(a.text)}</td></tr>" for a in shown)
    return ("<div class='wide'><table id='adjustments'><thead><tr><th class='num'>points</th>"
            f"<th>adjustment</th></tr></thead><tbody>{rows}</tbody></table></div>")


def _passed(section: Section) -> str:
    """How many checks of an unfinished exercise passed already, if any ("3 checks passed; "): those that earned
    their share, as ``ExerciseScore.checks_passed`` counts them (a rule that holds, paying nothing yet, is not one)."""
    passed = sum(check.passed and check.earned for check in section.checks)
    return f"{passed} check{'s' * (passed != 1)} passed; " if passed else ""


def _same_reason(section: Section) -> str:
    """The one line that stands for the failed checks of a section with one cause (``wording.same_reason``)."""
    return same_reason(sum(not check.passed for check in section.checks), ran=not section.problem)


def _css(check: Check) -> str:
    """The badge's class: its word, one token."""
    return check.word.replace(" ", "-")
