"""The class summary's figures from hand-made results: what counts, for whom, and how it is shown."""
from html.parser import HTMLParser

import pytest

from grader.course import COURSE_FILE, load_course
from grader.points import DEFERRED
from grader.reports import plots
from grader.reports.advice import points
from grader.reports.feedback import write_feedback
from grader.reports.summary import hardest_checks, misconceptions, not_started, status, unfinished, write_summary

HINT = "you normalize along the last dim whatever `dim` says: reduce along `dim`"
MISTAKE = "softmax.last_dim_only"


def _test(module, what, status, output="", score=1.0, misconception=""):
    return {"name": f"{module}: {what}", "status": status, "output": output,
            "score": score if status == "passed" else 0.0, "max_score": score,
            **({"extra_data": {"misconception": misconception}} if misconception else {})}


def _row(student, tests, exercises, status="graded"):
    return {"student": student, "status": status, "tests": tests, "exercises": exercises, "output": "",
            "score": sum(e["score"] for e in exercises.values()),
            "max_score": sum(e["max_score"] for e in exercises.values())}


def _class():
    """Three graded students (two share a diagnosed softmax mistake, ann also got a text that is no diagnosis; carl's
    softmax.py is missing, so its CUDA-only check failed), and one who could not be graded."""
    ran = {"softmax": {"score": 5.0, "max_score": 10}, "scores": {"score": 10.0, "max_score": 10}}
    wrong = f"softmax(x, dim): wrong values on x (2, 3) float32 on cpu, dim=0. Hint: {HINT}."
    ann = _row("ann", [_test("softmax", "Equals torch.softmax", "failed", wrong, misconception=MISTAKE),
                       _test("softmax", "Equals torch.softmax", "failed", wrong, misconception=MISTAKE),
                       _test("softmax", "Equals torch.softmax", "failed", "NaN. Hint: check every reduction."),
                       _test("softmax", "Temperature <= 0 raises", "passed"), _test("scores", "dot", "passed")], ran)
    bob = _row("bob", [_test("softmax", "Equals torch.softmax", "failed", wrong, misconception=MISTAKE),
                       _test("softmax", "Temperature <= 0 raises", "passed"),
                       _test("scores", "dot", "failed", f"wrong. Hint: {HINT}.", misconception=MISTAKE)], ran)
    missing = "softmax.py is not in the submission"
    carl = _row("carl", [_test("softmax", "Equals torch.softmax", "failed", missing),
                         _test("softmax", "float16 inputs (CUDA) keep their dtype", "failed", missing),
                         _test("scores", "dot", "passed")],
                {"softmax": {"score": 0.0, "max_score": 10, "problem": missing},
                 "scores": {"score": 10.0, "max_score": 10}})
    dan = _row("<b>dan</b>", [], {"softmax": {"score": 0, "max_score": 10}, "scores": {"score": 0, "max_score": 10}},
               status="error: cannot grade: dan.zip is not a readable zip file")
    dan["output"] = "cannot grade: dan.zip is not a readable zip file"
    return [ann, bob, carl, dan]


def test_points_are_rounded_to_two_decimals():
    assert [points(v) for v in (14.666666, 10.0, 2.5, 0, 0.004, 99.999)] == ["14.67", "10", "2.5", "0", "0", "100"]


def test_hardest_checks_count_students_whose_exercise_ran():
    """A check counts once per student (all its cases must pass), only for students whose exercise could run: the
    CUDA-only check that failed only with a missing file is not listed, and carl's missing softmax.py is no failure."""
    graded = _class()[:3]
    checks = {(c.exercise, c.what): (c.passed, c.applied) for c in hardest_checks(graded)}
    assert checks == {("softmax", "Equals torch.softmax"): (0, 2), ("scores", "dot"): (2, 3)}
    assert [c.what for c in hardest_checks(graded)] == ["Equals torch.softmax", "dot"]


def test_hardest_checks_count_only_what_was_judged():
    """A failure from a stub not filled in yet, or from a rule not judged yet (the values are wrong), says nothing
    about its check: dee's stubs and ann's rule waiting for values count for no check, and a check failed only so is
    not listed (they filled the table with exercises nobody started)."""
    stub = "softmax(x): not implemented yet: softmax.softmax: fill in this stub (see its docstring)"
    ann = _row("ann", [_test("softmax", "Equals torch.softmax", "failed", "wrong values"),
                       _test("softmax", "Keeps the dtype", "failed", DEFERRED)],
               {"softmax": {"score": 0.0, "max_score": 10}})
    bob = _row("bob", [_test("softmax", "Equals torch.softmax", "passed"), _test("softmax", "Keeps the dtype", "passed")],
               {"softmax": {"score": 10.0, "max_score": 10}})
    dee = _row("dee", [_test("softmax", "Equals torch.softmax", "failed", stub),
                       _test("softmax", "Keeps the dtype", "failed", stub)], {"softmax": {"score": 0.0, "max_score": 10}})
    assert [(c.what, c.passed, c.applied) for c in hardest_checks([ann, bob, dee])] == [("Equals torch.softmax", 1, 2)]
    assert not_started(dee) == ["softmax"] and not_started(ann) == []


