"""The grading process's side of the worker: start workers, send calls, turn replies into values or errors.

``Student`` is what the suites see: ``student.softmax.softmax(x)`` calls the
student's function in the worker and returns a plain tensor;
``student.qkv.SelfAttention(4, 3)`` returns a ``RemoteObject`` whose methods,
parameters and backward the test drives. Student exceptions come back as
``StudentError`` (also an instance of the matching built-in, so
``pytest.raises(ValueError)`` works); everything else that goes wrong with a
submission is a ``SubmissionProblem`` with a message meant for the student.
"""
from __future__ import annotations

import builtins
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache

from . import ROOT, wire
from .course import Limits as CourseLimits
from .worker import describe_status

MAX_REPLY_BYTES = 256 << 20
HELLO_SECONDS = 60


class SubmissionProblem(Exception):
    """The submission could not be called: a missing file or name, a failed import, a crash, a time-out."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class StudentError(Exception):
    """The student's code raised an exception; ``info`` holds its type, message and the student's frames."""

    def __init__(self, info: dict):
        self.info = info
        where = f" ({info['frames'][-1]})" if info.get("frames") else ""
        if info.get("type") == "NotImplementedError":
            super().__init__(f"not implemented yet: {info.get('message')}")
        else:
            super().__init__(f"your code raised {info.get('type')}: {info.get('message')}{where}")


@cache
def _student_error_class(names: tuple[str, ...]) -> type:
    bases = tuple(getattr(builtins, n) for n in names
                  if isinstance(getattr(builtins, n, None), type) and issubclass(getattr(builtins, n), Exception)
                  and n not in ("Exception", "BaseException"))
    bases = tuple(b for b in bases if not any(b is not o and issubclass(o, b) for o in bases))
    return type("StudentError", (StudentError, *bases), {}) if bases else StudentError


def student_error(info: dict) -> StudentError:
    """A StudentError that is also an instance of the student's exception's built-in classes."""
    cls = _student_error_class(tuple(str(n) for n in info.get("builtins", [])))
    error = Exception.__new__(cls)
    StudentError.__init__(error, info)
    return error


@dataclass
class CallResult:
    value: object
    arg_grads: list | None = None
    param_grads: dict | None = None
    called: list[str] = field(default_factory=list)
    ops: int | None = None
    args_after: list | None = None


class Zygote:
    """A fresh interpreter with torch imported, forking sandboxed workers on request."""

    def __init__(self):
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile()
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "PYTHONPATH": str(ROOT),
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
        env.update({k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "GRADER_SANDBOX_UID") if k in os.environ})
        self.process = subprocess.Popen([sys.executable, "-m", "grader.worker", str(theirs.fileno())],
                                        pass_fds=[theirs.fileno()], env=env, cwd="/", stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=self.log)
        theirs.close()

    def _ask(self, request: dict, fds=()) -> dict:
        try:
            socket.send_fds(self.control, [json.dumps(request).encode()], list(fds))
            reply = self.control.recv(65536)
        except OSError:
            reply = b""
        if not reply:
            self.log.seek(0)
            raise RuntimeError(f"the worker zygote stopped: {self.log.read()[-2000:].decode(errors='replace')}")
        return json.loads(reply)

    def spawn(self, submission: str, limits: CourseLimits, device: str, require_sandbox: bool) -> tuple[int, socket.socket]:
        ours, theirs = socket.socketpair()
        limits = {k: getattr(limits, k) for k in ("memory_mb", "cpu_seconds", "processes", "file_size_mb", "open_files", "tmp_mb")}
        try:
            pid = self._ask({"op": "spawn", "submission": str(submission), "limits": limits, "device": device,
                             "require_sandbox": require_sandbox}, [theirs.fileno()])["pid"]
        finally:
            theirs.close()
        return pid, ours

    def reap(self, pid: int) -> int:
        return self._ask({"op": "reap", "pid": pid})["status"]

    def close(self):
        self.control.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class Session:
    """Grading one submission: a worker that is restarted after a crash or a time-out, and the limits."""

    def __init__(self, zygote: Zygote, submission: str, limits: CourseLimits, device: str = "cpu",
                 require_sandbox: bool = False):
        self.zygote, self.submission, self.limits = zygote, submission, limits
        self.device, self.require_sandbox = device, require_sandbox
        self.deadline = time.monotonic() + limits.submission_seconds
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.generation = 0
        self.imported: set[str] = set()
        self.broken: dict[str, SubmissionProblem] = {}
        self.isolation = "not started"

    # -- worker lifecycle

    def _start(self):
        self.pid, self.sock = self.zygote.spawn(self.submission, self.limits, self.device, self.require_sandbox)
        self.generation += 1
        self.imported.clear()
        hello = self._exchange(None, min(HELLO_SECONDS, self._remaining()), "while starting")
        self.isolation = hello.get("isolation", "unknown")
        if not hello.get("ok"):
            problem = self._problem(hello)
            self.stop()
            raise problem

    def stop(self) -> int | None:
        """Kill the worker (if any) and return its wait status."""
        if self.pid is None:
            return None
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.sock.close()
        status = self.zygote.reap(self.pid)
        self.pid = self.sock = None
        return status

    def _remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _exchange(self, frame: bytes | None, timeout: float, doing: str) -> dict:
        """Send a frame (None: only read) and read the reply; on a hang or a death, stop the worker and raise."""
        try:
            if frame is not None:
                self.sock.sendall(frame)
            ready, _, _ = select.select([self.sock], [], [], max(timeout, 0))
            if not ready:
                self.stop()
                raise SubmissionProblem("timeout", f"your code ran for more than {timeout:.0f} s {doing} and was stopped "
                                                   "(an endless loop, or far too slow?)")
            message, blob = wire.read_frame(self.sock, MAX_REPLY_BYTES)
        except (EOFError, ConnectionError, BrokenPipeError):
            status = self.stop()
            raise SubmissionProblem("crash", f"the worker running your code {describe_status(status or 0)} {doing}") from None
        except wire.WireError as error:
            self.stop()
            raise SubmissionProblem("reply", f"the reply of your code could not be read: {error}") from None
        self._blob = blob
        return message

    # -- requests

    def _decoder(self):
        generation = self.generation
        return wire.Decoder(self._blob, handle=lambda h: RemoteObject(self, h.id, h.type_name, generation))

    def _problem(self, reply: dict) -> Exception:
        if "error" in reply:
            return student_error(reply["error"])
        failure = reply.get("failure", {})
        return SubmissionProblem(failure.get("kind", "unknown"), failure.get("message", "unknown failure"))

    def _ensure(self, module: str | None, targets=()):
        for target in targets:
            if target.get("generation", self.generation) != self.generation:
                raise SubmissionProblem("restarted", f"this {target.get('type', 'object')} was lost when the worker "
                                                     "was restarted after an earlier failure")
        if module in self.broken:
            raise self.broken[module]
        if self._remaining() <= 0:
            raise SubmissionProblem("timeout", f"grading your submission took more than {self.limits.submission_seconds:.0f} s "
                                               "in all; the remaining checks were not run")
        if self.pid is None:
            self._start()
        if module is not None and module not in self.imported:
            try:
                reply = self._exchange(wire.encode({"op": "import", "module": module}),
                                       min(self.limits.call_seconds, self._remaining()), f"while importing {module}.py")
                if not reply.get("ok"):
                    raise self._problem(reply)
            except (SubmissionProblem, StudentError) as problem:
                self.broken[module] = problem if isinstance(problem, SubmissionProblem) else SubmissionProblem("import", str(problem))
                raise self.broken[module] from None
            self.imported.add(module)

    def request(self, message: dict, module: str | None, calls: int = 1) -> tuple[dict, wire.Decoder]:
        """Send one request about ``module`` and return its (successful) reply and a decoder for it."""
        self._ensure(module)
        frame = wire.encode(message)
        timeout = min(self.limits.call_seconds * calls, self._remaining())
        reply = self._exchange(frame, timeout, "during this check")
        return reply, self._decoder()

    def run(self, target: dict, args=(), kwargs=None, **options) -> CallResult:
        """Call the object ``target`` names with ``args`` and ``kwargs``; options: seed, grad_output, watch, instrument, return_args."""
        return self.run_many([(target, args, kwargs, options)])[0]

    def run_many(self, calls: list[tuple[dict, tuple, dict | None, dict]]) -> list[CallResult]:
        """Several calls in one round trip; raises the first failure."""
        modules = {c[0].get("module") for c in calls} - {None}
        for module in sorted(modules) or [None]:
            self._ensure(module, [c[0] for c in calls])
        requests = [{"op": "call", "target": target, "args": list(args), "kwargs": kwargs or {}, **options}
                    for target, args, kwargs, options in calls]
        reply, decode = self.request({"op": "batch", "requests": requests}, None, calls=len(calls))
        results = []
        for item in reply.get("replies", []):
            if not item.get("ok"):
                raise self._problem(item)
            results.append(CallResult(value=decode(item.get("value")), arg_grads=decode(item.get("arg_grads")),
                                      param_grads=decode(item.get("param_grads")), called=list(item.get("called", [])),
                                      ops=item.get("ops"), args_after=decode(item.get("args_after"))))
        return results

    def simple(self, op: str, target: dict, **fields):
        self._ensure(target.get("module"), [target])
        reply, decode = self.request({"op": op, "target": target, **fields}, target.get("module"))
        if not reply.get("ok"):
            raise self._problem(reply)
        return decode(reply.get("value"))

    def close(self):
        self.stop()


class Remote:
    """A name in the worker: a module, a handle, or an attribute path below one. Calling it runs the call there."""

    def __init__(self, session: Session, target: dict):
        self._session, self._target = session, target

    def __getattr__(self, name: str) -> "Remote":
        if name.startswith("__"):
            raise AttributeError(name)
        return Remote(self._session, {**self._target, "path": [*self._target.get("path", []), name]})

    def __call__(self, *args, **kwargs):
        return self.run(args, kwargs).value

    def run(self, args=(), kwargs=None, **options) -> CallResult:
        """Call with instrumentation options (seed, grad_output, watch, instrument, return_args)."""
        return self._session.run(self._target, args, kwargs, **options)

    def get(self):
        """The attribute's value (a tensor, a plain value, or a RemoteObject)."""
        return self._session.simple("get", self._target)

    def __repr__(self):
        return f"<remote {self._target}>"


class RemoteObject(Remote, wire.Handle):
    """An object living in the worker, e.g. the student's nn.Module."""

    def __init__(self, session: Session, id: int, type_name: str, generation: int):
        Remote.__init__(self, session, {"handle": id, "type": type_name, "generation": generation})
        wire.Handle.__init__(self, id, type_name)

    def params(self) -> dict:
        """The module's named parameters, as plain tensors."""
        return self._session.simple("params", self._target)

    def load_params(self, params: dict) -> None:
        """Copy tensors into the module's parameters of the same names."""
        self._session.simple("load_params", self._target, params=params)


class Student:
    """The submission as the suites see it: ``student.<module>.<name>``."""

    def __init__(self, session: Session):
        self.session = session

    def __getattr__(self, module: str) -> Remote:
        if module.startswith("__"):
            raise AttributeError(module)
        return Remote(self.session, {"module": module})
