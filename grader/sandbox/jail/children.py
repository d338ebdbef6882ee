"""The zygote's children: the workers it forked (their cgroups, their wait statuses kept until the grader asks) and
the orphans it adopts.

The zygote is a child subreaper: a sandbox's pid 1 orphaned when its supervisor had to be SIGKILLed is reparented to
the zygote, which reaps it (``sweep``), instead of to init, which may never reap it (a container whose first process
is no init): such a zombie would count against the sandbox uid's ``RLIMIT_NPROC`` for good.
"""
from __future__ import annotations

import contextlib
import os
import signal
import time

from grader.sandbox.jail import cgroup
from grader.sandbox.jail.syscalls import PR_SET_CHILD_SUBREAPER, prctl

END_SECONDS = 5.0  # at the zygote's end, how long its workers' sandboxes get to go after SIGTERM


class Children:
    """The workers of one zygote, by pid."""

    def __init__(self):
        with contextlib.suppress(OSError):
            prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.exited: dict[int, int] = {}  # worker pid -> its wait status, until the grader asks for it
        self.cgroups: dict[int, list[str]] = {}  # live worker pid -> its cgroup's directories, removed once reaped

    def forked(self, pid: int, cgroup_paths: list[str]) -> None:
        self.cgroups[pid] = cgroup_paths
        self.exited.pop(pid, None)  # a status kept for an earlier worker of that pid

    def _reaped(self, pid: int, status: int) -> None:
        self.exited[pid] = status
        cgroup.remove(self.cgroups.pop(pid, []))

    def sweep(self) -> bool:
        """Reap every child that has exited, adopted orphans included; True when no child is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if not pid:
                return False
            if pid in self.cgroups:
                self._reaped(pid, status)

    def wait(self, pid: int, timeout: float) -> int | None:
        """Worker ``pid``'s wait status if it exits within ``timeout`` seconds, else None (it is still running)."""
        deadline = time.monotonic() + timeout
        while pid not in self.exited:
            if self.sweep():  # no child left: reaped just now, or not ours
                self.exited.setdefault(pid, 0)
            elif time.monotonic() >= deadline:
                return None
            else:
                time.sleep(0.005)
        return self.exited.pop(pid)

    def reap(self, pid: int) -> int:
        """Worker ``pid``'s wait status, waiting for it to exit (it was killed)."""
        if pid not in self.exited:
            try:
                self._reaped(pid, os.waitpid(pid, 0)[1])
            except ChildProcessError:
                self._reaped(pid, 0)
        return self.exited.pop(pid)

    def end(self) -> None:
        """End every worker still running (SIGTERM: the supervisor's way out that orphans nothing,
        ``confine._supervise``; SIGKILL for what is left after ``END_SECONDS``), and reap everything."""
        for pid in self.cgroups:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + END_SECONDS
        for pid in list(self.cgroups):
            if self.wait(pid, max(0.0, deadline - time.monotonic())) is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self.reap(pid)
        while not self.sweep() and time.monotonic() < deadline:
            time.sleep(0.01)
