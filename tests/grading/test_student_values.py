"""Student values (issue 28, item 1): the grading process computes with nothing a student's code sent before it is
checked, and its memory is bounded as a whole, so that a hole not found yet costs one grade, never the machine.

* a ``StudentTensor`` (what every reply's tensor becomes) gives its metadata and nothing else until ``checks.checked``
  has verified it; ``checked`` fails every value unlike the one expected (shape, dtype, device, layout, kind) as a
  check, never a crash;
* every check of every exercise, fed adversarial results, gradients and parameters (``adversary.py``), fails or passes
  as a check (no crash, no grader fault) and costs the grading process no more memory than grading the references
  plus the adversary's own replies;
* a check that computes with a student's value before verifying it is a grader fault, and so is a grading process
  that runs out of its memory bound (``grader.memory``): ``grader grade`` exits 3 and writes no results; a batch grades
  every classmate and records that submission as could not be graded.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from courses import MODULES, TOTAL, course_variant
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import ROOT
from grader.batch import PROCESS_DIED, run_batch
from grader.course import COURSE_FILE, EXERCISES_FOLDER, load_course
from grader.grade import grade_submission
from grader.memory import HEADROOM_MB
from grader.sandbox import wire
from grader.sandbox.host.client import Zygote
from grader.sandbox.host.problems import GraderFault
from grader.sandbox.host.proxy import StudentTensor, UncheckedValue, guarded
from grader.sandbox.jail import confine
from grader.suites.checks import FLOATING, CheckFailed, checked

HERE = Path(__file__).resolve().parent
SOLUTIONS = ROOT / "solutions"
AVAILABLE, WHY = confine.probe()
sandboxed = pytest.mark.skipif(not AVAILABLE, reason=f"no sandbox here: {WHY}")
ADVERSARY_ROUNDS = 60
# What the adversary's own answers may hold at once on top of what grading the references takes: a reply of up to 14
# tensors of 4 MiB (a result, gradients by position and by name), as the adversary builds it, as a frame and decoded,
# and one more kept by a failed check.
ADVERSARY_MIB = 4 * 14 * 4 + 32
MAPPED_MIB = 1024  # more than the grading process maps when its memory is bounded (about 650 MiB)


# ---------------------------------------------------------------- the guard and the check


def test_a_student_tensor_gives_its_metadata_and_nothing_else():
    """Shape, dtype, device, dims and size can be read; arithmetic, torch functions, comparisons, conversions to
    numbers, iteration and copies raise UncheckedValue; its repr shows no value."""
    student = guarded(torch.zeros(2048, 1, 1, 1, 1, dtype=torch.bool))
    assert isinstance(student, StudentTensor) and isinstance(student, torch.Tensor)
    assert (tuple(student.shape), student.dtype, student.device.type, student.dim(), student.ndim, student.numel(),
            len(student), student.is_floating_point()) == ((2048, 1, 1, 1, 1), torch.bool, "cpu", 5, 5, 2048, 2048, False)
    other = guarded(torch.zeros(1, 2048, 1, 1, 1, dtype=torch.bool))
    computations = [lambda: student.double() - other.double(), lambda: student * torch.ones(3, 5, 4),
                    lambda: torch.ones(3) + student, lambda: torch.allclose(student, other), lambda: student == other,
                    lambda: float(student.sum()), lambda: bool(student.any()), lambda: list(student),
                    lambda: student.to(torch.float64), lambda: student.cpu(), lambda: student.numpy(),
                    lambda: copy.deepcopy(student), lambda: f"{student:.3}", lambda: torch.isfinite(student)]
    for compute in computations:
        with pytest.raises(UncheckedValue):
            compute()
    assert repr(student) == "<student tensor (2048, 1, 1, 1, 1) torch.bool on cpu>"


def test_checked_hands_back_a_plain_tensor_like_the_expected_one():
    """A student's tensor of the expected shape, dtype and device comes back plain, holding its values (NaN too)."""
    want = torch.tensor([[0.5, float("nan")], [1.0, 2.0]])
    got = checked(guarded(want.clone()), want, what="f(x)", on="x (2, 2)")
    assert type(got) is torch.Tensor and torch.equal(got.nan_to_num(), want.nan_to_num())
    assert checked(guarded(want.double()), want, what="f(x)", on="x", dtypes=FLOATING).dtype == torch.float64


SHAPES = st.lists(st.integers(0, 4), max_size=5).map(tuple)


@settings(max_examples=300, deadline=None)
@given(like_shape=SHAPES, shape=SHAPES, dtype=st.sampled_from(list(wire.DTYPES.values())),
       device=st.sampled_from(["cpu", "meta"]), broadcast=st.integers(0, 2048))
def test_checked_fails_every_value_unlike_the_expected_one_as_a_check(like_shape, shape, dtype, device, broadcast):
    """Any other shape (broadcastable ones included: (K, 1, ...) against (1, K, ...)), dtype (bool, integer, complex)
    or device (meta) fails the check, saying which, before anything is computed with the value."""
    like = torch.zeros(like_shape)
    if broadcast:
        shape = (broadcast, *[1] * len(like_shape))
    value = guarded(torch.zeros(shape, dtype=dtype, device=device))
    if (tuple(shape), dtype, device) == (like_shape, like.dtype, "cpu"):
        assert type(checked(value, like, what="f(x)", on="x")) is torch.Tensor
        return
    with pytest.raises(CheckFailed) as failure:
        checked(value, like, what="f(x)", on="x")
    said = str(failure.value)
    assert "the result's shape has" in said or " result on " in said, said


