"""The project's corpus: every variant of every exercise of the course (each exercise's
tests/course/<module>/variants_<module>.py, grader/suites/variants.py), for the project's tests and benchmarks."""
from grader.course import course
from grader.suites.variants import KINDS, Variant, corpus  # noqa: F401 (the tests' names for them)

VARIANTS: list[Variant] = corpus(course())
