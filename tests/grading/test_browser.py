"""summary.html and a feedback page as a person sees them in headless Chromium, at a laptop's width.

A class with correct, buggy, missing and ungradable submissions, a roster, overrides, submission times and a late
policy (tests/grading/corpus/klass.py) is graded once; each
test renders a page (tests/grading/browser.py) and checks what is on screen. Without Chromium these tests fail,
saying how to install it: they never skip.
"""
import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from grader.reports.advice import points

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parent / "corpus")]
from browser import LAPTOP, BrowserMissing, chromium, probe  # noqa: E402
from klass import GRADED, HOSTILE_ID, MISSING, NOT_ON_ROSTER, UNGRADABLE  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> Path:
    try:
        chromium()
    except BrowserMissing as error:
        pytest.fail(str(error))
    from klass import grade_class

    return grade_class(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="module")
def summary(graded_class) -> dict:
    return probe(graded_class / "summary.html")


def test_summary_pictures_load_and_nothing_overflows_a_laptop_screen(summary):
    """Both pictures loaded (a natural width); the page is no wider than a 1366 px window."""
    assert {image["src"] for image in summary["images"]} == {"score_histogram.png", "exercise_scores.png"}
    assert all(image["width"] > 0 for image in summary["images"]), summary["images"]
    assert summary["innerWidth"] == LAPTOP[0] and summary["scrollWidth"] <= summary["innerWidth"]


def test_summary_tables_show_the_graded_students_and_apart_the_ungradable(summary, graded_class):
    """The student table holds every student (the HTML id as text), each handing something in linking an existing
    feedback page; the ungradable ones are also listed apart with their reason; the headings read as planned."""
    students = summary["tables"]["students"]
    ungradable_ids = [name.removesuffix(".zip") for name in UNGRADABLE]
    assert sorted(row[0] for row in students) == sorted([*GRADED, *ungradable_ids, MISSING])
    ungradable = {row[0]: row[1] for row in summary["tables"]["ungradable-table"]}
    assert set(ungradable) == {name.removesuffix(".zip") for name in UNGRADABLE}
    assert "not a readable zip file" in ungradable["jon"] and "none of the exercise files" in ungradable["ivy"]
    assert [src for src in (image["src"] for image in summary["images"]) if "onerror" in src] == []
    feedback = [link for link in summary["links"] if link.startswith("feedback/")]
    assert len(feedback) >= len(GRADED) + len(UNGRADABLE)
    assert all((graded_class / unquote(link)).is_file() for link in feedback), feedback
    # The class is built from copies of the references: the similarity check rightly pairs students who share them.
    assert summary["headings"][1:] == ["Scores", "Exercises", "Hardest checks", "Misconceptions", "Students",
                                       "Could not be graded", "Roster", "Similar code"]


def test_the_roster_and_an_override_show_on_the_pages(summary, graded_class):
    """The summary lists the missing student and the one not on the roster; ada's page shows her final score, then
    the graded score and the override with its points and its reason as text."""
    assert summary["tables"]["missing"] == [[MISSING]] and summary["tables"]["unlisted"] == [[NOT_ON_ROSTER]]
    page = probe(graded_class / "feedback" / "ada.html")
    assert page["tables"]["adjustments"] == [["100", "graded, before the adjustments below"],
                                             ["-2.5", "softmax: <b>used</b> torch.softmax"]]
    assert "Score: <strong>97.5 / 100</strong>" in (graded_class / "feedback" / "ada.html").read_text(encoding="utf-8")
    assert page["scrollWidth"] <= page["innerWidth"]


def test_summary_counts_the_shared_misconception_and_leaves_out_checks_that_did_not_run(summary):
    """The softmax misconception three students share is counted as 3; the hardest checks give pass rates as
    numbers over the students whose exercise ran, never a CUDA-only check."""
    misconceptions = summary["tables"]["misconceptions"]
    last_dim = [row for row in misconceptions if "normalize along the last dim whatever" in row[2]]
    assert len(last_dim) == 1 and last_dim[0][:2] == ["3", "softmax"] and "dee, eli, fay" in last_dim[0][2]
    hardest = summary["tables"]["hardest"]
    assert hardest and all(row[0].endswith("%") and " of " in row[1] for row in hardest)
    assert not [row for row in hardest if "CUDA" in row[3]]
    rates = [int(row[0].rstrip("%")) for row in hardest]
    assert rates == sorted(rates) and rates[-1] < 100


