"""Red-team attacks that break a promise of SECURITY.md (each test fails until the grader is fixed).

Each case grades a hostile submission from tests/hostile/<trick>/ through the real pipeline, as
tests/test_hostile.py does, and states the promise it checks in its docstring.
"""
from __future__ import annotations

import pytest

from test_hostile import (  # noqa: F401  (fixtures used by name)
    AVAILABLE, WHY, assert_trick_earns_nothing, baseline, course, grade, hostile_submission, nothing_left_behind,
    outputs, private_tmp, secret_env, zygote)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not AVAILABLE, reason=f"no sandbox here: {WHY}")]


def test_the_line_number_of_an_exception_carries_no_input(tmp_path, zygote, course, baseline):
    """Feedback on a hidden check carries nothing the student's code chose after it saw an input (SECURITY.md, "What
    comes back"): quiz.py raising from line N of its own file, N computed from the hidden input (exec of code compiled
    under the file's own name, the file padded with identical lines), gets, word for word, the feedback of the same
    code raising from a constant line, on two seeds."""
    for seed in (course.seed, course.seed + 1):
        seeded = course.model_copy(update={"seed": seed})
        (tmp_path / f"leaky{seed}").mkdir(), (tmp_path / f"blind{seed}").mkdir()
        leaky = grade(hostile_submission(tmp_path / f"leaky{seed}", "line_channel"), seeded, zygote, "quiz")
        blind = grade(hostile_submission(tmp_path / f"blind{seed}", "line_channel", blind=True), seeded, zygote, "quiz")
        assert_trick_earns_nothing(leaky, baseline=baseline)
        assert outputs(leaky) == outputs(blind)
