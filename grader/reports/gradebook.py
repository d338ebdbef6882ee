"""The class's reports, rebuilt by batch from the results on disk: gradebook.csv, and summary.html with its plots
(score_histogram.png, pass_rates.png), for the instructor."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.course import Course
from grader.reports.feedback import html_page
from grader.reports.files import write_atomic
from grader.text import MAX_NAME, clean, csv_cell, html

MAX_STATUS = 300  # characters of a status in the gradebook


def write_gradebook(course: Course, out: Path, rows: list[dict]) -> None:
    """gradebook.csv from ``rows``, which mirror the results files on disk."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", "score", "max_score", *[e.module for e in course.exercises], "status", "graded_at", "submission_sha256"])
    for data in rows:
        writer.writerow([csv_cell(data["student"], MAX_NAME), data["score"], data["max_score"],
                         *[data["exercises"].get(e.module, {}).get("score", 0) for e in course.exercises],
                         csv_cell(data.get("status", "graded"), MAX_STATUS),
                         csv_cell(data.get("graded_at", ""), MAX_NAME), csv_cell(data["submission_sha256"], MAX_NAME)])
    write_atomic(buffer.getvalue(), out / "gradebook.csv")


def write_summary(course: Course, out: Path, rows: list[dict]) -> None:
    """summary.html: score histogram and per-test pass rates (matplotlib PNGs), and per-exercise means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = [r["score"] for r in rows]
    figure, axes = plt.subplots(figsize=(7, 3.5))
    axes.hist(scores, bins=20, range=(0, course.total_points), color="#4a7ebb")
    axes.set(xlabel="score", ylabel="students", title=f"Scores ({len(rows)} submissions)")
    figure.tight_layout()
    _save_png(figure, out / "score_histogram.png")

    passes: dict[str, list[int]] = {}
    for data in rows:
        for test in data["tests"]:
            passes.setdefault(test["name"], []).append(test["status"] == "passed")
    names = sorted(passes, key=lambda n: sum(passes[n]) / len(passes[n]))
    figure, axes = plt.subplots(figsize=(9, max(3, 0.22 * len(names))))
    axes.barh(range(len(names)), [100 * sum(passes[n]) / len(passes[n]) for n in names], color="#c0504d")
    labels = [clean(n, 70).replace("$", r"\$") for n in names]  # a "$" would start matplotlib's mathtext
    axes.set_yticks(range(len(names)), labels, fontsize=7)
    axes.set(xlabel="% of submissions passing", xlim=(0, 100), title="Where the class struggles (hardest first)")
    axes.invert_yaxis()
    figure.tight_layout()
    _save_png(figure, out / "pass_rates.png")

    means = "".join(
        f"<tr><td>{html(e.module)}</td><td>{html(e.title)}</td><td>{sum(r['exercises'].get(e.module, {}).get('score', 0) for r in rows) / max(len(rows), 1):.1f} / {e.points}</td></tr>"
        for e in course.exercises)
    errors = sum(r.get("status", "graded") != "graded" for r in rows)
    body = (f"<h1>{html(course.title)}: class summary</h1><p>{len(rows)} submissions, {errors} could not be graded; "
            f"mean score {sum(scores) / max(len(scores), 1):.1f} / {course.total_points}.</p>"
            f"<table><tr><th>exercise</th><th>title</th><th>mean</th></tr>{means}</table>"
            "<h2>Scores</h2><img src='score_histogram.png' alt='score histogram'>"
            "<h2>Pass rate per test</h2><img src='pass_rates.png' alt='pass rate per test'>")
    write_atomic(html_page("Class summary", body), out / "summary.html")


def _save_png(figure, path: Path) -> None:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    write_atomic(buffer.getvalue(), path)
