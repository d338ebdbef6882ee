"""`grader release --gradescope ZIP`: the Gradescope autograder, the grader with the course's suites, references and
course.yaml beside setup.sh and run_autograder (the instructor's, never the students': it holds the hidden suites)."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

from grader import ROOT
from grader.authoring.release import assignment_option, pinned, render
from grader.course import COURSE_FILE, load_course

# What goes into the zip besides setup.sh and run_autograder: the grader (from its repository) and the course (its
# suites, their hints, its references and course.yaml, from the course root).
GRADER_SOURCES = ("grader", "pyproject.toml", "README.md")
COURSE_SOURCES = ("solutions", "tests/course", "course.yaml")


def gradescope_zip(path: str | os.PathLike, *, device: str = "cpu", course_file: str | os.PathLike = COURSE_FILE,
                   assignment: str | None = None) -> Path:
    """The Gradescope autograder: setup.sh and run_autograder at the root, the grader with the course's suites,
    references and course.yaml beside them; ``assignment``: it grades that assignment, out of its points."""
    path = Path(path)
    course = load_course(course_file)
    graded = course.assignment(assignment) if assignment else course  # an unknown name is refused here, at once
    values = {"TORCH": pinned("torch"), "DEVICE": device, "ASSIGNMENT": assignment_option(graded)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o100755 << 16
            archive.writestr(info, render(f"gradescope/{name}", values))
        for top, sources in ((ROOT, GRADER_SOURCES), (course.root, COURSE_SOURCES)):
            for source in sources:
                root = top / source
                members = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
                for member in members:
                    if "__pycache__" in member.parts or member.suffix == ".pyc":
                        continue
                    archive.write(member, member.relative_to(top).as_posix())
    return path
