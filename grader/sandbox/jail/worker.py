"""A worker: forked from the warm zygote (``zygote``), it enters the sandbox, and only then imports the student's
modules and serves calls on its own socket, one frame in, one frame out, every call watched (``Watch``)."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import socket
import sys
import traceback
import types

import torch
from torch.overrides import TorchFunctionMode

from grader.sandbox import wire
from grader.sandbox.dropout import KeyedDropout
from grader.sandbox.seed import seed_torch

SUBMISSION = "/submission"
PACKAGE = "exercises"
MAX_REQUEST_BYTES = 1 << 30

TORCH_TYPES: set[type] = {torch.Tensor}  # the tensor types of torch's own that calls have been seen with
# id(function) -> (the function, its name ``call_name``), for the functions calls have been seen with: looked up by
# identity (kept alive, so no other object takes its id), never by equality, which a student's object defines
CALL_NAMES: dict[int, tuple[object, str]] = {}
MAX_CALL_NAMES = 4096
TRANSIENT = (types.MethodWrapperType, types.MethodType)  # made anew for each call (a property's __get__): never kept


def call_name(func) -> str:
    """A torch function's name as course.yaml's banned: lists it, an operator's overload (torch.ops.aten.mm.default)
    by its operator's; kept in ``CALL_NAMES`` (up to MAX_CALL_NAMES functions) for the next call of it."""
    name = getattr(func, "__name__", "").split(".")[0]
    if len(CALL_NAMES) < MAX_CALL_NAMES and not isinstance(func, TRANSIENT):
        CALL_NAMES[id(func)] = (func, name)
    return name


class Watch(TorchFunctionMode):
    """Counts the torch functions, methods and operators called (a Python loop over positions calls more of them for
    larger inputs) and records the watched ones. Only the student's own calls are seen: what a torch function does
    inside (its own torch calls, ATen's kernels) runs with the mode off, so it costs nothing."""

    def __init__(self, names):
        super().__init__()
        self.names, self.seen, self.count = names, set(), 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        known = CALL_NAMES.get(id(func))
        name = known[1] if known is not None and known[0] is func else call_name(func)
        if name in self.names:
            self.seen.add(name)
        if not TORCH_TYPES.issuperset(types):  # a type not seen yet: torch's own, or a tensor subclass of the
            # student's, whose own __torch_function__ runs with the mode off, where no call is seen (red team 20): it
            # stands for every watched call
            if all(getattr(kind, "__module__", "").startswith("torch") for kind in types):
                TORCH_TYPES.update(types)
            else:
                self.seen.update(self.names)
        return func(*args, **(kwargs or {}))


