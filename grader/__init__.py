"""Sandboxed auto-grader for the self-attention course.

A submission travels: intake (stage the files) -> worker (a sandboxed process
that runs the student's code) -> suites (hidden pytest suites that call it
through a proxy) -> points (from the pytest-json-report) -> reports.
"""
import sys
from pathlib import Path

__version__ = "0.1.0"

ROOT = Path(__file__).resolve().parent.parent
COURSE_FILE = ROOT / "course.yaml"  # the project's own course
# The modules the handout ships beside the public checks (grader/suites/public) lie side by side there and import each
# other by plain names (``import diagnosis``); every grader process imports them by the same names, from this folder,
# so that each exists once whoever imports it.
PUBLIC = ROOT / "grader" / "suites" / "public"
if str(PUBLIC) not in sys.path:
    sys.path.append(str(PUBLIC))


def course_root(course_file: str | Path) -> Path:
    """The folder a course.yaml's paths are relative to (``Course.root``); known without reading the file."""
    return Path(course_file).resolve().parent

# The exit status of `grader grade`, `batch` and `ci` when grading failed through no fault of the submission (a grader
# fault, no sandbox here; for `grade`, also a course, assignment or device the grader cannot use): no score is given,
# and the submission must be graded again. (`grader grade`'s 2 means the submission itself cannot be graded.)
GRADER_FAULT_STATUS = 3
