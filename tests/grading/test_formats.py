"""One Grade, every host's format: Gradescope, PrairieLearn, JUnit XML, GitHub Classroom, the job summary.

Grades are built directly (no grading), so these tests are fast; each format is checked against the
schema its host documents.
"""
from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET

import jsonschema
import pytest
from courses import sample_course

from grader import points as scores
from grader.points import ExerciseScore, Grade
from grader.reports.advice import feedback_line, score_line, untouched, what_to_fix
from grader.reports.classroom import CLASSROOM_SCHEMA, classroom, classroom_output
from grader.reports.junit import junit_xml
from grader.reports.markdown import markdown_summary
from grader.reports.prairielearn import PRAIRIELEARN_SCHEMA, prairielearn
from grader.reports.results import (
    GRADESCOPE_SCHEMA,
    OUR_RESULTS_FIELDS,
    RESULTS_SCHEMA,
    results,
    visibility_of,
)

SHA = "ab" * 32
RAISED = "your code raised ValueError: rows & <cols> | differ (softmax.py, line 12, in softmax: raise ValueError(\"x\"))"
SYNTAX = "context.py does not import: SyntaxError: invalid syntax (context.py, line 3: def f(:)"
STUB = "not implemented yet: qkv.project: fill in this stub (see its docstring)"


def _test(module, name, doc, status, score, max_score, feedback="", weight=1.0, misconception=""):
    return scores.TestScore(module, name, doc, weight, status, score, max_score, feedback,
                            misconception=misconception)


def make_grade() -> Grade:
    """A grade with every case: full marks, partial (with a skipped test), an import error, untouched stubs, zero."""
    exercises = []
    for e in sample_course().exercises:
        m, p = e.module, float(e.points)
        if m == "softmax":
            tests = [_test(m, "test_softmax.py::test_rows", "rows sum to 1", "passed", 7.5, 7.5),
                     _test(m, "test_softmax.py::test_large[float32]", "large scores stay finite", "failed", 0.0, 2.5, RAISED),
                     _test(m, "test_softmax.py::test_cuda", "runs on CUDA", "skipped", 0.0, 0.0, "needs a GPU")]
            exercises.append(ExerciseScore(m, e.title, 7.5, p, "", tests))
        elif m == "context":
            tests = [_test(m, f"test_context.py::test_{i}", f"check {i}", "failed", 0.0, p / 2, SYNTAX) for i in (1, 2)]
            exercises.append(ExerciseScore(m, e.title, 0.0, p, SYNTAX, tests))
        elif m == "qkv":
            tests = [_test(m, f"test_qkv.py::test_{i}", f"qkv check {i}", "failed", 0.0, p / 3, STUB) for i in range(3)]
            exercises.append(ExerciseScore(m, e.title, 0.0, p, "", tests, ("qkv.project", "qkv.copy_linear_weights")))
        elif m == "causal":
            tests = [_test(m, f"test_causal.py::test_mask[{i}]", "no peeking", "failed" if i else "passed",
                            0.0 if i else p / 2, p / 2, "a later position changed an earlier output" if i else "",
                            misconception="causal.wrong_triangle" if i else "")
                     for i in (0, 1)]
            exercises.append(ExerciseScore(m, e.title, p / 2, p, "", tests))
        else:
            tests = [_test(m, f"test_{m}.py::test_ok", f"{m} is right", "passed", p, p)]
            exercises.append(ExerciseScore(m, e.title, p, p, "", tests))
    return Grade(exercises, notes=["exercise files taken from exercises/"])


@pytest.fixture
def grade() -> Grade:
    return make_grade()


def test_schemas_are_valid_json_schemas():
    for schema in (RESULTS_SCHEMA, GRADESCOPE_SCHEMA, PRAIRIELEARN_SCHEMA, CLASSROOM_SCHEMA):
        jsonschema.Draft202012Validator.check_schema(schema)


def test_grade_totals(grade):
    assert grade.max_score == 100 and grade.score == 10 + 7.5 + 0 + 0 + 10 + 10 + 7.5 + 15 == 60
    assert score_line(grade) == "Score: 60/100"
    assert score_line(Grade([ExerciseScore("softmax", "S", 3.25, 10)])) == "Score: 3.25/10"


# ----------------------------------------------------------------- Gradescope