def test_the_student_table_sorts_by_a_click(summary):
    """A click on "final" sorts the students by their final score, lowest first; a second click, highest first."""
    ascending = [-1.0 if total == "-" else float(total) for total in summary["sorted"]["ascending"]]  # "-": no score
    assert ascending == sorted(ascending) and summary["sorted"]["descending"] == summary["sorted"]["ascending"][::-1]
    assert ascending[0] < ascending[-1]


def test_feedback_page_tells_passed_from_failed_in_words_and_colours(graded_class):
    """ben's page: "passed" and "failed" badges (and the rules' "holds" and "not judged yet"), no emoji, in two
    different colours, what to fix first, points per check with at most two decimals, and no horizontal overflow at a
    laptop's width."""
    page = probe(graded_class / "feedback" / "ben.html")
    words = {badge["text"] for badge in page["badges"]}
    assert {"passed", "failed"} <= words <= {"passed", "failed", "holds", "not judged yet"}, words
    colours = {badge["text"]: (badge["color"], badge["background"]) for badge in page["badges"]}
    assert colours["passed"][0] != colours["failed"][0] and colours["passed"][1] != colours["failed"][1]
    checks = page["tables"]["checks-scores"]
    results = json.loads((graded_class / "results" / "ben.json").read_text(encoding="utf-8"))
    tests = [test for test in results["tests"] if test["name"].startswith("scores: ")]
    order = ["failed", "not judged yet", "holds", "passed"]  # what to fix first
    assert [row[0] for row in checks] == sorted((row[0] for row in checks), key=order.index)
    assert sorted((row[1].split("\n")[0], row[0] in ("holds", "passed")) for row in checks) == sorted(
        (test["name"].removeprefix("scores: "), test["status"] == "passed") for test in tests)
    assert {test["status"] for test in tests} == {"passed", "failed"}
    assert all(re.fullmatch(r"\d+(\.\d{1,2})? / \d+(\.\d{1,2})?", row[2]) for row in checks), checks
    scores = results["exercises"]["scores"]
    assert page["headings"][0] == "Feedback for ben"
    assert f"scores: Dot-product scores {points(scores['score'])} / {points(scores['max_score'])} points" in page["headings"]
    assert page["scrollWidth"] <= page["innerWidth"]
    text = (graded_class / "feedback" / "ben.html").read_text(encoding="utf-8")
    final = f"{points(results['final_score'])} / {points(results['max_score'])}"
    assert "✅" not in text and "❌" not in text and final in text
    assert round(results["score"], 2) != results["score"], "ben's score has more than two decimals: the check needs one"
    assert f"{results['score']:.4f}" not in text, "two decimals at most where a person reads the score"


def test_an_unreadable_submission_gets_one_short_paragraph(graded_class):
    """The corrupt zip's page: its heading and what was wrong and what to do, no exercise heading."""
    page = probe(graded_class / "feedback" / "jon.html")
    assert page["headings"] == ["Feedback for jon"] and not page["badges"]
    text = (graded_class / "feedback" / "jon.html").read_text(encoding="utf-8")
    assert "not a readable zip file" in text and "submit again" in text


def test_similar_files_side_by_side_fit_a_1400_px_window(graded_class):
    """similarity.html at 1400 px: each file shown side by side lies whole within the window (a long line scrolls
    inside its own side; the grid's `1fr` columns used to grow with it and cut the right-hand file off), and the
    groups table names the students who hand in the references, the HTML id as text."""
    page = probe(graded_class / "similarity.html", size=(1400, 900))
    assert page["sides"] and len(page["sides"]) % 2 == 0
    assert all(0 <= left < right <= page["innerWidth"] for left, right in page["sides"]), page["sides"]
    assert page["scrollWidth"] <= page["innerWidth"]
    groups = page["tables"]["groups-table"]
    assert any(HOSTILE_ID in row[0] and "dee" in row[0] for row in groups), groups
