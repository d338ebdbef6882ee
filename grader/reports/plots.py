"""The class summary's pictures (matplotlib, PNG files beside summary.html): total marks, and each exercise's marks
as small multiples on one shared, whole-student axis."""
from __future__ import annotations

import io
import math
from pathlib import Path

from grader.extras import need
from grader.reports.advice import points
from grader.reports.files import write_atomic

BLUE = "#4a7ebb"


def score_histogram(marks: list[float], total: float, path: Path) -> None:
    """Histogram of the graded students' total marks (20 bins over 0..total)."""
    plt, ticker = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 3))
    axes.hist(marks, bins=20, range=(0, total or 1), color=BLUE, edgecolor="white")
    axes.set(xlabel="total score", ylabel="students", xlim=(0, total or 1),
             title=f"Total marks of the {len(marks)} graded submissions")
    axes.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    _margins(figure, bottom=0.5)
    _save_png(figure, path)


def exercise_histograms(exercises: list[tuple[str, list[float], float]], path: Path) -> None:
    """One small histogram per exercise (module, marks, max points), four to a row, student counts shared."""
    plt, ticker = _pyplot()
    columns = min(4, len(exercises))
    rows = math.ceil(len(exercises) / columns)
    figure, grid = plt.subplots(rows, columns, figsize=(2.7 * columns, 2.1 * rows), sharey=True, squeeze=False)
    for axes, (module, marks, most) in zip(grid.flat, exercises):
        axes.hist(marks, bins=10, range=(0, most or 1), color=BLUE, edgecolor="white")
        mean = sum(marks) / len(marks) if marks else 0
        axes.set_title(f"{module[:24]}\nmean {points(mean)} / {points(most)}".replace("$", r"\$"), fontsize=9)
        axes.set_xlim(0, most or 1)
        axes.tick_params(labelsize=8)
        axes.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    for axes in grid[:, 0]:
        axes.set_ylabel("students", fontsize=8)
    for axes in list(grid.flat)[len(exercises):]:
        axes.set_visible(False)
    _margins(figure, bottom=0.3, top=0.5, wspace=0.12, hspace=0.6)
    _save_png(figure, path)


def _margins(figure, bottom: float, top: float = 0.3, wspace: float = 0.2, hspace: float = 0.2) -> None:
    """Room for the tick labels, axis labels and titles, in inches whatever the figure's size (what tight_layout
    would measure, at a third of its cost: the summary's plots are most of a batch's report time)."""
    width, height = figure.get_size_inches()
    figure.subplots_adjust(left=0.65 / width, right=1 - 0.1 / width, bottom=bottom / height, top=1 - top / height,
                           wspace=wspace, hspace=hspace)


def _pyplot():
    need("plots", "the class summary's plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    return plt, ticker


def _save_png(figure, path: Path) -> None:
    plt, _ = _pyplot()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    write_atomic(buffer.getvalue(), path)
