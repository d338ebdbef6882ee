"""Fair CPU: one student cannot slow everyone (SECURITY.md, "CPU of a worker").

* A CPU hog (tests/grading/hostile/cpu_hog: as many busy processes as it may fork, each trying to leave for a session and
  a cgroup of its own) is contained: every process of the sandbox uid sits in the worker's cgroup, capped at one
  CPU (without cgroups: in one session, one autogroup), and the CPU they used together is bounded by one CPU × wall.
* Worker cgroups are removed when the worker is reaped (killed or not, in a batch too): none is left behind.
* Without cgroups grading goes on, with a note saying so.
* Concurrent batch jobs lease distinct sandbox uids; a dead job's uid is free again.

The figure (a classmate's grading beside the hog, against alone) is measured by benchmarks/cpu_fairness.py, not here.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from courses import TOTAL
from test_hostile import hostile_submission, processes_named, wait_until

from grader.batch import run_batch
from grader.course import COURSE_FILE
from grader.grade import CPU_NOTE, grade_submission
from grader.sandbox.host.client import WorkerSession, Zygote
from grader.sandbox.jail import cgroup, uids
from grader.sandbox.jail import confine as sandbox

AVAILABLE, WHY = sandbox.probe()
HIERARCHIES, CPU_CAP = cgroup.hierarchies()
sandboxed = pytest.mark.skipif(not AVAILABLE, reason=f"no sandbox here: {WHY}")
with_cgroups = pytest.mark.skipif(not HIERARCHIES, reason=f"no cgroup here: {CPU_CAP}")


def own_cgroup(pid: int, hierarchy: cgroup.Hierarchy) -> str:
    """The directory of ``pid``'s cgroup in ``hierarchy`` (assumes the hierarchy is mounted at its root)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    wanted = "" if hierarchy.version == 2 else hierarchy.controllers[0]
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if wanted in (controllers.split(",") if controllers else [""]):
            mount = cgroup._mounts()[wanted][1]
            return os.path.normpath(mount + path)
    raise AssertionError(f"process {pid} is in no {wanted or 'v2'} cgroup")


def cpus_allowed(directory: str) -> float:
    """The CPU cap of one cgroup directory, in CPUs (inf when it has none)."""
    if os.path.exists(f"{directory}/cpu.max"):
        quota, period = Path(f"{directory}/cpu.max").read_text().split()
    else:
        quota, period = (Path(f"{directory}/cpu.cfs_{n}_us").read_text() for n in ("quota", "period"))
    return float("inf") if quota.strip() in ("max", "-1") else int(quota) / int(period)


