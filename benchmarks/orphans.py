"""Benchmark: processes of `grader batch` left running after `kill -9` of it, at several moments of the batch.

The batch runs under a launcher that is a child subreaper (PR_SET_CHILD_SUBREAPER), so every process the batch
started stays findable after the batch's death, whatever it did since (setsid, a new pid namespace, a double
fork): its job processes, their zygotes, the sandboxed workers and the intake's readers. For each moment the
script kills the batch with SIGKILL and prints how many of those processes are still running ``--wait`` seconds
later (the figure should be 0 everywhere).

    python benchmarks/orphans.py --students 4 --jobs 2 --wait 10

tests/test_durable.py runs the same measurement and requires 0.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = r"""
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the batch become ours
batch = os.fork()
if batch == 0:
    os.execv(sys.executable, [sys.executable, "-m", "grader", "batch", *sys.argv[1:]])
print(batch, flush=True)
while True:  # reap whatever ends, until killed
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.05)
"""


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process of the machine."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # it ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return table


def descendants(root: int) -> dict[int, str]:
    """pid -> command line of the living (not zombie) descendants of ``root``."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, stack = {}, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if table[pid][1] != "Z":
            found[pid] = table[pid][2]
        stack.extend(children.get(pid, []))
    return found


MOMENTS = {
    "at start": lambda processes, out: True,
    "during intake or job start": lambda processes, out: len(processes) >= 1,
    "during zygote start": lambda processes, out: any("grader.sandbox.jail.lifeline" in cmd for cmd in processes.values()),
    "mid-grading": lambda processes, out: any((out / "results").glob("*.json")),
}


def leftovers_after_kill(submissions: Path, out: Path, moment: str, jobs: int = 2, wait: float = 10) -> dict[int, str]:
    """Start ``grader batch`` on ``submissions``, SIGKILL it at ``moment`` (a key of MOMENTS), and return the
    processes it started that still run ``wait`` seconds later (which are then killed)."""
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(submissions), "--out", str(out), "--jobs", str(jobs)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        batch = int(launcher.stdout.readline())
        deadline = time.monotonic() + 300
        while not MOMENTS[moment](descendants(batch), out) and time.monotonic() < deadline:
            time.sleep(0.01)
        with contextlib.suppress(ProcessLookupError):  # it finished before that moment came
            os.kill(batch, signal.SIGKILL)
        deadline = time.monotonic() + wait
        while descendants(launcher.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = descendants(launcher.pid)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return left
    finally:
        launcher.kill()
        launcher.wait()


def class_of(target: Path, students: int) -> Path:
    """``students`` copies of the reference solutions (each is graded in full: the batch has work to be killed in)."""
    for n in range(students):
        shutil.copytree(ROOT / "solutions", target / f"student{n}", ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--wait", type=float, default=10, help="seconds after the kill before counting")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        submissions = class_of(Path(temporary) / "class", args.students)
        print(f"processes of `grader batch --jobs {args.jobs}` ({args.students} students) left {args.wait:g} s after kill -9:")
        for n, moment in enumerate(MOMENTS):
            left = leftovers_after_kill(submissions, Path(temporary) / f"out{n}", moment, args.jobs, args.wait)
            print(f"  {moment:28} {len(left)}" + "".join(f"\n    {pid}: {cmd[:120]}" for pid, cmd in left.items()))


if __name__ == "__main__":
    main()
