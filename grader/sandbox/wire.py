"""The wire between the grading process and a worker: JSON plus raw tensor bytes.

A frame is a fixed header (JSON length, blob length), a JSON document and a
blob holding the bytes of every tensor it mentions. Decoding builds only plain
Python values and plain ``torch.Tensor``s: nothing in a frame can run code in
the process that reads it (no pickle, no subclasses, no object hooks).
"""
from __future__ import annotations

import bisect
import ctypes
import json
import math
import re
import socket
import struct
import time

import torch

HEADER = struct.Struct("!IQ")
# What one reply of a worker may hold. A decoded tensor that covers at least half of the frame's blob is a view of
# it, a smaller one a copy (byte ranges may not overlap), so decoding holds at most about one frame, and a tensor
# kept afterwards at most twice its own bytes; plus the JSON's Python objects (at most MAX_VALUES of them).
MAX_BODY_BYTES = 4 << 20  # the JSON part of a frame (tensor bytes travel in the blob)
# A whole reply of the worker (the grader refuses larger ones): thousands of times the largest a correct submission
# sends (12 KiB: results, gradients and inputs of the hidden suites' cases), and small beside the grading process's
# memory bound (memory.HEADROOM_MB), which must hold the few replies a check keeps while it reads another (256 MiB
# replies, three held, ran it out: red team 11).
MAX_REPLY_BYTES = 64 << 20
MAX_VALUES = 200_000  # JSON values (numbers, strings, lists, objects) in one frame
MAX_TENSORS = 4096  # tensors in one frame
MAX_DIMS = 64
MAX_NUMEL = 1 << 40  # elements of one tensor (bytes are bounded by the blob; this bounds meta tensors)
MAX_DEPTH = 200  # nesting of lists, tuples and dicts
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


class WireError(RuntimeError):
    """A frame that is malformed, too large, or names something we do not decode."""


class TooLarge(WireError):
    """A frame over the bytes its reader takes, refused from its header (the rest of it is left unread)."""


class Handle:
    """A reference to an object that lives in the worker (a module, say); only its id travels."""

    def __init__(self, id: int, type_name: str):
        self.id, self.type_name = id, type_name

    def __repr__(self):
        return f"<remote {self.type_name} #{self.id}>"


_AS_IS = frozenset({type(None), bool, int, str})


class Encoder:
    """Turns a value into JSON-ready data, collecting tensor bytes into one blob.

    ``keep`` is called on a value that has no wire form; it returns a Handle
    (the worker keeps the object) or raises.
    """

    def __init__(self, keep=None, max_bytes: int | None = None):
        self.chunks: list[bytes] = []
        self.size = self.with_bytes = 0  # the blob's bytes, and its tensors that have some
        self.keep = keep
        self.max_bytes = max_bytes

    def tensor(self, t: torch.Tensor) -> dict:
        if type(t) is not torch.Tensor:  # a subclass's own __torch_function__ must not run here
            with torch._C.DisableTorchFunctionSubclass():
                return self.tensor(t.detach())
        if t.is_conj() or t.is_neg():  # a lazy view (``z.conj()``): its bytes are not its values until resolved
            t = t.resolve_conj().resolve_neg()
        device = t.device.type
        name = _DTYPE_NAMES.get(t.dtype) or str(t.dtype).removeprefix("torch.")  # an unknown one: refused by the decoder
        meta = {"$t": None, "dtype": name, "shape": list(t.shape), "device": device}
        if device != "meta":
            nbytes = t.numel() * t.element_size()
            if self.max_bytes is not None and self.size + nbytes > self.max_bytes:
                raise WireError(f"the result holds {_size(self.size + nbytes)} of tensor data, over the "
                                f"{_size(self.max_bytes)} limit of a reply")
            if self.max_bytes is not None and self.with_bytes >= MAX_TENSORS:  # as the decoder counts them
                raise WireError(f"the result holds more than {MAX_TENSORS} tensors, over the limit of a reply")
            self.with_bytes += bool(nbytes)
            data = t if device == "cpu" and t.is_contiguous() else t.detach().to("cpu").contiguous()
            meta["$t"] = [self.size, nbytes]
            self.chunks.append(ctypes.string_at(data.data_ptr(), nbytes) if nbytes else b"")
            self.size += nbytes
        return meta

    def __call__(self, value):
        kind = type(value)  # exact types first (most values); subclasses take the isinstance checks
        if kind in _AS_IS:
            return value
        if kind is dict:
            if all(type(k) is str and not k.startswith("$") for k in value):
                return {k: self(v) for k, v in value.items()}
            return {"$dict": [[self(k), self(v)] for k, v in value.items()]}
        if kind is list or kind is tuple:
            items = [self(v) for v in value]
            return items if kind is list else {"$tuple": items}
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$f": repr(value)}
        if isinstance(value, Handle):
            return {"$h": value.id, "type": value.type_name}
        if isinstance(value, torch.dtype):
            return {"$dtype": str(value).removeprefix("torch.")}
        if isinstance(value, torch.device):
            return {"$device": str(value)}
        if isinstance(value, torch.Size):
            return {"$tuple": [int(v) for v in value]}
        if self.keep is not None:
            return self(self.keep(value))
        raise WireError(f"cannot send a {type(value).__name__}")

    def frame(self, message: dict) -> bytes:
        body = json.dumps(message, allow_nan=False).encode()
        if self.max_bytes is not None and len(body) > min(self.max_bytes, MAX_BODY_BYTES):
            raise WireError(f"the result is {_size(len(body))} of plain Python values, over the "
                            f"{_size(min(self.max_bytes, MAX_BODY_BYTES))} limit (return tensors, not lists)")
        if self.max_bytes is not None and _values(body) > MAX_VALUES:
            raise WireError(f"the result holds more than {MAX_VALUES} plain Python values (return tensors, not lists)")
        if self.max_bytes is not None and len(body) + self.size > self.max_bytes:
            raise WireError(f"the result is {_size(len(body) + self.size)}, over the "
                            f"{_size(self.max_bytes)} limit of a reply")
        return b"".join([HEADER.pack(len(body), self.size), body, *self.chunks])