def children_cpu_seconds(pid: int) -> float:
    """CPU time of every child that ``pid`` has reaped, their reaped descendants included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


@sandboxed
def test_a_cpu_hog_gets_one_cpu_and_no_more(tmp_path, course, token):
    """Every process the hog forks (each setsid'ed, each trying to write itself into the root cgroup) stays in the
    worker's cgroup, capped at one CPU; without cgroups they all stay in the worker's session. Over the whole
    session they used at most about one CPU × its wall time (without the cap, on a machine with idle CPUs, more)."""
    zygote = Zygote()
    try:
        session = WorkerSession(zygote, str(hostile_submission(tmp_path, "cpu_hog", "scores", token=token)),
                          course.grading.limits)
        cpu_before, started = children_cpu_seconds(zygote.process.pid), time.monotonic()
        session._ensure("scores")
        assert wait_until(lambda: len(processes_named(token)) >= 8), "the hog did not start its processes"
        hogs = processes_named(token)
        if HIERARCHIES:
            assert session.cpu_cap == CPU_CAP, session.cpu_cap
            for hierarchy in HIERARCHIES:
                worker_group = own_cgroup(session.pid, hierarchy)
                assert worker_group != own_cgroup(os.getpid(), hierarchy)
                assert {own_cgroup(pid, hierarchy) for pid in hogs} == {worker_group}
            cpu_group = own_cgroup(session.pid, next(h for h in HIERARCHIES if "cpu" in h.controllers))
            assert cpus_allowed(cpu_group) == 1
        else:
            sessions = {int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3]) for pid in hogs}
            assert len(sessions) == 1, f"the hog's processes are in {len(sessions)} sessions"
        time.sleep(3)  # the hog spins: the worker is idle
        assert session.stop(grace=10) is not None  # its own exit: pid 1 reaps every process, the zygote reaps it
        wall, used = time.monotonic() - started, children_cpu_seconds(zygote.process.pid) - cpu_before
        assert not processes_named(token)
    finally:
        zygote.close()
    assert used <= 1.15 * wall + 0.5, f"the hog's processes used {used:.1f} s of CPU in {wall:.1f} s"


@pytest.fixture
def token():
    return "cpuhog" + os.urandom(4).hex()


def leftover_cgroups() -> set[str]:
    """Worker cgroups whose zygote is gone."""
    return {f"{h.base}/{name}" for h in HIERARCHIES for name in os.listdir(h.base)
            if (m := cgroup._NAME.fullmatch(name)) and not cgroup._alive(int(m.group(1)))}


@sandboxed
@with_cgroups
def test_worker_cgroups_are_removed_when_workers_end(course, tmp_path, token):
    """A worker's cgroup goes when the zygote reaps it, killed (SIGKILL, the hog still spinning) or not; the
    cgroups of workers still running when the zygote closes go with it."""
    zygote = Zygote()
    try:
        session = WorkerSession(zygote, str(hostile_submission(tmp_path, "cpu_hog", "scores", token=token)),
                          course.grading.limits)
        session._ensure("scores")
        assert wait_until(lambda: processes_named(token))
        groups = [own_cgroup(session.pid, h) for h in HIERARCHIES]
        assert all(os.path.isdir(g) for g in groups)
        session.stop()  # ended by the grader (SIGTERM to the supervisor), not on its own
        assert not any(os.path.exists(g) for g in groups)
        session._start()
        groups = [own_cgroup(session.pid, h) for h in HIERARCHIES]
    finally:
        zygote.close()
    assert not any(os.path.exists(g) for g in groups)


@sandboxed
@with_cgroups
def test_a_batch_leaves_no_cgroup_behind(course, tmp_path, token):
    """`grader batch --jobs 2` over a class with the hog: every worker cgroup is gone at the end."""
    before = leftover_cgroups()
    (tmp_path / "class").mkdir()
    hostile_submission(tmp_path, "cpu_hog", "scores", token=token).rename(tmp_path / "class" / "hog")
    shutil.copytree(Path(__file__).parents[2] / "solutions", tmp_path / "class" / "ada")
    rows = {r["student"]: r for r in run_batch(tmp_path / "class", tmp_path / "out", course_file=COURSE_FILE, jobs=2)}
    assert rows["ada"]["score"] == TOTAL and rows["hog"]["status"] == "graded"
    assert leftover_cgroups() <= before
    assert not processes_named(token)


@sandboxed
def test_without_cgroups_grading_goes_on_with_a_note(course, monkeypatch):
    """GRADER_CGROUP=none (as where no cgroup is writable): full marks for the references, and a note."""
    monkeypatch.setenv("GRADER_CGROUP", "none")
    outcome = grade_submission(Path(__file__).parents[2] / "solutions", course)
    assert outcome.results["score"] == TOTAL
    assert CPU_NOTE.format("GRADER_CGROUP=none") in outcome.grade.notes


LEASE = """
import sys
from grader.sandbox.jail.uids import lease_sandbox_uid
uid, fd = lease_sandbox_uid(int(sys.argv[1]), 4, sys.argv[2])
print(uid, flush=True)
sys.stdin.read()
"""


def test_sandbox_uid_leases_are_unique_and_die_with_their_holder(tmp_path):
    """Live processes never share a leased uid; the uid of a killed holder is free again; when all are taken, a
    clear error."""
    locks = str(tmp_path / "locks")
    holders = [subprocess.Popen([sys.executable, "-c", LEASE, "70000", locks], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        holder_of = {int(h.stdout.readline()): h for h in holders}
        assert sorted(holder_of) == [70000, 70001, 70002]
        ours = [uids.lease_sandbox_uid(70000, 4, locks)]
        assert ours[0][0] == 70003
        with pytest.raises(RuntimeError, match="no free sandbox uid in 70000..70003"):
            uids.lease_sandbox_uid(70000, 4, locks)
        holder_of[70001].send_signal(signal.SIGKILL)
        holder_of[70001].wait()
        ours.append(uids.lease_sandbox_uid(70000, 4, locks))
        assert ours[1][0] == 70001
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    for _, fd in ours:
        os.close(fd)
    assert stat.S_IMODE(os.stat(locks).st_mode) == 0o700


def test_each_test_process_runs_its_sandboxes_as_a_uid_of_its_own():
    """The project's test processes (pytest-xdist workers) each run their sandboxes as a uid of their own."""
    from conftest import BASE_SANDBOX_UID, sandbox_uid_of_test_process

    firsts = [sandbox_uid_of_test_process(None)] + [sandbox_uid_of_test_process(f"gw{n}") for n in range(4)]
    assert firsts[0] == BASE_SANDBOX_UID
    assert all(later > earlier + 1000 for earlier, later in zip(firsts, firsts[1:]))  # a batch leases up to + 1000
    assert uids.SANDBOX_UID == sandbox_uid_of_test_process(os.environ.get("PYTEST_XDIST_WORKER"))


def test_a_uid_with_processes_left_on_the_machine_is_not_leased(tmp_path, monkeypatch):
    """A uid that some process still runs as (a grader killed where init does not reap leaves zombies of it, and they
    count against its process limit) is passed over, though no grader holds its lock; the census counts them."""
    if os.geteuid() != 0:
        pytest.skip("only root runs workers as other uids")
    leftover = subprocess.Popen(["sleep", "60"], user=70010, group=70010)
    try:
        uid, fd = uids.lease_sandbox_uid(70010, 4, str(tmp_path / "locks"))
        os.close(fd)
        assert uid == 70011
        monkeypatch.setenv("GRADER_SANDBOX_UID", "70010")
        assert uids.census() == "uid 70010 has 1 task on this machine, 0 of them zombies"
    finally:
        leftover.kill()
        leftover.wait()


ORPHAN = """
import json, os, time
from grader.sandbox.jail.children import Children

children = Children()
report_r, report_w = os.pipe()
hold_r, hold_w = os.pipe()
supervisor = os.fork()
if supervisor == 0:  # a supervisor that dies before its pid 1, as one SIGKILLed does
    inner = os.fork()
    if inner == 0:
        os.close(hold_w)
        os.read(hold_r, 1)  # lives until the test lets it go
        os._exit(0)
    os.write(report_w, str(inner).encode())
    os._exit(9)
children.forked(supervisor, [])
os.close(report_w)
inner = int(os.read(report_r, 32))
status = children.stop(supervisor, 10.0, 0.0, unconfined=False)
with open(f"/proc/{inner}/stat") as stat:
    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
os.close(hold_w)
deadline = time.monotonic() + 30
while not children.sweep() and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({"status": os.waitstatus_to_exitcode(status), "adopted": parent == os.getpid(),
                  "reaped": not os.path.exists(f"/proc/{inner}")}))
"""


def test_a_worker_orphaned_by_its_supervisor_is_adopted_and_reaped_by_the_zygote():
    """The zygote is a child subreaper: a sandbox's pid 1 whose supervisor died first (SIGKILLed after
    TEARDOWN_SECONDS) becomes the zygote's child, not init's, and its sweep reaps it once it exits."""
    done = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"status": 9, "adopted": True, "reaped": True}


def test_a_lock_folder_others_may_write_is_refused(tmp_path):
    """Anyone who may write the lock folder could hold every uid: such a folder is refused."""
    locks = tmp_path / "open"
    locks.mkdir()
    locks.chmod(0o777)
    with pytest.raises(PermissionError, match="nobody else may write"):
        uids.lease_sandbox_uid(70000, 4, str(locks))