def test_gradescope_results_follow_gradescope_and_our_schema(grade):
    data = results(grade, execution_time=1.23456, device="cpu", sha256=SHA)
    jsonschema.validate(data, RESULTS_SCHEMA)
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    assert set(data) - set(GRADESCOPE_SCHEMA["properties"]) == set(OUR_RESULTS_FIELDS)
    assert data["score"] == 60 and data["max_score"] == 100 and data["execution_time"] == 1.235
    assert len(data["tests"]) == len(grade.tests) - 1, "a skipped test does not appear"
    assert all(t["visibility"] == "visible" for t in data["tests"])
    failed = next(t for t in data["tests"] if t["name"] == "softmax: large scores stay finite")
    assert failed == {"name": "softmax: large scores stay finite", "score": 0.0, "max_score": 2.5, "status": "failed",
                      "output": RAISED, "visibility": "visible", "tags": ["softmax"]}
    assert data["exercises"]["softmax"] == {"score": 7.5, "max_score": 10.0}
    diagnosed = [t for t in data["tests"] if "extra_data" in t]  # the known mistake a failure names, by its id
    assert [(t["name"], t["extra_data"]) for t in diagnosed] == [("causal: no peeking",
                                                                  {"misconception": "causal.wrong_triangle"})]


def test_visibility_rules(grade):
    softmax = grade.exercises[1].tests
    rules = {"default": "after_due_date", "softmax": "visible", "test_softmax.py::test_large*": "hidden",
             "test_causal.py::*[1]": "after_published"}
    assert visibility_of(softmax[0], rules) == "visible"  # its exercise's rule
    assert visibility_of(softmax[1], rules) == "hidden"  # a node-id glob wins over the exercise
    assert visibility_of(grade.exercises[0].tests[0], rules) == "after_due_date"  # the default
    assert visibility_of(softmax[0], None) == visibility_of(softmax[0], {}) == "visible"
    data = results(grade, execution_time=0, device="cpu", sha256=SHA, visibility=rules)
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    by_name = {t["name"]: t["visibility"] for t in data["tests"]}
    assert by_name["softmax: rows sum to 1"] == "visible" and by_name["softmax: large scores stay finite"] == "hidden"
    assert by_name["scores: scores is right"] == "after_due_date"
    assert [t["visibility"] for t in data["tests"] if t["tags"] == ["causal"]] == ["after_due_date", "after_published"]


# ----------------------------------------------------------------- PrairieLearn

def test_prairielearn_results(grade):
    data = prairielearn(grade)
    jsonschema.validate(data, PRAIRIELEARN_SCHEMA)
    assert data["gradable"] is True and data["score"] == 0.6
    assert data["points"] == 60 and data["max_points"] == 100 and data["message"] == "Score: 60/100"
    assert sum(t["points"] for t in data["tests"]) == pytest.approx(60)
    assert sum(t["max_points"] for t in data["tests"]) == pytest.approx(100)
    failed = next(t for t in data["tests"] if t["name"] == "softmax: large scores stay finite")
    assert failed["message"] == RAISED and failed["points"] == 0 and failed["max_points"] == 2.5
    assert "context: 0/10 (" in data["output"]


def test_prairielearn_not_gradable(grade):
    data = prairielearn(grade, gradable=False, message="no exercise file")
    jsonschema.validate(data, PRAIRIELEARN_SCHEMA)
    assert data["gradable"] is False and data["format_errors"] == ["no exercise file"]


# ----------------------------------------------------------------- JUnit XML

def test_junit_xml_structure(grade):
    text = junit_xml(grade, name="Self-attention", execution_time=2.5)
    assert text.startswith('<?xml version="1.0" encoding="utf-8"?>')
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("name") == "Self-attention" and root.get("time") == "2.500"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [e.module for e in grade.exercises]
    assert int(root.get("tests")) == len(grade.tests) == sum(int(s.get("tests")) for s in suites)
    assert int(root.get("failures")) == sum(t.status == "failed" for t in grade.tests)
    assert int(root.get("skipped")) == 1 and root.get("errors") == "0"
    for suite, exercise in zip(suites, grade.exercises):
        properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert properties["score"] == f"{exercise.score:g}" and properties["max_score"] == f"{exercise.max_score:g}"
        assert properties["title"] == exercise.title and properties.get("problem", "") == exercise.problem
        cases = suite.findall("testcase")
        assert len(cases) == len(exercise.tests) == int(suite.get("tests"))
        assert len({c.get("name") for c in cases}) == len(cases), "test case names are unique within a suite"
        for case, test in zip(cases, exercise.tests):
            assert case.get("classname") == exercise.module and case.get("time") is not None
            failure, skipped = case.find("failure"), case.find("skipped")
            assert (failure is not None) == (test.status == "failed") and (skipped is not None) == (test.status == "skipped")
            if failure is not None:
                assert failure.get("message") == test.feedback and failure.text == test.feedback
            scores = {p.get("name"): p.get("value") for p in case.find("properties")}
            assert scores == {"score": f"{test.score:g}", "max_score": f"{test.max_score:g}"}
    softmax = suites[1].findall("testcase")
    assert softmax[1].get("name") == "large scores stay finite [float32]"
    causal = {c.get("name") for c in suites[6].findall("testcase")}
    assert causal == {"no peeking [0]", "no peeking [1]"}


