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
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache

from . import ROOT, wire
from .course import MODULES
from .course import Limits as CourseLimits
from .worker import describe_status

MAX_REPLY_BYTES = wire.MAX_REPLY_BYTES
HELLO_SECONDS = 60
EXIT_GRACE_SECONDS = 2.0  # a worker that closed its socket gets this long to exit before it is killed
CRASHES_PER_FUNCTION = 3  # a function that crashed the worker this often is not called again
OUT_OF_MEMORY = ("MemoryError", "OutOfMemoryError")  # a function that raised one of these is not called again
MAX_TEXT = 2000
CHECK = "during this check"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def clean_text(value, limit: int = MAX_TEXT) -> str:
    """Text that came from the worker, made safe to show: a str, no control characters, at most ``limit`` long."""
    text = value if isinstance(value, str) else "" if value is None else repr(value)
    text = _CONTROL.sub("?", text[:limit * 2])
    return text if len(text) <= limit else text[:limit] + "…"


class GraderFault(RuntimeError):
    """The grader itself could not do its job (the zygote died, a required sandbox is unavailable):
    not the submission's fault. Recorded in ``Session.fault``; the submission must not be scored."""


class SubmissionProblem(Exception):
    """The submission could not be called: a missing file or name, a failed import, a crash, a time-out."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class StudentError(Exception):
    """The student's code raised an exception; ``info`` holds its type, message and the student's frames."""

    def __init__(self, info: dict):
        info = _clean_info(info)
        self.info = info
        where = f" ({info['frames'][-1]})" if info["frames"] else ""
        if info["type"] == "NotImplementedError":
            self.message = f"not implemented yet: {info['message']}"
        else:
            self.message = f"your code raised {info['type']}: {info['message']}{where}"
        Exception.__init__(self, self.message)

    def __str__(self):
        return self.message


def _clean_info(info) -> dict:
    """A worker's description of an exception, with every field of the expected type and cleaned."""
    info = info if isinstance(info, dict) else {}
    frames = info.get("frames") if isinstance(info.get("frames"), list) else []
    names = info.get("builtins") if isinstance(info.get("builtins"), list) else []
    return {"type": clean_text(info.get("type", "Exception"), 100),
            "builtins": [n for n in names if isinstance(n, str) and n.isidentifier()][:20],
            "message": clean_text(info.get("message", "")),
            "frames": [clean_text(f, 300) for f in frames[-8:]]}


@lru_cache(maxsize=256)
def _student_error_class(names: tuple[str, ...]) -> type:
    bases = [getattr(builtins, n) for n in names if n not in ("Exception", "BaseException")]
    bases = [b for b in bases if isinstance(b, type) and issubclass(b, Exception)]
    bases = [b for i, b in enumerate(bases) if b not in bases[:i] and not any(o is not b and issubclass(o, b) for o in bases)]
    while bases:  # drop bases until the class can be built and instantiated (layout conflicts, picky __new__s)
        try:
            cls = type("StudentError", (StudentError, *bases), {})
            _instance(cls)
            return cls
        except TypeError:
            bases.pop()
    return StudentError


def _instance(cls: type) -> StudentError:
    for new in (cls.__new__, Exception.__new__, BaseException.__new__):
        try:
            return new(cls)
        except TypeError:
            continue
    raise TypeError(f"cannot create a {cls.__mro__[1:]}")


