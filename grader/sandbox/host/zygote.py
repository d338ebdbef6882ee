"""The grading process's handle on its zygote: start it, ask it to fork, wait for and reap workers.

``Zygote`` is a fresh interpreter (grader.sandbox.jail.lifeline, then grader.sandbox.jail.worker) that imports torch once and
forks the sandboxed workers. This module imports neither torch nor pydantic (nor does the zygote import pydantic),
so a grading process can start its zygote before importing torch itself, and both imports run at once (``grader
grade``'s cold start).
"""
from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

from grader import ROOT

if TYPE_CHECKING:
    from grader.sandbox.limits import Limits

# The zygote's whole environment, so the environment block every worker inherits (what /proc/self/environ shows,
# whatever the sandbox sets later): constants, nothing of the grader's paths or variables.
ZYGOTE_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "PYTHONHASHSEED": "0",
              "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
# Variables of the grading process that the zygote takes on, told on its standard input with the folders to hide.
PASSED_ON = ("CUDA_VISIBLE_DEVICES", "GRADER_SANDBOX_UID", "GRADER_SANDBOX_GID", "GRADER_CGROUP")
# The zygote's command line (every worker's /proc/self/cmdline) holds no path either: it reads the grader's folder
# from its standard input and runs grader.sandbox.jail.lifeline from there.
BOOTSTRAP = ("import json, runpy, sys; sys.path[0] = json.loads(sys.stdin.readline()); "
             "runpy.run_module('grader.sandbox.jail.lifeline', run_name='__main__', alter_sys=True)")


class GraderFault(RuntimeError):
    """The grader itself could not do its job (the zygote died, a required sandbox is unavailable):
    not the submission's fault. Recorded in ``WorkerSession.fault``; the submission must not be scored."""


class ZygoteGone(Exception):
    """The zygote has died and this caller may not start another (``spawn(relaunch=False)``)."""


class Zygote:
    """A fresh interpreter with torch imported, forking sandboxed workers on request.

    One zygote serves one grading process, one request at a time (it is not thread-safe).
    Should it die, the next ``spawn`` starts a new one.
    """

    def __init__(self, namespaces: bool = True, hide: tuple[str, ...] = ()):
        """``namespaces=False`` never builds the namespace sandbox (workers get rlimits only, as on a machine
        without namespaces): for testing that degraded path, never for grading students. ``hide``: folders the
        sandbox hides besides the grader's repository (the root of a course kept elsewhere)."""
        self.namespaces, self.hide = namespaces, tuple(str(path) for path in hide)
        self._launch()

    def _launch(self):
        self.spawned = 0
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, "-s", "-c", BOOTSTRAP, str(os.getpid()), str(theirs.fileno())],
                                        pass_fds=[theirs.fileno()], env=ZYGOTE_ENV, cwd="/", stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=self.log)
        theirs.close()
        settings = {"namespaces": self.namespaces, "hide": self.hide,
                    "environ": {name: os.environ[name] for name in PASSED_ON if name in os.environ}}
        with self.process.stdin as stdin:  # two short lines: the pipe holds them without blocking
            stdin.write(f"{json.dumps(str(ROOT))}\n{json.dumps(settings)}\n".encode())

    def alive(self) -> bool:
        return self.process.poll() is None

    def _ask(self, request: dict, fds=()) -> dict:
        try:
            socket.send_fds(self.control, [json.dumps(request).encode()], list(fds))
            reply = self.control.recv(65536)
        except OSError:
            reply = b""
        if not reply:
            self.log.seek(0)
            raise GraderFault(f"the worker zygote stopped: {self.log.read()[-2000:].decode(errors='replace')}")
        return json.loads(reply)

    def spawn(self, submission: str, limits: Limits, device: str, require_sandbox: bool,
              relaunch: bool = True) -> tuple[int, socket.socket]:
        """A new worker (its pid and our end of its socket). A zygote that died (it never runs student code) is started
        again, unless ``relaunch`` is False (ZygoteGone): a thread that ends soon must not start it, since its
        parent-death signal follows the thread that started it, not the process. One that dies while asked (its
        starter thread had just ended, the signal on its way: a grader fault after threaded jobs) is as one found
        dead."""
        try:
            return self._spawn(submission, limits, device, require_sandbox, relaunch)
        except GraderFault:
            if not self._died():
                raise
        return self._spawn(submission, limits, device, require_sandbox, relaunch)

    def _spawn(self, submission: str, limits: Limits, device: str, require_sandbox: bool,
               relaunch: bool) -> tuple[int, socket.socket]:
        if not self.alive():
            if not relaunch:
                raise ZygoteGone
            self.close()
            self._launch()
        ours, theirs = socket.socketpair()
        try:
            pid = self._ask({"op": "spawn", "submission": str(submission), "limits": dataclasses.asdict(limits),
                             "device": device, "require_sandbox": require_sandbox}, [theirs.fileno()])["pid"]
        except GraderFault:
            ours.close()
            raise
        finally:
            theirs.close()
        self.spawned += 1
        return pid, ours

    def _died(self, seconds: float = 2.0) -> bool:
        """Whether the zygote's process has ended (waiting for it a little: one that closed its end is ending)."""
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, pid: int, grace: float, teardown: float, unconfined: bool) -> int | None:
        """End a worker (``jail.children.Children.stop``, which the zygote runs: only the process that reaps a worker
        may signal it by pid); its wait status (None when the zygote is gone)."""
        try:
            return self._ask({"op": "stop", "pid": pid, "grace": grace, "teardown": teardown,
                              "unconfined": unconfined})["status"]
        except GraderFault:
            return None

    def close(self):
        """Stop the zygote (and with it any worker still running: they die with their parent)."""
        self.control.close()
        try:  # it exits when it sees the control socket closed; one that never spawned may still be warming up
            self.process.wait(timeout=10 if self.spawned else 0.5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
