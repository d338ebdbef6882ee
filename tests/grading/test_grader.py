"""The grading engine end to end (issue 3): intake -> sandboxed worker -> hidden suites -> scores -> results.

Submissions are built in tmp_path from solutions/ with one file replaced. They are graded
through ``grader.grade.grade_submission`` and the real hidden suites, with one zygote for
the module, and ``python -m grader grade`` is run for the command line's contract.
Cases with a hang use a copy of course.yaml with ``call_seconds: 2``.
"""
from __future__ import annotations

import builtins
import gc
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import jsonschema
import pytest
import torch
from courses import MODULES, course_variant

from grader import ROOT, memory
from grader.course import COURSE_FILE, CourseError, load_course
from grader.grade import grade_submission
from grader.intake.submission import stage
from grader.reports.results import RESULTS_SCHEMA
from grader.sandbox.host.client import CHECK, WorkerSession, Zygote
from grader.sandbox.host.problems import GraderFault, StudentError, SubmissionProblem
from grader.sandbox.host.proxy import load_params_step
from grader.sandbox.host.zygote import ZygoteGone
from grader.suites.checks import checked
from grader.suites.plugin import run_suites

pytestmark = pytest.mark.slow

SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
CALL_SECONDS = 2

BUGGY_SOFTMAX = '''import torch


def softmax(x, dim=-1, temperature=1.0):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    e = torch.exp(x / temperature)
    return e / e.sum(dim=0, keepdim=True)  # the bug: always normalizes dim 0
'''
HANGING_CONTEXT = '''import torch


def attention_weights(x):
    while True:
        pass


def context_vectors(x):
    while True:
        x = x + 0
'''
SEGFAULTING_DICTIONARY = '''import ctypes

import torch


def one_hot(index, n):
    ctypes.string_at(0)


def attention(Q, K, V, temperature=1.0):
    ctypes.string_at(0)


def lookup(table, key, temperature):
    ctypes.string_at(0)
'''
SYNTAX_ERROR_LINE = 7  # of the broken qkv.py below
NOT_IMPORTABLE_LINE = 3  # of the broken causal.py below
NOT_IMPORTABLE_CAUSAL = '''"""Exercise 7, with an import that cannot work."""
import torch
import numpyy as np


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()
'''


def broken_qkv() -> str:
    lines = (SOLUTIONS / "qkv.py").read_text().splitlines()
    lines[SYNTAX_ERROR_LINE - 1] = "def oops(x:"
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def private_tmp(tmp_path_factory):
    """The grader's temporary folders (stage() makes /tmp/grader-* ones) go here, checked empty after each case."""
    folder = tmp_path_factory.mktemp("grader-tmp")
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    yield folder
    tempfile.tempdir = saved


@pytest.fixture(scope="module")
def zygote(private_tmp):
    z = Zygote()
    yield z
    z.close()


@pytest.fixture(scope="module")
def course():
    return load_course()


@pytest.fixture(scope="module")
def quick_course(tmp_path_factory):
    """A copy of course.yaml with call_seconds: 2, loaded with load_course."""
    text = re.sub(r"(?m)^(\s*call_seconds:)\s*[0-9.]+", rf"\g<1> {CALL_SECONDS}", COURSE_FILE.read_text(encoding="utf-8"))
    loaded = load_course(course_variant(tmp_path_factory.mktemp("course"), text))
    assert loaded.grading.limits.call_seconds == CALL_SECONDS
    return loaded


@pytest.fixture(autouse=True)
def nothing_left_behind(request, private_tmp):
    yield
    if "zygote" in request.fixturenames:
        assert not list(private_tmp.glob("grader-*")), "a staged submission folder was left behind"


def submission(tmp_path: Path, name: str = "submission", **replaced: str) -> Path:
    """solutions/ copied to tmp_path/name, with the given modules' sources replaced."""
    folder = tmp_path / name
    folder.mkdir()
    for module in MODULES:
        source = replaced.get(module)
        if source is None:
            shutil.copy(SOLUTIONS / f"{module}.py", folder / f"{module}.py")
        else:
            (folder / f"{module}.py").write_text(source, encoding="utf-8")
    return folder


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def only(course, module: str):
    """The course trimmed to one exercise: the assignment of its notebook."""
    return course.assignment(course.notebook_name(module))


def grade(path: Path, course, zygote, module: str | None = None) -> dict:
    """Grade ``path`` (everything, or only ``module``); results.json's data, checked against the schema,
    the time limit, and the submission left as it was."""
    before = tree_hash(path)
    started = time.monotonic()
    outcome = grade_submission(path, only(course, module) if module else course, zygote, select=module)
    elapsed = time.monotonic() - started
    assert elapsed < course.grading.limits.submission_seconds
    assert tree_hash(path) == before, "the submission was modified"
    jsonschema.validate(outcome.results, RESULTS_SCHEMA)
    assert outcome.results["score"] == pytest.approx(sum(e["score"] for e in outcome.results["exercises"].values()))
    return outcome.results


def feedback(results: dict, module: str) -> str:
    lines = [t["output"] for t in results["tests"] if module in t.get("tags", [])]
    return "\n".join(lines + [line for line in results["output"].splitlines() if line.startswith(f"{module}:")])


def assert_only(results: dict, module: str, at_most: float = 0.0):
    """``module`` scores at most ``at_most``; every other exercise has full marks."""
    exercises = results["exercises"]
    assert set(exercises) == set(MODULES)
    assert exercises[module]["score"] <= at_most, feedback(results, module)
    for name, exercise in exercises.items():
        if name != module:  # (approx: scores.py rounds each test's share before adding them up)
            assert exercise["score"] == pytest.approx(exercise["max_score"], abs=0.01), f"{name}: {feedback(results, name)}"


# ---------------------------------------------------------------- the references and the stubs


def test_solutions_get_full_marks_on_every_exercise(tmp_path, zygote, course):
    """solutions/ graded as a submission: every exercise has full marks, and every test passes, each under a name of
    its own (a parametrized check's cases are told apart by their labels: "... (x100, float32).")."""
    results = grade(SOLUTIONS, course, zygote)
    names = [t["name"] for t in results["tests"]]
    assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
    assert "softmax: Scores times 100 (float32, float64) and around 1e4 (float32) give finite weights at temperatures " \
           "1, 0.5 and 2 (x100, float32)." in names
    assert sum(name.startswith("causal: float16 and bfloat16") and name.endswith("(bfloat16).") for name in names) == 1
    from grader.reports.feedback import write_feedback
    assert write_feedback(dict(results, student="ref"), tmp_path) is None
    page = (tmp_path / "feedback" / "ref.md").read_text(encoding="utf-8")
    assert "temperatures 1, 0.5 and 2 (x100, float32)." in page and "temperatures 1, 0.5 and 2 (x100, float64)." in page
    for module, exercise in results["exercises"].items():
        assert exercise["score"] == exercise["max_score"], f"{module}: {feedback(results, module)}"
    assert results["score"] == results["max_score"] == course.total_points
    assert all(t["status"] == "passed" for t in results["tests"]), [t for t in results["tests"] if t["status"] != "passed"][:3]


