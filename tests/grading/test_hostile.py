"""Hostile submissions (issue 5): every trick in tests/grading/hostile/ is contained.

Each case copies solutions/ into a temporary folder, replaces one module (quiz.py) with a
hostile one from tests/grading/hostile/<trick>/ and grades it through the real pipeline and the real
hidden suites. For every case:

* the trick earns nothing: its exercise scores 0, as zeros of the right shape that follow every rule do
  (tests/grading/hostile/zeros, the ``baseline`` fixture: rules pay only with right results);
* where the case grades the whole submission, every other exercise gets full marks;
* the run ends well within the limits of the test course (course.yaml with call_seconds: 2);
* nothing is left behind: no /tmp/grader-* folder, no child of the zygote, no process the
  trick named with the case's token, no file at the host paths the trick targeted, and the
  submission folder is unchanged (hashed before and after);
* the grader's secret (an environment variable of the grading process) appears nowhere in
  results.json or in anything printed.

One zygote serves the whole module. Cases about a single exercise grade with ``select=``
and a course trimmed to that exercise; a few grade everything to show the rest is unharmed.
The last tests drive the wire and the proxy directly (hostile replies, half-sent frames, a
worker that stops reading).
"""
from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema
import pytest
from courses import MODULES, course_variant
from rich.console import Console

from grader import ROOT
from grader.course import COURSE_FILE, load_course
from grader.grade import grade_submission
from grader.intake.submission import stage
from grader.reports.results import RESULTS_SCHEMA
from grader.reports.terminal import print_summary
from grader.sandbox.host.client import WorkerSession, Zygote
from grader.sandbox.host.problems import UNREADABLE, StudentError
from grader.sandbox.host.proxy import Student
from grader.sandbox.jail import confine as sandbox

AVAILABLE, WHY = sandbox.probe()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not AVAILABLE, reason=f"no sandbox here: {WHY}")]

SOLUTIONS = ROOT / "solutions"
HOSTILE = ROOT / "tests" / "grading" / "hostile"
SECRET_NAME = "GRADER_TEST_SECRET"
SECRET = "grader-secret-" + secrets.token_hex(12)
CALL_SECONDS = 2
IMPORT_SECONDS = 3
SUBMISSION_SECONDS = 90
# A whole grading of a case must end within this (the course's own bound is SUBMISSION_SECONDS).
WALL_BOUND = 60


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def private_tmp(tmp_path_factory):
    """A private temporary folder for the grader's own (stage() makes /tmp/grader-* folders there),
    so that "nothing left behind" is checked without seeing other people's runs."""
    folder = tmp_path_factory.mktemp("grader-tmp")
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    yield folder
    tempfile.tempdir = saved


@pytest.fixture(scope="module")
def secret_env():
    """A secret in the grading process's environment, set before the zygote starts."""
    saved = os.environ.get(SECRET_NAME)
    os.environ[SECRET_NAME] = SECRET
    yield SECRET
    if saved is None:
        os.environ.pop(SECRET_NAME, None)
    else:
        os.environ[SECRET_NAME] = saved


@pytest.fixture(scope="module")
def zygote(secret_env, private_tmp, device, course):
    """The module's zygote, hiding the course's folder as `grader grade` does; it knows the device its cases grade on
    (``--device``), which the helpers below pass on."""
    z = Zygote(hide=(course.root,))
    z.device = device
    yield z
    z.close()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """course.yaml with call_seconds: 2, import_seconds: 3 (and a shorter submission budget), loaded with load_course."""
    text = COURSE_FILE.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^(\s*call_seconds:)\s*[0-9.]+", rf"\g<1> {CALL_SECONDS}", text)
    text = re.sub(r"(?m)^(\s*import_seconds:)\s*[0-9.]+", rf"\g<1> {IMPORT_SECONDS}", text)
    text = re.sub(r"(?m)^(\s*submission_seconds:)\s*[0-9.]+", rf"\g<1> {SUBMISSION_SECONDS}", text)
    loaded = load_course(course_variant(tmp_path_factory.mktemp("course"), text))
    assert (loaded.grading.limits.call_seconds, loaded.grading.limits.import_seconds) == (CALL_SECONDS, IMPORT_SECONDS)
    return loaded


@pytest.fixture(scope="module")
def baseline(zygote, course, tmp_path_factory) -> float:
    """What quiz.py returning zeros of the right shape, dtype and device, following every rule, scores
    (tests/grading/hostile/zeros): nothing, since rules pay only with right results. A trick that returns values must
    not score more than this."""
    results = grade(hostile_submission(tmp_path_factory.mktemp("baseline"), "zeros"), course, zygote, "quiz")
    score = results["exercises"]["quiz"]["score"]
    assert score == 0, outputs(results, "quiz")
    return score