def test_an_exercise_with_points_and_stubs_left_is_unfinished_not_unstarted():
    """A student with points for the function they filled in, the exercise's module still a stub, has that exercise
    unfinished: their status says so, and the Exercises table does not count it as not started."""
    stub = "CausalAttention(...): not implemented yet: causal.CausalAttention: fill in this stub (see its docstring)"
    kai = _row("kai", [_test("causal", "causal_mask is lower triangular", "passed"),
                       _test("causal", "Equals the reference", "failed", stub),
                       _test("softmax", "Equals torch.softmax", "failed", stub.replace("causal", "softmax"))],
               {"causal": {"score": 1.5, "max_score": 15}, "softmax": {"score": 0.0, "max_score": 10}})
    assert not_started(kai) == ["softmax"] and unfinished(kai) == ["causal"]
    assert status(kai) == "graded, 1 exercise not started, 1 exercise unfinished"


def test_misconceptions_count_students_per_exercise_and_id():
    """Misconceptions are the diagnosed mistakes, by id: one given twice to ann counts her once; the same id in
    another exercise is another misconception; a "Hint:" that names no mistake (no id) is not counted."""
    found = [(m.exercise, m.id, m.hint, m.students) for m in misconceptions(_class()[:3])]
    assert found == [("softmax", MISTAKE, HINT, ("ann", "bob")), ("scores", MISTAKE, HINT, ("bob",))]


class Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.links, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.links += [value for name, value in attrs if name in ("href", "src")]

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def course():
    return load_course(COURSE_FILE)


def test_the_ungradable_are_listed_apart_and_out_of_the_statistics(tmp_path, course):
    """The mean is that of the three graded students; dan is listed with his reason, escaped, linking his page;
    no similar-code section without pairs, one with them."""
    rows = _class()
    write_summary(course, tmp_path, rows)
    page = (tmp_path / "summary.html").read_text(encoding="utf-8")
    mean = sum(row["score"] for row in rows[:3]) / 3
    assert f"mean {points(mean)}" in page and "4 submissions: 3 graded, 1 could not be graded" in page
    collector = Collector()
    collector.feed(page)
    assert "b" not in collector.tags and "&lt;b&gt;dan&lt;/b&gt;" in page
    assert "dan.zip is not a readable zip file" in page and "Similar code" not in page
    assert set(collector.links) == {"score_histogram.png", "exercise_scores.png", "#ungradable", "feedback/ann.html",
                                    "feedback/bob.html", "feedback/carl.html", "feedback/%3Cb%3Edan%3C%2Fb%3E.html"}
    pair = {"students": ["ann", "bob"], "exercises": [{"exercise": "softmax", "score": 0.93,
                                                       "view": "similarity.html#softmax-1"}]}
    write_summary(course, tmp_path, rows, similar={"pairs": [pair], "groups": []})
    page = (tmp_path / "summary.html").read_text(encoding="utf-8")
    assert "Similar code" in page and "softmax</a> 93%" in page and "similarity.html#softmax-1" in page


def test_pictures_count_whole_students(tmp_path, course, monkeypatch):
    """Every student axis of the pictures has whole-number ticks only."""
    figures = []
    monkeypatch.setattr(plots, "_save_png", lambda figure, path: figures.append(figure))
    write_summary(course, tmp_path, _class())
    assert len(figures) == 2
    for figure in figures:
        for axes in figure.axes:
            if axes.get_visible():
                assert all(float(tick).is_integer() for tick in axes.get_yticks()), axes.get_yticks()


def test_feedback_of_an_exercise_that_could_not_run_is_one_paragraph(tmp_path):
    """carl's missing softmax.py: one line saying so, no list of failed checks; his passed check has a badge."""
    carl = _class()[2]
    assert write_feedback(carl, tmp_path, {"softmax": "Softmax"}) is None
    markdown = (tmp_path / "feedback" / "carl.md").read_text(encoding="utf-8")
    assert "## softmax (Softmax): 0 / 10 points" in markdown and "CUDA" not in markdown
    assert markdown.count("softmax.py is not in the submission") == 1 and "- passed (1 / 1): dot" in markdown


def test_the_page_stays_small_for_a_large_class(tmp_path, course, monkeypatch):
    """500 students, 1770 pairs of them and 400 groups flagged as alike: the page lists every student, and only the
    ten pairs and groups flagged in most exercises, with a link to the rest."""
    monkeypatch.setattr(plots, "_save_png", lambda figure, path: None)
    students = [_row(f"s{n:03}", [_test("scores", "dot", "passed")], {"scores": {"score": 10.0, "max_score": 10}})
                for n in range(500)]
    flagged = [{"exercise": "scores", "score": 0.9, "view": "similarity.html#scores-1"}]
    similar = {"pairs": [{"students": [f"s{a:03}", f"s{b:03}"], "exercises": flagged}
                         for a in range(60) for b in range(a + 1, 60)],
               "groups": [{"students": [f"s{n:03}" for n in range(k, k + 3)], "exercises": flagged} for k in range(400)]}
    write_summary(course, tmp_path, students, similar=similar)
    page = (tmp_path / "summary.html").read_text(encoding="utf-8")
    assert page.count("<tr><td><a href='feedback/s") == 500 and len(page.encode()) < 400_000
    assert page.count("similarity.html#scores-1") == 20 and "1760 more student pairs in" in page