def test_keyed_dropout_is_a_function_of_each_value_alone():
    """Under KeyedDropout every dropout (the module, F.dropout, torch.dropout, in place or not) drops the same
    values whatever the tensor's layout, draws nothing, scales the kept ones by 1 / (1 - p) and is off in eval mode."""
    from grader.sandbox.dropout import KeyedDropout
    weights = torch.softmax(torch.randn(2, 3, 5, 5, dtype=torch.float64), dim=-1)
    module = torch.nn.Dropout(0.5)
    state = torch.random.get_rng_state()
    with KeyedDropout():
        dropped = module(weights)
        layouts = [torch.nn.functional.dropout(weights.permute(0, 2, 3, 1).contiguous(), 0.5).permute(0, 3, 1, 2),
                   torch.dropout(weights.flatten(0, 1), 0.5, True).view_as(weights),
                   torch.nn.Dropout(0.5, inplace=True)(weights.mT.clone()).mT]
        off = [module.eval()(weights), torch.nn.functional.dropout(weights, 0.5, training=False)]
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(other, dropped) for other in layouts)
    assert all(torch.equal(other, weights) for other in off)
    kept = dropped != 0
    assert 0.3 < kept.double().mean() < 0.7
    assert torch.allclose(dropped[kept], 2 * weights[kept])


AFTER_WARM_UP = """
import sys, time
import torch
from grader.sandbox.dropout import KeyedDropout
from grader.sandbox.jail.worker import Watch
from grader.sandbox.jail.zygote import _warm
_warm()
before, meta = set(sys.modules), lambda *shape: torch.empty(*shape, device="meta")
layer = torch.nn.Linear(4, 4)
with Watch(frozenset({"softmax"})), KeyedDropout():
    started = time.process_time()
    x = (meta(2, 3, 3) * 2.0 - 1).exp().sqrt().masked_fill(meta(3, 3).bool().tril(), float("-inf"))
    torch.nn.functional.dropout(torch.softmax(x.float() / 2, dim=-1), 0.1) @ layer.to("meta")(meta(2, 3, 4))
    for dtype in (torch.float64, torch.float16, torch.bfloat16):
        y = torch.randn(2, 3, dtype=dtype, requires_grad=True)
        (y.softmax(-1) @ y.mT).tril().backward(torch.ones(2, 2, dtype=dtype))
    seconds = time.process_time() - started
print(sorted(name for name in set(sys.modules) - before if name.startswith(("torch", "sympy"))), seconds)
"""


SUBCLASS_DOOR = """
import torch
from grader.sandbox.jail.worker import Watch
class Door(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch.softmax(torch.ones(3), -1)
door, plain = Watch(frozenset({"softmax", "dot"})), Watch(frozenset({"softmax", "dot"}))
with door:
    torch.empty(0).as_subclass(Door).neg()
with plain:
    torch.nn.Parameter(torch.ones(2)).neg()
print(sorted(door.seen), sorted(plain.seen))
"""


def test_a_tensor_subclass_of_the_students_stands_for_every_watched_call():
    """A call on a tensor subclass of the student's, whose own __torch_function__ runs unwatched (red team 20:
    torch.softmax inside one scored full marks), is seen as every watched call; torch's own (nn.Parameter) is not."""
    seen = subprocess.run([sys.executable, "-c", SUBCLASS_DOOR], capture_output=True, text=True, check=True).stdout
    assert seen.strip() == "['dot', 'softmax'] []"


def test_a_worker_never_imports_what_torch_imports_lazily():
    """After the zygote's warm-up, the calls a grade makes (meta tensors, half precision, backward, dropout, under the
    watch) import nothing more of torch: no worker pays an import (torch._dynamo alone is ~0.8 s) inside a timed call."""
    imported, seconds = subprocess.run([sys.executable, "-c", AFTER_WARM_UP], capture_output=True, text=True,
                                       check=True).stdout.rsplit(" ", 1)
    assert imported == "[]"
    assert float(seconds) < 0.2  # a lazy import of torch._dynamo or sympy takes several times that


WARM_UP_ON_A_BUILD = """
import sys, torch
from grader.sandbox.jail.zygote import _warm
torch.version.cuda = sys.argv[1] or None
backwards = []
torch.autograd.backward = lambda *args, **kwargs: backwards.append(1)
_warm()
print(len(backwards))
"""


@pytest.mark.parametrize("build, backwards", [("", "1"), ("13.0", "0")])
def test_the_warm_up_starts_no_autograd_engine_on_a_cuda_build(build, backwards):
    """The zygote's warm-up runs a backward on a CPU build of torch only: on a CUDA build the autograd engine's first
    backward starts CUDA's driver, and no worker forked from the zygote could start CUDA after that."""
    done = subprocess.run([sys.executable, "-c", WARM_UP_ON_A_BUILD, build], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [backwards]


def test_the_gpu_is_asked_of_nvml_not_of_cuda(monkeypatch):
    """gpu_present() asks torch with PYTORCH_NVML_BASED_CUDA_CHECK=1 (which does not start CUDA in the grading process,
    whose forked jobs could not start it then), and leaves that variable as it found it."""
    from grader.grade import NVML_CHECK, gpu_present
    seen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: seen.append(os.environ.get(NVML_CHECK)) or True)
    for before in (None, "0"):
        if before is None:
            monkeypatch.delenv(NVML_CHECK, raising=False)
        else:
            monkeypatch.setenv(NVML_CHECK, before)
        assert gpu_present() is True
        assert os.environ.get(NVML_CHECK) == before
    assert seen == ["1", "1"]


def test_every_submission_is_graded_on_the_same_list_of_tests(tmp_path, zygote, course):
    """The references, the stubs and a submission with a missing and a broken file are graded on one list of tests
    with the same points each (half precision included: torch computes float16 and bfloat16 on the CPU too)."""
    folder = submission(tmp_path, causal=NOT_IMPORTABLE_CAUSAL)
    (folder / "multihead.py").unlink()
    lists = [[(t.name, t.max_score) for t in grade_submission(path, course, zygote).grade.tests]
             for path in (SOLUTIONS, EXERCISES, folder)]
    assert lists[0] == lists[1] == lists[2]
    assert all(score > 0 for _, score in lists[0])
    assert [name for name, _ in lists[0] if "half_precision" in name]


def test_the_shared_properties_are_reported_under_each_exercise(zygote, course):
    """The contract suite checks the shared properties once for all exercises: each case counts for its own
    exercise, under a name unique there, and a student reads the property, not a test's name."""
    tests = grade_submission(SOLUTIONS, course, zygote, select="hidden_contract").grade.tests
    for exercise in (e.module for e in course.exercises):
        names = [t.name for t in tests if t.exercise == exercise]
        assert len(set(names)) == len(names)
        assert all(name.startswith("hidden_contract.py::test_") and f"[{exercise}" in name for name in names), names
        for prop in ("float64_kept", "device_kept", "autograd", "inputs_not_modified"):
            assert f"hidden_contract.py::test_{prop}[{exercise}]" in names
        assert [t.name for t in tests if t.exercise == exercise and "half_precision" in t.name] == [
            f"hidden_contract.py::test_half_precision[{exercise}-{dtype}]" for dtype in ("float16", "bfloat16")]
    assert all(t.doc.endswith(".") and t.weight == 1 for t in tests)
    assert {t.doc for t in tests if "float64_kept" in t.name} == {
        "float64 inputs (and modules) give float64 results at float64 precision."}


