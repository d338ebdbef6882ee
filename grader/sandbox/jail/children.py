"""The zygote's children: the workers it forked (their cgroups, their wait statuses kept until the grader asks), how
one is ended, and the orphans it adopts.

Every signal to a worker is sent here, by the only process that reaps it: a worker not yet reaped keeps its pid, so a
signal can never reach another process given that pid (the grader, which does not reap, would risk it). The zygote is
a child subreaper: a sandbox's pid 1 orphaned when its supervisor had to be SIGKILLed is reparented to the zygote,
which reaps it (``sweep``), instead of to init, which may never reap it (a container whose first process is no init):
such a zombie would count against the sandbox uid's ``RLIMIT_NPROC`` for good. So ``sweep`` reaps any child that
exited; a process the zygote starts for itself must not be waited for elsewhere.
"""
from __future__ import annotations

import contextlib
import os
import signal
import time

from grader.sandbox.jail import cgroup
from grader.sandbox.jail.syscalls import PR_SET_CHILD_SUBREAPER, prctl

END_SECONDS = 5.0  # at the zygote's end, how long each worker's sandbox, then the orphans, get to go


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

    def _exits_within(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while pid not in self.exited:
            if self.sweep():  # no child left: reaped just now, or never ours
                self.exited.setdefault(pid, 0)
            elif time.monotonic() >= deadline:
                return False
            else:
                time.sleep(0.005)
        return True

    def stop(self, pid: int, grace: float, teardown: float, unconfined: bool) -> int:
        """End worker ``pid`` and return its wait status. A worker exiting on its own gets ``grace`` seconds, so that
        its own status is told (a segfault, say); then, in a sandbox, SIGTERM to its supervisor, which SIGKILLs the
        sandbox and exits once every process of it is reaped (``confine._supervise``), within ``teardown`` seconds;
        then SIGKILL (and, for an ``unconfined`` worker, which leads its own process group, SIGKILL to the group)."""
        if not self._exits_within(pid, grace) and not unconfined:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            self._exits_within(pid, teardown)
        if pid not in self.exited:
            for kill in (os.kill, os.killpg) if unconfined else (os.kill,):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    kill(pid, signal.SIGKILL)
            try:
                self._reaped(pid, os.waitpid(pid, 0)[1])
            except ChildProcessError:
                self._reaped(pid, 0)
        return self.exited.pop(pid)

    def end(self) -> None:
        """End every worker still running, then give the orphans ``END_SECONDS`` to be reaped."""
        for pid in list(self.cgroups):
            self.stop(pid, 0.0, END_SECONDS, unconfined=False)
        deadline = time.monotonic() + END_SECONDS
        while not self.sweep() and time.monotonic() < deadline:
            time.sleep(0.01)
