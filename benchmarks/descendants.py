"""Run a command and count the CPU of every process it started, those left behind included.

A grading process hands its zygote and the zygote's sandboxed workers to a lifeline process and leaves with
``os._exit`` without waiting for them (they tear torch down on their own): they are orphaned, reparented to init,
and their CPU never reaches the parent's ``RUSAGE_CHILDREN``, which then counts the grading process alone (0.38 of
the 0.7 s of machine CPU a batch's submission costs on an idle machine). Here the benchmark process becomes a child
subreaper (``PR_SET_CHILD_SUBREAPER``): the orphans are reparented to it, it reaps them once the command returns,
and their CPU, workers included, is added to its own ``RUSAGE_CHILDREN``.
"""
from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import time

PR_SET_CHILD_SUBREAPER = 36
REAP_SECONDS = 60  # how long the command's orphans may take to finish after it returned


def adopt_orphans() -> None:
    """Make this process the subreaper of everything it starts from now on (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command's name: [0] the state, [1] the parent's pid, [11:15] utime,
    stime, cutime and cstime in clock ticks."""
    with open(f"/proc/{pid}/stat") as file:
        return file.read().rsplit(")", 1)[1].split()


def children() -> set[int]:
    """The pids whose parent is this process (from /proc: zombies included)."""
    me, pids = os.getpid(), set()
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and int(stat(entry)[1]) == me:
                pids.add(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def reap(keep: set[int]) -> None:
    """Wait for every child but ``keep`` (those that were there before the command: a Dask cluster's processes)."""
    deadline, pause = time.monotonic() + REAP_SECONDS, 0.005
    while left := children() - keep:
        for pid in left:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes the command started were still running {REAP_SECONDS} s after it ended")
        time.sleep(pause)
        pause = min(2 * pause, 0.1)  # each look at /proc costs about 1.5 ms of CPU


def run(command: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, float, float]:
    """``subprocess.run(command, **kwargs)``; also its wall seconds (until the command returned) and the CPU seconds of
    the command and of every process it started (after they all ended). Call ``adopt_orphans`` once before."""
    keep = children()
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    done = subprocess.run(command, **kwargs)
    wall = time.monotonic() - started
    reap(keep)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