def test_zeros_that_follow_every_rule_earn_nothing(tmp_path, zygote, course):
    """A submission whose every function returns zeros of the right shape, dtype and device (kept in the autograd
    graph, raising the right errors, its modules creating the right parameters and buffers) scores 0 in every
    exercise: the rules it follows pay only with right results."""
    folder = hostile_submission(tmp_path, "zeros")
    for module in MODULES:
        source = (HOSTILE / "zeros" / f"{module}.py").read_text(encoding="utf-8")
        (folder / f"{module}.py").write_text(source, encoding="utf-8")
    results = grade(folder, course, zygote)
    assert results["score"] == 0, {name: outputs(results, name) for name in MODULES}
    passed = {t["name"] for t in results["tests"] if t["status"] == "passed"}
    assert len(passed) >= 2 * len(MODULES), passed  # rules it follows: they hold, and earn nothing


@pytest.fixture
def token():
    """A name (at most 15 characters, the kernel's limit for a process name) unique to this case."""
    return "hx" + secrets.token_hex(6)


@pytest.fixture(autouse=True)
def nothing_left_behind(request, private_tmp):
    """After every case: no staged folder left, no worker left, no named process left, not even a zombie left for
    init to reap, right away (a worker ends only once every process of its sandbox is reaped)."""
    zygote = request.getfixturevalue("zygote") if "zygote" in request.fixturenames else None
    name = request.getfixturevalue("token") if "token" in request.fixturenames else None
    yield
    if name is not None:
        assert not processes_named(name), f"processes named {name} survived: {processes_named(name)}"
    if zygote is not None:
        assert not list(private_tmp.glob("grader-*")), "a staged submission folder was left behind"
        assert wait_until(lambda: not children_of(zygote.process.pid)), \
            f"processes left behind under the zygote: {children_of(zygote.process.pid)}"


# ---------------------------------------------------------------- helpers


