"""The grading process's side of the worker: start workers, send calls, turn replies into values or errors.

``Zygote`` (grader.sandbox.host.zygote) is a fresh interpreter with torch imported that forks sandboxed workers
(grader.sandbox.jail.worker, which this side never imports); ``WorkerSession`` grades one submission with one worker at a time, restarted after a
crash or a time-out. The suites see the session through the proxies of ``proxy``; what goes wrong is told in the
words of ``problems``.
"""
from __future__ import annotations

import gc
import os
import secrets
import signal
import socket
import threading
import time
from pathlib import Path

from grader.course import course as project_course
from grader.sandbox import wire
from grader.sandbox.host.ahead import Ahead, Planned
from grader.sandbox.host.problems import (
    CHECK,
    FAILURES,
    UNREADABLE,
    GraderFault,
    StudentError,
    SubmissionProblem,
    clean_info,
    handout_stubs,
    student_error,
    student_line,
    which_tensor,
)
from grader.sandbox.host.proxy import CallResult, RemoteObject, guarded, target_label
from grader.sandbox.host.strikes import Abandoned, Shares
from grader.sandbox.host.zygote import Zygote, ZygoteGone
from grader.sandbox.jail.lifeline import describe_status
from grader.sandbox.jail.uids import census
from grader.sandbox.limits import Limits
from grader.text import clean

MAX_REPLY_BYTES = wire.MAX_REPLY_BYTES
# A start's, an import's or a sync's reply: a few KiB (an import error's message, 2,000 characters, and 8 frames of at
# most 400); more is the student's code padding them, which every restart would read again (red team 15).
CONTROL_REPLY_BYTES = 64 << 10
HELLO_SECONDS = 60
EXIT_GRACE_SECONDS = 2.0  # a worker that closed its socket gets this long to exit before it is killed
TEARDOWN_SECONDS = 60.0  # a sandbox gets this long to be gone after SIGTERM (the kernel took 13 s for one that filled its limits)
# Bytes of replies read since the last garbage collection past which the next exchange collects first: a failed
# check's exception holds its frames, and they the reply's bytes, in a cycle only the collector frees, and reading a
# reply makes too few objects to start it (returning one 240 MB tensor to every check held a reply per failed test).
SWEEP_BYTES = 64 * 2**20
MAX_OPS = 10**9  # torch calls one call can make in its time (a count past it, or below 0, is no count the worker made)


