"""Student text in every report: cleaned once (``grader.text.clean``), escaped for the format it goes into, capped.

Whatever a student's strings hold (lone surrogates, control characters, terminal escapes, newlines, Markdown, HTML,
rich markup, spreadsheet formulas, workflow commands, megabytes), what an instructor or a student reads shows them
as plain text: no forged line, heading, link or style, every file valid UTF-8 and parseable, every field capped.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from courses import MODULES
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.console import Console

from grader import text
from grader.batch import error_results, run_batch
from grader.course import COURSE_FILE, load_course
from grader.entries import discover
from grader.intake import IntakeError
from grader.intake.notebooks import read_notebook
from grader.intake.submission import read_submission
from grader.points import ExerciseScore, Grade
from grader.points import (
    TestScore as ScoredTest,  # (a name pytest would try to collect)
)
from grader.reports.classroom import classroom, classroom_output
from grader.reports.feedback import write_feedback
from grader.reports.github import workflow_command
from grader.reports.gradebook import write_gradebook
from grader.reports.junit import junit_xml
from grader.reports.markdown import markdown_summary
from grader.reports.prairielearn import prairielearn
from grader.reports.results import results
from grader.reports.terminal import print_summary
from grader.text import student_id

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "grading" / "hostile"
SOLUTIONS = ROOT / "solutions"

# Everything hypothesis can make, surrogates and control characters included, plus the pieces of known attacks.
ATTACKS = ["\ud800", "\udcff", "\n# Feedback for x\n", "\r\n**Score: 100 / 100**", "<img src=x onerror=alert(1)>",
           "<script>alert(1)</script>", "[x](javascript:alert(1))", "![i](javascript:x)", "https://evil.example",
           "www.evil.example", "a@evil.example", "[bold]", "[link=https://e.x]y[/link]", ":smile:", "\x1b[31m",
           "\x1b]8;;https://e.x\x07", "\u202e", "\u2028", "\x85", "::error::x", "%0A", "=cmd|' /C calc'!A0", "+1", "-1",
           "@SUM(1)", "| a |", "`code`", "*em* _em_ ~~s~~ $x$", "# h", "1. x", "- x", "> q", "&amp; &#106;", "\ufffe",
           "\x00", "\x7f", "\t"]
TEXT = st.lists(st.one_of(st.text(st.characters(codec=None, min_codepoint=0)), st.sampled_from(ATTACKS)),
                max_size=8).map("".join)
LIMITS = st.integers(min_value=1, max_value=300)
MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
AUTOLINK = re.compile(r"(?i)[a-z0-9]://|www\.|[\w.+-]@[\w-]+\.\w")


def assert_clean(value: str, limit: int):
    value.encode("utf-8")  # valid Unicode: no lone surrogate
    assert len(value) <= limit
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in value), ascii(value)
    assert "\u2028" not in value and "\u2029" not in value and "\ufffe" not in value


# ----------------------------------------------------------------- the cleaner and the escapers (hypothesis)

@settings(max_examples=300, deadline=None, derandomize=True)
@given(TEXT, LIMITS)
def test_clean_makes_one_capped_line_of_valid_printable_unicode(value, limit):
    """clean: valid UTF-8, no control, format or surrogate character, one line, at most ``limit``, idempotent."""
    cleaned = text.clean(value, limit)
    assert_clean(cleaned, limit)
    assert text.clean(cleaned, limit) == cleaned


def test_clean_keeps_ordinary_text_and_cuts_with_an_ellipsis():
    assert text.clean("your code raised ValueError: shapes (2, 3) and (4,) differ") == \
        "your code raised ValueError: shapes (2, 3) and (4,) differ"
    assert text.clean("a\r\n\n  b\tc\x1b[31md\x1b[0m\u202ee\ud800") == "a b cde\ufffd"
    assert text.clean("x" * 5000, 10) == "x" * 9 + "…"
    assert text.clean(None) == "" and text.clean(3) == "3" and text.clean(b"x\n") == "b'x\\n'"  # others: repr


def test_clean_takes_time_linear_in_what_it_keeps_whatever_the_text():
    """A message of spaces costs what a message of letters does (red team 10: a run of spaces was tried from each of
    its characters, n**2 steps, 0.5 s of the grading process for each of a raising call's 8,000-space messages).
    Two million spaces, cleaned whole: about 0.1 s linear, hours quadratic; the bound is far from either."""
    script = ("from grader.text import clean\n"
              "for text in (' ' * 2_000_000, ' \\n' * 1_000_000, 'a ' * 1_000_000, '\\x1b[' + '0' * 2_000_000):\n"
              "    clean(text, limit=500_000)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def inline_tokens(markdown: str) -> list[str]:
    return [child.type for token in MARKDOWN.parse(markdown) for child in (token.children or [])]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(TEXT, LIMITS)
def test_markdown_shows_the_cleaned_text_and_nothing_else(value, limit):
    """markdown: at the start of a list item, in a table cell or mid-line, the rendered Markdown is one paragraph of
    plain text (no heading, link, image, HTML, emphasis, code, table or list) reading exactly the cleaned text, and
    nothing in it looks like a URL, www or e-mail autolink."""
    escaped = text.markdown(value, limit)
    cleaned = text.clean(value, limit)
    for document in (escaped, f"- {escaped}", f"> **Note:** {escaped}", f"| a | {escaped} |\n|---|---|"):
        assert set(inline_tokens(document)) <= {"text", "strong_open", "strong_close"}, (document, inline_tokens(document))
    block_types = {token.type for token in MARKDOWN.parse(escaped)}
    assert block_types <= {"paragraph_open", "inline", "paragraph_close"}, block_types
    rendered = "".join(child.content for token in MARKDOWN.parse(escaped) for child in token.children or [])
    assert undefang(rendered) == undefang(cleaned.strip())
    assert not AUTOLINK.search(escaped)


def undefang(value: str) -> str:
    """Text with the broken-up autolinks restored (``https[:]//`` -> ``https://``)."""
    return value.replace("[:]", ":").replace("[.]", ".").replace("[@]", "@")


def test_markdown_code_spans_hold_no_backtick():
    assert text.markdown("a`b|c", code=True) == "a'b/c"


class Collector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.data = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.data.append(data)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(TEXT, LIMITS)
def test_html_shows_the_cleaned_text_as_text(value, limit):
    """html: in an element and in an attribute, the page holds no tag but ours and reads exactly the cleaned text."""
    page = Collector()
    page.feed(f"<p title='{text.html(value, limit)}'>{text.html(value, limit)}</p>")
    page.close()
    assert page.tags == ["p"] and "".join(page.data) == text.clean(value, limit)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(TEXT, LIMITS)
def test_csv_cells_are_no_formulas(value, limit):
    """csv_cell: a CSV row round-trips, and no cell starts with = + - @ (a spreadsheet formula)."""
    cell = text.csv_cell(value, limit)
    buffer = io.StringIO()
    csv.writer(buffer).writerow([cell, "x"])
    (row,) = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert row == [cell, "x"] and not cell.startswith(("=", "+", "-", "@"))
    assert cell in (text.clean(value, limit), "'" + text.clean(value, limit)) and len(cell) <= limit + 1


@settings(max_examples=200, deadline=None, derandomize=True)
@given(TEXT, LIMITS)
def test_terminal_prints_the_cleaned_text_as_it_is(value, limit):
    """terminal: rich prints exactly the cleaned text (no markup, emoji code or escape applied), on one line."""
    buffer = io.StringIO()
    Console(file=buffer, width=10_000, color_system=None, emoji=True, highlight=True).print(text.terminal(value, limit))
    assert buffer.getvalue().rstrip(" \n") == text.clean(value, limit).rstrip(" ")
    assert buffer.getvalue().count("\n") == 1 and "\x1b" not in buffer.getvalue()


def unescape_workflow(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(TEXT, TEXT, TEXT)
def test_workflow_commands_are_one_line_with_our_properties_only(message, file, title):
    """workflow_command: one line; GitHub's parser reads back our properties and the message, line by line cleaned;
    nothing a student writes ends the properties or adds a command."""
    command = workflow_command("error", message, file=file or "f.py", line=3, title=title or "t")
    assert "\n" not in command and "\r" not in command
    head, body = command.split("::", 2)[1:]
    name, properties = head.split(" ", 1)
    fields = dict(p.split("=", 1) for p in properties.split(","))
    assert name == "error" and set(fields) == {"file", "line", "title"} and fields["line"] == "3"
    assert unescape_workflow(fields["file"]) == text.clean(file or "f.py", text.MAX_NAME)
    assert unescape_workflow(fields["title"]) == text.clean(title or "t", text.MAX_NAME)
    lines = unescape_workflow(body).split("\n")
    assert len(lines) <= text.MAX_LINES and all(line == text.clean(line) for line in lines)


def test_workflow_command_escapes_percent_newlines_and_colons():
    assert workflow_command("error", "50% ::warning::x%0A", title="a: b, c") == \
        "::error title=a%3A b%2C c::50%25 ::warning::x%250A"


# ----------------------------------------------------------------- every report of one hostile grade

NASTY = "".join(ATTACKS) + "x" * (8 << 20)  # every attack, then 8 MiB


def nasty_grade() -> Grade:
    test = ScoredTest("softmax", "test_softmax.py::t[a]", NASTY, 1, "failed", 0, 10, NASTY)
    return Grade([ExerciseScore("softmax", NASTY, 0, 10, NASTY, [test]),
                  ExerciseScore("quiz", "Quiz", 0, 10, "", [ScoredTest("quiz", "q", "doc", 1, "failed", 0, 10, NASTY)])],
                 notes=[NASTY] * 3)


def assert_markdown_forges_nothing(markdown: str, headings: int):
    tokens = MARKDOWN.parse(markdown)
    assert sum(t.type == "heading_open" for t in tokens) == headings
    inline = {child.type for token in tokens for child in token.children or []}
    assert not inline & {"link_open", "image", "html_inline", "em_open", "s_open"}, inline
    code = {child.content for token in tokens for child in token.children or [] if child.type == "code_inline"}
    assert all(re.fullmatch(r"exercises/\w+\.py", span) for span in code), code  # ours: the exercise files
    assert not {t.type for t in tokens} & {"html_block", "code_block", "fence"}
    assert not any(line.startswith("# Feedback for x") or line.strip() == "**Score: 100 / 100**"  # the attacks' lines
                   for line in markdown.splitlines())
    assert not AUTOLINK.search(markdown)


def test_every_format_of_a_hostile_grade_is_valid_capped_and_inert():
    """Gradescope and PrairieLearn JSON, JUnit XML, Classroom, the job summary and the terminal: valid UTF-8,
    parseable, each under 64 KiB for 8 MiB fields, no forged heading, link, image, HTML or style."""
    grade = nasty_grade()
    documents = {
        "results": json.dumps(results(grade, execution_time=1, device="cpu", sha256="0" * 64)),
        "prairielearn": json.dumps(prairielearn(grade, gradable=False, message=NASTY)),
        "classroom": json.dumps(classroom(grade, message=NASTY)),
        "junit": junit_xml(grade, name=NASTY),
        "summary": markdown_summary(grade, title="Course"),
    }
    for name, document in documents.items():
        document.encode("utf-8")
        assert len(document) < 64 << 10, name
    for name in ("results", "prairielearn", "classroom"):
        for value in re.findall(r'"((?:[^"\\]|\\.)*)"', documents[name]):
            assert_clean(json.loads(f'"{value}"').replace("\n", " "), 10 ** 6)
    ET.fromstring(documents["junit"].split("\n", 1)[1])
    json.loads(__import__("base64").b64decode(classroom_output(classroom(grade))))
    assert_markdown_forges_nothing(documents["summary"], headings=2)  # "## Course: ..." and "### What to fix"
    buffer = io.StringIO()
    print_summary(grade, Console(file=buffer, width=120, color_system=None))
    printed = buffer.getvalue()
    assert "\x1b" not in printed and "[bold]" in printed and len(printed) < 64 << 10
    assert not any(line.startswith(("# Feedback", "**Score", "::")) for line in printed.splitlines())


# ----------------------------------------------------------------- batch: ids, feedback pages, gradebook

@pytest.fixture
def course():
    return load_course(COURSE_FILE)


def nasty_results(course, student: str) -> dict:
    data = error_results(course, "cpu", NASTY)
    data.update(student=student, status="graded", graded_at="=cmd", tests=[
        {"name": f"softmax: {NASTY}", "status": "failed", "output": NASTY},
        {"name": "softmax: [x](javascript:alert(1))", "status": "passed", "output": ""}])
    return data


def test_student_ids_are_clean_distinct_and_fit_in_file_names(tmp_path):
    """A file name with a lone surrogate (undecodable bytes), a newline, markup or 250 characters is a clean id of at
    most ~115 characters that still differs from every other; a clean name is its own id."""
    names = [os.fsdecode(b"bad\xff"), os.fsdecode(b"bad\xfe"), "a\n# Feedback for b", "=cmd|x", "[bold]x", "é" * 120,
             "é" * 121, "alice"]
    for name in names:
        try:
            (tmp_path / name).mkdir()
        except OSError:  # a file system that refuses undecodable names
            pytest.skip("this file system refuses undecodable file names")
    ids = [entry.student for entry in discover(tmp_path, load_course(COURSE_FILE))]
    assert len(set(ids)) == len(names) and "alice" in ids and "=cmd|x" in ids and "[bold]x" in ids
    for student in ids:
        assert_clean(student, 120) and len(student.encode("utf-8")) <= 200
    assert student_id("alice") == "alice" and student_id("a\nb") != student_id("a b")


def test_a_name_written_decomposed_is_the_same_student():
    """'zoë' as macOS writes a file name (e and a combining diaeresis) is the roster's 'zoë' (walk-through 8: refused as
    "not on the roster, which lists 'zoë'"), and so is a decomposed name too long to keep whole."""
    assert student_id("zoe\u0308") == student_id("zo\u00eb") == "zo\u00eb"
    assert student_id("zoe\u0308" * 40) == student_id("zo\u00eb" * 40)
    hashed = student_id("Zo\u00eb\u200bvan der Berg")
    assert student_id(hashed) == hashed  # an id copied from the gradebook into a roster or overrides is the same id


def test_feedback_pages_and_gradebook_forge_nothing(tmp_path, course):
    """write_feedback and write_gradebook with 8 MiB hostile fields: one "# Feedback" heading and one score line, no
    link, image, HTML or style in the .md; no tag but ours in the .html; no formula in the CSV; every file small."""
    student = student_id("=evil\ud800\n# Feedback for x")
    data = nasty_results(course, student)
    assert write_feedback(data, tmp_path) is None
    markdown = (tmp_path / "feedback" / f"{student}.md").read_text(encoding="utf-8")
    page = (tmp_path / "feedback" / f"{student}.html").read_text(encoding="utf-8")
    assert_markdown_forges_nothing(markdown, headings=1 + len(data["exercises"]))
    assert [line for line in markdown.splitlines() if line.startswith("**")] == [f"**Score: 0 / {course.total_points}**"]
    collector = Collector()
    collector.feed(page)
    assert set(collector.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "strong", "span",
                                   "div", "table", "thead", "tbody", "tr", "th", "td"}  # ours: no link, image or script
    assert collector.tags.count("h1") == 1
    write_gradebook(course, tmp_path, [data, nasty_results(course, "bob")])
    gradebook = (tmp_path / "gradebook.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(gradebook)))
    assert len(rows) == 3 and not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
    for path in [tmp_path / "gradebook.csv", *(tmp_path / "feedback").iterdir()]:
        assert path.stat().st_size < 64 << 10, path
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp")]


def test_a_feedback_page_that_cannot_be_written_is_reported_not_raised(tmp_path, course):
    (tmp_path / "feedback").write_text("a file where the folder should be")
    problem = write_feedback(nasty_results(course, "alice"), tmp_path)
    assert problem.startswith("feedback not written: ") and "\n" not in problem
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp")]


# ----------------------------------------------------------------- end to end: hostile submissions

def test_notebook_fields_cannot_crash_or_bloat_a_batch(tmp_path, course):
    """A batch with a notebook whose solution cell's type is a lone surrogate and a newline (tests/grading/hostile/
    surrogate_cell_type), one whose nbformat is an 8 MiB string, a student id with undecodable bytes and a good
    student: every student is graded, summary.html is written, gradebook.csv and results stay small, no .tmp is
    left, and a rerun finds everyone up to date."""
    klass = tmp_path / "class"
    klass.mkdir()
    shutil.copy(HOSTILE / "surrogate_cell_type" / "quiz.ipynb", klass / "celltype.ipynb")
    (klass / "bloated.ipynb").write_text(json.dumps({"cells": [], "nbformat": "[bold]" + "x" * (8 << 20)}))
    shutil.copytree(SOLUTIONS, klass / os.fsdecode(b"good\xff\n"), ignore=shutil.ignore_patterns("__pycache__"))
    for empty in ("empty1", "empty2"):  # a class mostly of folders: graded on the course
        (klass / empty).mkdir()
    out = tmp_path / "out"
    rows = run_batch(klass, out, course_file=COURSE_FILE, jobs=1)
    assert len(rows) == 5 and (out / "summary.html").is_file()
    by_status = sorted(row["status"][:5] for row in rows)
    assert by_status == ["error"] * 3 + ["grade"] * 2, [row["status"][:200] for row in rows]
    good = next(row for row in rows if row["student"].startswith("good"))
    assert good["score"] == good["max_score"] and good["student"].startswith("good")
    assert (out / "gradebook.csv").stat().st_size < 16 << 10
    for path in out.rglob("*"):
        assert not path.name.startswith(".tmp"), path
        if path.is_file() and path.suffix in (".json", ".md", ".html", ".csv"):
            assert path.stat().st_size < 128 << 10, path
            path.read_text(encoding="utf-8")
    celltype = next(row for row in rows if row["student"] == "celltype")
    assert celltype["exercises"]["quiz"]["score"] == 0
    assert "\ufffd # Feedback for teacher cell" in celltype["output"] and "\n# " not in celltype["output"]
    feedback = (out / "feedback" / "celltype.md").read_text(encoding="utf-8")
    assert celltype["max_score"] == course.total_points, "a notebook in a class of folders is graded on the course"
    assert_markdown_forges_nothing(feedback, headings=1 + len(celltype["exercises"]))

    class Recorder:
        def start(self, total, counts):
            self.total = total

        def advance(self, counts):
            pass

    progress = Recorder()
    run_batch(klass, out, course_file=COURSE_FILE, jobs=1, progress=progress)
    assert progress.total == 0


def test_notebook_problems_are_clean_and_capped(tmp_path):
    problems, notes = {}, []
    read_notebook(HOSTILE / "surrogate_cell_type" / "quiz.ipynb", problems, notes)
    assert_clean(problems["quiz"], 2000)
    assert "is a \ufffd # Feedback for teacher cell" in problems["quiz"]
    bloated = tmp_path / "bloated.ipynb"
    bloated.write_text(json.dumps({"cells": [], "nbformat": "x" * (8 << 20)}))
    with pytest.raises(IntakeError) as error:
        read_submission(bloated, load_course(COURSE_FILE).grading.intake)
    assert len(str(error.value)) < 500


def test_forged_exception_messages_reach_every_report_as_plain_text(tmp_path):
    """`grader grade` on a submission whose quiz raises messages with a lone surrogate, forged feedback and score
    lines, HTML, links, rich markup, terminal escapes and workflow commands (tests/grading/hostile/forged_text): no traceback,
    the quiz scores nothing, the other exercises full marks, and the terminal, results.json, the job summary and the
    feedback page show the text on one line, with no forged line, heading, link or style."""
    folder = tmp_path / "forged"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(HOSTILE / "forged_text" / "quiz.py", folder / "quiz.py")
    out = tmp_path / "results.json"
    process = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out)], cwd=ROOT,
                             capture_output=True, timeout=600, env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    terminal = (process.stdout + process.stderr).decode("utf-8")
    assert process.returncode == 0 and "Traceback" not in terminal, terminal[-3000:]
    assert "[bold]BOLD[/bold]" in terminal and "\x1b" not in terminal
    assert not any(line.startswith(("# Feedback", "**Score", "::")) for line in terminal.splitlines())
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["exercises"]["quiz"]["score"] == 0
    assert all(e["score"] == pytest.approx(e["max_score"], abs=0.01) for m, e in data["exercises"].items() if m != "quiz")
    quiz = [t["output"] for t in data["tests"] if "quiz" in t["tags"]] + [data["exercises"]["quiz"]["problem"]]
    assert "bad \ufffd surrogate # Feedback for teacher **Score: 100 / 100**" in quiz[-1], quiz[-1]  # said once
    for value in quiz:
        assert_clean(value, 2000)
    data["student"] = "forged"
    assert write_feedback(data, tmp_path) is None
    feedback = (tmp_path / "feedback" / "forged.md").read_text(encoding="utf-8")
    assert_markdown_forges_nothing(feedback, headings=1 + len(MODULES))
    page = Collector()
    page.feed((tmp_path / "feedback" / "forged.html").read_text(encoding="utf-8"))
    assert "script" not in page.tags and "img" not in page.tags and "a" not in page.tags