def student_error(info: dict) -> StudentError:
    """A StudentError that is also an instance of the student's exception's built-in classes."""
    info = _clean_info(info)
    error = _instance(_student_error_class(tuple(info["builtins"])))
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
    """A fresh interpreter with torch imported, forking sandboxed workers on request.

    One zygote serves one grading process, one request at a time (it is not thread-safe).
    Should it die, the next ``spawn`` starts a new one.
    """

    def __init__(self, namespaces: bool = True):
        """``namespaces=False`` never builds the namespace sandbox (workers get rlimits only, as on a machine
        without namespaces): for testing that degraded path, never for grading students."""
        self.namespaces = namespaces
        self._launch()

    def _launch(self):
        self.spawned = 0
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile()
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "PYTHONPATH": str(ROOT),
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
        env.update({k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "GRADER_SANDBOX_UID", "GRADER_SANDBOX_GID")
                    if k in os.environ})
        flags = [] if self.namespaces else ["--no-namespaces"]
        self.process = subprocess.Popen([sys.executable, "-m", "grader.worker", str(theirs.fileno()), *flags],
                                        pass_fds=[theirs.fileno()], env=env, cwd="/", stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=self.log)
        theirs.close()

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

    def spawn(self, submission: str, limits: CourseLimits, device: str, require_sandbox: bool) -> tuple[int, socket.socket]:
        if not self.alive():  # it died (it never runs student code): start a new one
            self.close()
            self._launch()
        ours, theirs = socket.socketpair()
        limits = {k: getattr(limits, k) for k in ("memory_mb", "cpu_seconds", "processes", "file_size_mb", "open_files", "tmp_mb")}
        try:
            pid = self._ask({"op": "spawn", "submission": str(submission), "limits": limits, "device": device,
                             "require_sandbox": require_sandbox}, [theirs.fileno()])["pid"]
        finally:
            theirs.close()
        self.spawned += 1
        return pid, ours

    def reap(self, pid: int) -> int | None:
        """Wait for a worker that was killed; its wait status (None when the zygote is gone)."""
        try:
            return self._ask({"op": "reap", "pid": pid})["status"]
        except GraderFault:
            return None

    def wait(self, pid: int, timeout: float) -> int | None:
        """The wait status of a worker that exits within ``timeout`` seconds, else None (it is then still running)."""
        try:
            return self._ask({"op": "wait", "pid": pid, "timeout": timeout})["status"]
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
        self.abandoned: dict[str, SubmissionProblem] = {}  # function label -> why it is not called again
        self.crashes: dict[str, int] = {}
        self.isolation = "not started"
        self.fault: str | None = None  # set when the grader (not the submission) failed: do not score

    # -- worker lifecycle

    def _start(self):
        try:
            self.pid, self.sock = self.zygote.spawn(self.submission, self.limits, self.device, self.require_sandbox)
        except GraderFault as fault:
            self.fault = str(fault)
            raise
        self.generation += 1
        self.imported.clear()
        hello = self._exchange(None, min(HELLO_SECONDS, self._remaining()), "while starting")
        self.isolation = clean_text(hello.get("isolation", "unknown"), 300)
        if not hello.get("ok"):
            problem = self._problem(hello)
            self.stop()
            if getattr(problem, "kind", None) == "sandbox":
                self.fault = str(problem)
                raise GraderFault(str(problem))
            raise problem

    def stop(self, grace: float = 0.0) -> int | None:
        """Stop the worker (if any) and return its wait status (None if unknown).

        With ``grace``, a worker that is exiting on its own (its socket closed) gets that long to
        finish, so that its own exit status (a segfault, say) is reported rather than our SIGKILL.
        """
        if self.pid is None:
            return None
        pid, sock = self.pid, self.sock
        self.pid = self.sock = None
        sock.close()
        status = self.zygote.wait(pid, grace) if grace > 0 else None
        if status is None:
            for kill in (os.kill, os.killpg) if self.isolation.startswith("rlimits only") else (os.kill,):
                try:  # without namespaces the worker leads its own process group: take its children too
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            status = self.zygote.reap(pid)
        if status is None and not self.zygote.alive():
            self.fault = "the worker zygote stopped while grading"
        return status

    def _remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _exchange(self, frame: bytes | None, timeout: float, doing: str) -> dict:
        """Send a frame (None: only read) and read the reply within ``timeout`` seconds in all;
        on a hang, a death or a malformed reply, stop the worker and raise SubmissionProblem."""
        timeout = max(timeout, 0.0)
        deadline = time.monotonic() + timeout
        self._blob = None  # the last reply's bytes are not held while the next one arrives
        try:
            if frame is not None:
                self.sock.settimeout(max(timeout, 0.001))  # a worker that does not read cannot block us
                try:
                    self.sock.sendall(frame)
                finally:
                    self.sock.settimeout(None)
            message, blob = wire.read_frame(self.sock, MAX_REPLY_BYTES, deadline)
        except TimeoutError:
            self.stop()
            if self._remaining() <= 0.05:
                raise SubmissionProblem("timeout", f"grading your submission took more than "
                                                   f"{self.limits.submission_seconds:g} s in all; your code was stopped {doing}") from None
            raise SubmissionProblem("timeout", f"your code ran for more than {timeout:.3g} s {doing} and was stopped "
                                               "(an endless loop, or far too slow?)") from None
        except (EOFError, OSError):
            status = self.stop(grace=EXIT_GRACE_SECONDS)
            what = describe_status(status) if status is not None else "stopped"
            raise SubmissionProblem("crash", f"the worker running your code {what} {doing}") from None
        except wire.WireError as error:
            self.stop()
            raise SubmissionProblem("reply", f"the reply of your code could not be read: {clean_text(str(error), 300)}") from None
        self._blob = blob
        return message

    # -- requests

    def _decoder(self):
        generation, blob = self.generation, self._blob
        decoder = wire.Decoder(blob, handle=lambda h: RemoteObject(self, h.id, clean_text(h.type_name, 100), generation))

        def decode(data):
            try:
                return decoder(data)
            except wire.WireError as error:
                why = str(error)
            # Raised outside the except block: the WireError's traceback (and the tensors half-decoded in its
            # frames, which share the reply's bytes) is not kept alive by the problem the suites hold on to.
            if self.generation == generation:
                self.stop()
            raise SubmissionProblem("reply", f"the reply of your code could not be read: {clean_text(why, 300)}")
        return decode

    def _problem(self, reply: dict) -> Exception:
        if isinstance(reply.get("error"), dict):
            return student_error(reply["error"])
        failure = reply.get("failure") if isinstance(reply.get("failure"), dict) else {}
        return SubmissionProblem(clean_text(failure.get("kind", "unknown"), 40),
                                 clean_text(failure.get("message", "the reply of your code could not be read")))

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
                                       min(self.limits.import_seconds, self._remaining()), f"while importing {module}.py")
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
        reply = self._exchange(frame, timeout, CHECK)
        return reply, self._decoder()

    def run(self, target: dict, args=(), kwargs=None, **options) -> CallResult:
        """Call the object ``target`` names with ``args`` and ``kwargs``; options: seed, grad_output, watch, instrument, return_args."""
        return self.run_many([(target, args, kwargs, options)])[0]

    def run_many(self, calls: list[tuple[dict, tuple, dict | None, dict]]) -> list[CallResult]:
        """Several calls in one round trip, run in order; raises the first failure, with its index in ``step``.

        A call's target may be ``{"earlier": i, "type": name}``: the value returned by call ``i`` of the same
        batch (build a module, then call its methods, in one round trip); ``load_params_step`` makes a call that
        copies parameters into such a module.

        A function whose call timed out or ran out of memory (or that crashed the worker CRASHES_PER_FUNCTION
        times) is not called again: later calls fail at once with the same problem, so one endless loop costs one
        ``call_seconds`` and not one per check (nor the other exercises their share of the time).
        """
        labels = [_label(c[0]) for c in calls]
        for label in labels:
            if label in self.abandoned:
                raise self.abandoned[label]
        modules = {c[0].get("module") for c in calls} - {None}
        for module in sorted(modules) or [None]:
            self._ensure(module, [c[0] for c in calls])
        requests = [{"op": "call", "target": target, "args": list(args), "kwargs": kwargs or {}, **options}
                    for target, args, kwargs, options in calls]
        try:
            reply, decode = self.request({"op": "batch", "requests": requests}, None, calls=len(calls))
        except SubmissionProblem as problem:
            self._strike(labels, problem)
            raise
        replies = reply.get("replies")
        if not reply.get("ok") or not isinstance(replies, list) or len(replies) != len(calls) \
                or not all(isinstance(item, dict) for item in replies):
            if not reply.get("ok") and ("error" in reply or "failure" in reply):
                raise self._problem(reply)
            self.stop()
            raise SubmissionProblem("reply", "the reply of your code could not be read: it does not answer the calls made")
        results = []
        for step, (label, item) in enumerate(zip(labels, replies)):
            if not item.get("ok"):
                problem = self._problem(item)
                if isinstance(problem, StudentError) and problem.info["type"] in OUT_OF_MEMORY:
                    self.abandoned[label] = SubmissionProblem(
                        "memory", f"{label} is not called again: in an earlier check it ran out of memory "
                                  f"({problem.info['type']}; a worker may use {self.limits.memory_mb} MB)")
                problem.step = step
                raise problem
            called, ops = item.get("called", []), item.get("ops")
            results.append(CallResult(value=decode(item.get("value")), arg_grads=decode(item.get("arg_grads")),
                                      param_grads=decode(item.get("param_grads")),
                                      called=[clean_text(n, 100) for n in called] if isinstance(called, list) else [],
                                      ops=ops if type(ops) is int else None, args_after=decode(item.get("args_after"))))
        return results

    def _strike(self, labels: list[str], problem: SubmissionProblem) -> None:
        earlier = str(problem).replace(f" {CHECK}", "")
        if problem.kind == "timeout" and self._remaining() > 0:
            for label in labels:
                self.abandoned[label] = SubmissionProblem(
                    "timeout", f"{label} is not called again: in an earlier check, {earlier}")
        elif problem.kind == "crash":
            for label in labels:
                self.crashes[label] = self.crashes.get(label, 0) + 1
                if self.crashes[label] >= CRASHES_PER_FUNCTION:
                    self.abandoned[label] = SubmissionProblem(
                        "crash", f"{label} is not called again: it crashed the worker {self.crashes[label]} times "
                                 f"(the last time, {earlier})")

    def simple(self, op: str, target: dict, **fields):
        self._ensure(target.get("module"), [target])
        reply, decode = self.request({"op": op, "target": target, **fields}, target.get("module"))
        if not reply.get("ok"):
            raise self._problem(reply)
        return decode(reply.get("value"))

    def close(self):
        """Stop the worker. Raises GraderFault if the grader failed during the session (see ``fault``): its
        results say nothing about the submission and must not be recorded as its grade."""
        self.stop()
        if self.fault:
            raise GraderFault(self.fault)