@pytest.mark.parametrize("field, value", [("called", [{}]), ("called", "softmax"), ("called", [1]), ("ops", -1),
                                          ("ops", "many")])
def test_a_reply_whose_accounts_are_not_of_their_kind_is_unreadable(field, value):
    """A reply whose list of calls made (or count of operations) is not one is the submission's unreadable reply:
    ``called`` of [{}] made the grading process raise TypeError, a grader fault on every run (red team 18)."""
    from grader.sandbox.host.client import WorkerSession
    from grader.sandbox.host.problems import SubmissionProblem

    class Forged(WorkerSession):
        def __init__(self):
            super().__init__(None, "/nonexistent", load_course(COURSE_FILE).grading.limits)
            self.pid, self.isolation = 0, "namespaces"

        def stop(self, grace: float = 0.0):
            return None

        def _exchange(self, frame, timeout, doing, max_bytes=None, exercise=None) -> dict:
            self._blob = b""
            return {"ok": True, "replies": [{"ok": True, "value": None, "called": [], "ops": 1, field: value}]}

    with pytest.raises(SubmissionProblem, match="could not be read"):
        Forged().run({"module": "softmax", "path": ["softmax"]}, (torch.ones(2),), watch=["softmax"])


def test_checked_refuses_sparse_nested_subclassed_and_other_values():
    """What the wire never delivers but a caller might hand it (a sparse, nested or subclassed tensor) and the kinds
    a reply can hold (numbers, tuples, None, strings) fail the check, naming what came back."""
    like = torch.zeros(2, 3)

    class Lying(torch.Tensor):
        pass

    values = {"a tensor": [torch.zeros(2, 3).to_sparse(), torch.zeros(2, 3).as_subclass(Lying),
                           torch.nested.nested_tensor([torch.zeros(3), torch.zeros(2)], layout=torch.jagged)],
              "a number": [0.5, 3], "a tuple": [(like,)], "None": [None], "a string": ["nan"]}
    for kind, examples in values.items():
        for value in examples:
            with pytest.raises(CheckFailed, match=f"returned {kind} on x; expected a"):
                checked(value, like, what="f(x)", on="x")


# ---------------------------------------------------------------- every check, against an adversary


def _measured(*args: str) -> dict:
    """Run adversary.py with ``args`` in a fresh process (glibc returning freed blocks at once, so the peak is what
    the process holds, not what its allocator kept); its JSON line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]), "MALLOC_MMAP_THRESHOLD_": "65536"}
    done = subprocess.run([sys.executable, "-c", "import adversary; adversary.main()", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
@sandboxed
def test_every_check_of_every_exercise_survives_an_adversary_within_the_references_memory():
    """Hypothesis draws an adversary's policy per round (dtypes, shape families, devices, fills, other kinds) and
    every hidden suite of every exercise runs against it: each check fails or passes as a check (feedback written for
    the student; no check raising instead, no grader fault), and the grading process's peak memory stays within a
    fixed bound of grading the references (measured side by side, in fresh processes). One round is issue 28's attack
    (every tensor, gradients included, a (4 Mi, 1, 1, 1, 1) bool). Before the checks were verified, the adversary
    took 4.3 GB (its safety net is 6 GiB) and 25 checks crashed."""
    references = _measured("references")
    assert references["score"] == references["max_score"] == TOTAL
    adversary = _measured("adversary", str(ADVERSARY_ROUNDS))
    print(f"peak memory of the grading process: {adversary['peak_mib']:.0f} MiB against the adversary "
          f"({adversary['rounds']} rounds, {adversary['checks']} checks), {references['peak_mib']:.0f} MiB grading the references")
    assert adversary["faults"] == [] and adversary["crashed"] == [], adversary
    assert adversary["rounds"] >= ADVERSARY_ROUNDS and adversary["checks"] >= 100 * adversary["rounds"]
    assert adversary["peak_mib"] <= references["peak_mib"] + ADVERSARY_MIB, (adversary, references)


# ---------------------------------------------------------------- a hole: a grader fault, bounded


HOLES = {
    "forgets": '''

def test_forgets_to_check(student, device):
    """A check of the project's tests that computes with the result before verifying it."""
    assert float(student.softmax.softmax(torch.ones(2, 3, device=device)).sum()) > 0
''',
    "raises": '''

def test_raises_itself(student, device):
    """A check of the project's tests with a bug of its own: it looks up a key its table lacks."""
    assert {"a": 1.0}["b"] > 0
''',
    "fixture_raises": '''

@pytest.fixture
def table():
    return {"a": 1.0}["b"]


def test_set_up_by_a_raising_fixture(student, table):
    """A check of the project's tests whose fixture has a bug of its own."""
''',
    "hoards": '''