def test_junit_names_repeated_docs_apart():
    tests = [_test("softmax", f"test_softmax.py::test_{i}", "same doc", "passed", 1, 1) for i in range(3)]
    root = ET.fromstring(junit_xml(Grade([ExerciseScore("softmax", "Softmax", 3, 3, "", tests)])).split("\n", 1)[1])
    assert [c.get("name") for c in root.iter("testcase")] == ["same doc", "same doc (2)", "same doc (3)"]


# ----------------------------------------------------------------- GitHub Classroom

def test_classroom_result(grade):
    files = {"softmax": ("exercises/softmax.py", 12)}
    data = classroom(grade, files=files)
    jsonschema.validate(data, CLASSROOM_SCHEMA)
    assert data["version"] == 1 and data["status"] == "fail" and data["max_score"] == 100
    assert sum(t["score"] for t in data["tests"]) == grade.score, "the reporter sums the tests' scores"
    assert [t["name"] for t in data["tests"]][:2] == ["1. Dot-product scores (scores)", "2. Softmax (softmax)"]
    first, softmax = data["tests"][0], data["tests"][1]
    assert first["status"] == "pass" and first["message"] == "" and first["filename"] == "exercises/scores.py"
    assert softmax["status"] == "fail" and softmax["filename"] == "exercises/softmax.py" and softmax["line_no"] == 12
    assert softmax["message"] == f"large scores stay finite: {RAISED}"
    assert data["tests"][2]["message"] == SYNTAX and data["tests"][3]["message"] == ("not implemented yet: fill in "
                                                                                     "qkv.project, qkv.copy_linear_weights")
    decoded = json.loads(base64.b64decode(classroom_output(data)))
    assert decoded == data and "\n" not in classroom_output(data)


def test_classroom_status_pass_and_error():
    full = Grade([ExerciseScore("softmax", "Softmax", 10, 10, "", [_test("softmax", "t", "d", "passed", 10, 10)])])
    assert classroom(full)["status"] == "pass"
    error = classroom(full, status="error", message="no exercise file")
    jsonschema.validate(error, CLASSROOM_SCHEMA)
    assert error["status"] == "error" and error["message"] == "no exercise file"


# ----------------------------------------------------------------- the job summary and helpers

def test_markdown_summary(grade):
    files = {"softmax": ("exercises/softmax.py", 12), "context": ("exercises/context.py", 3)}
    text = markdown_summary(grade, title="Self-attention in PyTorch", files=files)
    lines = text.splitlines()
    assert lines[0] == "## Self-attention in PyTorch: 60 / 100"
    assert "> **Note:** exercise files taken from exercises/" in lines
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 8 and all(row.count(" | ") == 4 for row in rows), rows
    assert "| 2 | Softmax | `exercises/softmax.py` | ⚠️ 7.5 / 10 | 1 / 2 |" in lines
    assert "| 1 | Dot-product scores | `exercises/scores.py` | ✅ 10 / 10 | 1 / 1 |" in lines
    assert any(line.startswith("| 3 |") and "❌ 0 / 10" in line for line in lines)
    assert "| | **total** | | **60 / 100** | |" in lines
    fix = text.split("### What to fix", 1)[1]
    assert "**2. Softmax** (`exercises/softmax.py` line 12): 7.5 / 10" in fix
    assert "rows &amp; &lt;cols&gt; \\| differ" in fix, "student text is escaped"
    assert "- not implemented yet: fill in qkv.project" in fix and "qkv check 1" not in fix
    assert "**1. Dot-product scores**" not in fix


def test_markdown_summary_full_marks():
    full = Grade([ExerciseScore("softmax", "Softmax", 10, 10, "", [_test("softmax", "t", "d", "passed", 10, 10)])])
    text = markdown_summary(full)
    assert "What to fix" not in text and "Every check passed: full marks" in text


