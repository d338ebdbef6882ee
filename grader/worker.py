"""The worker side: a zygote that imports torch once, and the sandboxed workers it forks.

The grading process starts the zygote as a fresh interpreter with a clean
environment (so it shares no memory with the grader), then asks it for
workers over a control socket. Each worker is forked from the warm zygote,
enters the sandbox, and only then imports the student's modules and serves
calls on its own socket, one frame in, one frame out.
"""
from __future__ import annotations

import ctypes
import gc
import importlib
import importlib.util
import json
import os
import signal
import socket
import sys
import time
import traceback
import types

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from . import wire
from .sandbox import Limits, SandboxUnavailable, confine, probe

SUBMISSION = "/submission"
PACKAGE = "exercises"
MAX_REQUEST_BYTES = 1 << 30
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# ---------------------------------------------------------------- zygote

def zygote_main(control_fd: int) -> None:
    """Serve spawn/reap requests on a SOCK_SEQPACKET control socket until it closes."""
    _die_with_parent()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    _warm()
    probe()  # once, here: every worker inherits the answer instead of building a throwaway sandbox of its own
    gc.freeze()  # a worker's collector never walks, so never copies on write, what was imported here (~25% fewer page faults)
    control = socket.socket(fileno=control_fd)
    exited: dict[int, int] = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 65536, 1)
        except OSError:
            return
        if not data:
            return
        request = json.loads(data)
        if request["op"] == "spawn":
            pid = os.fork()
            if pid == 0:
                control.close()
                _run_worker(fds[0], request)
            os.close(fds[0])
            control.send(json.dumps({"pid": pid}).encode())
        elif request["op"] == "wait":  # give a worker that is exiting on its own a moment; None if still running
            pid, deadline = request["pid"], time.monotonic() + float(request["timeout"])
            while pid not in exited:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = pid, 0
                if done:
                    exited[pid] = status
                elif time.monotonic() >= deadline:
                    break
                else:
                    time.sleep(0.005)
            control.send(json.dumps({"status": exited.pop(pid, None)}).encode())
        elif request["op"] == "reap":
            pid = request["pid"]
            if pid not in exited:
                try:
                    exited[pid] = os.waitpid(pid, 0)[1]
                except ChildProcessError:
                    exited[pid] = 0
            control.send(json.dumps({"status": exited.pop(pid)}).encode())


def _warm() -> None:
    """Do once, before forking, what every worker would otherwise pay for on its first call: torch's lazy
    imports and initialisation (the first use of a dispatch mode alone imports ~800 modules, about 1 s)."""
    names = frozenset({"softmax", "matmul"})
    x = torch.randn(2, 3, 4, requires_grad=True)
    layer, dropout = torch.nn.Linear(4, 4), torch.nn.Dropout(0.1)
    with Watch(names), Dispatch(names):
        scores = (layer(x) @ x.transpose(-2, -1)).masked_fill(torch.ones(3, 3, dtype=torch.bool).tril() == 0, float("-inf"))
        out = dropout(torch.softmax(scores / 2.0, dim=-1)) @ x
        out.backward(torch.ones_like(out))
    with torch.no_grad():
        torch.empty(2, 3, device="meta") @ torch.empty(3, 2, device="meta")
        torch.einsum("ij,jk->ik", torch.randn(2, 3), torch.randn(3, 2)).sum().item()


def seed_torch(n: int) -> None:
    """torch.manual_seed(n) for the CPU and, once initialized, CUDA; without the lazy seeding that
    torch.manual_seed queues (formatting a stack trace, about a millisecond) while CUDA is not initialized."""
    torch.default_generator.manual_seed(n)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(n)


def _run_worker(fd: int, request: dict) -> None:
    """In the forked child: silence output, enter the sandbox, serve; never returns."""
    code = 0
    try:
        _die_with_parent()
        devnull = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(devnull, target)
        os.close(devnull)
        try:
            isolation = confine(request["submission"], Limits(**request["limits"]), require=request["require_sandbox"],
                                expose_cuda=request["device"] == "cuda", keep_fds=[fd])
            if request["device"] == "cuda":  # CUDA's context and cuBLAS start here, not in the student's first call
                torch.ones(2, 2, device="cuda").matmul(torch.ones(2, 2, device="cuda")).sum().item()
        except (SandboxUnavailable, RuntimeError) as error:  # no student code has run: tell the grader why, then stop
            what = "the sandbox could not be set up" if isinstance(error, SandboxUnavailable) else "CUDA did not start"
            socket.socket(fileno=fd).sendall(wire.encode({"ok": False, "failure": {"kind": "sandbox", "message": f"{what}: {error}"}}))
            raise
        serve(socket.socket(fileno=fd), isolation)
    except BaseException:
        code = 70
    os._exit(code)


