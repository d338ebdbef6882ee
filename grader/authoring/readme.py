"""What a handout's README says of its course: the exercises and their points, its title, when the work is due, the
built-ins it bans, the first stub (``grader.authoring.release`` fills the README's template with them)."""
from __future__ import annotations

import re

import stub_message

from grader.course import WHOLE_COURSE, Course

STUB_TARGET = re.compile(r'raise NotImplementedError\("' + stub_message.PATTERN.pattern)


def exercises_table(course: Course) -> str:
    """The exercises in order, their files and points, as a Markdown table."""
    rows = ["| # | file | what you build | points |", "|---:|---|---|---:|"]
    rows += [f"| {n} | `exercises/{e.module}.py` | {e.title} | {e.points} |" for n, e in enumerate(course.exercises, 1)]
    return "\n".join(rows)


def points_list(course: Course) -> str:
    lines = [f"- {e.title} (`{e.module}`): {e.points} points" for e in course.exercises]
    return "\n".join([*lines, f"- **total: {course.total_points} points**"])


def handout_title(course: Course) -> str:
    """The course's title, and the assignment's where the handout is one assignment's."""
    name = course.assignment_name
    if name is None:
        return course.title
    titles = {a.name: a.title for a in course.whole.assignments} | {
        course.notebook_name(e.module): e.title for e in course.whole.exercises}
    return f"{course.title}: {titles.get(name, name)}"


def due_paragraph(course: Course) -> str:
    """When the work is due and what a late hand-in costs (course.yaml's ``late``), or "" where no due date applies."""
    late = course.whole.late
    due = late.due.get(course.assignment_name or WHOLE_COURSE) if late else None  # as a batch of the handout applies it
    if due is None:
        return ""
    grace = f" (nothing within {late.grace_minutes:g} minutes of it)" if late.grace_minutes else ""
    cap = f", at most {late.cap_percent:g}%" if late.cap_percent < 100 else ""
    return (f"**Due {due.isoformat(sep=' ', timespec='minutes')}.** Work handed in later loses {late.percent:g}% of "
            f"the points possible per started {late.per} past it{cap}{grace}.\n\n")


def banned_list(course: Course) -> str:
    """course.yaml's banned built-ins of the course's exercises, one Markdown line per function or class."""
    return "\n".join(f"  - in `{target}`: {', '.join(f'`{name}`' for name in names)}"
                     for target, names in course.banned.items()) or "  - (none in this course)"


def first_stub(exercises: dict[str, str]) -> str:
    """The first stub of the first exercise (``<module>.<function>``): the README's example of a stub's failure."""
    return next(match["target"] for text in exercises.values() for match in STUB_TARGET.finditer(text))