class WorkerSession:
    """Grading one submission: a worker that is restarted after a crash or a time-out, and the limits."""

    def __init__(self, zygote: Zygote, submission: str, limits: Limits, device: str = "cpu",
                 require_sandbox: bool = True, modules: tuple[str, ...] | None = None, exercises: Path | None = None):
        """``require_sandbox``: a worker that cannot be confined is a GraderFault (False: it runs with resource limits
        only, for code one trusts); ``modules``: the exercise modules to import and call (default: every exercise of
        the project's course); ``exercises``: the course's stubs folder, whose stub messages are recognized (default:
        the project's)."""
        self.zygote, self.submission, self.limits = zygote, submission, limits
        self.modules = modules or project_course().modules
        self.stubs = handout_stubs(str(exercises or project_course().exercises_dir))
        self.device, self.require_sandbox = device, require_sandbox
        self.deadline = time.monotonic() + limits.submission_seconds
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.generation = 0
        self.imported: set[str] = set()
        self.loaded: set[str] = set()  # the modules imported in some worker: a failed re-import is said in our words
        self.broken: dict[str, SubmissionProblem] = {}
        self.static_imports: dict[str, list[tuple[str, int]]] = {}  # module -> its imports, read by intake
        self.abandoned = Abandoned()  # the functions not called again, and why
        self.isolation = "not started"
        self.cpu_cap = "not started"  # how the worker's CPU is capped: "cgroup v1: cpu, pids", or "none: <why>"
        self.fault: str | None = None  # set when the grader (not the submission) failed: do not score
        self.watch: list[str] = []  # the course's banned names: every call of a worker spawned from here on is
        # instrumented for all of them
        self.exercise: str | None = None  # the exercise whose check is calling (set by the grading plugin)
        self.shares = Shares(limits, len(self.modules))  # of time and bytes read, per exercise
        self.stopped_by: str | None = None  # the exercise whose check ended the last worker: it pays the restart
        self._sources: dict[str, list[str]] = {}  # the lines of the submission's files, read once (student_line)
        self._unswept = 0  # bytes of replies read since the last garbage collection (SWEEP_BYTES)
        self._early: threading.Thread | None = None  # a start running beside the caller (start_early)
        self._early_error: BaseException | None = None
        self.ahead = Ahead(self)  # the first calls of a check's steps, sent in one frame (host.ahead)
        self.check: tuple | None = None  # the check running, as the grading plugin names it: what sends ahead the same

    # -- worker lifecycle

    def start_early(self) -> None:
        """Start the worker on a thread while the caller goes on (collecting the suites, on a cold grade): ``started``
        waits for it, and the first request raises what the start raised, as a start there would have. Nothing starts
        without a zygote (collecting only), nor for a session that has a worker or a start already."""
        if self.zygote is None or self.pid is not None or self._early is not None:
            return

        def start():
            try:
                self._start(relaunch=False)
            except ZygoteGone:
                pass  # the first request starts it again, from the caller's thread
            except BaseException as error:  # raised in the caller's thread by the first request
                self._early_error = error
        thread = threading.Thread(target=start, name="worker start", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the first request starts the worker
            return
        self._early = thread

    def started(self) -> None:
        """Wait for an early start (``start_early``; not from within it): what it learnt (the modules that do not
        import) is known from here on, whatever the timing."""
        if self._early is not None and self._early is not threading.current_thread():
            self._early.join()
            self._early = None

    def _start(self, relaunch: bool = True):
        """Start a worker (``relaunch``: see ``Zygote.spawn``) and import every exercise module not known to be broken,
        before any input reaches it (so an import error, shown with its message, cannot carry an input); a module whose
        import kills the worker is marked broken and the others are imported again in a fresh one."""
        while True:
            self._spawn(relaunch)
            if self._import_all():
                return

    def _spawn(self, relaunch: bool = True):
        try:
            self.pid, self.sock = self.zygote.spawn(self.submission, self.limits, self.device, self.require_sandbox,
                                                    relaunch, self.watch)
        except GraderFault as fault:
            self.fault = str(fault)
            raise
        self.generation += 1
        self.imported.clear()
        hello = self._exchange(None, min(HELLO_SECONDS, self._remaining()), "while starting", CONTROL_REPLY_BYTES)
        self.isolation = clean(hello.get("isolation", "unknown"), 300)
        self.cpu_cap = clean(hello.get("cpu", "unknown"), 300)
        if not hello.get("ok"):
            problem = self._problem(hello, early=True)
            self.stop()
            if getattr(problem, "kind", None) == "sandbox":
                self.fault = f"{problem} ({census()})"
                raise GraderFault(self.fault)
            raise problem

    def _import_all(self) -> bool:
        """Import the modules not imported or broken yet, each within ``import_seconds``; False if the worker died."""
        for module in self.modules:
            if module in self.broken or module in self.imported:
                continue
            try:
                reply = self._exchange(wire.encode({"op": "import", "module": module}), min(
                    self.limits.import_seconds, self._remaining()), f"while importing {module}.py", CONTROL_REPLY_BYTES)
                if not reply.get("ok"):  # a re-import's message could hold the clock a crash was timed by, from an input
                    raise self._problem(reply, module, early=module not in self.loaded)
                self._sync(f"after importing {module}.py")
            except (SubmissionProblem, StudentError) as problem:
                self.broken[module] = problem if isinstance(problem, SubmissionProblem) else SubmissionProblem("import", str(problem))
                if self.pid is None:
                    return False
                continue
            self.imported.add(module)
            self.loaded.add(module)
        return True

    def stop(self, grace: float = 0.0) -> int | None:
        """Stop the worker (if any) and return its wait status (None if unknown).

        With ``grace``, a worker that is exiting on its own (its socket closed) gets that long to finish, so that its
        own exit status (a segfault, say) is reported rather than ours; a sandbox then gets ``TEARDOWN_SECONDS`` to
        be gone, every process of it (see ``jail.children.Children.stop``).
        """
        self.started()
        self._early_error = None  # what a start raised was for a request that never came
        if self.pid is None:
            return None
        pid, sock = self.pid, self.sock
        self.pid = self.sock = None
        self.ahead.forget()
        sock.close()
        status = self.zygote.stop(pid, grace, TEARDOWN_SECONDS, unconfined=self.unconfined)
        if status is None and not self.zygote.alive():
            self.fault = "the worker zygote stopped while grading"
        return status

    def _sync(self, doing: str) -> None:
        """A round trip with a fresh nonce the worker echoes: a reply out of step (frames the student's code wrote
        on the socket, say) stops the worker and raises SubmissionProblem."""
        nonce = secrets.token_hex(8)
        reply = self._exchange(wire.encode({"op": "sync", "nonce": nonce}), min(self.limits.call_seconds, self._remaining()),
                               doing, CONTROL_REPLY_BYTES)
        if reply.get("nonce") != nonce:
            self.stop()
            raise SubmissionProblem("reply", f"{UNREADABLE} {doing}: does your code write to the worker's socket?")

    def _remaining(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def unconfined(self) -> bool:
        """Whether the worker runs with resource limits only (``--allow-unsandboxed`` where no sandbox can be built)."""
        return self.isolation.startswith("rlimits only")

    def _exchange(self, frame: bytes | None, timeout: float, doing: str, max_bytes: float = MAX_REPLY_BYTES,
                  exercise: str | None = None) -> dict:
        """Send a frame (None: only read) and read the reply (at most ``max_bytes``, charged to ``exercise``) within
        ``timeout`` seconds in all; on a hang, a death or a malformed reply, stop the worker and raise
        SubmissionProblem (of kind "too large" for a reply over ``max_bytes``, left unread)."""
        timeout = max(timeout, 0.0)
        deadline = time.monotonic() + timeout
        self._blob = None  # the last reply's bytes are not held while the next one arrives
        if self._unswept >= SWEEP_BYTES:  # nor earlier replies that only garbage holds
            self._unswept = 0
            gc.collect()
        try:
            if frame is not None:
                self.sock.settimeout(max(timeout, 0.001))  # a worker that does not read cannot block us
                try:
                    self.sock.sendall(frame)
                finally:
                    self.sock.settimeout(None)
            message, blob, size = wire.read_frame(self.sock, max_bytes, deadline)
        except TimeoutError:
            self.stop()
            if self._remaining() <= 0.05:
                raise SubmissionProblem("timeout", f"grading your submission took more than "
                                                   f"{self.limits.submission_seconds:g} s in all; your code was stopped {doing}") from None
            raise SubmissionProblem("timeout", f"your code ran for more than {timeout:.3g} s {doing} and was stopped "
                                               "(an endless loop, or far too slow?)") from None
        except (EOFError, OSError):
            status = self.stop(grace=EXIT_GRACE_SECONDS)
            if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) != signal.SIGKILL \
                    and not self.unconfined:
                # A sandbox's supervisor died of a signal its student's code cannot send (their own signals are its
                # exit status): a terminal's or a session's, sent to the grading's process group (walk-through 8).
                self.fault = (f"a worker's sandbox was stopped by signal {os.WTERMSIG(status)} from outside the "
                              f"grading {doing}")
                raise GraderFault(self.fault) from None
            what = describe_status(status) if status is not None else "stopped"
            raise SubmissionProblem("crash", f"the worker running your code {what} {doing}") from None
        except wire.TooLarge as error:
            self.stop()
            raise SubmissionProblem("too large", f"{UNREADABLE}: {error}") from None
        except wire.WireError:
            self.stop()
            raise SubmissionProblem("reply", UNREADABLE) from None
        self.shares.charge(exercise, nbytes=size)
        self._blob = blob
        self._unswept += len(blob)
        return message

    # -- requests

    def _decoder(self):
        """A decoder of the last reply, one for all of its parts, so that their tensors' byte ranges are checked
        against each other. ``decode(data, label, objects)``: an object kept in the worker (a handle) becomes a
        RemoteObject named ``objects`` (the suite's name for it, never the student's) where the check asked for one,
        and fails the call ``label`` anywhere else: a check never receives a proxy it did not ask for. Every tensor
        comes as a ``StudentTensor``, which a check verifies before computing with it (``checks.checked``)."""
        generation, asked = self.generation, {}

        def handle(h: wire.Handle):
            if asked["objects"] is None:
                raise SubmissionProblem("result", f"{asked['label']} returned an object that is neither a tensor nor a "
                                                  "plain value (a number, or a tuple or list of tensors): return tensors")
            return RemoteObject(self, h.id, asked["objects"], generation)
        decoder = wire.Decoder(self._blob, handle=handle, devices=wire.session_devices(self.device), received=guarded)

        def decode(data, label: str, objects: str | None = None):
            asked.update(label=label, objects=objects)
            try:
                return decoder(data)
            except wire.WireError:
                pass
            # Raised outside the except block: the WireError's traceback (and the tensors half-decoded in its
            # frames, which share the reply's bytes) is not kept alive by the problem the suites hold on to; nor is
            # the reply, which the decoder in this closure holds (pytest keeps a failed test's traceback until the
            # next failure, and a check that fails makes more calls before it gives up: three frames were held).
            if self.generation == generation:
                self.stop()
            decoder.blob = bytearray()
            raise SubmissionProblem("reply", UNREADABLE)

        def release():  # let go of the reply's bytes, before raising what a traceback will keep
            decoder.blob = self._blob = bytearray()
        decode.unclaimed, decode.release = decoder.unclaimed, release
        return decode

    def _problem(self, reply: dict, label: str = "your code", early: bool = False) -> Exception:
        """The failure a reply reports. ``early``: the reply came before any input reached the worker (its start
        and imports), so its own words may be shown; later, only the grader's words for the kind of failure."""
        if isinstance(reply.get("error"), dict):
            info = clean_info(reply["error"])
            # The place only for a failure before any input reached the worker: later, the line that raises could
            # be chosen from the input (a file padded with lines makes its number a channel of many bits).
            return student_error(info, student_line(info["frames"], self.modules, self.submission, self._sources)
                                 if early else "", self.stubs)
        failure = reply.get("failure") if isinstance(reply.get("failure"), dict) else {}
        kind = clean(failure.get("kind", "unknown"), 40)
        if early:
            return SubmissionProblem(kind, clean(failure.get("message", UNREADABLE)))
        return SubmissionProblem(kind, FAILURES.get(kind, UNREADABLE).format(label=label, which=which_tensor(failure)))

    def _ensure(self, module: str | None, targets=()):
        if self.ahead.recording:  # a dry run stops before anything reaches the worker
            raise Planned
        for target in targets:
            if target.get("generation", self.generation) != self.generation:
                raise SubmissionProblem("restarted", f"this {target.get('type', 'object')} was lost when the worker "
                                                     "was restarted after an earlier failure")
        self.started()
        if self._early_error is not None:  # the early start's failure, said by the request that needed the worker
            error, self._early_error = self._early_error, None
            raise error
        if module in self.broken:
            raise self.broken[module].again()
        if self._remaining() <= 0:
            raise SubmissionProblem("timeout", f"grading your submission took more than {self.limits.submission_seconds:.0f} s "
                                               "in all; the remaining checks were not run")
        spent = self.shares.spent_problem(self.exercise)
        if spent is not None:
            raise spent
        if self.pid is None:
            started, owner = time.monotonic(), self.stopped_by
            try:
                self._start()
            finally:  # a restart (its imports included) is paid by the exercise whose check ended the last worker
                self.shares.charge(owner, time.monotonic() - started)
                self.stopped_by = None
            if module in self.broken:
                raise self.broken[module].again()

    def request(self, frame: bytes, module: str | None, calls: int = 1, max_bytes: int = MAX_REPLY_BYTES) -> dict:
        """Send one request (its frame) about ``module`` and return its reply (decode it with ``_decoder``)."""
        self._ensure(module)
        left, unread = self.shares.seconds_left(self.exercise), self.shares.bytes_left(self.exercise)
        timeout = min(self.limits.call_seconds * calls, self._remaining(), left)
        started = time.monotonic()
        try:
            return self._exchange(frame, timeout, CHECK, min(max_bytes, unread), self.exercise)
        except SubmissionProblem as problem:
            if self.pid is None:  # the worker ended (a crash, a time-out): this exercise pays its restart
                self.stopped_by = self.exercise
            if problem.kind == "timeout" and timeout == left and self._remaining() > 0.05:
                raise self.shares.out_of_time(self.exercise) from None
            if problem.kind == "too large" and unread < max_bytes:
                raise self.shares.out_of_bytes(self.exercise) from None
            raise
        finally:
            self.shares.charge(self.exercise, time.monotonic() - started)

    def run(self, target: dict, args=(), kwargs=None, **options) -> CallResult:
        """Call the object ``target`` names with ``args`` and ``kwargs``; options: seed, as_on_cpu (the call makes its
        tensors on the CPU by default, as when grading on the CPU, whatever the device), grad_output, return_args,
        dropout ("keyed": every dropout is ``grader.sandbox.dropout.keyed_dropout``) (sent to the worker), watch (the banned names to report in ``called``) and handles (the result may be an
        object kept in the worker: a constructor, ``module.to(...)``)."""
        return self.run_many([(target, args, kwargs, options)])[0]

    def run_many(self, calls: list[tuple[dict, tuple, dict | None, dict]]) -> list[CallResult]:
        """Several calls in one round trip, run in order; raises the first failure, with its index in ``step``.

        A call's target may be ``{"earlier": i, "type": name}``: the value returned by call ``i`` of the same
        batch (build a module, then call its methods, in one round trip); ``load_params_step`` makes a call that
        copies parameters into such a module.

        A function whose call timed out or ran out of memory, crashed the worker too often or got a reply its code
        changed is not called again (``strikes``).
        """
        labels = [target_label(c[0]) for c in calls]
        # Every call is instrumented alike, for all of the course's banned names (the worker has them from its spawn):
        # student code cannot tell a checked call from another; the grading process keeps what each check asked for.
        requests = [{"op": "call", "target": target, "args": list(args), "kwargs": kwargs or {},
                     **{k: v for k, v in options.items() if k not in LOCAL_OPTIONS}}
                    for target, args, kwargs, options in calls]
        frame = wire.encode({"op": "batch", "requests": requests})
        if self.ahead.recording:
            self.ahead.record(frame, [c[0] for c in calls], labels)
        self.abandoned.refuse(labels)
        for module in sorted({c[0].get("module") for c in calls} - {None}) or [None]:
            self._ensure(module, [c[0] for c in calls])
        answered = self.ahead.answer(frame)
        if answered is not None:
            reply, decode = answered
        else:
            try:
                reply = self.request(frame, None, calls=len(calls))
            except SubmissionProblem as problem:
                self.abandoned.failed(labels, problem, self._remaining() > 0)
                raise
            decode = self._decoder()  # one decoder: the byte ranges of all calls' results are checked together
        replies = reply.get("replies")
        if not reply.get("ok") or not isinstance(replies, list) or len(replies) != len(calls) \
                or not all(isinstance(item, dict) for item in replies):
            if not reply.get("ok") and ("error" in reply or "failure" in reply):
                raise self._problem(reply, labels[0])
            self.stop()
            raise SubmissionProblem("reply", f"{UNREADABLE}: it does not answer the calls made")
        results = self._results(calls, labels, replies, decode, live=answered is None)
        if answered is None:  # (a frame sent ahead is shared by its parts' answers, and no more than REPLY_BYTES)
            if decode.unclaimed():
                del results
                decode.release()
                raise self.abandoned.forged(labels)
            self.ahead.made(frame)  # it returned: the calls that follow it may go ahead
        return results

    def _results(self, calls: list, labels: list[str], replies: list[dict], decode, live: bool) -> list[CallResult]:
        """The calls' results, decoded from their ``replies`` (only what each call asked for: bytes sent beyond it are
        no value's, and the reply is refused); raises the first failure, with its index in ``step``, the reply let go
        of where it is ``live`` (not a frame sent ahead, which other answers share)."""
        results = []
        for step, (label, item, call) in enumerate(zip(labels, replies, calls)):
            if not item.get("ok"):
                problem = self._problem(item, label)
                self.abandoned.raised(label, problem, self.limits.memory_mb)
                problem.step = step
                if live:
                    decode.release()
                raise problem
            options, called, ops = call[3], item.get("called", []), item.get("ops")
            if ops is not None and not (type(ops) is int and 0 <= ops <= MAX_OPS):
                self.stop()
                raise SubmissionProblem("reply", f"{UNREADABLE}: its count of tensor operations is not one")
            if not (type(called) is list and all(type(name) is str for name in called)):  # red team 18: [{}] made
                self.stop()  # the set below raise TypeError in the grading process, a grader fault on every run
                raise SubmissionProblem("reply", f"{UNREADABLE}: its list of the calls made is not one")
            wanted = set(options.get("watch", ()))
            value = decode(item.get("value"), label, _object_name(call[0]) if options.get("handles") else None)
            count, backward = len(call[1]), options.get("grad_output") is not None
            results.append(CallResult(
                value=value, arg_grads=decode(_first(item.get("arg_grads"), count), label) if backward else None,
                param_grads=decode(item.get("param_grads"), label) if backward else None,
                called=sorted({n for n in called if n in wanted}), ops=ops,
                args_after=decode(_first(item.get("args_after"), count), label) if options.get("return_args") else None))
        return results

    def simple(self, op: str, target: dict, **fields):
        label = target_label(target)
        self.abandoned.refuse([label])
        self._ensure(target.get("module"), [target])
        reply = self.request(wire.encode({"op": op, "target": target, **fields}), target.get("module"))
        decode = self._decoder()
        if not reply.get("ok"):
            decode.release()
            raise self._problem(reply, label)
        value = decode(reply.get("value"), label)
        if decode.unclaimed():
            del value
            decode.release()
            raise self.abandoned.forged([label])
        return value

    def imports(self, module: str) -> list[tuple[str, int]] | None:
        """``module``'s imports as intake read them from its file before any code of the submission ran (what its code
        did since cannot change them), once the module imports; None where Python cannot parse the file."""
        self._ensure(module)
        return self.static_imports.get(module)

    def close(self):
        """Stop the worker. Raises GraderFault if the grader failed during the session (see ``fault``): its
        results say nothing about the submission and must not be recorded as its grade."""
        self.stop()
        if self.fault:
            raise GraderFault(self.fault)


LOCAL_OPTIONS = ("watch", "handles")  # call options the grading process acts on itself


def _first(values, count: int):
    """The first ``count`` entries of a reported list (one per argument of the call); anything else as it is."""
    return values[:count] if isinstance(values, list) else values


def _object_name(target: dict) -> str:
    """The suite's name for an object a call builds: the class's name in the exercise, or the object's own."""
    path = target.get("path", [])
    return str(path[-1]) if "module" in target and path else str(target.get("type", "object"))
