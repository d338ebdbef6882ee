"""The grading process's handle on its zygote: start it, ask it to fork, wait for and reap workers.

``Zygote`` is a fresh interpreter (grader.sandbox.jail.lifeline, then grader.sandbox.jail.zygote) that imports torch
once and forks the sandboxed workers; a batch's jobs have theirs forked by one ``ZygoteTemplate`` instead. This module
imports neither torch nor pydantic (nor does the zygote import pydantic), so a grading process can start its zygote
before importing torch itself, and both imports run at once (``grader grade``'s cold start).
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import typing
from typing import TYPE_CHECKING

from grader import ROOT

if TYPE_CHECKING:
    from collections.abc import Sequence

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

    def __init__(self, namespaces: bool = True, hide: tuple[str, ...] = (), template: ZygoteTemplate | None = None):
        """``namespaces=False`` never builds the namespace sandbox (workers get rlimits only, as on a machine
        without namespaces): for testing that degraded path, never for grading students. ``hide``: folders the
        sandbox hides besides the grader's repository (the root of a course kept elsewhere). ``template``: the
        zygote is forked by it (a batch's job), or, where it cannot be, started afresh."""
        self.namespaces, self.hide, self.template = namespaces, tuple(str(path) for path in hide), template
        self._launch()

    def _launch(self):
        self.spawned = 0
        settings = {"namespaces": self.namespaces, "hide": self.hide}
        if self.template is not None:
            self.log = tempfile.TemporaryFile()
            try:
                self.process, self.control = self.template.clone(settings, self.log)
                return
            except GraderFault:  # the template is gone (its batch ending), stuck or failing: a fresh interpreter
                self.log.close()
        self.process, self.control, self.log = _interpreter(settings)

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
              relaunch: bool = True, watch: Sequence[str] = ()) -> tuple[int, socket.socket]:
        """A new worker (its pid and our end of its socket) that reports the calls of ``watch`` (torch names) its
        student's code makes. A zygote that died (it never runs student code) is started
        again, unless ``relaunch`` is False (ZygoteGone): a thread that ends soon must not start it, since its
        parent-death signal follows the thread that started it, not the process. One that dies while asked (its
        starter thread had just ended, the signal on its way: a grader fault after threaded jobs) is as one found
        dead."""
        try:
            return self._spawn(submission, limits, device, require_sandbox, relaunch, watch)
        except GraderFault:
            if not self._died():
                raise
        return self._spawn(submission, limits, device, require_sandbox, relaunch, watch)

    def _spawn(self, submission: str, limits: Limits, device: str, require_sandbox: bool,
               relaunch: bool, watch: Sequence[str]) -> tuple[int, socket.socket]:
        if not self.alive():
            if not relaunch:
                raise ZygoteGone
            self.close()
            self._launch()
        ours, theirs = socket.socketpair()
        try:
            pid = self._ask({"op": "spawn", "submission": str(submission), "limits": dataclasses.asdict(limits),
                             "device": device, "require_sandbox": require_sandbox, "watch": list(watch)},
                             [theirs.fileno()])["pid"]
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
        # it exits when it sees the control socket closed; one that never spawned may still be warming up
        _end(self.process, self.control, self.log, 10 if self.spawned else 0.5)
        if isinstance(self.process, Cloned):
            self.process.release()


def _interpreter(settings: dict) -> tuple[subprocess.Popen, socket.socket, typing.IO[bytes]]:
    """A fresh interpreter started as a zygote (``jail.zygote.start``) with ``settings``: its process, our end of its
    control socket, and its standard error (a temporary file)."""
    control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-s", "-c", BOOTSTRAP, str(os.getpid()), str(theirs.fileno())],
                               pass_fds=[theirs.fileno()], env=ZYGOTE_ENV, cwd="/", stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=log)
    theirs.close()
    with process.stdin as stdin:  # two short lines: the pipe holds them without blocking
        stdin.write(f"{json.dumps(str(ROOT))}\n{json.dumps({**settings, 'environ': _passed_on()})}\n".encode())
    return process, control, log


def _end(process, control: socket.socket, log: typing.IO[bytes], seconds: float) -> None:
    """Close a zygote's (or the template's) control socket, which ends it, wait ``seconds`` for it, else kill it."""
    control.close()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


def _passed_on() -> dict[str, str | None]:
    """The grading process's ``PASSED_ON`` variables, None for those it does not have (a zygote forked by the template
    removes them)."""
    return {name: os.environ.get(name) for name in PASSED_ON}


