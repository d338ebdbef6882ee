"""A class graded with attackers among it: no classmate's grade changes, in the first run or in a rerun."""
import shutil
from pathlib import Path

import pytest
from courses import MODULES, TOTAL
from test_hostile import AVAILABLE, WHY, hostile_submission

from grader import ROOT
from grader.batch import run_batch
from grader.course import COURSE_FILE

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not AVAILABLE, reason=f"no sandbox here: {WHY}")]

# trick -> the exercise file it replaces (tests/grading/hostile/<trick>/<module>.py)
ATTACKERS = {"overlapping_reply": "quiz", "cpu_hog": "scores", "channels": "quiz", "forged_text": "quiz",
             "fork_bomb": "quiz"}
WRONG_DIM = '''import torch


def softmax(x, dim=-1, temperature=1.0):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    z = x / temperature
    e = torch.exp(z - z.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
'''


def honest_class(root: Path) -> Path:
    """Two honest students: the references, and the references with a softmax over the last dim only."""
    for student in ("correct", "wrong_dim"):
        (root / student).mkdir(parents=True)
        for module in MODULES:
            shutil.copy(ROOT / "solutions" / f"{module}.py", root / student / f"{module}.py")
    (root / "wrong_dim" / "softmax.py").write_text(WRONG_DIM, encoding="utf-8")
    return root


def grades(rows: list[dict]) -> dict[str, tuple]:
    return {r["student"]: (r["status"], r["score"], tuple(sorted((m, e["score"]) for m, e in r["exercises"].items())))
            for r in rows}


def test_attackers_change_no_classmates_grade(tmp_path):
    """The honest students of a class get the same grades with five attackers graded beside them (an overlapping
    reply, a CPU hog, channels between workers, forged text, a fork bomb) as without them, also after a rerun;
    every attacker gets a final grade of its own (never a grader error), and the rerun regrades no one."""
    alone = grades(run_batch(honest_class(tmp_path / "alone"), tmp_path / "out-alone", course_file=COURSE_FILE, jobs=2))
    mixed = honest_class(tmp_path / "mixed")
    for trick, module in ATTACKERS.items():
        hostile_submission(mixed, trick, module)
    out = tmp_path / "out-mixed"
    first = run_batch(mixed, out, course_file=COURSE_FILE, jobs=2)
    rerun = run_batch(mixed, out, course_file=COURSE_FILE, jobs=2)
    assert alone["correct"][1] == TOTAL and alone["wrong_dim"][1] < TOTAL
    for rows in (first, rerun):
        beside = grades(rows)
        assert {student: beside[student] for student in alone} == alone
        assert all(status == "graded" for status, *_ in beside.values()), beside
    assert [r["graded_at"] for r in rerun] == [r["graded_at"] for r in first]  # all final: nothing regraded