# ---------------------------------------------------------------- the CUDA path, checked on the CPU


def test_a_worker_whose_cuda_cannot_start_is_a_grader_fault(monkeypatch, private_tmp, course):
    """A worker asked for CUDA where CUDA cannot start (no device, no driver, a CPU build of torch) is the grader's
    fault, said as such and never scored: not "your code exited while starting". CUDA_VISIBLE_DEVICES="" hides any
    GPU, so this holds on every machine. The message says what the worker had (open files, threads and their limits)
    and how many processes its uid has on the machine: an H200 refused CUDA with "OS call failed" to workers whose
    uid was full of zombies."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    zygote = Zygote()
    try:
        session = WorkerSession(zygote, str(SOLUTIONS), course.grading.limits, device="cuda")
        with pytest.raises(GraderFault, match="CUDA did not start"):
            session.run({"module": "softmax", "path": ["softmax"]}, (torch.ones(3),))
        assert session.fault and "CUDA did not start" in session.fault
        assert re.search(r"\d+ open files of (\d+|unlimited); \d+ threads, (\d+|unlimited) processes of its uid at most",
                         session.fault)
        assert re.search(r"uid \d+ has \d+ tasks? on this machine, \d+ of them zombies", session.fault), session.fault
    finally:
        zygote.close()


def test_a_sandbox_stopped_from_outside_is_a_grader_fault(zygote, tmp_path, course):
    """A worker's supervisor killed by a signal the student's code cannot send (its own signals are the supervisor's
    exit status), sent to the grading's process group from outside, is a grader fault: graded again, never the
    student's failed check (walk-through 8: a dropped session's SIGHUP cost a student a check, recorded as final)."""
    folder = tmp_path / "napping"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    with (folder / "scores.py").open("a", encoding="utf-8") as file:
        file.write("\n\ndef nap(seconds):\n    import time\n    time.sleep(seconds)\n    return seconds\n")
    os.chmod(tmp_path, 0o755)
    session = WorkerSession(zygote, str(folder), course.grading.limits)
    session.run({"module": "scores", "path": ["nap"]}, (0.0,))
    threading.Timer(0.5, os.kill, (session.pid, signal.SIGUSR1)).start()
    with pytest.raises(GraderFault, match=f"stopped by signal {int(signal.SIGUSR1)} from outside the grading"):
        session.run({"module": "scores", "path": ["nap"]}, (5.0,))
    assert session.fault


PLACED = """
import sys, torch
from grader.sandbox.jail import worker
worker.SUBMISSION = sys.argv[1]
student = worker.Worker(sys.argv[2])


def call(name, *args, **options):
    return student.call({"target": {"module": "plain", "path": [name]}, "args": list(args), **options}, lambda v: v, [])["value"]


seeded = call("Seeded", seed=3, as_on_cpu=True)
torch.manual_seed(3)
print(student.modules["plain"].AT_IMPORT.device, call("Plain").mask.device, call("made").device,
      seeded.w.device, torch.equal(seeded.w, torch.rand(2)), call("made", torch.empty(2, device="meta")).device,
      call("Plain", as_on_cpu=True).mask.device, call("made", seed=4).device)
moved = []
worker._on_the_cpu = lambda value: moved.append(value) or value  # a meta tensor cannot be copied to the CPU
call("made"), call("made", 1), call("made", [[torch.empty(1)]]), call("made", kwargs={"device": "cpu"}), call("Plain")
print(*(getattr(value, "shape", type(value).__name__) for value in moved))
"""

PLAIN_TENSORS = """import torch

AT_IMPORT = torch.zeros(1)


class Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mask = torch.ones(2, 2)  # a plain attribute: .to(device) leaves it where it was made


class Seeded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(2))


def made(x=None, device=None):
    return torch.tensor(2.0)  # a scalar, as in x / torch.tensor(d_k) ** 0.5