def test_helpers(grade):
    softmax, context, qkv = grade.exercises[1], grade.exercises[2], grade.exercises[3]
    assert feedback_line(softmax) == ("softmax.py", 12) and feedback_line(context) == ("context.py", 3)
    assert feedback_line(qkv) is None and feedback_line(grade.exercises[0]) is None
    assert untouched(qkv) and not untouched(softmax) and not untouched(context)
    assert what_to_fix(context) == SYNTAX
    many = ExerciseScore("causal", "Causal", 0, 10, "", [_test("causal", f"t{i}", f"d{i}", "failed", 0, 2, f"f{i}")
                                                          for i in range(5)])
    assert what_to_fix(many).splitlines() == ["d0: f0", "d1: f1", "d2: f2", "... and 2 more failed check(s)"]
    one = ExerciseScore("causal", "Causal", 0, 10, "", [_test("causal", f"t{i}", f"d{i}", "failed", 0, 2, "f") for i in range(5)])
    assert what_to_fix(one) == "f"  # one cause (a missing name, say): said once


def test_every_format_agrees_on_the_totals(grade):
    gradescope = results(grade, execution_time=0, device="cpu", sha256=SHA)
    learn = prairielearn(grade)
    classroom_data = classroom(grade)
    root = ET.fromstring(junit_xml(grade).split("\n", 1)[1])
    junit_points = sum(float(p.get("value")) for s in root.findall("testsuite") for p in s.find("properties")
                       if p.get("name") == "score")
    assert gradescope["score"] == learn["points"] == sum(t["score"] for t in classroom_data["tests"]) == junit_points == 60
    assert gradescope["max_score"] == learn["max_points"] == classroom_data["max_score"] == 100


def test_student_text_stays_text():
    """Rich markup, terminal escapes and Markdown in a student's message are shown as they are, not interpreted."""
    import io

    from rich.console import Console

    from grader.reports.terminal import print_summary

    nasty = "[/bold][bold green]ALL PASSED[/] \x1b[31mred\x1b[0m <b>x</b> `y` | z\n## heading"
    grade = Grade([ExerciseScore("softmax", "Softmax", 0, 10, "", [_test("softmax", "t", "doc [/]", "failed", 0, 10, nasty)]),
                   ExerciseScore("quiz", "Quiz", 0, 10, nasty, [])], notes=[nasty])
    buffer = io.StringIO()
    print_summary(grade, Console(file=buffer, width=300, color_system=None))
    printed = buffer.getvalue()
    assert "[/bold][bold green]ALL PASSED[/]" in printed and "\x1b" not in printed and "doc [/]" in printed
    summary = markdown_summary(grade)
    assert "\x1b" not in summary and "&lt;b&gt;" in summary and "\\| z ## heading" in summary and "`y`" not in summary


def test_summary_reports_a_broken_exercise_once():
    """An exercise that could not run at all (missing file) shows its reason in the table, not once per check."""
    import io

    from rich.console import Console

    from grader.reports.terminal import print_summary

    missing = "qkv.py is not in the submission"
    tests = [_test("qkv", f"t{n}", f"check {n}", "failed", 0, 5, missing) for n in range(4)]
    grade = Grade([ExerciseScore("qkv", "QKV", 0, 20, missing, tests),
                   ExerciseScore("quiz", "Quiz", 5, 10, "", [_test("quiz", "q", "values", "failed", 0, 5, "values differ")])])
    buffer = io.StringIO()
    print_summary(grade, Console(file=buffer, width=200, color_system=None))
    printed = buffer.getvalue()
    assert printed.count(missing) == 1 and "check 0" not in printed
    assert "values differ" in printed


def test_an_unfinished_exercise_is_one_line_in_every_output(grade, tmp_path):
    """Every failure of qkv is an unfinished stub: the terminal (grade, the ci log), the job summary and the feedback
    pages say "not implemented yet: fill in qkv.project" once, with the stubs left in the file that no check reached,
    and show its checks as one collapsed line (the HTML page lists them in a closed <details>)."""
    import io

    from rich.console import Console

    from grader.reports.feedback import write_feedback
    from grader.reports.terminal import print_summary

    buffer = io.StringIO()
    print_summary(grade, Console(file=buffer, width=300, color_system=None))
    data = results(grade, execution_time=1.0, device="cpu", sha256=SHA)
    data["student"] = "ann"
    assert write_feedback(data, tmp_path) is None
    pages = [(tmp_path / "feedback" / f"ann.{kind}").read_text() for kind in ("md", "html")]
    for text in (buffer.getvalue(), markdown_summary(grade), *pages):
        assert text.count("not implemented yet: fill in qkv.project, qkv.copy\\_linear\\_weights"
                          if text.startswith("#") else "not implemented yet: fill in qkv.project, qkv.copy_linear_weights"
                          ) == 1, text
        assert "qkv check" not in re.sub(r"<details>.*?</details>", "", text) and "fill in this stub" not in text
    for page in pages:
        assert page.count("3 checks failed for this reason") == 1
    assert "<details><summary>3 checks failed for this reason</summary><ul><li>qkv check 0</li>" in pages[1]
    assert "large scores stay finite" in buffer.getvalue()  # a real failure is still shown in full