def encode(message: dict, keep=None, max_bytes: int | None = None) -> bytes:
    """One frame holding ``message`` (its values encoded, tensors into the blob); WireError past ``max_bytes``."""
    encoder = Encoder(keep, max_bytes)
    return encoder.frame({key: encoder(value) for key, value in message.items()})


def joined(message: dict, frames: list[bytes]) -> bytes:
    """One frame holding ``message`` (plain values) whose blob is ``frames``, whole frames one after the other
    (``frames_in``): requests sent together, each decoded apart as if it came alone."""
    body, blob = json.dumps(message, allow_nan=False).encode(), b"".join(frames)
    return b"".join([HEADER.pack(len(body), len(blob)), body, blob])


def frames_in(blob: bytes | bytearray):
    """The frames of a ``joined`` frame's blob, each its message and its own blob."""
    view, at = memoryview(blob), 0
    while at < len(view):
        body_len, blob_len = HEADER.unpack_from(view, at)
        at += HEADER.size
        message = json.loads(bytes(view[at:at + body_len]))
        at += body_len
        yield message, bytearray(view[at:at + blob_len])
        at += blob_len


DEVICE = re.compile(r"(cpu|cuda|meta)(:[0-9]{1,3})?")


def _int(value) -> bool:
    return type(value) is int