"""


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_student_code_makes_its_tensors_on_the_grading_device(tmp_path, device):
    """A tensor a submission makes without naming a device (at import, in __init__, in a call) is made on the device
    being graded on, as it is on the CPU: a mask kept as a plain attribute scores the same on a GPU as on the CPU
    (it lost every values check on an H200 only), a seeded call too (dropout_off_in_eval's). Calls given meta tensors
    run as on the CPU whatever the device, and so do those the grading process asks so (as_on_cpu: a seeded
    construction, whose parameters must be the CPU generator's draws as the reference's are; the meta rule's
    construction): the meta rule judges device handling the same everywhere (a CPU scalar beside meta tensors
    passes). The result of a call whose arguments hold no tensor and name no device (causal_mask(T), quiz_answer())
    comes back on the CPU, as outside grading (it failed the values checks on an H200 only). The meta device stands in
    for CUDA here (where nothing can be copied out of it, a spy tells what would be moved)."""
    (tmp_path / "plain.py").write_text(PLAIN_TENSORS, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", PLACED, str(tmp_path), device], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    placed, moved = done.stdout.splitlines()
    assert placed.split() == [device] * 3 + ["cpu", "True", "cpu", "cpu", device]
    # What a call names no device for, no tensor and no device among its arguments, is judged as on the CPU.
    assert moved.split() == ([] if device == "cpu" else ["torch.Size([])", "torch.Size([])", "Plain"])


def test_the_device_is_resolved_before_grading(monkeypatch):
    """auto is cuda where torch sees a GPU and cpu elsewhere; cuda without one, or another name, is a one-line error."""
    from grader.grade import DeviceError, resolve_device
    for present, expected in ((True, "cuda"), (False, "cpu")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda present=present: present)
        assert resolve_device("auto") == expected and resolve_device("cpu") == "cpu"
    with pytest.raises(DeviceError, match="--device cuda was asked for, but torch sees no CUDA device here"):
        resolve_device("cuda")
    with pytest.raises(DeviceError, match="unknown device 'xla'"):
        resolve_device("xla")


def test_the_list_of_tests_and_their_points_do_not_depend_on_the_device(monkeypatch, course):
    """The suites collect the same tests, with the same weights and kinds, for cpu and cuda, and none of them asks
    torch.cuda or compares a device with "cuda": nothing is left out or paid differently on another device."""
    from grader.suites.plugin import PLUGINS, GradingPlugin, importable, suite_args, suite_files
    monkeypatch.setattr(sys, "path", list(sys.path))
    importable(course)
    collected = {}
    for device in ("cpu", "cuda"):
        plugin = GradingPlugin(WorkerSession(None, str(SOLUTIONS), course.grading.limits, device=device), course, device)
        args = [*suite_args(suite_files(course), course.suites_dir), "--collect-only"]
        assert pytest.main(args, plugins=[*PLUGINS, plugin]) == 0
        collected[device] = plugin._about
    assert collected["cpu"] == collected["cuda"] and len(collected["cpu"]) > 100
    import ast
    for path in suite_files(course):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            assert not (isinstance(node, ast.Attribute) and node.attr == "cuda"), f"{path.name}, line {node.lineno}"
            assert not (isinstance(node, ast.Constant) and node.value == "cuda"), f"{path.name}, line {node.lineno}"


def test_a_suite_with_skip_or_xfail_marks_is_refused(tmp_path, course, monkeypatch):
    """Grading leaves pytest's skipping plugin out: a suite whose test carries such a mark is refused, naming it."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # collecting the suite puts its folder on it
    course = load_course(course_variant(tmp_path / "course", COURSE_FILE.read_text(encoding="utf-8")))
    suite = course.suites_dir / "hidden_marked.py"
    suite.write_text("import pytest\n\npytestmark = pytest.mark.softmax\n\n\n"
                     "@pytest.mark.skipif(True, reason='never')\ndef test_skipped(student):\n    pass\n")
    with pytest.raises(CourseError, match="hidden_marked.py::test_skipped: a suite skips with pytest.skip"):
        run_suites(WorkerSession(None, str(tmp_path), course.grading.limits), course, "cpu", suites=[suite])


def test_stubs_get_zero_on_every_exercise(zygote, course):
    """exercises/ (the stubs) graded as a submission: 0 on every exercise, every failure saying what to do; only the
    import rule holds (a stub imports torch alone), and earns nothing."""
    results = grade(EXERCISES, course, zygote)
    assert set(results["exercises"]) == set(MODULES)
    assert all(e["score"] == 0 for e in results["exercises"].values()), results["exercises"]
    assert results["score"] == 0
    passed = [test for test in results["tests"] if test["status"] == "passed"]
    assert len(passed) == len(MODULES) and all("The file imports only" in t["name"] and t["score"] == 0 for t in passed)
    for test in results["tests"]:
        if test in passed:
            continue
        assert test["status"] == "failed", test
        assert "not implemented yet" in test["output"] or "checked once the values are right" in test["output"], test


# ---------------------------------------------------------------- one exercise broken, each way


@pytest.fixture(scope="module")
def buggy(zygote, course, tmp_path_factory):
    """A submission whose softmax normalizes the wrong dim, graded once (the determinism test grades it again)."""
    path = submission(tmp_path_factory.mktemp("buggy"), softmax=BUGGY_SOFTMAX)
    return path, grade(path, course, zygote)


def test_a_wrong_exercise_loses_only_its_own_points(buggy):
    """A softmax with a bug loses points of softmax only (some of its tests may still pass)."""
    _, results = buggy
    exercise = results["exercises"]["softmax"]
    assert_only(results, "softmax", at_most=exercise["max_score"] - 1)
    failed = [t for t in results["tests"] if "softmax" in t["tags"] and t["status"] == "failed"]
    assert failed and all(t["output"] for t in failed)


def test_an_endless_loop_loses_only_its_exercise_within_the_limits(tmp_path, zygote, quick_course):
    """Endless loops in context.py: context scores 0, each check says the code was stopped after call_seconds,
    every other exercise has full marks, and the whole run stays far within the limits (each looping function
    is waited for once, not once per check)."""
    started = time.monotonic()
    results = grade(submission(tmp_path, context=HANGING_CONTEXT), quick_course, zygote)
    elapsed = time.monotonic() - started
    assert_only(results, "context")
    assert f"ran for more than {CALL_SECONDS} s" in feedback(results, "context")
    for test in results["tests"]:
        if "context" in test["tags"] and "The file imports only" not in test["name"]:  # the rule is read, not run
            assert "ran for more than" in test["output"], test
    assert elapsed < 2 * CALL_SECONDS + 60, f"{elapsed:.1f} s"
    assert elapsed < quick_course.grading.limits.submission_seconds


SLOW_DICTIONARY = (SOLUTIONS / "dictionary.py").read_text(encoding="utf-8") + """
import time as _time


def _slowed(function):
    def slow(*args, **kwargs):
        _time.sleep(0.4)  # right results, each call well within call_seconds
        return function(*args, **kwargs)
    return slow


one_hot, attention, lookup = _slowed(one_hot), _slowed(attention), _slowed(lookup)
"""


def test_an_exercise_whose_calls_are_slow_spends_only_its_own_share_of_the_time(tmp_path, zygote, quick_course):
    """dictionary.py right but slow (0.4 s a call, within call_seconds) under a submission budget of 36 s: once its
    checks have spent its share (36 s / 9: a share for each exercise, and one for the start and the grading process)
    its remaining checks fail saying so, and every other exercise, the shared contract's checks last among them, keeps
    full marks (red team 17: the slow exercise spent the whole budget, and the correct exercises checked after it lost
    points, where the cut fell depending on the machine)."""
    course = load_course(course_variant(tmp_path / "course", re.sub(
        r"(?m)^(\s*submission_seconds:)\s*[0-9.]+", r"\g<1> 36", quick_course.file.read_text(encoding="utf-8"))))
    assert course.grading.limits.submission_seconds == 36
    results = grade(submission(tmp_path, dictionary=SLOW_DICTIONARY), course, zygote)
    assert_only(results, "dictionary", at_most=course.exercises[course.modules.index("dictionary")].points - 1)
    assert "the checks of dictionary took more than its 4 s of your code's time in all" in feedback(results, "dictionary")


def test_an_exercise_that_crashes_the_worker_pays_its_restarts(tmp_path, zygote, quick_course):
    """qkv.py's functions crash the worker, and every module takes 0.5 s to import, under a submission budget of 40 s:
    each restart (its imports included) is charged to qkv's share (40 s / 9), so its later checks fail fast and every
    other exercise keeps full marks (red team 18: the restarts came out of the whole budget, and the exercises
    checked last lost their points, 17.3 of 100 in all)."""
    course = load_course(course_variant(tmp_path / "course", re.sub(
        r"(?m)^(\s*submission_seconds:)\s*[0-9.]+", r"\g<1> 40", quick_course.file.read_text(encoding="utf-8"))))
    slow = "import time as _time\n_time.sleep(0.5)\n"
    sources = {module: slow + (SOLUTIONS / f"{module}.py").read_text(encoding="utf-8") for module in MODULES}
    sources["qkv"] = slow + "import os\n" + "".join(f"def {name}(*args, **kwargs):\n    os._exit(1)\n\n\n" for name in (
        "project", "scaled_dot_product_attention", "copy_linear_weights")) + (
        "class SelfAttention:\n    def __init__(self, *args, **kwargs):\n        os._exit(1)\n\n\n"
        "class SelfAttentionLinear(SelfAttention):\n    pass\n")
    results = grade(submission(tmp_path, **sources), course, zygote)
    exercises = results["exercises"]
    for name in set(MODULES) - {"qkv"}:  # the import rule fails for `import time` alone (each its small share)
        failed = [t["name"] for t in results["tests"] if name in t["tags"] and t["status"] == "failed"]
        assert all("imports only" in failed_name for failed_name in failed), (name, failed, feedback(results, name))
    assert exercises["qkv"]["score"] == 0


def test_the_watch_remembers_the_names_of_the_functions_it_sees_but_no_transient_one():
    """The watch names a call by its function's __name__, kept by identity for the functions it sees again, never for
    a method-wrapper made anew for each call (a property's __get__: review 13, 4096 of them filled the table)."""
    from grader.sandbox.jail import worker

    x = torch.ones(2)
    with worker.Watch(frozenset({"softmax", "__get__"})) as watch:
        torch.softmax(x, 0)
        assert x.shape == x.shape
    assert watch.seen == {"softmax", "__get__"} and watch.count == 3
    assert worker.CALL_NAMES[id(torch.softmax)] == (torch.softmax, "softmax")
    assert not any(isinstance(function, worker.TRANSIENT) for function, _ in worker.CALL_NAMES.values())


def test_code_that_turns_the_checks_watch_off_gains_nothing(tmp_path, zygote, course):
    """dot computed with torch.dot inside torch.DisableTorchFunction (which turns off the worker's watch of the calls:
    red team 17, review 11) raises in the worker and breaks the import rule: it scores below the plain banned call."""
    source = (SOLUTIONS / "scores.py").read_text(encoding="utf-8").replace(
        "    return (a * b).sum()  # ()", "    with torch.DisableTorchFunction():\n        return torch.dot(a, b)")
    hidden = grade(submission(tmp_path, "hidden", scores=source), course, zygote, "scores")
    plain = grade(submission(tmp_path, "plain", scores=source.replace("    with torch.DisableTorchFunction():\n    ", "")),
                  course, zygote, "scores")
    assert hidden["exercises"]["scores"]["score"] < plain["exercises"]["scores"]["score"] < 10
    assert "torch.DisableTorchFunction is not available while grading" not in feedback(hidden, "scores")  # theirs
    assert "scores.py imports torch.DisableTorchFunction (line " in feedback(hidden, "scores")


def test_a_function_out_of_memory_is_not_called_again(tmp_path, zygote, course):
    """softmax raising MemoryError (a terabyte asked for): softmax scores 0, the first failing check names the
    MemoryError, every later one says softmax is not called again, and the rest is unharmed."""
    source = "def softmax(x, dim=-1, temperature=1.0):\n    return bytearray(1 << 40)\n"
    results = grade(submission(tmp_path, softmax=source), course, zygote)
    assert_only(results, "softmax")
    outputs = [t["output"] for t in results["tests"] if "softmax" in t["tags"] and t["status"] == "failed"]
    assert "MemoryError" in outputs[0], outputs[0]
    assert len(outputs) > 2 and all("softmax.softmax is not called again: in an earlier check it ran out of memory "
                                    "(MemoryError; a worker may use 4096 MB)" in o for o in outputs[1:]), outputs


def test_a_function_not_called_again_raises_a_new_problem_each_time(course):
    """Each later call of a function not called again fails at once, in the same words, with a problem of its own:
    the one kept is never raised (raised again and again, its traceback would keep every raise's frames)."""
    session = WorkerSession(None, str(ROOT / "solutions"), course.grading.limits, modules=("softmax",))
    kept = session.abandoned["softmax.softmax"] = SubmissionProblem("timeout", "softmax.softmax is not called again")
    raised = []
    for _ in range(3):
        with pytest.raises(SubmissionProblem, match="softmax.softmax is not called again") as info:
            session.run({"module": "softmax", "path": ["softmax"]}, (torch.ones(2),))
        raised.append(info.value)
    assert len({id(problem) for problem in [kept, *raised]}) == 4 and kept.__traceback__ is None
    assert session.pid is None  # nothing was sent


def test_a_segfault_loses_only_its_exercise(tmp_path, zygote, quick_course):
    """Segfaults in dictionary.py: dictionary scores 0 with "crashed (segmentation fault)", the rest is unharmed."""
    results = grade(submission(tmp_path, dictionary=SEGFAULTING_DICTIONARY), quick_course, zygote)
    assert_only(results, "dictionary")
    assert "crashed (segmentation fault)" in feedback(results, "dictionary")


def test_a_syntax_error_loses_only_its_exercise_naming_file_and_line(tmp_path, zygote, course):
    """A syntax error in qkv.py: qkv scores 0, its problem names SyntaxError, the file and the line, once (it said
    "(qkv.py, line N) (qkv.py, line N: ...)")."""
    results = grade(submission(tmp_path, qkv=broken_qkv()), course, zygote)
    assert_only(results, "qkv")
    problem = next(line for line in results["output"].splitlines() if line.startswith("qkv:"))
    assert "SyntaxError" in problem and "qkv.py" in problem and f"line {SYNTAX_ERROR_LINE}" in problem, problem
    assert problem.count(f"line {SYNTAX_ERROR_LINE}") == 1, problem
    assert "def oops(x:" in problem  # the offending line itself


def test_an_import_error_loses_only_its_exercise_naming_file_and_line(tmp_path, zygote, course):
    """causal.py imports a module that does not exist: causal scores 0, the message names the error, file and line."""
    results = grade(submission(tmp_path, causal=NOT_IMPORTABLE_CAUSAL), course, zygote)
    assert_only(results, "causal")
    problem = next(line for line in results["output"].splitlines() if line.startswith("causal:"))
    assert "ModuleNotFoundError" in problem and "numpyy" in problem, problem
    assert "causal.py" in problem and f"line {NOT_IMPORTABLE_LINE}" in problem, problem


def test_an_import_error_is_said_once_in_every_output(tmp_path, zygote, course):
    """causal.py does not import: results.json (Gradescope's output and the tests' outputs), the terminal, the job
    summary and the feedback pages name the error and its line once; each check of causal says only that it did not
    run (the same points are lost), and the pages show them as one collapsed line."""
    import io

    from rich.console import Console

    from grader.reports.feedback import write_feedback
    from grader.reports.markdown import markdown_summary
    from grader.reports.terminal import print_summary
    from grader.suites.plugin import NOT_RUN

    outcome = grade_submission(submission(tmp_path, causal=NOT_IMPORTABLE_CAUSAL), course, zygote)
    results = dict(outcome.results, student="ann")
    causal = [t for t in results["tests"] if "causal" in t["tags"]]
    assert len(causal) > 10 and all(t["status"] == "failed" and t["score"] == 0 for t in causal)
    assert {t["output"] for t in causal} == {NOT_RUN.format(module="causal")}
    buffer = io.StringIO()
    print_summary(outcome.grade, Console(file=buffer, width=400, color_system=None))
    assert write_feedback(results, tmp_path) is None
    pages = [(tmp_path / "feedback" / f"ann.{kind}").read_text() for kind in ("md", "html")]
    gradescope = "\n".join([results["output"], *(t["output"] for t in results["tests"])])
    where = f"causal.py, line {NOT_IMPORTABLE_LINE}"
    for text in (gradescope, buffer.getvalue(), markdown_summary(outcome.grade), *pages):
        assert text.count(where) == 1 and text.count("No module named") == 1, text
    for page in pages:
        assert f"{len(causal)} checks not run for this reason" in page
    assert "<details><summary>" in pages[1] and causal[0]["name"].split(": ", 1)[1] in pages[1]


def test_missing_files_names_and_wrong_signatures_cost_only_their_points(tmp_path, zygote, course):
    """No multihead.py, a quiz.py without quiz_answer, a softmax without its ``dim`` parameter: multihead scores 0
    ("not in the submission"), quiz and softmax lose points with messages naming the problem, the rest has full
    marks."""
    quiz = (SOLUTIONS / "quiz.py").read_text().replace("def quiz_answer(", "def quiz_answr(")
    softmax = (SOLUTIONS / "softmax.py").read_text()
    assert "def softmax(x, dim=-1, temperature=1.0):" in softmax
    softmax = softmax.replace("def softmax(x, dim=-1, temperature=1.0):", "def softmax(x, temperature=1.0):\n    dim = -1")
    folder = submission(tmp_path, quiz=quiz, softmax=softmax)
    (folder / "multihead.py").unlink()
    results = grade(folder, course, zygote)
    exercises = results["exercises"]
    assert exercises["multihead"]["score"] == 0 and "multihead.py is not in the submission" in feedback(results, "multihead")
    assert 0 < exercises["quiz"]["score"] < exercises["quiz"]["max_score"]
    assert "quiz.quiz_answer: not found in your code" in feedback(results, "quiz")
    assert exercises["softmax"]["score"] < exercises["softmax"]["max_score"]
    assert "TypeError" in feedback(results, "softmax") and "dim" in feedback(results, "softmax")
    for name in set(MODULES) - {"multihead", "quiz", "softmax"}:
        assert exercises[name]["score"] == pytest.approx(exercises[name]["max_score"], abs=0.01), name


def test_a_symlink_to_the_reference_is_not_graded(tmp_path, zygote, course):
    """softmax.py as a symbolic link to solutions/softmax.py is never followed: softmax scores 0 and says why."""
    folder = submission(tmp_path)
    (folder / "softmax.py").unlink()
    (folder / "softmax.py").symlink_to(SOLUTIONS / "softmax.py")
    results = grade(folder, course, zygote, "softmax")
    assert results["exercises"]["softmax"]["score"] == 0
    assert "symbolic link" in feedback(results, "softmax")


def test_a_batch_of_calls_builds_on_earlier_results(zygote, course):
    """One round trip builds a module, loads parameters into it and calls it; a failing call names its index in
    ``step``, and the calls that build on it are not run."""
    from solutions import qkv

    staged = stage(SOLUTIONS, course.grading.intake)
    session = WorkerSession(zygote, str(staged.directory), course.grading.limits)
    exchanges = []
    session._exchange = lambda *args, exchange=session._exchange: exchanges.append(args[2]) or exchange(*args)
    try:
        torch.manual_seed(1)
        reference = qkv.SelfAttention(3, 2)
        params = {name: p.detach() for name, p in reference.named_parameters()}
        x = torch.randn(4, 3)
        built = {"earlier": 0, "type": "SelfAttention"}
        made, loaded, out = session.run_many([({"module": "qkv", "path": ["SelfAttention"]}, (3, 2), None, {"handles": True}),
                                              load_params_step(built, params), (built, (x,), None, {})])
        assert exchanges.count(CHECK) == 1, exchanges
        assert made.value.type_name == "SelfAttention" and loaded.value is None
        assert torch.allclose(checked(out.value, reference(x).detach(), what="SelfAttention(x)", on="x"),
                              reference(x).detach())
        with pytest.raises(StudentError) as failure:
            session.run_many([({"module": "qkv", "path": ["SelfAttention"]}, ("three", 2), None, {"handles": True}),
                              load_params_step(built, params)])
        assert failure.value.step == 0 and isinstance(failure.value, TypeError)
        with pytest.raises(SubmissionProblem, match="does not have the shape asked for") as failure:
            session.run_many([({"module": "qkv", "path": ["SelfAttention"]}, (5, 2), None, {"handles": True}),
                              load_params_step(built, params), (built, (x,), None, {})])
        assert failure.value.step == 1
    finally:
        session.close()
        staged.cleanup()


class _SlowZygote:
    """A zygote whose spawn takes ``seconds`` and then fails, or hands over the real zygote's worker."""

    def __init__(self, real, seconds, fault=None):
        self.real, self.seconds, self.fault, self.spawns, self.pids = real, seconds, fault, 0, []

    def spawn(self, *args):
        time.sleep(self.seconds)
        self.spawns += 1
        if self.fault:
            raise GraderFault(self.fault)
        pid, sock = self.real.spawn(*args)
        self.pids.append(pid)
        return pid, sock

    def stop(self, *args, **kwargs):
        return self.real.stop(*args, **kwargs)

    def alive(self):
        return True


def test_an_early_start_runs_beside_the_caller_and_its_fault_comes_with_the_first_request(zygote, course):
    """``start_early`` returns at once; the first request waits for the start and raises what it raised (a grader
    fault stays a grader fault); with no request, ``stop`` waits for the start and raises nothing."""
    slow = _SlowZygote(zygote, 3.0, fault="the worker zygote stopped: test")
    session = WorkerSession(slow, str(SOLUTIONS), course.grading.limits)
    started = time.monotonic()
    session.start_early()
    assert time.monotonic() - started < 2.5 and slow.spawns == 0
    with pytest.raises(GraderFault, match="zygote stopped: test"):
        session.run({"module": "softmax", "path": ["softmax"]}, (torch.zeros(2),))
    assert slow.spawns == 1
    session.start_early()
    session.stop()  # nothing asked: the fault is for no request, and nothing is left running
    assert slow.spawns == 2 and session.pid is None


def test_an_early_start_is_stopped_whole_when_no_request_comes(zygote, course):
    """A worker started early and never asked anything is stopped by ``stop``, which waits for its start: no
    worker is left running."""
    slow = _SlowZygote(zygote, 0.3)
    session = WorkerSession(slow, str(SOLUTIONS), course.grading.limits)
    session.start_early()
    session.stop()
    assert session.pid is None and len(slow.pids) == 1 and not Path(f"/proc/{slow.pids[0]}").exists()
    session.start_early()
    value = session.run({"module": "softmax", "path": ["softmax"]}, (torch.zeros(3),)).value
    expected = torch.full((3,), 1 / 3)
    assert torch.allclose(checked(value, expected, what="softmax(x)", on="x"), expected) and session.pid == slow.pids[1]
    session.close()
    assert not Path(f"/proc/{slow.pids[1]}").exists()


def test_an_early_start_never_starts_a_zygote(private_tmp, course):
    """A zygote that died is started again by the first request, from the caller's thread, never by the early start's
    thread: its parent-death signal follows the thread that started it, and one started there died with that thread,
    mid-grade (a grader fault after every threaded batch job)."""
    gone = Zygote()
    gone.process.kill()
    gone.process.wait()
    session = WorkerSession(gone, str(SOLUTIONS), course.grading.limits)
    try:
        session.start_early()
        for attempt in range(2):
            value = session.run({"module": "softmax", "path": ["softmax"]}, (torch.zeros(2),)).value
            expected = torch.full((2,), 0.5)
            assert torch.allclose(checked(value, expected, what="softmax(x)", on="x"), expected)
            time.sleep(0.5)  # the early start's thread has ended: a zygote it started would be dying now
            assert gone.alive(), attempt
    finally:
        session.close()
        gone.close()


# ---------------------------------------------------------------- isolation of the grading process


def test_the_grading_process_never_imports_the_submission(tmp_path, zygote, course):
    """A quiz.py whose import leaves marks (builtins, os.environ, sys.modules, a file) is graded normally (right
    values; its imports of builtins, os and sys break the import rule alone), and none of the marks is found in the
    grading process; sys.modules holds no module from the submission."""
    mark = tmp_path / "imported-here"
    source = (ROOT / "tests" / "grading" / "hostile" / "marks" / "quiz.py").read_text()
    folder = submission(tmp_path, quiz=source.replace("PARAMS = {}\n", f"PARAMS = {{'mark': {str(mark)!r}}}\n"))
    results = grade(folder, course, zygote, "quiz")
    failed = [t for t in results["tests"] if "quiz" in t["tags"] and t["status"] != "passed"]
    assert [t["name"].split(":")[1].strip()[:21] for t in failed] == ["The file imports only"], feedback(results, "quiz")
    assert not hasattr(builtins, "GRADER_MARK")
    assert "GRADER_MARK" not in os.environ
    assert "GRADER_MARK" not in sys.modules
    assert not mark.exists()
    for name, module in list(sys.modules.items()):
        origin = str(getattr(module, "__file__", None) or "")
        assert not origin.startswith((str(folder), tempfile.gettempdir())), f"{name} was imported from {origin}"


def test_grading_is_deterministic(buggy, zygote, course):
    """The same buggy submission graded twice gets identical scores, test by test."""
    path, first = buggy
    second = grade(path, course, zygote)

    def summary(results):
        return (results["score"], results["exercises"], [(t["name"], t["status"], t["score"]) for t in results["tests"]])

    assert summary(first) == summary(second)


SUITES = ("softmax", "causal", "dictionary")  # three suites whose property tests the two tests below replay
DRAW_CASES = """
import copy
import sys
sys.path[:0] = {path!r}
import torch
import hidden_causal, hidden_dictionary, hidden_softmax
for test in (hidden_softmax.test_values, hidden_causal.test_no_peeking, hidden_dictionary.test_lookup_values):
    print(test.__name__, len(test.cases({seed})), repr(test.cases({seed})))
case = hidden_softmax.test_values.cases({seed})[0]["case"]
replays = [copy.deepcopy(case).randn(*case.shape) for _ in range(2)]
print(torch.equal(*replays), torch.equal(case.randn(*case.shape), case.randn(*case.shape)))
"""


def _suite_path(suites: Path) -> list[str]:
    """What a process needs on sys.path to import the three suites from ``suites`` (a copy of tests/course or it)."""
    return [str(ROOT), str(ROOT / "grader" / "suites" / "public"), str(suites), *(str(suites / m) for m in SUITES)]


def _drawn_in_a_new_process(seed: int) -> str:
    script = DRAW_CASES.format(path=_suite_path(ROOT / "tests" / "course"), seed=seed)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout


def test_property_tests_replay_the_same_cases_in_every_process():
    """The cases a property test replays depend on course.yaml's seed and the test alone, in any process;
    each replay of a case starts its generator afresh."""
    first, again, other_seed = _drawn_in_a_new_process(7), _drawn_in_a_new_process(7), _drawn_in_a_new_process(8)
    assert first == again
    assert first != other_seed
    lines = first.splitlines()
    assert [line.split()[:2] for line in lines[:3]] == [["test_values", "14"], ["test_no_peeking", "4"],
                                                         ["test_lookup_values", "8"]]
    assert lines[3] == "True False"  # each replay makes the same tensors; the case object itself draws on


KEPT_CASES = """
import sys
sys.path[:0] = {path!r}
from grader.suites import cases
drawn = []
draw = cases._draw
cases._draw = lambda *args: drawn.append(args[1]) or draw(*args)
import hidden_causal, hidden_dictionary, hidden_softmax
for test in (hidden_softmax.test_values, hidden_causal.test_no_peeking, hidden_dictionary.test_lookup_values):
    print(test.__name__, repr(test.cases(7)))
print("drawn by hypothesis:", " ".join(sorted(name.split(".")[0] + "." + name.split(".")[-1] for name in drawn)))
"""


def test_drawn_cases_are_kept_in_a_validated_file_per_suite_that_a_new_process_reads_instead_of_drawing(tmp_path):
    """The property tests' cases are drawn once per version of their suite: a new process reads them from the
    suite's cases file; a file holding anything but drawn values is ignored (the cases are drawn again and the file
    rewritten); a change to one suite draws its cases again, and no other suite's."""
    suites = tmp_path / "course"
    for module in SUITES:
        shutil.copytree(ROOT / "tests" / "course" / module, suites / module, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "tests" / "course" / "hints.py", suites / "hints.py")
    every = "drawn by hypothesis: test_causal.test_no_peeking test_dictionary.test_lookup_values test_softmax.test_values"

    def run() -> tuple[list[str], str]:
        script = KEPT_CASES.format(path=_suite_path(suites))
        lines = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()
        return lines[:3], lines[3]

    first, drawn = run()
    assert drawn == every
    assert run() == (first, "drawn by hypothesis: ")  # the same cases, none drawn
    kept, = (suites / "softmax" / "__pycache__").glob("cases-hidden_softmax-*.json")
    data = json.loads(kept.read_text())
    name, = data
    assert name.startswith("test_softmax.") and name.endswith(".test_values/14")
    data[name][0] = {
        "case": {"case": [{"dict": [["T", 3]]}, {"tuple": []}, "0; import os", 1.0, {"dict": []}]}}
    kept.write_text(json.dumps(data))
    assert run() == (first, "drawn by hypothesis: test_softmax.test_values")  # invalid: drawn again, the same cases
    assert run() == (first, "drawn by hypothesis: ")  # and the file was rewritten
    with open(suites / "softmax" / "hidden_softmax.py", "a") as suite:
        suite.write("\n# a change to one suite\n")
    assert run() == (first, "drawn by hypothesis: test_softmax.test_values")


def test_without_namespaces_grading_refuses_unless_the_code_is_trusted(private_tmp, course):
    """Where no namespace sandbox can be built (forced here with Zygote(namespaces=False)) the grader refuses
    (GraderFault, saying how to allow the sandbox) instead of producing a grade; for code one trusts
    (require_sandbox=False) workers get rlimits only and the grade says so in a warning."""
    degraded = Zygote(namespaces=False)
    try:
        with pytest.raises(GraderFault, match=r"sandbox could not be set up: no sandbox can be built here \(namespaces "
                                              r"turned off for this zygote.*--allow-unsandboxed"):
            grade_submission(SOLUTIONS, only(course, "quiz"), degraded, select="quiz")
        outcome = grade_submission(SOLUTIONS, only(course, "quiz"), degraded, require_sandbox=False, select="quiz")
        assert outcome.isolation.startswith("rlimits only"), outcome.isolation
        assert outcome.results["exercises"]["quiz"]["score"] == outcome.results["exercises"]["quiz"]["max_score"]
        assert "WARNING: no sandbox" in outcome.results["output"]
    finally:
        degraded.close()
    leftover = list(private_tmp.glob("grader-*"))
    for folder in leftover:  # (so that the autouse check does not report it a second time)
        shutil.rmtree(folder)
    assert not leftover, "the staged copy was not removed when the session ended in a GraderFault"


# ---------------------------------------------------------------- the command line


def run_cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "grade", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env={**os.environ, "TMPDIR": str(cwd), **(env or {})})