def test_what_to_fix_comes_first_and_the_rules_not_judged_yet_are_one_line(tmp_path):
    """A values failure of causal and three rules waiting for right values, after two full-mark exercises: the
    terminal (grade, the ci log) prints the failure and one line for the three rules, never "not judged yet" once per
    rule; the feedback pages show causal, the exercise to fix, before the exercises whose every check passed, its
    failure before the rules."""
    import io

    from rich.console import Console

    from grader.points import DEFERRED
    from grader.reports.feedback import write_feedback
    from grader.reports.terminal import print_summary

    wrong = "CausalAttention(x): wrong values. Hint: you keep the upper triangle (the future): use tril."
    rules = [_test("causal", f"r{n}", f"causal rule {n}", "failed", 0, 1, f"CausalAttention(x): {DEFERRED}") for n in range(3)]
    held = [scores.TestScore("causal", f"h{n}", f"causal rule held {n}", 1.0, "passed", 0, 1, "", scores.RULE)
            for n in range(2)]
    grade = Grade([ExerciseScore("scores", "Scores", 10, 10, "", [_test("scores", "s", "scores ok", "passed", 10, 10)]),
                   ExerciseScore("softmax", "Softmax", 10, 10, "", [_test("softmax", "m", "softmax ok", "passed", 10, 10)]),
                   ExerciseScore("causal", "Causal", 0, 15, "", [*rules, *held, _test("causal", "v", "causal values",
                                                                                       "failed", 0, 12, wrong)])])
    buffer = io.StringIO()
    print_summary(grade, Console(file=buffer, width=300, color_system=None))
    printed = buffer.getvalue()
    assert "not judged yet" not in printed and printed.count("3 rules are judged once the values are right") == 1
    assert printed.index("use tril") < printed.index("3 rules are judged")
    # why 2 checks passed and earned nothing (found by our sixth student walk-through)
    assert ("2 rules that hold earn nothing yet (not counted as passed): a rule pays only the share of the values "
            "checks (by weight) that pass; 3 rules are judged") in printed
    assert "2 rules that hold earn nothing yet" in markdown_summary(grade)
    # a rule that holds and pays nothing yet is not a passed check (a stub's import rule was "1 / 15": the fourth
    # instructor walk-through)
    assert "| 0 / 6 |" in markdown_summary(grade) and " 0/6 " in printed
    data = dict(results(grade, execution_time=1.0, device="cpu", sha256=SHA), student="ann")
    assert write_feedback(data, tmp_path) is None
    for page in ((tmp_path / "feedback" / f"ann.{kind}").read_text() for kind in ("md", "html")):
        assert page.index("use tril") < page.index("causal rule 0") < page.index("scores ok") < page.index("softmax ok")
        assert "check passed;" not in page and "checks passed;" not in page  # the held rules earn nothing yet


def test_a_missing_name_is_said_once_in_every_output(tmp_path):
    """Every failure of quiz has the same feedback (a missing name): the terminal, the job summary and the feedback
    pages say it once, and its checks are one collapsed line; a failure with a feedback of its own is shown."""
    import io

    from rich.console import Console

    from grader.reports.feedback import write_feedback
    from grader.reports.terminal import print_summary

    missing = "quiz.quiz_answer: not found in your code"
    tests = [_test("quiz", f"t{n}", f"quiz check {n}", "failed", 0, 2, missing) for n in range(4)]
    grade = Grade([ExerciseScore("quiz", "Quiz", 2, 10, "", [*tests, _test("quiz", "t4", "ok", "passed", 2, 2)]),
                   ExerciseScore("qkv", "QKV", 0, 4, "", [_test("qkv", "q", "values", "failed", 0, 4, "values differ")])])
    buffer = io.StringIO()
    print_summary(grade, Console(file=buffer, width=300, color_system=None))
    data = dict(results(grade, execution_time=1.0, device="cpu", sha256=SHA), student="ann")
    assert write_feedback(data, tmp_path) is None
    pages = [(tmp_path / "feedback" / f"ann.{kind}").read_text() for kind in ("md", "html")]
    for text in (buffer.getvalue(), markdown_summary(grade), *pages):
        assert text.count("not found in your code") == 1 and "values differ" in text, text  # (Markdown escapes _)
        assert "quiz check" not in re.sub(r"<details>.*?</details>", "", text)
    assert all("1 check passed; quiz." in page and "4 checks failed for this reason" in page for page in pages)