class MetaValues(TorchFunctionMode):
    """Reading one value of a meta tensor, which has none, answers a stand-in (True, 1, 0.0) instead of raising: the
    syllabus allows reading a value off the differentiable path (a mask's ``.all()`` in an ``if``), and the device rule,
    which calls with meta tensors, then sees what the code does with devices (it lost the rule before our fairness
    review). Copying values out (``.tolist()``, ``.cpu()``) still raises."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in META_READS and args and isinstance(args[0], torch.Tensor) and args[0].is_meta:
            tensor = args[0]
            stand_in = True if tensor.dtype == torch.bool else 0.0 if tensor.is_floating_point() else 1
            return META_READS[func](stand_in)
        return func(*args, **(kwargs or {}))


META_READS = {torch.Tensor.__bool__: bool, torch.Tensor.item: lambda v: v, torch.Tensor.__int__: int,
              torch.Tensor.__index__: int, torch.Tensor.__float__: float}


class StudentFailure(Exception):
    """Something about the submission (not a call) failed: a missing file, a broken import, a missing name."""

    def __init__(self, kind: str, message: str, **detail):
        super().__init__(message)
        self.kind, self.detail = kind, detail  # detail: plain values the grading process validates and words itself


def _student_frames(tb) -> list[str]:
    """The traceback lines that are in the student's files, as 'file.py, line N, in f: code'."""
    lines = []
    for frame in traceback.extract_tb(tb):
        if frame.filename.startswith(SUBMISSION + "/"):
            lines.append(f"{os.path.basename(frame.filename)}, line {frame.lineno}, in {frame.name[:100]}: "
                         f"{(frame.line or '').strip()[:300]}")  # the grading process keeps 300 characters
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

    def __init__(self, device: str = "cpu", watch=()):
        self.device, self.watch = device, frozenset(watch)
        self.handles: dict[int, object] = {}
        self.server = os.getpid()  # the worker's own process (a child the student's code forks is another)
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
                with self.placed():
                    self.modules[name] = importlib.import_module(f"{PACKAGE}.{name}")
            except BaseException as error:
                detail = describe_exception(error)
                where = f" ({detail['frames'][-1]})" if detail["frames"] else ""
                said = re.sub(r" \(\w+\.py, line \d+\)$", "", detail["message"]) if where else detail["message"]  # a
                # SyntaxError's message names the place the frame names too
                said = f": {said}" if said else ""  # a parser's MemoryError says nothing more
                raise StudentFailure("import", f"{name}.py does not import: {detail['type']}{said}{where}") from None
        return self.modules[name]

    def placed(self, *values, as_on_cpu: bool = False):
        """Student code runs with the grading device as torch's default: a tensor it creates without naming a device
        (a mask kept as a plain attribute, not a buffer; one made in forward without ``device=``) lands where it would
        on the CPU, beside the inputs, so that its results, and its score, are the same on every device. How a
        submission handles devices is judged by one rule, the same everywhere: the meta device's (``device_kept``).
        So a call given meta tensors or the meta device (``values``: its arguments) runs as on the CPU (there a
        ``torch.tensor(d_k)`` is a CPU scalar, which meta tensors accept), and so does one the grading process asks
        to run so (``as_on_cpu``: a seeded construction, whose random draws must be the CPU generator's as the
        reference's are; the construction the meta rule then moves to meta). The result of a call whose arguments say
        nothing of a device comes back on the CPU (``_on_the_cpu``)."""
        if self.device == "cpu" or as_on_cpu or _names_meta(values):
            return contextlib.nullcontext()
        return torch.device(self.device)

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
            if op == "sync":
                return {"ok": True, "nonce": message.get("nonce")}
            if op == "import":
                self.module(str(message["module"]))
                return {"ok": True}
            if op == "params":
                return {"ok": True, "value": dict(self.resolve(message["target"], earlier).named_parameters())}
            if op == "load_params":
                return self.load_params(self.resolve(message["target"], earlier), decode(message["params"]))
            if op == "call":
                return self.call(message, decode, earlier)
            return {"ok": False, "failure": {"kind": "protocol", "message": f"unknown request {op!r}"}}
        except StudentFailure as failure:
            return {"ok": False, "failure": {"kind": failure.kind, "message": str(failure), **failure.detail}}
        except BaseException as error:
            return {"ok": False, "error": describe_exception(error)}

    def parts(self, message: dict, blob: bytearray) -> bytes:
        """The reply to requests sent ahead together (``host.ahead``): each answered as if it came alone, its values
        encoded and let go before the next runs, as between frames (a cache keyed by ``id()`` sees the addresses it
        would); at most the ``max_bytes`` the message asks for."""
        encoder = wire.Encoder(self.keep, min(int(message["max_bytes"]), wire.MAX_REPLY_BYTES))
        replies = []
        for part, part_blob in wire.frames_in(blob):
            reply = self.handle(part, part_blob)
            if os.getpid() != self.server:  # a child the student's code forked came back here: it must not answer
                os._exit(0)
            replies.append({key: encoder(value) for key, value in reply.items()})
            del reply
        return encoder.frame({"ok": True, "parts": replies})

    def load_params(self, module, params: dict) -> dict:
        own = dict(module.named_parameters())
        missing = sorted(set(params) - set(own))
        if missing:
            raise StudentFailure("parameters", f"the {type(module).__name__} has no parameter named {', '.join(missing)}")
        with torch.no_grad():
            for name, value in params.items():
                if own[name].shape != value.shape:
                    raise StudentFailure("parameters", f"parameter {name} has shape {tuple(own[name].shape)}, expected {tuple(value.shape)}")
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
        watch = Watch(self.watch)
        keyed = KeyedDropout() if message.get("dropout") == "keyed" else contextlib.nullcontext()
        placed = self.placed(args, kwargs, as_on_cpu=bool(message.get("as_on_cpu")))
        values = MetaValues() if _names_meta((args, kwargs)) else contextlib.nullcontext()
        with placed, watch, keyed, values:  # every call alike: watched for the whole list the worker was given
            value = function(*args, **kwargs)
        if self.device != "cpu" and not _any_leaf((args, kwargs), _says_where):
            value = _on_the_cpu(value)
        reply = {"ok": True, "value": value, "called": sorted(watch.seen), "ops": watch.count}
        if message.get("return_args"):
            reply["args_after"] = args
        if grad_output is not None:
            with self.placed(args, kwargs):  # the student's hooks run in the backward
                reply.update(self.backward(value, grad_output, args, module))
        return reply

    @staticmethod
    def backward(value, grad_output, args, module) -> dict:
        """Backpropagate ``grad_output`` (one tensor, or a list: one per leading entry of a tuple result)."""
        grads = grad_output if isinstance(grad_output, list) else [grad_output]
        several = isinstance(value, (tuple, list))
        outputs = (list(value) if several else [value])[:len(grads)]
        cut = next((i for i, o in enumerate(outputs) if not (isinstance(o, torch.Tensor) and o.grad_fn is not None)),
                   len(outputs))
        if cut < len(grads):
            raise StudentFailure("autograd", "a tensor of the result is not connected to the inputs by autograd",
                                 **({"tensor": cut} if several else {}))
        torch.autograd.backward(outputs, [g.to(o.device, o.dtype) for g, o in zip(grads, outputs)])
        reply = {"arg_grads": [a.grad if _is_float(a) else None for a in args]}
        if module is not None:
            reply["param_grads"] = {name: p.grad for name, p in module.named_parameters()}
        return reply