def test_cli_grades_and_writes_valid_results(tmp_path):
    """`python -m grader grade solutions --out ...` exits 0 and writes a results.json that validates."""
    out = tmp_path / "out" / "results.json"
    process = run_cli(str(SOLUTIONS), "--out", str(out), cwd=tmp_path)
    assert process.returncode == 0, (process.stdout + process.stderr)[-3000:]
    assert "Traceback" not in process.stdout + process.stderr
    results = json.loads(out.read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert results["score"] == pytest.approx(results["max_score"], abs=0.01)
    assert not list(tmp_path.glob("grader-*"))


FAILING_PLUGIN = """
import pytest



@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    raise AssertionError("failed by an installed plugin")
"""


def test_an_installed_pytest_plugin_never_changes_a_grade(tmp_path):
    """A pytest plugin installed beside the grader (here one that fails every test) is not loaded when grading."""
    site = tmp_path / "site"
    (site / "failing_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "failing_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: failing-plugin\nVersion: 1.0\n")
    (site / "failing_plugin-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nfailing = failing_plugin\n")
    (site / "failing_plugin.py").write_text(FAILING_PLUGIN)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    (tmp_path / "test_anything.py").write_text("def test_anything():\n    pass\n")
    plain = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_anything.py"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, **env})
    assert "failed by an installed plugin" in plain.stdout  # the plugin is live for pytest itself
    out = tmp_path / "results.json"
    process = run_cli(str(SOLUTIONS), "--out", str(out), cwd=tmp_path, env=env)
    assert process.returncode == 0, (process.stdout + process.stderr)[-3000:]
    assert json.loads(out.read_text())["score"] == pytest.approx(100, abs=0.01)


@pytest.mark.parametrize("case", ["nonexistent", "corrupt.zip", "empty-folder", "not-a-submission.txt"])
def test_cli_refuses_what_it_cannot_grade_in_one_line(tmp_path, case):
    """A path that does not exist, a corrupt zip, an empty folder, a stray file: non-zero exit, one line saying
    why, no traceback, no results file."""
    target = tmp_path / case
    if case == "corrupt.zip":
        target.write_bytes(b"PK\x03\x04 this is not really a zip file" * 10)
    elif case == "empty-folder":
        target.mkdir()
    elif case == "not-a-submission.txt":
        target.write_text("hello")
    out = tmp_path / "results.json"
    process = run_cli(str(target), "--out", str(out), cwd=tmp_path)
    assert process.returncode != 0
    lines = [line for line in (process.stdout + process.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("grader: "), lines
    assert case in lines[0]
    assert not out.exists()


LOOPED_SOFTMAX = '''import torch


def softmax(x, dim=-1, temperature=1.0):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    z = (x {op} temperature).movedim(dim, -1)
    rows = [(r - r.max()).exp() / (r - r.max()).exp().sum() for r in z.reshape(-1, z.shape[-1])]
    return torch.stack(rows).reshape(z.shape).movedim(-1, dim)
'''


@pytest.mark.parametrize("op, rule", [("/", "failed"), ("*", "not judged yet")])
def test_a_loop_is_judged_alike_whatever_the_values(tmp_path, zygote, course, op, rule):
    """A softmax looping over its rows fails the loop rule where its values are right; with the temperature multiplied
    too (wrong on every input, one sequence included), the rule waits for the values: judged on one sequence it held,
    and fixing the temperature then lost a rule the student was told they met (our reviewer)."""
    shutil.copytree(ROOT / "solutions", tmp_path / "sub", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "sub" / "softmax.py").write_text(LOOPED_SOFTMAX.format(op=op), encoding="utf-8")
    results = grade(tmp_path / "sub", course, zygote, "softmax")
    [vectorized] = [t for t in results["tests"] if "No Python loop" in t["name"]]
    assert vectorized["status"] == "failed"
    said = vectorized["output"]
    assert ("not judged yet" in said) == (rule == "not judged yet") and ("calls more tensor operations" in said) == (
        rule == "failed"), said


def test_the_collector_is_off_only_while_torch_and_the_suites_are_imported(tmp_path, zygote, course):
    """A one-shot grade imports with the collector off and has it back on, what it imported frozen, once the suites
    are collected; so does the zygote for its workers, which collect their own garbage."""
    folder = submission(tmp_path)
    (folder / "probe.py").write_text("import gc\n\n\ndef collector():\n"
                                     "    return [gc.isenabled(), gc.get_freeze_count() > 0]\n")
    session = WorkerSession(zygote, str(folder), course.grading.limits)
    try:
        assert session.run({"module": "probe", "path": ["collector"]}, ()).value == [True, True]
        memory.pause_collector()
        assert not gc.isenabled()
        frozen = gc.get_freeze_count()
        run_suites(session, course, "cpu", select="test_defaults")
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:  # this test process collects as before: nothing left paused or frozen
        memory.resume_collector()
        gc.unfreeze()
        gc.enable()
        session.stop()


def test_a_zygote_that_dies_while_asked_for_a_worker_is_as_one_found_dead(private_tmp, course):
    """A zygote that dies between the check that it lives and the request (its starting thread had just ended, the
    parent-death signal on its way: a grader fault after threaded jobs) is started again, or, for a caller that may not
    start one, ZygoteGone: no grader fault either way."""
    zygote = Zygote()
    try:
        for relaunch in (True, False):
            zygote.process.kill()
            zygote.process.wait()
            told = iter([True])  # the check before the request still finds it alive
            zygote.alive = lambda: next(told, zygote.process.poll() is None)
            if relaunch:
                pid, sock = zygote.spawn(str(SOLUTIONS), course.grading.limits, "cpu", False)
                assert zygote.process.poll() is None and pid > 0
                sock.close()
                zygote.stop(pid, 1.0, 5.0, True)
            else:
                with pytest.raises(ZygoteGone):
                    zygote.spawn(str(SOLUTIONS), course.grading.limits, "cpu", False, relaunch=False)
    finally:
        zygote.close()
