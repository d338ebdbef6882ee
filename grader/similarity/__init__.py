"""Similarity: pairs of submissions whose code is suspiciously alike, per exercise.

Evidence for an instructor to look at, never a penalty: nothing here changes a score. The code is never run or
imported, only tokenized (``tokens``) and parsed to leave out the code nothing runs or uses (``unused``);
fingerprints, winnowing and the score are in ``compare``; the report pages and the rows for the class summary in
``report``. docs/similarity.md explains the method, the threshold and the figures.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from grader.course import Course
from grader.course import course as project_course
from grader.similarity.compare import MIN_SHARED, THRESHOLD, Pair, similar_pairs
from grader.similarity.tokens import Normalized, normalize, stub_lines
from grader.similarity.unused import defined_names


@dataclass
class Report:
    """The flagged pairs of each exercise, the sources they quote, and notes on files read only in part or not."""

    modules: tuple[str, ...]  # the course's exercises, in its order
    pairs: dict[str, list[Pair]]
    sources: dict[tuple[str, str], str]  # (student, module) -> text, for the files of flagged pairs
    compared: dict[str, int]  # module -> files compared
    notes: list[tuple[str, str, str]] = field(default_factory=list)  # (student, module, note)


def stub_sources(course: Course | None = None) -> dict[str, str]:
    """Module -> the stub every student starts from (the course's exercises/, generated from solutions/)."""
    course = course or project_course()
    folder = course.exercises_dir
    return {m: (folder / f"{m}.py").read_text(encoding="utf-8") for m in course.modules if (folder / f"{m}.py").is_file()}


def compare_class(sources: Mapping[str, Mapping[str, str | bytes]], course: Course | None = None,
                  stubs: Mapping[str, str] | None = None, threshold: float = THRESHOLD,
                  min_shared: int = MIN_SHARED) -> Report:
    """Compare the files of a class (student -> {module: source}) exercise by exercise, for each exercise of
    ``course`` (default: the project's), with the code of ``stubs`` (module -> stub text; default: the course's
    exercises/) removed, and the code that neither runs nor serves the names the stub defines; a file that cannot
    be read is noted and left out."""
    course = course or project_course()
    stubs = stub_sources(course) if stubs is None else stubs
    report = Report(course.modules, {}, {}, {})
    for module in course.modules:
        stub = stub_lines(stubs.get(module, ""))
        required = defined_names(stubs.get(module, ""))
        files: dict[str, Normalized] = {}
        texts: dict[str, str] = {}
        for student in sorted(sources):
            source = sources[student].get(module)
            if source is None:
                continue
            try:
                texts[student] = source.decode("utf-8") if isinstance(source, bytes) else source
            except UnicodeDecodeError:
                report.notes.append((student, module, "not UTF-8 text: not compared"))
                continue
            files[student] = normalize(texts[student], stub, required)
            if files[student].note:
                report.notes.append((student, module, files[student].note))
        report.compared[module] = len(files)
        report.pairs[module] = similar_pairs(module, files, threshold, min_shared)
        for pair in report.pairs[module]:
            for student in (pair.a, pair.b):
                report.sources[student, module] = texts[student]
    return report