def describe_status(status: int) -> str:
    """A waitpid status (or a sandbox supervisor's 128+signal exit code) in words."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
    elif os.WIFEXITED(status) and os.WEXITSTATUS(status) > 128:
        number = os.WEXITSTATUS(status) - 128
    else:
        return f"exited with status {os.WEXITSTATUS(status)}"
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return {"SIGSEGV": "crashed (segmentation fault)", "SIGKILL": "was killed (SIGKILL)",
            "SIGXCPU": "ran out of CPU time", "SIGABRT": "aborted"}.get(name, f"was killed by {name}")


# ---------------------------------------------------------------- worker

class Watch(TorchFunctionMode):
    """Records which watched torch functions and methods are called."""

    def __init__(self, names):
        super().__init__()
        self.names, self.seen = names, set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.names:
            self.seen.add(name)
        return func(*args, **(kwargs or {}))


class Dispatch(TorchDispatchMode):
    """Counts the ATen operators dispatched and records the watched ones."""

    def __init__(self, names):
        super().__init__()
        self.names, self.seen, self.count = names, set(), 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        name = func.overloadpacket.__name__
        if name in self.names:
            self.seen.add(name)
        return func(*args, **(kwargs or {}))


class StudentFailure(Exception):
    """Something about the submission (not a call) failed: a missing file, a broken import, a missing name."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _student_frames(tb) -> list[str]:
    """The traceback lines that are in the student's files, as 'file.py, line N, in f: code'."""
    lines = []
    for frame in traceback.extract_tb(tb):
        if frame.filename.startswith(SUBMISSION + "/"):
            lines.append(f"{os.path.basename(frame.filename)}, line {frame.lineno}, in {frame.name}: {(frame.line or '').strip()}")
    return lines[-8:]


def describe_exception(error: BaseException) -> dict:
    builtins = [cls.__name__ for cls in type(error).__mro__ if cls.__module__ == "builtins"]
    try:
        message = str(error)
    except BaseException:
        message = "(the exception's message could not be read)"
    frames = _student_frames(error.__traceback__)
    if isinstance(error, SyntaxError) and error.filename and error.filename.startswith(SUBMISSION):
        frames.append(f"{os.path.basename(error.filename)}, line {error.lineno}: {(error.text or '').strip()}")
    return {"type": type(error).__name__[:100], "builtins": builtins, "message": message[:2000], "frames": frames}