def wait_until(condition, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _proc_entries():
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def processes_named(name: str) -> list[int]:
    found = []
    for pid in _proc_entries():
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == name[:15]:
                found.append(pid)
        except OSError:
            pass
    return found


def parent_of(pid: int) -> int | None:
    """The pid of ``pid``'s parent (zombies too), None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def children_of(parent: int) -> list[int]:
    """Every live descendant of ``parent``."""
    parents = {pid: ppid for pid in _proc_entries() if (ppid := parent_of(pid)) is not None}
    found, frontier = [], {parent}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier}
        found.extend(frontier)
    return found


def host_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback (from /proc/net/fib_trie)."""
    try:
        text = Path("/proc/net/fib_trie").read_text()
    except OSError:
        return []
    found = re.findall(r"\|-- ([0-9.]+)\n\s+/32 host LOCAL", text)
    return sorted({a for a in found if not a.startswith("127.")})


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        digest.update(f"{path.relative_to(folder)}\0{info.st_mode:o}\0".encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def hostile_submission(tmp_path: Path, trick: str, module: str = "quiz", **params) -> Path:
    """solutions/ with ``module``.py replaced by tests/grading/hostile/<trick>/<module>.py (its PARAMS filled in)."""
    folder = tmp_path / f"submission-{trick}"
    folder.mkdir()
    for name in MODULES:
        shutil.copy(SOLUTIONS / f"{name}.py", folder / f"{name}.py")
    source = (HOSTILE / trick / f"{module}.py").read_text(encoding="utf-8")
    assert "PARAMS = {}\n" in source, f"{trick}/{module}.py has no PARAMS line"
    (folder / f"{module}.py").write_text(source.replace("PARAMS = {}\n", f"PARAMS = {params!r}\n", 1), encoding="utf-8")
    return folder


def only(course, module: str):
    """The course trimmed to one exercise: the assignment of its notebook."""
    return course.assignment(course.notebook_name(module))


def grade(path: Path, course, zygote, module: str | None = None) -> dict:
    """Grade ``path`` (everything, or only ``module``) and return results.json's data; see ``grade_outcome``."""
    return grade_outcome(path, course, zygote, module).results


def grade_outcome(path: Path, course, zygote, module: str | None = None):
    """Grade ``path`` (everything, or only ``module``); check what holds for every grading; return the outcome."""
    before = tree_hash(path)
    started = time.monotonic()
    outcome = grade_submission(path, only(course, module) if module else course, zygote, zygote.device, select=module)
    elapsed = time.monotonic() - started
    assert elapsed < min(WALL_BOUND, course.grading.limits.submission_seconds), f"grading took {elapsed:.1f} s"
    assert tree_hash(path) == before, "the submission was modified"
    jsonschema.validate(outcome.results, RESULTS_SCHEMA)
    assert outcome.isolation == "namespaces", outcome.isolation
    assert SECRET not in json.dumps(outcome.results)
    return outcome


def outputs(results: dict, module: str = "quiz") -> str:
    """Everything results.json tells the student about one exercise."""
    lines = [t["output"] for t in results["tests"] if module in t.get("tags", [])]
    lines += [line for line in results["output"].splitlines() if line.startswith(f"{module}:")]
    return "\n".join(lines)


def raised_by(path: Path, course, zygote, function: str = "quiz_answer") -> str:
    """The message of what ``quiz.<function>()`` raised, as the grading process holds it: the channel a trick uses
    to tell this test what it found (the feedback never shows a student's message)."""
    staged = stage(path, course.grading.intake)
    session = WorkerSession(zygote, str(staged.directory), course.grading.limits, zygote.device)
    try:
        with pytest.raises(StudentError) as raised:
            getattr(Student(session).quiz, function)()
    finally:
        session.close()
        staged.cleanup()
    return raised.value.info["message"]


def assert_trick_earns_nothing(results: dict, module: str = "quiz", everything: bool = False, baseline: float = 0.0):
    """The trick's exercise scores at most ``baseline`` (0, or what plain zeros score: see the ``baseline``
    fixture); with ``everything``, every other exercise has full marks."""
    exercises = results["exercises"]
    assert exercises[module]["score"] <= baseline, outputs(results, module)
    if everything:
        assert set(exercises) == set(MODULES)
        for name, exercise in exercises.items():
            if name != module:  # (approx: scores.py rounds each test's share before adding them up)
                assert exercise["score"] == pytest.approx(exercise["max_score"], abs=0.01), f"{name}: {outputs(results, name)}"


# ---------------------------------------------------------------- stealing and lying


def test_frames_and_heap_hold_nothing_of_the_grader(tmp_path, zygote, course, baseline):
    """inspect.stack(), sys._getframe() and gc in the worker see only the worker: nothing to steal."""
    path = hostile_submission(tmp_path, "frames")
    assert_trick_earns_nothing(grade(path, course, zygote, "quiz"), baseline=baseline)
    text = raised_by(path, course, zygote)
    assert text == "CLEAN: only the worker's frames are visible", text


def test_patched_comparisons_fool_nobody(tmp_path, zygote, course, baseline):
    """torch.allclose, torch.testing, Tensor.__eq__... patched in the worker: comparisons happen in the grader."""
    results = grade(hostile_submission(tmp_path, "patch_compare"), course, zygote)
    assert_trick_earns_nothing(results, everything=True, baseline=baseline)


def test_lying_tensor_subclass_and_pickle_payload(tmp_path, zygote, course, baseline):
    """A Tensor subclass that lies in __torch_function__ arrives as a plain tensor; an object whose unpickling
    runs code arrives as a handle and runs nothing in the grading process."""
    mark = tmp_path / "unpickled"
    results = grade(hostile_submission(tmp_path, "lying_values", mark=str(mark)), course, zygote, "quiz")
    assert_trick_earns_nothing(results, baseline=baseline)
    assert not mark.exists() and not hasattr(builtins, "PWNED")


def test_forged_results_land_nowhere(tmp_path, zygote, course, private_tmp, baseline):
    """Results and reports written in the worker's cwd, /tmp or the results path are invisible to the grader."""
    targets = [tmp_path / "results.json", private_tmp / "results.json", private_tmp / "report.json",
               ROOT / "results.json", Path.cwd() / "forged-results.json"]
    before = {path: path.read_bytes() if path.exists() else None for path in targets}
    results = grade(hostile_submission(tmp_path, "forge_results", paths=[str(p) for p in targets]), course, zygote, "quiz")
    assert_trick_earns_nothing(results, baseline=baseline)
    assert "FORGED" not in json.dumps(results)
    for path in targets:
        assert (path.read_bytes() if path.exists() else None) == before[path], f"{path} was written from the sandbox"


def test_snooping_finds_no_tests_references_or_secrets(tmp_path, zygote, course, baseline, capfd):
    """Walking the filesystem, /proc and the environment finds no hidden suite, no reference and no secret, and the
    environment blocks and command lines /proc shows name none of the grader's folders or variables (they named the
    repository, PYTHONPATH of the zygote, and the course's folder, its --hide); everything else is graded normally."""
    path = hostile_submission(tmp_path, "snoop", secret_name=SECRET_NAME, paths=[str(ROOT), str(course.root)])
    results = grade(path, course, zygote)
    assert_trick_earns_nothing(results, everything=True, baseline=baseline)
    text = raised_by(path, course, zygote)
    assert "SNOOPED secrets=[] refs=[] tests=[] leaks=[]" in text, text
    assert "BEGIN SOLUTION" not in json.dumps(results)
    captured = capfd.readouterr()
    assert SECRET not in captured.out + captured.err


# ---------------------------------------------------------------- ending, hanging, crashing


def test_exit_in_a_call_prints_nothing_and_earns_nothing(tmp_path, zygote, course, capfd):
    """os._exit(0) and sys.exit(0) in calls, after printing fake "passed" lines: the checks fail, nothing is shown."""
    results = grade(hostile_submission(tmp_path, "exit_in_call"), course, zygote, "quiz")
    assert_trick_earns_nothing(results)
    text = outputs(results)
    assert "exited with status 0" in text or "SystemExit" in text, text
    captured = capfd.readouterr()
    assert "FAKE-PASSED" not in captured.out + captured.err + json.dumps(results)


def test_exit_at_import_costs_only_that_exercise(tmp_path, zygote, course, capfd):
    """os._exit(0) while being imported: the exercise is marked as not importable, the rest graded normally."""
    results = grade(hostile_submission(tmp_path, "exit_at_import"), course, zygote)
    assert_trick_earns_nothing(results, everything=True)
    assert "while importing quiz.py" in outputs(results)
    captured = capfd.readouterr()
    assert "FAKE-PASSED" not in captured.out + captured.err + json.dumps(results)


def test_endless_loop_and_ignored_sigterm_are_stopped(tmp_path, zygote, course):
    """An endless loop, and a sleep with SIGTERM ignored, are killed after call_seconds; each function once."""
    started = time.monotonic()
    results = grade(hostile_submission(tmp_path, "endless_loop"), course, zygote, "quiz")
    assert_trick_earns_nothing(results)
    assert f"ran for more than {CALL_SECONDS} s" in outputs(results)
    # two functions, each stopped once (later calls fail at once), plus start-up: far less than one call per check
    assert time.monotonic() - started < 2 * CALL_SECONDS + 15


def test_sleep_at_import_is_stopped(tmp_path, zygote, course):
    """Sleeping at import (SIGTERM ignored) costs import_seconds once and marks the exercise as not importable."""
    started = time.monotonic()
    results = grade(hostile_submission(tmp_path, "sleep_at_import"), course, zygote, "quiz")
    assert_trick_earns_nothing(results)
    text = outputs(results)
    assert f"ran for more than {IMPORT_SECONDS} s while importing quiz.py" in text, text
    assert time.monotonic() - started < IMPORT_SECONDS + 15


def test_segfault_and_abort_are_reported(tmp_path, zygote, course):
    """A segmentation fault and an abort end the worker; the checks fail with the cause named, and a function
    that crashed the worker three times is not called again. The import rule, read from the file without running
    it, names the forbidden imports (ctypes, os)."""
    results = grade(hostile_submission(tmp_path, "segfault"), course, zygote, "quiz")
    assert_trick_earns_nothing(results)
    imports = [test for test in results["tests"] if "The file imports only" in test["name"]]
    assert len(imports) == 1 and imports[0]["output"].startswith("quiz.py imports ctypes (line 2), os (line 3): ")
    for test in results["tests"]:
        assert test in imports or "crashed" in test["output"] or "aborted" in test["output"], test
    assert "crashed (segmentation fault)" in outputs(results)
    assert "is not called again: it crashed the worker 3 times" in outputs(results)


def test_memory_bomb_is_refused(tmp_path, zygote, course):
    """Allocating without end (and filling /tmp) meets the address-space limit (a MemoryError) or the time limit,
    after which the function is not called again (each attempt would fill gigabytes once more)."""
    started = time.monotonic()
    results = grade(hostile_submission(tmp_path, "memory_bomb"), course, zygote, "quiz")
    assert_trick_earns_nothing(results)
    text = outputs(results)
    assert "MemoryError" in text or f"ran for more than {CALL_SECONDS} s" in text, text
    assert "quiz.decoder_attention is not called again: in an earlier check" in text, text
    assert time.monotonic() - started < 2 * CALL_SECONDS + 15


def test_fork_bomb_is_capped_and_killed(tmp_path, zygote, course, token):
    """Forking without end hits the process limit, is stopped by the time-out, and leaves no process;
    the other exercises are graded normally."""
    results = grade(hostile_submission(tmp_path, "fork_bomb", token=token), course, zygote)
    assert_trick_earns_nothing(results, everything=True)
    assert "ran for more than" in outputs(results)


def test_a_sandbox_orphaned_by_the_fallback_is_reaped_by_the_zygote_not_left_to_init(tmp_path, course, monkeypatch):
    """A sandbox still not gone when the grader gives up waiting (``TEARDOWN_SECONDS``: a submission can make the
    kernel's teardown take seconds) has its supervisor SIGKILLed; its orphaned pid 1 is then the zygote's to reap
    (a child subreaper), never init's, which may never reap it and so leave the sandbox uid a process short."""
    from grader.sandbox.host import client

    monkeypatch.setattr(client, "TEARDOWN_SECONDS", 0.0)
    zygote = Zygote()
    try:
        session = WorkerSession(zygote, str(ROOT / "solutions"), course.grading.limits)
        session._start()
        (inner,) = [pid for pid in children_of(session.pid) if parent_of(pid) == session.pid]
        session.stop()
        assert parent_of(inner) in (None, zygote.process.pid)  # None: gone already
        assert wait_until(lambda: parent_of(inner) is None, 10), f"pid 1 of the sandbox was left: {inner}"
    finally:
        zygote.close()


def test_daemons_do_not_outlive_the_grading(tmp_path, zygote, course, token, baseline):
    """Double-forked, setsid'ed children ignoring SIGTERM/SIGHUP die with the worker (checked by the
    autouse fixture: no process carries the case's token afterwards)."""
    results = grade(hostile_submission(tmp_path, "daemon", token=token), course, zygote)
    assert_trick_earns_nothing(results, everything=True, baseline=baseline)


def test_forked_children_never_answer(tmp_path, zygote, course, baseline):
    """A child forked in a call that returns into the worker (instead of exiting) never answers in its place:
    the grade is the parent's, and the same on every run."""
    folders = [tmp_path / str(n) for n in range(2)]
    runs = [grade(hostile_submission(f, "fork_returns"), course, zygote, "quiz") for f in folders if not f.mkdir()]
    assert_trick_earns_nothing(runs[0], baseline=baseline)
    assert [[(t["name"], t["status"], t["output"]) for t in r["tests"]] for r in runs] == \
        [[(t["name"], t["status"], t["output"]) for t in runs[0]["tests"]]] * 2


def test_output_flood_goes_nowhere(tmp_path, zygote, course, capfd, baseline):
    """Megabytes on stdout and stderr (at import and in calls) reach neither the terminal nor results.json."""
    results = grade(hostile_submission(tmp_path, "output_flood"), course, zygote, "quiz")
    assert_trick_earns_nothing(results, baseline=baseline)
    captured = capfd.readouterr()
    assert "FLOOD" not in captured.out + captured.err
    assert len(captured.out + captured.err) < 10_000
    assert len(json.dumps(results)) < 200_000


def test_replies_over_the_cap_are_refused(tmp_path, zygote, course):
    """A 320 MiB tensor and 26 MB of JSON are over the reply limits: refused with a message saying so."""
    results = grade(hostile_submission(tmp_path, "huge_reply"), course, zygote, "quiz")
    assert_trick_earns_nothing(results)
    text = outputs(results)
    assert "MiB limit" in text, text


def test_overlapping_reply_costs_the_grader_one_copy(tmp_path, zygote, course, baseline):
    """A frame forged on the socket whose 120 tensors all point at one 8 MiB range (within the exercise's share of
    replies: 48 MiB is refused from its header) is refused (the reply "could not be read"): the grading process
    survives, the trick earns nothing and every other exercise keeps full marks."""
    results = grade(hostile_submission(tmp_path, "overlapping_reply", blob_mib=8), course, zygote)
    assert_trick_earns_nothing(results, everything=True, baseline=baseline)
    assert UNREADABLE in outputs(results), outputs(results)


def test_overlapping_reply_memory_is_bounded(tmp_path):
    """The grading process's peak memory under the overlapping-reply attack stays within a small multiple of the
    reply (the frame, whose blob decoded tensors share): measured side by side with plain zeros in separate processes
    (a 48 MiB frame is now refused from its header, over the exercise's share of replies)."""
    peaks = {trick: grading_peak_mib(hostile_submission(tmp_path, trick)) for trick in ("zeros", "overlapping_reply")}
    print(f"peak memory of the grading process: {peaks['zeros']:.0f} MiB beside zeros, "
          f"{peaks['overlapping_reply']:.0f} MiB under the overlapping-reply attack (48 MiB frames)")
    assert peaks["overlapping_reply"] <= peaks["zeros"] + 2 * 48, peaks


def grading_peak_mib(submission: Path, module: str = "quiz") -> float:
    """The peak resident memory (MiB) of a fresh grading process that grades ``submission``'s ``module``.py: its
    VmHWM (getrusage's ru_maxrss would start at this process's own, which a child inherits through exec)."""
    script = ("import sys\n"
              "from grader.course import load_course\n"
              "from grader.grade import grade_submission\n"
              "course = load_course()\n"
              "course = course.assignment(course.notebook_name(sys.argv[2]))\n"
              "grade_submission(sys.argv[1], course, select=sys.argv[2])\n"
              "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))\n")
    done = subprocess.run([sys.executable, "-c", script, str(submission), module], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True)
    return int(done.stdout.split()[-1]) / 1024


# trick -> (the module it replaces, the largest reply it sends in MiB, what its feedback must say)
UNCHECKED_VALUES = {
    "broadcast_results": ("softmax", 1, "the result's shape has several dims more than expected"),
    "swapped_gradient": ("qkv", 12, "the gradient of the input queries of scaled_dot_product_attention"),
    "eval_shapes": ("causal", 3, "the result's shape has several dims fewer than expected"),
}


@pytest.mark.parametrize("trick", list(UNCHECKED_VALUES))
def test_results_and_gradients_are_checked_before_the_grader_computes_with_them(tmp_path, zygote, course, trick):
    """Results of shapes that broadcast into K x K, gradients a hook swapped for (K, 1, 1, 1, 1) bool tensors, and
    an eval-mode result of 1 Mi bools: each fails its check on its shape (the gradients: the autograd rule, where the
    values are right) and earns nothing by it, and the grading process's peak memory stays within a few replies of
    grading the references, measured side by side in fresh processes. It used to compute with them first: 2.2 GB,
    4.1 GB and 2.0 GB against 256 MiB."""
    module, reply_mib, said = UNCHECKED_VALUES[trick]
    submission = hostile_submission(tmp_path, trick, module)
    results = grade(submission, course, zygote, module)
    assert said in outputs(results, module), outputs(results, module)
    autograd = [t for t in results["tests"] if module in t["tags"] and "equal the derivative of your own result" in t["name"]]
    assert autograd and all(t["status"] == "failed" for t in autograd), autograd
    if trick != "swapped_gradient":  # its values are right: it loses only the autograd rule
        assert_trick_earns_nothing(results, module)
    peaks = {"references": grading_peak_mib(SOLUTIONS, module), trick: grading_peak_mib(submission, module)}
    print(f"peak memory of the grading process: {peaks}")
    assert peaks[trick] <= peaks["references"] + 4 * reply_mib + 32, peaks


# ---------------------------------------------------------------- reaching out


def test_no_network_not_even_loopback(tmp_path, zygote, course):
    """Connections to a listener of the test process (TCP on 127.0.0.1, an abstract unix socket) never arrive."""
    listener = socket.create_server(("0.0.0.0", 0))  # every address of this machine, loopback included
    listener.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", listener.getsockname()[1]))
    udp.setblocking(False)
    abstract = "grader-test-" + secrets.token_hex(8)
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + abstract)
    unix.listen()
    unix.setblocking(False)
    try:
        # the listeners work: the test process itself can reach them
        socket.create_connection(("127.0.0.1", listener.getsockname()[1]), timeout=2).close()
        listener.accept()[0].close()
        path = hostile_submission(tmp_path, "network", port=listener.getsockname()[1], abstract=abstract,
                                  hosts=[socket.gethostname(), *host_addresses()])
        results = grade(path, course, zygote, "quiz")
        reached = raised_by(path, course, zygote)
        for sock in (listener, unix):
            with pytest.raises(BlockingIOError):
                sock.accept()
        with pytest.raises(BlockingIOError):
            udp.recv(16)
    finally:
        listener.close()
        udp.close()
        unix.close()
    assert_trick_earns_nothing(results)
    assert reached == "NET reached=[]", reached


def test_writes_outside_the_sandbox_land_nowhere(tmp_path, zygote, course, private_tmp):
    """Writes to host paths (the test's folders, the repository, the grader's temporary folder), to the
    submission and to the system all fail or stay in the sandbox's private /tmp."""
    targets = [tmp_path / "outside.txt", private_tmp / "outside.txt", ROOT / "outside.txt",
               Path("/tmp") / f"outside-{secrets.token_hex(6)}.txt", Path("/var/tmp") / f"outside-{secrets.token_hex(6)}.txt"]
    submission = hostile_submission(tmp_path, "write_outside", paths=[str(p) for p in targets])
    results = grade(submission, course, zygote, "quiz")
    assert_trick_earns_nothing(results)
    text = raised_by(submission, course, zygote)
    for path in targets:
        assert not path.exists(), f"{path} was written from the sandbox"
    wrote = re.findall(r"WROTE \[([^\]]*)\]", text)
    assert wrote, text
    for line in wrote:  # only the sandbox's own private /tmp and /dev/shm took writes (host /tmp paths land there)
        for path in re.findall(r"'([^']*)'", line):
            assert path.startswith(("/tmp/", "/dev/shm/")), line


def test_nothing_passes_between_submissions(tmp_path, zygote, course):
    """A submission leaves messages in the kernel keyrings, /tmp, /dev/shm, SysV shared memory, message queues
    and semaphores, POSIX message queues and an abstract unix socket; the next submission, graded under the
    same sandbox uid, finds none of them (and the keyrings refuse the message outright)."""
    reports = []
    for n in range(2):
        folder = tmp_path / str(n)
        folder.mkdir()
        submission = hostile_submission(folder, "channels")
        assert_trick_earns_nothing(grade(submission, course, zygote, "quiz"))
        message = raised_by(submission, course, zygote)  # what one more worker of the same uid found
        reports.append(set(re.findall(r"CHANNELS found=(\[[^\]]*\]) wrote=(\[[^\]]*\])", message)))
    left = "['/tmp', '/dev/shm', 'sysv shm', 'sysv msg', 'sysv sem', 'mqueue', 'abstract socket']"
    assert reports == [{("[]", left)}] * 2, reports


# ---------------------------------------------------------------- the wire and the terminal


def test_forged_frames_on_the_socket(tmp_path, zygote, course, baseline):
    """Frames forged onto the worker's socket at import are not taken for replies, and cost nothing elsewhere."""
    results = grade(hostile_submission(tmp_path, "socket_forgery"), course, zygote)
    assert_trick_earns_nothing(results, everything=True, baseline=baseline)


def test_escapes_and_markup_in_messages(tmp_path, zygote, course):
    """Terminal escapes and rich markup in the student's messages are removed from results.json and cannot
    break or forge the terminal summary."""
    outcome = grade_outcome(hostile_submission(tmp_path, "markup"), course, zygote, "quiz")
    assert_trick_earns_nothing(outcome.results)
    text = json.dumps(outcome.results)
    assert "\\u001b" not in text and "\\u0007" not in text and "\\u202e" not in text
    assert "FAKE quiz 10/10" in outputs(outcome.results), "the import error did not reach the feedback"
    buffer = io.StringIO()
    print_summary(outcome.grade, Console(file=buffer, width=1000, color_system=None))  # must not raise MarkupError
    printed = buffer.getvalue()
    assert "\x1b" not in printed
    assert "[link=file:///etc/passwd]" in printed, "the student's markup was interpreted, not shown"


# ---------------------------------------------------------------- what comes back, and what the feedback says about it


def test_feedback_carries_nothing_of_the_hidden_inputs(tmp_path, zygote, course, baseline):
    """A submission that writes a number taken from each hidden input into every channel it has (its exception's
    message and class name, a stub's name, the result's shape, the digits of its error, the position of a wrong entry,
    an object's class name, its exit status, an import error after a restart) gets, word for word, the feedback of the
    same submission writing a constant instead: nothing in the feedback depends on the inputs beyond what the suites
    say about them, on two different seeds."""
    for seed in (course.seed, course.seed + 1):
        seeded = course.model_copy(update={"seed": seed})
        (tmp_path / f"leaky{seed}").mkdir(), (tmp_path / f"blind{seed}").mkdir()
        leaky = grade(hostile_submission(tmp_path / f"leaky{seed}", "encode_inputs"), seeded, zygote, "quiz")
        blind = grade(hostile_submission(tmp_path / f"blind{seed}", "encode_inputs", blind=True), seeded, zygote, "quiz")
        assert outputs(leaky) == outputs(blind)
        # Its every tenth call answers right (and earns what such answers earn): the inputs change nothing of it.
        assert leaky["score"] == blind["score"] and leaky["exercises"] == blind["exercises"]


def test_results_of_the_wrong_kind_earn_nothing(tmp_path, zygote, course, baseline):
    """An object with no wire form (answering every method), a tuple with one inside, a list, a dict: a check gets
    no proxy it did not ask for and calls nothing in the worker; such results earn nothing."""
    results = grade(hostile_submission(tmp_path, "wrong_kinds"), course, zygote, "quiz")
    assert_trick_earns_nothing(results, baseline=baseline)
    assert "neither a tensor nor a plain value" in outputs(results)


def test_a_proxy_for_a_result_is_refused(tmp_path, zygote, course):
    """softmax returning, for the check that -inf entries weigh exactly 0, an object whose methods answer zeros:
    the check fails, and the trick scores no more than the same code without it."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    tricked = grade(hostile_submission(tmp_path / "a", "proxy_result", "softmax"), course, zygote, "softmax")
    plain = grade(hostile_submission(tmp_path / "b", "proxy_result", "softmax", plain=True), course, zygote, "softmax")
    assert tricked["exercises"]["softmax"]["score"] <= plain["exercises"]["softmax"]["score"]
    negative = [t for t in tricked["tests"] if "-inf entries get weight exactly 0" in t["name"]]
    assert all(t["score"] == 0 for t in negative) and negative, outputs(tricked, "softmax")


def test_shipped_conftest_sitecustomize_pth_and_ini_are_never_used(tmp_path, zygote, course):
    """conftest.py, sitecustomize.py, usercustomize.py, a .pth file, pytest.ini, __init__.py and other files
    beside the exercise files are not staged and never run; the exercises are graded as usual."""
    folder = tmp_path / "shipped"
    shutil.copytree(SOLUTIONS, folder)
    mark = tmp_path / "ran"
    payload = f"open({str(mark)!r}, 'a').write(__name__ + '\\n')\n"
    extras = {"conftest.py": payload + "import pytest\n@pytest.fixture(autouse=True)\ndef _p(): pass\n",
              "sitecustomize.py": payload, "usercustomize.py": payload, "evil.pth": f"import os; {payload}",
              "pytest.ini": "[pytest]\naddopts = -p conftest --co\n", "setup.py": payload, "torch.py": payload,
              "exercises/conftest.py": payload, "tests/test_quiz.py": payload + "def test_x(): pass\n"}
    for name, text in extras.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    results = grade(folder, course, zygote)
    assert results["score"] == results["max_score"], results["output"]
    assert not mark.exists()


# ---------------------------------------------------------------- the command line


def test_cli_output_and_results_hold_no_secret_and_no_fake_lines(tmp_path):
    """`python -m grader grade` on a submission that prints fake "passed" lines and exits: exit 0, the trick
    scores 0, and neither the terminal nor results.json shows the fake lines or the grader's secret."""
    submission = hostile_submission(tmp_path, "exit_in_call")
    out = tmp_path / "out" / "results.json"
    env = {**os.environ, SECRET_NAME: SECRET, "TMPDIR": str(tmp_path)}
    process = subprocess.run([sys.executable, "-m", "grader", "grade", str(submission), "--out", str(out)],
                             capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    terminal = process.stdout + process.stderr
    assert process.returncode == 0, terminal[-3000:]
    assert "Traceback" not in terminal
    results = json.loads(out.read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert_trick_earns_nothing(results, everything=True)
    for text in (terminal, out.read_text()):
        assert SECRET not in text and "FAKE-PASSED" not in text
    assert not list(tmp_path.glob("grader-*"))


# ---------------------------------------------------------------- the wire and the proxy, in isolation


def _random_value(rng, depth=0):
    """A JSON value shaped like the wire's encodings, with the fields given wrong types and values at random."""
    junk = [None, True, -1, 0, 1, 2**70, 1.5, float("nan"), "", "x", "cpu", "cuda:0", "float32", "meta", "lazy",
            [], [0], [0, 4], [1, -1], {}, {"$t": None}]
    if depth > 4 or rng.random() < 0.3:
        return rng.choice(junk)
    kind = rng.choice(["$t", "$tuple", "$dict", "$f", "$dtype", "$device", "$h", "list", "dict", "$unknown"])
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "dict":
        return {rng.choice(["a", "b", "$x"]): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if kind == "$t":
        return {"$t": rng.choice([None, [0, 4], [0, 8], [-4, 4], [0, 10**9], "0", [0.5, 4], [0]]),
                "dtype": rng.choice(["float32", "float64", "int8", "bool", "object", 3, None, ["float32"]]),
                "shape": rng.choice([[1], [2], [2, 2], [], [-1], [10**20], [1] * 70, "2", [1.5], None]),
                "device": rng.choice(["cpu", "meta", "cuda", "cuda:7", "xla", "../cpu", 0, None])}
    if kind == "$dict":
        return {"$dict": rng.choice([[[_random_value(rng, depth + 1), _random_value(rng, depth + 1)]], [[1]], "x", [[[1], 2]]])}
    return {kind: _random_value(rng, depth + 1), "type": rng.choice(["Module", 5, None, "x" * 500])}


def test_decoding_hostile_replies_raises_only_wire_errors():
    """Whatever a reply holds, decoding gives plain values or a WireError: never another exception, never an
    object of the sender's choosing."""
    import random

    import torch

    from grader.sandbox import wire
    rng = random.Random(5)
    blob = bytes(range(16))
    allowed = (type(None), bool, int, float, str, list, tuple, dict, torch.Tensor, torch.dtype, torch.device, wire.Handle)

    def plain(value):
        assert type(value) in allowed or isinstance(value, torch.Tensor), type(value)
        if isinstance(value, torch.Tensor):
            assert type(value) is torch.Tensor
        if isinstance(value, (list, tuple)):
            for item in value:
                plain(item)
        if isinstance(value, dict):
            for key, item in value.items():
                plain(key)
                plain(item)

    outcomes = {"ok": 0, "refused": 0}
    for _ in range(3000):
        data = _random_value(rng)
        try:
            value = wire.Decoder(blob)(data)
        except wire.WireError:
            outcomes["refused"] += 1
            continue
        plain(value)
        outcomes["ok"] += 1
    deep = current = []
    for _ in range(5000):
        current.append([])
        current = current[0]
    with pytest.raises(wire.WireError):
        wire.Decoder(b"")(deep)
    assert outcomes["ok"] and outcomes["refused"]


class _FakeZygote:
    """Stands in for the zygote of a WorkerSession whose "worker" is a plain child process we control."""

    def __init__(self, process):
        self.process = process

    def alive(self):
        return True

    def stop(self, pid, grace, teardown, unconfined):
        self.process.kill()
        return self.process.wait()


@pytest.fixture
def fake_worker(course):
    """A WorkerSession wired to a socket whose other end the test holds, with a harmless child as its "worker"."""
    from grader.sandbox.host.client import WorkerSession

    child = subprocess.Popen(["sleep", "60"])
    ours, theirs = socket.socketpair()
    session = WorkerSession(_FakeZygote(child), "/nonexistent", course.grading.limits)
    session.pid, session.sock, session.isolation = child.pid, ours, "namespaces"
    yield session, theirs
    theirs.close()
    if session.pid is not None:
        session.stop()


def test_half_a_reply_cannot_block_the_grader(fake_worker):
    """A worker that sends a frame header announcing a reply of the largest size taken and then nothing is stopped at
    the time limit."""
    from grader.sandbox import wire
    from grader.sandbox.host.problems import SubmissionProblem

    session, theirs = fake_worker
    body = b'{"ok": true}'
    theirs.sendall(wire.HEADER.pack(len(body), wire.MAX_REPLY_BYTES - len(body) - wire.HEADER.size) + body + b"\0" * 1000)
    started = time.monotonic()
    with pytest.raises(SubmissionProblem, match="ran for more than 1 s"):
        session._exchange(wire.encode({"op": "import", "module": "quiz"}), 1.0, "during this check")
    assert time.monotonic() - started < 10  # ends at the time limit, not never (a loaded machine adds seconds)
    assert session.pid is None  # the worker was stopped


def test_a_worker_that_does_not_read_cannot_block_the_grader(fake_worker):
    """Sending a large request to a worker that never reads ends at the time limit, not never."""
    import torch

    from grader.sandbox import wire
    from grader.sandbox.host.problems import SubmissionProblem

    session, theirs = fake_worker
    frame = wire.encode({"op": "call", "args": [torch.zeros(16 << 20)]})  # 64 MiB: far more than a socket buffers
    started = time.monotonic()
    with pytest.raises(SubmissionProblem, match="ran for more than 1 s"):
        session._exchange(frame, 1.0, "during this check")
    assert time.monotonic() - started < 10  # ends at the time limit, not never (a loaded machine adds seconds)


def test_malformed_replies_become_submission_problems(fake_worker):
    """A reply that is not JSON, or whose values do not decode, is a problem of the submission ("could not be
    read"), never an exception a check might expect (ValueError, TypeError...)."""
    from grader.sandbox import wire
    from grader.sandbox.host.problems import SubmissionProblem

    session, theirs = fake_worker
    theirs.sendall(wire.HEADER.pack(5, 0) + b"nope!")
    with pytest.raises(SubmissionProblem, match="could not be read") as error:
        session._exchange(None, 1.0, "during this check")
    assert not isinstance(error.value, (ValueError, TypeError))
