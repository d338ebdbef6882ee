"""The public checks' set-up when they run from the course repository (``python -m pytest tests/course -m softmax
--impl solutions``): the handout's own conftest (grader/suites/public/harness.py, shipped as tests/public/conftest.py
by `grader release`), told the course's exercises by this course's course.yaml, and the modules the checks import by
the plain names they have in the handout (the shared ``hints``, each exercise's ``hints_<module>``)."""
import sys
from pathlib import Path

from grader.course import load_course
from grader.suites import PUBLIC  # noqa: F401 (puts the handout's modules on the path)

COURSE = load_course(Path(__file__).resolve().parents[2] / "course.yaml")
for folder in (COURSE.suites_dir, *(COURSE.exercise_dir(module) for module in COURSE.modules)):
    sys.path.insert(0, str(folder))

import harness  # noqa: E402

harness.ROOT = COURSE.root  # the course's exercises/ and solutions/, not those beside the grader's harness
sys.path.insert(0, str(COURSE.root))
harness.MODULES.update({exercise.module: exercise.title for exercise in COURSE.exercises})
from harness import *  # noqa: E402, F403 (its hooks and fixtures are this conftest's)