class Decoder:
    """Rebuilds values from JSON data and the frame's blob; ``handle`` maps a Handle to a local object, ``received``
    each decoded tensor to what the reader holds it as (the grading process: a tensor its checks must verify first).

    The data may come from a hostile peer: whatever it holds, decoding returns plain values or
    raises WireError (never another exception, never runs code of the peer's choosing).
    """

    def __init__(self, blob: bytes | bytearray, handle=None, device=None, devices: tuple[str, ...] | None = None,
                 received=None):
        # Tensors share the blob's memory (ranges never overlap), so it must be writable: read_frame gives a bytearray.
        self.blob = blob if isinstance(blob, bytearray) else bytearray(blob)
        self.handle, self.device, self.received = handle, device, received
        # The devices a tensor may claim (None: any; ``session_devices``): a reply claiming CUDA while grading on
        # the CPU would start CUDA in the grading process, and one claiming cuda:3 would use another GPU.
        self.devices = devices
        self.ranges: list[tuple[int, int]] = []  # the blob's byte ranges taken by tensors so far, sorted

    def claim(self, offset: int, nbytes: int) -> None:
        """Take ``nbytes`` of the blob at ``offset`` for one tensor: inside the blob and overlapping no other
        tensor's range, so that decoding a frame never copies more than its blob."""
        if len(self.ranges) >= MAX_TENSORS:
            raise WireError(f"more than {MAX_TENSORS} tensors in one reply")
        if offset < 0 or offset + nbytes > len(self.blob):
            raise WireError("tensor bytes outside the reply")
        if not nbytes:
            return
        end = offset + nbytes
        at = bisect.bisect_left(self.ranges, (offset, end))
        if (at > 0 and self.ranges[at - 1][1] > offset) or (at < len(self.ranges) and self.ranges[at][0] < end):
            raise WireError("two tensors of the reply share bytes")
        self.ranges.insert(at, (offset, end))

    def unclaimed(self) -> int:
        """The blob's bytes that no tensor decoded so far takes: none in a frame the Encoder made, once all of it is
        decoded."""
        return len(self.blob) - sum(end - start for start, end in self.ranges)

    def tensor(self, data: dict) -> torch.Tensor:
        dtype = DTYPES.get(data["dtype"]) if type(data.get("dtype")) is str else None
        shape, where, device = data.get("shape"), data["$t"], data.get("device", "cpu")
        if (dtype is None or type(shape) is not list or len(shape) > MAX_DIMS
                or not all(_int(n) and 0 <= n <= MAX_NUMEL for n in shape) or math.prod(shape) > MAX_NUMEL):
            raise WireError(f"bad tensor description {str(data)[:80]}")
        if type(device) is not str or not DEVICE.fullmatch(device):
            raise WireError(f"a tensor on an unknown device {str(device)[:40]!r}")
        if self.devices is not None and device not in self.devices:
            raise WireError(f"a tensor on {device}, a device this grading does not use")
        if where is None:
            return _meta(shape, dtype)
        if type(where) is not list or len(where) != 2 or not all(_int(n) for n in where):
            raise WireError(f"bad tensor description {str(data)[:80]}")
        offset, nbytes = where
        if nbytes != math.prod(shape) * dtype.itemsize:
            raise WireError("tensor bytes do not match its shape")
        self.claim(offset, nbytes)
        if not nbytes:
            flat = torch.empty(0, dtype=dtype)
        elif offset % dtype.itemsize or 2 * nbytes < len(self.blob):
            # Copied where the range is misaligned for the dtype, or is less than half the blob: a view keeps the
            # whole frame alive, so padding no tensor claims would cost the grading process for as long as it holds
            # the tensor. A view thus never holds more than twice its own bytes.
            flat = torch.frombuffer(bytearray(memoryview(self.blob)[offset:offset + nbytes]), dtype=dtype)
        else:
            flat = torch.frombuffer(self.blob, dtype=dtype, count=nbytes // dtype.itemsize, offset=offset)
        tensor = flat.reshape(shape)
        wanted = self.device if self.device is not None else device
        if str(wanted).startswith("meta"):
            return _meta(shape, dtype)
        if wanted == "cpu":
            return tensor
        try:
            return tensor.to(wanted)
        except (RuntimeError, AssertionError, ValueError) as error:  # no such device here
            raise WireError(f"a tensor on {wanted} cannot be placed here: {str(error)[:100]}") from None

    def __call__(self, data, depth: int = 0):
        if depth > MAX_DEPTH:
            raise WireError(f"values nested more than {MAX_DEPTH} deep")
        if data is None or isinstance(data, (bool, int, float, str)):
            return data
        if isinstance(data, list):
            return [self(v, depth + 1) for v in data]
        if not isinstance(data, dict):
            raise WireError(f"unexpected {type(data).__name__}")
        if not any(k.startswith("$") for k in data):
            return {k: self(v, depth + 1) for k, v in data.items()}
        if "$t" in data:
            return self.received(self.tensor(data)) if self.received else self.tensor(data)
        if "$tuple" in data and type(data["$tuple"]) is list:
            return tuple(self(v, depth + 1) for v in data["$tuple"])
        if "$dict" in data and type(data["$dict"]) is list:
            items = {}
            for item in data["$dict"]:
                if type(item) is not list or len(item) != 2:
                    raise WireError("bad dict item")
                key = self(item[0], depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise WireError("dict keys must be plain values") from None
                if isinstance(key, torch.Tensor) or (isinstance(key, tuple) and not _plain(key)):
                    raise WireError("dict keys must be plain values")
                items[key] = self(item[1], depth + 1)
            return items
        if "$f" in data:
            return float(data["$f"]) if data["$f"] in ("nan", "inf", "-inf") else _bad(data)
        if "$dtype" in data:
            return (DTYPES.get(data["$dtype"]) if type(data["$dtype"]) is str else None) or _bad(data)
        if "$device" in data:
            if type(data["$device"]) is not str or not DEVICE.fullmatch(data["$device"]):
                _bad(data)
            return torch.device(data["$device"])
        if "$h" in data:
            if not _int(data["$h"]):
                _bad(data)
            kind = data.get("type", "object")
            handle = Handle(data["$h"], kind[:100] if type(kind) is str else "object")
            return self.handle(handle) if self.handle else handle
        raise WireError(f"unknown value {str(data)[:80]}")


def _meta(shape: list, dtype: torch.dtype) -> torch.Tensor:
    try:
        return torch.empty(shape, dtype=dtype, device="meta")
    except (RuntimeError, ValueError, OverflowError) as error:
        raise WireError(f"bad tensor shape: {str(error)[:100]}") from None


def _plain(key: tuple) -> bool:
    return all(v is None or isinstance(v, (bool, int, float, str)) or (isinstance(v, tuple) and _plain(v)) for v in key)


def _bad(data):
    raise WireError(f"unknown value {str(data)[:80]}")


def session_devices(device: str) -> tuple[str, ...]:
    """The devices a reply's tensors may claim when grading on ``device``: the CPU, meta, and that one device (``cuda``
    is torch's current one, ``cuda:0``)."""
    kind, _, index = str(device).partition(":")
    return ("cpu", "meta") + ((kind, f"{kind}:{index or 0}") if kind not in ("cpu", "meta") else ())


def read_frame(sock: socket.socket, max_bytes: int, deadline: float | None = None,
               max_body: int = MAX_BODY_BYTES, max_values: int | None = MAX_VALUES) -> tuple[dict, bytearray, int]:
    """Read one frame of at most ``max_bytes`` (``max_body`` of them JSON, holding at most ``max_values`` values,
    None for no limit): its message, its blob and its size in bytes. Raise EOFError when the peer is gone, TooLarge
    when the frame is over those limits, WireError when it is bad, TimeoutError when ``deadline`` (a time.monotonic()
    value) passes before the whole frame has arrived."""
    header = _read_exactly(sock, HEADER.size, deadline)
    body_len, blob_len = HEADER.unpack(header)
    if body_len + blob_len > max_bytes:
        raise TooLarge(f"a reply of {_size(body_len + blob_len)} is over the {_size(max_bytes)} limit")
    if body_len > max_body:
        raise TooLarge(f"a reply with {_size(body_len)} of JSON is over the {_size(max_body)} limit")
    body = _read_exactly(sock, body_len, deadline)
    if max_values is not None and _values(body) > max_values:
        raise WireError(f"a reply with more than {max_values} values is over the limit (return tensors, not lists)")
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise WireError(f"reply is not JSON: {str(error)[:200]}") from None
    if not isinstance(message, dict):
        raise WireError("reply is not a JSON object")
    return message, _read_exactly(sock, blob_len, deadline), HEADER.size + body_len + blob_len


def _size(nbytes: float) -> str:
    """A frame's or a limit's bytes in words: MiB from one up, KiB below."""
    return f"{nbytes / 2**20:.0f} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:.0f} KiB"


def _values(body: bytes | bytearray) -> int:
    """An upper bound on the number of values in a JSON text (every value but the first follows a comma or opens
    a list or an object), cheap enough to check before parsing."""
    return 1 + sum(map(body.count, (b",", b"[", b"{")))


def _read_exactly(sock: socket.socket, n: int, deadline: float | None = None) -> bytearray:
    buffer = bytearray(n)
    view, got = memoryview(buffer), 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the rest of the frame did not arrive in time")
            sock.settimeout(left)
        try:
            count = sock.recv_into(view[got:])
        except TimeoutError:
            raise TimeoutError("the rest of the frame did not arrive in time") from None
        finally:
            if deadline is not None:
                sock.settimeout(None)
        if count == 0:
            raise EOFError("the worker closed the connection")
        got += count
    return buffer
