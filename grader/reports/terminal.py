"""Terminal: the summary printed after a grading (a table per exercise, then each failure's message); a batch's
progress bar and its class's table, with its notes on stderr."""
from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.points import Grade
from grader.reports.advice import collapsed, failures, points, rules_line, signed
from grader.reports.feedback import final_score
from grader.text import MAX_NAME, clean, terminal


def print_summary(grade: Grade, console: Console | None = None) -> None:
    """A table per exercise, then each failure's message, exercise by exercise, and one line for the rules not judged
    yet (an exercise whose failures have one cause, ``collapsed``: it could not run at all, its stubs still raise
    NotImplementedError, every failure says the same: once, in the table).

    Every text is a rich ``Text`` (``text.terminal``): nothing of it is read as markup; messages are printed without
    inserted line breaks (soft wrap), so no part of one starts a line of the output (a workflow command in a log)."""
    console = console or Console()
    table = Table(title="Grade", show_footer=True)
    table.add_column("exercise", footer="total")
    table.add_column("points", justify="right", footer=f"{points(grade.score)}/{points(grade.max_score)}")
    table.add_column("tests passed", justify="right")
    table.add_column("note")
    for exercise in grade.exercises:
        passed, applicable = exercise.checks_passed
        style = "green" if exercise.score == exercise.max_score else "red" if exercise.score == 0 else "yellow"
        table.add_row(exercise.module, Text(f"{points(exercise.score)}/{points(exercise.max_score)}", style=style),
                      f"{passed}/{applicable}",
                      terminal(collapsed(exercise)))
    for note in grade.notes:
        console.print(Text.assemble(("note:", "bold yellow"), " ", terminal(note)), soft_wrap=True)
    console.print(table)
    for exercise in grade.exercises:
        if collapsed(exercise):
            continue
        for test in failures(exercise):
            if not test.deferred:
                console.print(Text.assemble(("✗", "red"), " ", (test.exercise, "bold"), ": ", terminal(test.doc),
                                            "\n    ", terminal(test.feedback)), soft_wrap=True)
        waiting = rules_line(exercise.tests)
        if waiting:
            console.print(Text.assemble(("…", "yellow"), " ", (exercise.module, "bold"), ": ", waiting),
                          soft_wrap=True)


class BatchProgress:
    """A live progress bar with ETA and running counts, then a final table."""

    def __init__(self, console):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            TextColumn("{task.description}"), console=console)

    def _describe(self, counts):
        return ", ".join(f"{n} {what}" for what, n in counts.items())

    def start(self, total, counts):
        self.bar.start()
        self.task = self.bar.add_task(self._describe(counts), total=total)

    def advance(self, counts):
        self.bar.update(self.task, advance=1, description=self._describe(counts))

    def again(self, count, counts):
        """``count`` submissions are graded again (their grading was a grader fault)."""
        self.bar.update(self.task, advance=-count, description=self._describe(counts))

    def stop(self):
        self.bar.stop()


def print_class(rows: list[dict], title: str, out: str | Path) -> None:
    """The class's table in the terminal, as summary.html's: final score ("-" where there is none: a submission that
    could not be graded), overrides and late penalty apart, and status per record; then, on stderr, the records
    whose lateness was judged without the instructor's times and the students not on the roster."""
    table = Table(title=terminal(title))
    for column in ("student", "assignment", "score", "adjusted", "late", "status"):
        table.add_column(column)
    for row in rows:
        final = final_score(row)
        kinds = {kind: [a["points"] for a in row.get("adjustments", []) if a["kind"] == kind]
                 for kind in ("override", "late")}
        table.add_row(terminal(row["student"], MAX_NAME), terminal(row.get("assignment") or "", MAX_NAME),
                      "-" if final is None else f"{points(final)}/{points(row['max_score'])}",
                      *(signed(sum(found)) if found else "" for found in kinds.values()),
                      terminal(row.get("status", "graded")) if row.get("on_roster", True) else
                      terminal(f"{row.get('status', 'graded')} (not on the roster)"))
    Console().print(table)
    note_unlisted_times(rows)
    _note_off_roster(rows, out)


NAMED = 10  # the records a note names (then their count)


def named(names: list[str]) -> str:
    """``names`` (records' keys, students) for a note: the first ``NAMED``, then how many more."""
    shown = [clean(name, MAX_NAME) for name in names]
    return ", ".join(shown[:NAMED]) + (f" and {len(shown) - NAMED} more" if len(shown) > NAMED else "")


def record_keys(rows: list[dict]) -> list[str]:
    """Each record's key (student, or student and assignment)."""
    return [row.get("key") or row["student"] for row in rows]


def note_unlisted_times(rows: list[dict]) -> None:
    """One line on stderr, naming the records, when due dates were judged without the instructor's list of submission
    times."""
    unlisted = [row for row in rows if row.get("time_unlisted")]
    if unlisted:
        print(f"grader: {len(unlisted)} of {len(rows)} records have a due date but no time in --submitted "
              f"({named(record_keys(unlisted))}): "
              "their lateness is judged by what the submission says (nbgrader's timestamp.txt, a zip's newest entry), "
              "which its author can set, or not judged; give --submitted with the times your LMS recorded",
              file=sys.stderr)


def _note_off_roster(rows: list[dict], out: str | Path) -> None:
    """One line on stderr naming the students with a submission who are not on the roster (left out of the LMS files)."""
    off = sorted({row["student"] for row in rows if row.get("on_roster") is False})
    if off:
        print(f"grader: {len(off)} student{'s' * (len(off) != 1)} with a submission not on the roster, left out of "
              f"canvas.csv and moodle.csv: {named(off)}; add them to the roster (or rename the submission to their id) "
              f"and run `grader gradebook {out}`", file=sys.stderr)