def test_hoards_memory(student, device):
    """A check of the project's tests with a hole: it hoards 3 GiB when the result is a bool tensor."""
    if student.softmax.softmax(torch.ones(2, 3, device=device)).dtype == torch.bool:
        hoard = [torch.ones(1 << 20) for _ in range(768)]
        assert hoard
''',
}


def course_with_hole(folder: Path, hole: str) -> Path:
    """The project's course with one more test in softmax's hidden suite (``HOLES[hole]``); its course.yaml."""
    path = course_variant(folder, COURSE_FILE.read_text(encoding="utf-8"))
    suite = folder / EXERCISES_FOLDER / "softmax"
    suite.unlink()
    shutil.copytree(COURSE_FILE.parent / EXERCISES_FOLDER / "softmax", suite, ignore=shutil.ignore_patterns("__pycache__"))
    with open(suite / "hidden_softmax.py", "a", encoding="utf-8") as hidden:
        hidden.write(HOLES[hole])
    return path


def hostile(folder: Path) -> Path:
    """The references, softmax.py replaced by one returning bool tensors (tests/grading/hostile/broadcast_results)."""
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    shutil.copy(HERE / "hostile" / "broadcast_results" / "softmax.py", folder / "softmax.py")
    return folder


@pytest.mark.slow
@sandboxed
def test_a_check_that_computes_before_verifying_is_a_grader_fault(tmp_path):
    """A suite that forgets to verify a student's value before computing with it makes the grading a grader fault
    (no grade), for every submission, the references included: it used to compute, and grade."""
    course = load_course(course_with_hole(tmp_path / "course", "forgets"))
    zygote = Zygote(hide=(course.root,))
    try:
        with pytest.raises(GraderFault, match="before verifying it"):
            grade_submission(SOLUTIONS, course.assignment(course.notebook_name("softmax")), zygote, select="softmax")
    finally:
        zygote.close()


@pytest.mark.slow
@sandboxed
@pytest.mark.parametrize("hole", ["raises", "fixture_raises"])
def test_a_check_whose_own_code_raises_is_a_grader_fault(tmp_path, hole):
    """A suite whose own code raises (a KeyError of its author's, in a check or in its fixture) makes the grading a
    grader fault naming the check's exercise, file and line, for the references too: it was every student's failed
    check, "KeyError while checking your result", recorded as final (instructor walk-through 7, review 11)."""
    course = load_course(course_with_hole(tmp_path / "course", hole))
    zygote = Zygote(hide=(course.root,))
    try:
        with pytest.raises(GraderFault, match=r"a check of softmax raised KeyError \(hidden_softmax\.py, line \d+\): "
                                              r"a bug in the course's test code"):
            grade_submission(SOLUTIONS, course.assignment(course.notebook_name("softmax")), zygote, select="softmax")
    finally:
        zygote.close()


@pytest.mark.slow
@sandboxed
def test_grader_grade_out_of_its_memory_is_a_grader_fault(tmp_path):
    """``grader grade`` bounds its own memory: a check with a hole that hoards 3 GiB for this submission stops at the
    bound (HEADROOM_MB above what the process maps), exits 3 (a grader fault, grade again) and writes no results;
    without the bound it took the 3 GiB and recorded a grade."""
    course = course_with_hole(tmp_path / "course", "hoards")
    out = tmp_path / "results.json"
    script = ("import sys\nfrom grader.cli import main\ncode = main(sys.argv[1:])\n"
              "print(code, next(int(line.split()[1]) // 1024 for line in open('/proc/self/status') if line.startswith('VmHWM:')))\n")
    done = subprocess.run([sys.executable, "-c", script, "grade", str(hostile(tmp_path / "submission")), "--out",
                           str(out), "--course", str(course), "--assignment", "02_softmax"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    code, peak_mib = map(int, done.stdout.split()[-2:])
    assert code == 3 and not out.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    assert "ran out of memory" in done.stderr
    assert peak_mib < MAPPED_MIB + HEADROOM_MB, peak_mib


@pytest.mark.slow
@sandboxed
def test_a_batch_job_out_of_its_memory_costs_only_that_submission(tmp_path):
    """In a batch, the job process that runs out of its memory bound dies as a job that crashes does: every
    classmate is graded, and the submission is graded again alone, then recorded as could not be graded (not final,
    so the next run tries again); it used to take the 3 GiB, in the job that grades the classmates next."""
    course = course_with_hole(tmp_path / "course", "hoards")
    submissions = tmp_path / "class"
    hostile(submissions / "hoarder")
    for student in ("ann", "bob"):
        shutil.copytree(SOLUTIONS, submissions / student, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    rows = {r["student"]: r for r in run_batch(submissions, tmp_path / "out", course_file=course, jobs=2)}
    assert {s: (r["status"], r["score"]) for s, r in rows.items() if s != "hoarder"} == {
        "ann": ("graded", TOTAL), "bob": ("graded", TOTAL)}
    assert rows["hoarder"]["status"] == f"error: {PROCESS_DIED}" and "fingerprint" not in rows["hoarder"]
    assert set(rows["ann"]["exercises"]) == set(MODULES)