def _any_leaf(value, test, depth: int = 5) -> bool:
    """Whether ``test`` holds for a value of ``value`` (a call's arguments), a few containers deep."""
    if depth and isinstance(value, (list, tuple)):
        return any(_any_leaf(item, test, depth - 1) for item in value)
    if depth and isinstance(value, dict):
        return any(_any_leaf(item, test, depth - 1) for item in value.values())
    return test(value)


def _is_meta(value) -> bool:
    """A meta tensor, or the meta device named."""
    if isinstance(value, torch.Tensor):
        return value.is_meta
    if isinstance(value, torch.device):
        return value.type == "meta"
    return isinstance(value, str) and (value == "meta" or value.startswith("meta:"))


def _names_meta(value) -> bool:
    """Whether ``value`` (a call's arguments) holds a meta tensor or names the meta device."""
    return _any_leaf(value, _is_meta)


def _says_where(value) -> bool:
    """A tensor, or a device named: what places a call's results."""
    return isinstance(value, (torch.Tensor, torch.device)) or isinstance(value, str) and bool(wire.DEVICE.fullmatch(value))


def _on_the_cpu(value):
    """The result of a call whose arguments say nothing of a device (no tensor, no device: ``causal_mask(T)``,
    ``one_hot(i, n)``, ``quiz_answer()``), its tensors moved to the CPU, where torch's default device puts them
    outside grading: the grading device, the worker's default, is the grader's choice, not the submission's, so such
    a result is judged as on the CPU, alike on every device (a tensor of a module's import on the GPU included)."""
    if isinstance(value, torch.Tensor) and not value.is_meta:
        return value.to("cpu")
    if type(value) in (tuple, list):
        return type(value)(_on_the_cpu(item) for item in value)
    if type(value) is dict:
        return {key: _on_the_cpu(item) for key, item in value.items()}
    return value


def _is_float(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def serve(sock: socket.socket, isolation: str, cpu_cap: str, device: str, watch: list[str]) -> None:
    """Answer requests on ``sock`` until it closes, grading on ``device``, every call watched for ``watch``."""
    global SUBMISSION
    if isolation != "namespaces":  # rlimits only: there is no /submission, confine chdir'ed into the folder itself
        SUBMISSION = os.getcwd()
    worker = Worker(device, watch)
    sock.sendall(wire.encode({"ok": True, "isolation": isolation, "cpu": cpu_cap}))
    while True:
        try:
            message, blob, _ = wire.read_frame(sock, MAX_REQUEST_BYTES, max_body=MAX_REQUEST_BYTES, max_values=None)
        except EOFError:
            return
        reply = worker.handle(message, blob) if message.get("op") != "parts" else None
        if os.getpid() != worker.server:  # a child the student's code forked came back here: it must not answer too
            os._exit(0)
        try:
            frame = worker.parts(message, blob) if reply is None else wire.encode(reply, keep=worker.keep,
                                                                                  max_bytes=wire.MAX_REPLY_BYTES)
        except wire.WireError as error:
            frame = wire.encode({"ok": False, "failure": {"kind": "reply", "message": f"your result cannot be sent back: {error}"}})
        except BaseException as error:
            frame = wire.encode({"ok": False, "error": describe_exception(error)})
        sock.sendall(frame)

