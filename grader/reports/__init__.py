"""Reports: one in-memory Grade, written in every format a grading host reads.

* ``results``: Gradescope's results.json (plus a few fields of ours), with each test's
  visibility from course.yaml's rules (``visibility_of``);
* ``prairielearn``: PrairieLearn's external-grader results.json (score 0..1);
* ``junit_xml``: JUnit XML, one testsuite per exercise, for any CI;
* ``classroom`` / ``classroom_output``: the GitHub Classroom autograding result
  (the ``result`` output of a runner step, base64 JSON read by the grading reporter);
* ``markdown_summary`` / ``score_line``: a GitHub job summary and the plain score line;
* ``print_summary``: the terminal summary.

All take the same ``points.Grade``; none shows suite code, reference code or hidden values
(the only text per test is the feedback written for the student).
"""
from __future__ import annotations

import base64
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader import __version__
from grader.course import VISIBILITIES
from grader.points import ExerciseScore, Grade, TestScore
from grader.text import MAX_NAME, clean, markdown, terminal

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
        "visibility": {"enum": list(VISIBILITIES)},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "score", "max_score", "status", "output", "visibility"],
            "properties": {
                "name": {"type": "string"}, "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]}, "output": {"type": "string"},
                "visibility": {"enum": list(VISIBILITIES)},
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


def _node_glob(pattern: str) -> re.Pattern:
    """A glob over node ids: ``*`` and ``?`` are wildcards, everything else (brackets too) is literal."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def visibility_of(test: TestScore, rules: Mapping[str, str] | None = None) -> str:
    """Gradescope's visibility of one test under course.yaml's ``visibility`` rules.

    A rule's key is a glob over the test's node id in the suites (``test_<module>.py::test_large_*``,
    ``*[float16]``: only ``*`` and ``?`` are wildcards; the first that matches wins), else the test's
    exercise (its module), else ``default``;
    without rules every test is ``visible``.
    """
    rules = rules or {}
    for key, value in rules.items():
        if key != "default" and key != test.exercise and _node_glob(key).fullmatch(test.name):
            return value
    return rules.get(test.exercise, rules.get("default", "visible"))


def _overview(grade: Grade) -> str:
    """The notes, then one line per exercise: ``<module>: 7.5/10`` (and why it scored nothing, if so)."""
    lines = [f"{e.module}: {e.score:g}/{e.max_score:g}" + (f" ({clean(e.problem)})" if e.problem else "")
             for e in grade.exercises]
    return "\n".join([*map(clean, grade.notes), *lines])


def results(grade: Grade, *, execution_time: float, device: str, sha256: str,
            visibility: Mapping[str, str] | None = None) -> dict:
    """Gradescope's results.json for a grade, with ``exercises``, ``grader_version``, ``device`` and ``submission_sha256``.

    ``visibility`` holds course.yaml's visibility rules (see ``visibility_of``); without them every test is visible.
    """
    tests = []
    for exercise in grade.exercises:
        for test in exercise.tests:
            if test.status == "skipped":
                continue
            tests.append({"name": f"{exercise.module}: {clean(test.doc)}", "score": test.score,
                          "max_score": test.max_score, "status": test.status, "output": clean(test.feedback),
                          "visibility": visibility_of(test, visibility),
                          "tags": [exercise.module]})
    return {
        "score": grade.score, "max_score": grade.max_score, "execution_time": round(execution_time, 3),
        "output": _overview(grade), "visibility": "visible", "tests": tests,
        "exercises": {e.module: {"score": e.score, "max_score": e.max_score} for e in grade.exercises},
        "grader_version": __version__, "device": device, "submission_sha256": sha256,
    }


# Gradescope's own fields (gradescope-autograders.readthedocs.io, "Autograder Specifications"): results()
# writes these plus the fields of ours listed in OUR_RESULTS_FIELDS, which Gradescope stores and ignores.
GRADESCOPE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "test_output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "test_name_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": {"enum": list(VISIBILITIES)},
        "stdout_visibility": {"enum": list(VISIBILITIES)},
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "score": {"type": "number"}, "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]},
                "name": {"type": "string"}, "name_format": {"type": "string"}, "number": {"type": "string"},
                "output": {"type": "string"}, "output_format": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "visibility": {"enum": list(VISIBILITIES)}, "extra_data": {"type": "object"},
            },
            "additionalProperties": False}},
        "leaderboard": {"type": "array"},
    },
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
}
OUR_RESULTS_FIELDS = ("max_score", "exercises", "grader_version", "device", "submission_sha256")

# PrairieLearn's external grader results (prairielearn.readthedocs.io, "External Grading": "Grading results").
# ``points`` and ``max_points`` at the top level are extra data, which PrairieLearn allows.
PRAIRIELEARN_SCHEMA = {
    "type": "object",
    "required": ["gradable", "score", "points", "max_points", "message", "output", "tests"],
    "properties": {
        "gradable": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "points": {"type": "number", "minimum": 0},
        "max_points": {"type": "number", "minimum": 0},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "format_errors": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "images": {"type": "array"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "description", "points", "max_points", "message", "output"],
            "properties": {
                "name": {"type": "string"}, "description": {"type": "string"},
                "points": {"type": "number", "minimum": 0}, "max_points": {"type": "number", "minimum": 0},
                "message": {"type": "string"}, "output": {"type": "string"}, "images": {"type": "array"},
            },
            "additionalProperties": False}},
    },
}

# GitHub Classroom: the JSON a runner step encodes in base64 as its output ``result``, read by
# classroom-resources/autograding-grading-reporter (the command, io and python graders write the same shape).
# The reporter sums the tests' ``score`` for the points it sends to Classroom, and fails its step when
# ``status`` is "fail" or "error".
CLASSROOM_SCHEMA = {
    "type": "object",
    "required": ["version", "status", "max_score", "tests"],
    "properties": {
        "version": {"const": 1},
        "status": {"enum": ["pass", "fail", "error"]},
        "max_score": {"type": "number", "minimum": 0},
        "message": {"type": "string"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "status", "score", "message", "test_code", "filename", "line_no", "duration"],
            "properties": {
                "name": {"type": "string"}, "status": {"enum": ["pass", "fail", "error"]},
                "score": {"type": "number", "minimum": 0}, "message": {"type": "string"},
                "test_code": {"type": "string"}, "filename": {"type": "string"},
                "line_no": {"type": "integer", "minimum": 0}, "duration": {"type": "number", "minimum": 0},
            },
            "additionalProperties": False}},
    },
    "additionalProperties": False,
}

# Where feedback names a line of the student's files: "<module>.py, line 12" (tracebacks, import and syntax errors).
FEEDBACK_LINE = re.compile(r"\b(?P<file>\w+\.py), line (?P<line>\d+)")
# An unfinished stub, anywhere in a feedback: "not implemented yet: <module>.<function>: fill in this stub (see ...)".
NOT_IMPLEMENTED = re.compile(r"not implemented yet: (?P<target>\w+\.[\w.]+): fill in this stub")


def _failures(exercise: ExerciseScore) -> list[TestScore]:
    return [t for t in exercise.tests if t.status == "failed"]


def complete(exercise: ExerciseScore) -> bool:
    """Every check that applies passed (judged by the checks, not by the rounded points)."""
    return not exercise.problem and not _failures(exercise)


def untouched(exercise: ExerciseScore) -> bool:
    """True when every failure of the exercise comes from a stub not filled in yet."""
    failures = _failures(exercise)
    return bool(failures) and not exercise.problem and all(NOT_IMPLEMENTED.search(t.feedback) for t in failures)


def stubs_left(exercise: ExerciseScore) -> list[str]:
    """The stubs its failures name as not implemented yet (``<module>.<function>``, ...), in order of appearance."""
    found = (match["target"] for t in _failures(exercise) for match in NOT_IMPLEMENTED.finditer(t.feedback))
    return list(dict.fromkeys(found))


def _failure(test: TestScore) -> str:
    """``doc: feedback`` of a failed test (its doc without the closing full stop)."""
    return f"{test.doc.rstrip('.')}: {test.feedback}" if test.feedback else test.doc


def what_to_fix(exercise: ExerciseScore, limit: int = 3) -> str:
    """One paragraph for the student: the exercise's problem, or its first failures with their feedback."""
    if exercise.problem:
        return exercise.problem
    failures = _failures(exercise)
    if untouched(exercise):
        return f"not implemented yet: fill in {', '.join(stubs_left(exercise))}"
    lines = [_failure(t) for t in failures[:limit]]
    if len(failures) > limit:
        lines.append(f"... and {len(failures) - limit} more failed check(s)")
    return "\n".join(lines)


def feedback_line(exercise: ExerciseScore) -> tuple[str, int] | None:
    """The (file name, line) the exercise's feedback points at, e.g. ("<module>.py", 12), if it names one."""
    for text in [exercise.problem, *(t.feedback for t in _failures(exercise))]:
        matches = list(FEEDBACK_LINE.finditer(text or ""))
        if matches:
            return matches[-1]["file"], int(matches[-1]["line"])
    return None


def prairielearn(grade: Grade, *, gradable: bool = True, message: str = "") -> dict:
    """PrairieLearn's results.json: ``score`` in 0..1, one test per hidden test with its points and feedback.

    ``gradable=False`` (the submission could not be graded at all) puts ``message`` in ``format_errors`` too.
    """
    tests = [{"name": f"{exercise.module}: {clean(test.doc)}", "description": clean(exercise.title),
              "points": test.score, "max_points": test.max_score, "message": clean(test.feedback), "output": ""}
             for exercise in grade.exercises for test in exercise.tests if test.status != "skipped"]
    message = clean(message)
    data = {"gradable": gradable, "score": round(grade.score / grade.max_score, 6) if grade.max_score else 0.0,
            "points": grade.score, "max_points": grade.max_score,
            "message": message or score_line(grade), "output": _overview(grade), "tests": tests}
    if not gradable:
        data["format_errors"] = [message]
    return data


def junit_xml(grade: Grade, *, name: str = "grade", execution_time: float = 0.0) -> str:
    """JUnit XML: a testsuite per exercise (its points as properties), a testcase per hidden test.

    A failed test carries its feedback as ``<failure message=...>``; a test that does not apply here is ``<skipped>``.
    Every text is ``clean``: no character XML refuses; ElementTree escapes the markup.
    """
    def count(tests, status):
        return str(sum(t.status == status for t in tests))

    root = ET.Element("testsuites", name=clean(name, MAX_NAME), tests=str(len(grade.tests)),
                      failures=count(grade.tests, "failed"),
                      errors="0", skipped=count(grade.tests, "skipped"), time=f"{execution_time:.3f}")
    for exercise in grade.exercises:
        suite = ET.SubElement(root, "testsuite", name=exercise.module, tests=str(len(exercise.tests)),
                              failures=count(exercise.tests, "failed"), errors="0",
                              skipped=count(exercise.tests, "skipped"), time="0")
        properties = ET.SubElement(suite, "properties")
        for key, value in (("title", exercise.title), ("score", f"{exercise.score:g}"),
                           ("max_score", f"{exercise.max_score:g}"), ("problem", exercise.problem)):
            if value:
                ET.SubElement(properties, "property", name=key, value=clean(value))
        seen: dict[str, int] = {}
        for test in exercise.tests:
            params = test.name[test.name.index("["):] if test.name.endswith("]") and "[" in test.name else ""
            label = clean(f"{test.doc} {params}".strip())
            seen[label] = seen.get(label, 0) + 1
            if seen[label] > 1:
                label = f"{label} ({seen[label]})"
            case = ET.SubElement(suite, "testcase", classname=exercise.module, name=label, time="0")
            case_properties = ET.SubElement(case, "properties")
            ET.SubElement(case_properties, "property", name="score", value=f"{test.score:g}")
            ET.SubElement(case_properties, "property", name="max_score", value=f"{test.max_score:g}")
            feedback = clean(test.feedback)
            if test.status == "failed":
                failure = ET.SubElement(case, "failure", message=feedback or clean(test.doc), type="failed")
                failure.text = feedback
            elif test.status == "skipped":
                ET.SubElement(case, "skipped", message=feedback or "does not apply here")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def classroom(grade: Grade, *, files: Mapping[str, tuple[str, int]] | None = None, status: str | None = None,
              message: str = "") -> dict:
    """GitHub Classroom's autograding result: one test per exercise, scored with its points.

    ``files`` maps an exercise to the (path, line) its feedback points at (default ``exercises/<module>.py``, 0);
    ``status`` defaults to "pass" when every check passed and "fail" otherwise ("error": it could not be graded).
    """
    files = files or {}
    tests = []
    for number, exercise in enumerate(grade.exercises, 1):
        path, line = files.get(exercise.module, (f"exercises/{exercise.module}.py", 0))
        full = complete(exercise)
        tests.append({"name": f"{number}. {clean(exercise.title)} ({exercise.module})", "status": "pass" if full else "fail",
                      "score": exercise.score, "message": "" if full else clean(what_to_fix(exercise)),
                      "test_code": "", "filename": path, "line_no": line, "duration": 0})
    data = {"version": 1, "status": status or ("pass" if all(map(complete, grade.exercises)) else "fail"),
            "max_score": grade.max_score, "tests": tests}
    if message:
        data["message"] = clean(message)
    return data


def classroom_output(data: dict) -> str:
    """The value of the runner step's ``result`` output: base64 of the compact JSON."""
    return base64.b64encode(json.dumps(data, separators=(",", ":")).encode()).decode("ascii")


def score_line(grade: Grade) -> str:
    """The plain score line: ``Score: 83.5/100``."""
    return f"Score: {grade.score:g}/{grade.max_score:g}"


def markdown_summary(grade: Grade, *, title: str = "Grade", files: Mapping[str, tuple[str, int]] | None = None) -> str:
    """A job summary: a table of exercises and points, then what to fix, exercise by exercise."""
    files = files or {}
    out = [f"## {markdown(title)}: {grade.score:g} / {grade.max_score:g}", ""]
    out += [f"> **Note:** {markdown(note)}" for note in grade.notes]
    if grade.notes:
        out.append("")
    out += ["| # | exercise | file | points | checks passed |", "|---:|---|---|---:|---:|"]
    for number, exercise in enumerate(grade.exercises, 1):
        applicable = [t for t in exercise.tests if t.status != "skipped"]
        passed = sum(t.status == "passed" for t in applicable)
        mark = "✅" if complete(exercise) else "❌" if exercise.score == 0 else "⚠️"
        path = files.get(exercise.module, (f"exercises/{exercise.module}.py", 0))[0]
        out.append(f"| {number} | {markdown(exercise.title)} | `{markdown(path, MAX_NAME, code=True)}` | "
                   f"{mark} {exercise.score:g} / {exercise.max_score:g} "
                   f"| {passed} / {len(applicable)} |")
    out += [f"| | **total** | | **{grade.score:g} / {grade.max_score:g}** | |", ""]
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
        out.append(f"**{number}. {markdown(exercise.title)}** ({where}): {exercise.score:g} / {exercise.max_score:g}")
        if exercise.problem or untouched(exercise):
            out += [f"- {markdown(what_to_fix(exercise))}", ""]
            continue
        out += [f"- {markdown(_failure(test))}" for test in _failures(exercise)]
        out.append("")
    return "\n".join(out)


_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(content: str | bytes, path: str | os.PathLike) -> None:
    """Write a file (text as UTF-8) atomically: readers see the old file or the new one, never half of one; a write
    that fails leaves no temporary file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content  # text that is not valid Unicode fails here
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")  # a short name whatever the target's
    try:
        with open(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o666 & ~_UMASK)  # as open() would have made it
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_json(data: dict, path: str | os.PathLike) -> None:
    """Write JSON atomically (``write_atomic``); non-ASCII characters are escaped, so the file is valid UTF-8 whatever
    the strings hold."""
    write_atomic(json.dumps(data, indent=2) + "\n", path)


def print_summary(grade: Grade, console: Console | None = None) -> None:
    """A table per exercise, then each failure's message (an exercise that could not run at all: once, in the table).

    Every text is a rich ``Text`` (``text.terminal``): nothing of it is read as markup; messages are printed without
    inserted line breaks (soft wrap), so no part of one starts a line of the output (a workflow command in a log)."""
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
        table.add_row(exercise.module, Text(f"{exercise.score:g}/{exercise.max_score:g}", style=style),
                      f"{passed}/{len(applicable)}", terminal(exercise.problem))
    for note in grade.notes:
        console.print(Text.assemble(("note:", "bold yellow"), " ", terminal(note)), soft_wrap=True)
    console.print(table)
    broken = {e.module for e in grade.exercises if e.problem}
    for test in grade.tests:
        if test.status == "failed" and test.exercise not in broken:
            console.print(Text.assemble(("✗", "red"), " ", (test.exercise, "bold"), ": ", terminal(test.doc),
                                        "\n    ", terminal(test.feedback)), soft_wrap=True)