def load_params_step(target: dict, params: dict) -> tuple[dict, tuple, None, dict]:
    """A call for ``Session.run_many`` that copies ``params`` (tensors by name) into the module ``target`` names."""
    return target, (), None, {"op": "load_params", "params": params}


def _label(target: dict) -> str:
    """A call target in words: ``quiz.decoder_attention``, ``SelfAttention.forward``, ``SelfAttention(...)``."""
    head = str(target.get("module") or clean_text(target.get("type", "object"), 100))
    path = [str(p) for p in target.get("path", [])]
    return ".".join([head, *path]) if path or "module" in target else f"{head}(...)"


class Remote:
    """A name in the worker: a module, a handle, or an attribute path below one. Calling it runs the call there."""

    def __init__(self, session: Session, target: dict):
        self._session, self._target = session, target

    def __getattr__(self, name: str) -> "Remote":
        if _probe(name):
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
        if module not in MODULES:
            raise AttributeError(f"the submission has no exercise {module!r}")
        return Remote(self.session, {"module": module})

    def __repr__(self):
        return "<the student's submission>"


def _probe(name: str) -> bool:
    """Names that tools probe objects for (``__len__``, IPython's and hypothesis's ``_repr_pretty_``), never the
    student's: looking them up must not become a call into the worker."""
    return name.startswith("__") or (name.startswith("_") and name.endswith("_"))