class Worker:
    """The state of one worker: the imported modules, the objects handed out, and the request handlers."""

    def __init__(self):
        self.handles: dict[int, object] = {}
        self.ids: dict[int, int] = {}
        self.modules: dict[str, types.ModuleType] = {}
        package = types.ModuleType(PACKAGE)
        package.__path__ = [SUBMISSION]
        package.__package__ = PACKAGE
        sys.modules[PACKAGE] = package
        sys.path.insert(0, SUBMISSION)
        sys.dont_write_bytecode = True

    def keep(self, obj) -> wire.Handle:
        if id(obj) not in self.ids:
            self.ids[id(obj)] = len(self.handles) + 1
            self.handles[self.ids[id(obj)]] = obj
        return wire.Handle(self.ids[id(obj)], type(obj).__name__)

    def module(self, name: str):
        if name not in self.modules:
            if not os.path.isfile(os.path.join(SUBMISSION, f"{name}.py")):
                raise StudentFailure("missing", f"{name}.py is not in the submission")
            try:
                self.modules[name] = importlib.import_module(f"{PACKAGE}.{name}")
            except BaseException as error:
                detail = describe_exception(error)
                where = f" ({detail['frames'][-1]})" if detail["frames"] else ""
                raise StudentFailure("import", f"{name}.py does not import: {detail['type']}: {detail['message']}{where}") from None
        return self.modules[name]

    def resolve(self, target: dict, earlier: list[dict]):
        """The object a request names: a module, a handle or the value of an ``earlier`` request of the same batch,
        then a chain of attributes."""
        if "module" in target:
            obj, label = self.module(str(target["module"])), str(target["module"])
        elif "earlier" in target:
            index = int(target["earlier"])
            if not 0 <= index < len(earlier) or not earlier[index].get("ok"):
                raise StudentFailure("skipped", "not run: the step it builds on failed")
            obj, label = earlier[index].get("value"), f"the {target.get('type', 'object')}"
        else:
            obj, label = self.handles[int(target["handle"])], f"the {target.get('type', 'object')}"
        for name in target.get("path", []):
            if not hasattr(obj, name):
                raise StudentFailure("missing", f"{label} has no attribute {name!r}")
            obj, label = getattr(obj, name), f"{label}.{name}"
        return obj

    def handle(self, message: dict, blob: bytes, earlier: list[dict] | None = None) -> dict:
        """One request's reply; the requests of a batch run in order, each seeing the replies before it."""
        decode = wire.Decoder(blob, handle=lambda h: self.handles[h.id])
        op, earlier = message.get("op"), earlier if earlier is not None else []
        try:
            if op == "batch":
                replies = []
                for request in message["requests"]:
                    replies.append(self.handle(request, blob, replies))
                return {"ok": True, "replies": replies}
            if op == "import":
                self.module(str(message["module"]))
                return {"ok": True}
            if op == "get":
                return {"ok": True, "value": self.resolve(message["target"], earlier)}
            if op == "params":
                return {"ok": True, "value": dict(self.resolve(message["target"], earlier).named_parameters())}
            if op == "load_params":
                return self.load_params(self.resolve(message["target"], earlier), decode(message["params"]))
            if op == "call":
                return self.call(message, decode, earlier)
            return {"ok": False, "failure": {"kind": "protocol", "message": f"unknown request {op!r}"}}
        except StudentFailure as failure:
            return {"ok": False, "failure": {"kind": failure.kind, "message": str(failure)}}
        except BaseException as error:
            return {"ok": False, "error": describe_exception(error)}

    def load_params(self, module, params: dict) -> dict:
        own = dict(module.named_parameters())
        missing = sorted(set(params) - set(own))
        if missing:
            raise StudentFailure("missing", f"the {type(module).__name__} has no parameter named {', '.join(missing)}")
        with torch.no_grad():
            for name, value in params.items():
                if own[name].shape != value.shape:
                    raise StudentFailure("shape", f"parameter {name} has shape {tuple(own[name].shape)}, expected {tuple(value.shape)}")
                own[name].copy_(value)
        return {"ok": True}

    def call(self, message: dict, decode, earlier: list[dict]) -> dict:
        function = self.resolve(message["target"], earlier)
        args, kwargs = decode(message.get("args", [])), decode(message.get("kwargs", {}))
        grad_output = decode(message.get("grad_output"))
        owner = getattr(function, "__self__", function)
        module = owner if isinstance(owner, torch.nn.Module) else None
        if grad_output is not None:
            args = [a.detach().clone().requires_grad_() if _is_float(a) else a for a in args]
            if module is not None:
                module.zero_grad(set_to_none=True)
        if message.get("seed") is not None:
            seed_torch(int(message["seed"]))
        names = frozenset(message.get("watch", []))
        watch, dispatch = Watch(names), Dispatch(names)
        if message.get("instrument"):
            with watch, dispatch:
                value = function(*args, **kwargs)
        else:
            value = function(*args, **kwargs)
        reply = {"ok": True, "value": value}
        if message.get("instrument"):
            reply["called"] = sorted(watch.seen | dispatch.seen)
            reply["ops"] = dispatch.count
        if message.get("return_args"):
            reply["args_after"] = args
        if grad_output is not None:
            reply.update(self.backward(value, grad_output, args, module))
        return reply

    @staticmethod
    def backward(value, grad_output, args, module) -> dict:
        output = value if isinstance(value, torch.Tensor) else next(
            (v for v in value if isinstance(v, torch.Tensor)), None) if isinstance(value, (tuple, list)) else None
        if output is None or output.grad_fn is None:
            raise StudentFailure("autograd", "the result is not connected to the inputs by autograd (no grad_fn): "
                                 "was something detached, or turned into a Python number?")
        output.backward(grad_output.to(output.device, output.dtype))
        reply = {"arg_grads": [a.grad if _is_float(a) else None for a in args]}
        if module is not None:
            reply["param_grads"] = {name: p.grad for name, p in module.named_parameters()}
        return reply


def _is_float(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def serve(sock: socket.socket, isolation: str) -> None:
    """Answer requests on ``sock`` until it closes."""
    global SUBMISSION
    if isolation != "namespaces":  # rlimits only: there is no /submission, confine chdir'ed into the folder itself
        SUBMISSION = os.getcwd()
    worker = Worker()
    server = os.getpid()
    sock.sendall(wire.encode({"ok": True, "isolation": isolation}))
    while True:
        try:
            message, blob = wire.read_frame(sock, MAX_REQUEST_BYTES, max_body=MAX_REQUEST_BYTES, max_values=None)
        except EOFError:
            return
        reply = worker.handle(message, blob)
        if os.getpid() != server:  # a child the student's code forked came back here: it must not answer too
            os._exit(0)
        try:
            frame = wire.encode(reply, keep=worker.keep, max_bytes=wire.MAX_REPLY_BYTES)
        except wire.WireError as error:
            frame = wire.encode({"ok": False, "failure": {"kind": "reply", "message": f"your result cannot be sent back: {error}"}})
        except BaseException as error:
            frame = wire.encode({"ok": False, "error": describe_exception(error)})
        sock.sendall(frame)


if __name__ == "__main__":
    if "--no-namespaces" in sys.argv[2:]:  # Zygote(namespaces=False): test the degraded path
        from . import sandbox

        sandbox._probe_result = (False, "namespaces turned off for this zygote (Zygote(namespaces=False))")
    zygote_main(int(sys.argv[1]))