class ZygoteTemplate:
    """A zygote's fresh interpreter, warmed up, that forks zygotes: a batch's jobs get theirs from it
    (``Zygote(template=...)``), each for the cost of a fork instead of an interpreter importing torch. Processes
    forked from the one that starts it share it, one request at a time (a lock). A zygote it forks takes the asker's
    settings and ``PASSED_ON`` variables (the sandbox uid a job leased), writes its errors to the asker's log, serves
    the asker alone on a control socket of the asker's, and ends when that socket closes (the asker gone) or with the
    template. An asker that waits more than ``WAIT_SECONDS`` for the lock, or as long again for the answer (a
    template still warming up on a slow disk, or gone), starts a fresh zygote, and so does every later asker of its
    process."""

    WAIT_SECONDS = 30.0

    def __init__(self):
        self.process, self.control, self.log = _interpreter({"template": True})
        self.lock = AskerLock()
        self.failed_in: int | None = None  # the process for which it failed: it starts fresh zygotes from then on

    def clone(self, settings: dict, log: typing.IO[bytes]) -> tuple[Cloned, socket.socket]:
        """A new zygote with ``settings`` (``Zygote``'s) and ``log`` as its standard error: its process, and our end of
        its control socket; GraderFault when the template cannot fork one."""
        if self.failed_in == os.getpid():
            raise GraderFault("the zygote template failed this process before")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        nonce = secrets.token_hex(8)  # a reply left by an asker that stopped waiting for it is not ours
        request = json.dumps({**settings, "environ": _passed_on(), "nonce": nonce}).encode()
        reply, fds = {}, []
        try:
            if not self.lock.acquire(self.WAIT_SECONDS):
                raise TimeoutError
            try:
                socket.send_fds(self.control, [request], [theirs.fileno(), log.fileno()])
                readable, deadline = select.poll(), time.monotonic() + self.WAIT_SECONDS
                readable.register(self.control, select.POLLIN)
                while reply.get("nonce") != nonce:
                    for fd in fds:
                        os.close(fd)
                    if not readable.poll(max(0.0, deadline - time.monotonic()) * 1000):
                        raise TimeoutError
                    data, fds, _, _ = socket.recv_fds(self.control, 65536, 1)
                    if not data:
                        raise EOFError
                    reply = json.loads(data)
            finally:
                self.lock.release()
        except (OSError, EOFError, ValueError):
            reply = {}
        finally:
            theirs.close()
        if "pid" not in reply or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            ours.close()
            self.failed_in = os.getpid()
            raise GraderFault(f"the zygote template could not fork a zygote: {reply.get('error', 'no answer')}")
        return Cloned(int(reply["pid"]), fds[0]), ours

    def close(self) -> None:
        """Stop the template (the zygotes it forked end with it)."""
        _end(self.process, self.control, self.log, 10)
        self.lock.file.close()


class AskerLock:
    """One asker of the template at a time, among the processes forked from its owner and their threads, released by
    the kernel when its holder dies: a record lock on a file of the template's, which belongs to the process that took
    it (fork passes on none; a job killed while asking used to hold a shared semaphore forever, and every other job
    waited ``WAIT_SECONDS`` for it before starting a fresh zygote)."""

    POLL_SECONDS = 0.002  # a request holds the lock about a millisecond

    def __init__(self):
        self.file = tempfile.TemporaryFile()
        self.threads, self.pid = threading.Lock(), os.getpid()

    def acquire(self, timeout: float) -> bool:
        """Take the lock within ``timeout`` seconds; False if it stayed held."""
        if self.pid != os.getpid():  # a forked process's threads get a lock of their own (a copy may be held forever)
            self.threads, self.pid = threading.Lock(), os.getpid()
        deadline = time.monotonic() + timeout
        if not self.threads.acquire(timeout=timeout):
            return False
        try:
            while True:
                try:
                    fcntl.lockf(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return True
                except (BlockingIOError, PermissionError):  # held by another process (any other error: raised)
                    if time.monotonic() >= deadline:
                        self.threads.release()
                        return False
                    time.sleep(self.POLL_SECONDS)
        except BaseException:
            self.threads.release()
            raise

    def release(self) -> None:
        try:
            fcntl.lockf(self.file, fcntl.LOCK_UN)
        finally:
            self.threads.release()


class Cloned:
    """A zygote forked by the template, as the process it serves sees it (not its parent, which reaps it): its pid and
    a pidfd, readable once it has exited; as much of ``subprocess.Popen`` as ``Zygote`` uses (no exit status)."""

    def __init__(self, pid: int, pidfd: int):
        self.pid, self.pidfd = pid, pidfd

    def _exited(self, timeout: float | None) -> bool:
        if self.pidfd < 0:  # released
            return True
        readable = select.poll()
        readable.register(self.pidfd, select.POLLIN)
        return bool(readable.poll(None if timeout is None else timeout * 1000))

    def poll(self) -> int | None:
        return 0 if self._exited(0) else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited(timeout):
            raise subprocess.TimeoutExpired("zygote", timeout)
        return 0

    def kill(self) -> None:
        if self.pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def release(self) -> None:
        """Close the pidfd (once): the process is no longer watched."""
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
