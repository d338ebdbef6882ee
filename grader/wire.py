"""The wire between the grading process and a worker: JSON plus raw tensor bytes.

A frame is a fixed header (JSON length, blob length), a JSON document and a
blob holding the bytes of every tensor it mentions. Decoding builds only plain
Python values and plain ``torch.Tensor``s: nothing in a frame can run code in
the process that reads it (no pickle, no subclasses, no object hooks).
"""
from __future__ import annotations

import ctypes
import json
import math
import socket
import struct

import torch

HEADER = struct.Struct("!IQ")
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


class WireError(RuntimeError):
    """A frame that is malformed, too large, or names something we do not decode."""


class Handle:
    """A reference to an object that lives in the worker (a module, say); only its id travels."""

    def __init__(self, id: int, type_name: str):
        self.id, self.type_name = id, type_name

    def __repr__(self):
        return f"<remote {self.type_name} #{self.id}>"


class Encoder:
    """Turns a value into JSON-ready data, collecting tensor bytes into one blob.

    ``keep`` is called on a value that has no wire form; it returns a Handle
    (the worker keeps the object) or raises.
    """

    def __init__(self, keep=None):
        self.chunks: list[bytes] = []
        self.size = 0
        self.keep = keep

    def tensor(self, t: torch.Tensor) -> dict:
        with torch._C.DisableTorchFunctionSubclass():
            plain = t.detach()
            meta = {"$t": None, "dtype": str(plain.dtype).removeprefix("torch."), "shape": list(plain.shape),
                    "device": plain.device.type}
            if plain.device.type != "meta":
                data = plain.to("cpu").contiguous()
                nbytes = data.numel() * data.element_size()
                meta["$t"] = [self.size, nbytes]
                self.chunks.append(ctypes.string_at(data.data_ptr(), nbytes) if nbytes else b"")
                self.size += nbytes
        return meta

    def __call__(self, value):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$f": repr(value)}
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, Handle):
            return {"$h": value.id, "type": value.type_name}
        if isinstance(value, torch.dtype):
            return {"$dtype": str(value).removeprefix("torch.")}
        if isinstance(value, torch.device):
            return {"$device": str(value)}
        if isinstance(value, torch.Size):
            return {"$tuple": [int(v) for v in value]}
        if type(value) in (list, tuple):
            items = [self(v) for v in value]
            return items if type(value) is list else {"$tuple": items}
        if type(value) is dict:
            if all(type(k) is str and not k.startswith("$") for k in value):
                return {k: self(v) for k, v in value.items()}
            return {"$dict": [[self(k), self(v)] for k, v in value.items()]}
        if self.keep is not None:
            return self(self.keep(value))
        raise WireError(f"cannot send a {type(value).__name__}")

    def frame(self, message: dict) -> bytes:
        body = json.dumps(message, allow_nan=False).encode()
        return HEADER.pack(len(body), self.size) + body + b"".join(self.chunks)


def encode(message: dict, keep=None) -> bytes:
    """One frame holding ``message`` (its values encoded, tensors into the blob)."""
    encoder = Encoder(keep)
    return encoder.frame({key: encoder(value) for key, value in message.items()})


class Decoder:
    """Rebuilds values from JSON data and the frame's blob; ``handle`` maps a Handle to a local object."""

    def __init__(self, blob: bytes, handle=None, device=None):
        self.blob, self.handle, self.device = blob, handle, device

    def tensor(self, data: dict) -> torch.Tensor:
        dtype = DTYPES.get(data.get("dtype"))
        shape = data.get("shape")
        if dtype is None or not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise WireError(f"bad tensor description {str(data)[:80]}")
        if data["$t"] is None:
            return torch.empty(shape, dtype=dtype, device="meta")
        offset, nbytes = data["$t"]
        if nbytes != math.prod(shape) * dtype.itemsize or offset < 0 or offset + nbytes > len(self.blob):
            raise WireError("tensor bytes do not match its shape")
        flat = torch.frombuffer(bytearray(self.blob[offset:offset + nbytes]), dtype=dtype) if nbytes else torch.empty(0, dtype=dtype)
        tensor = flat.reshape(shape)
        wanted = self.device if self.device is not None else data.get("device", "cpu")
        return tensor.to(wanted) if wanted not in ("cpu", "meta") else tensor

    def __call__(self, data):
        if data is None or isinstance(data, (bool, int, float, str)):
            return data
        if isinstance(data, list):
            return [self(v) for v in data]
        if not isinstance(data, dict):
            raise WireError(f"unexpected {type(data).__name__}")
        if not any(k.startswith("$") for k in data):
            return {k: self(v) for k, v in data.items()}
        if "$t" in data:
            return self.tensor(data)
        if "$tuple" in data:
            return tuple(self(v) for v in data["$tuple"])
        if "$dict" in data:
            return {self._key(k): self(v) for k, v in data["$dict"]}
        if "$f" in data:
            return float(data["$f"]) if data["$f"] in ("nan", "inf", "-inf") else _bad(data)
        if "$dtype" in data:
            return DTYPES.get(data["$dtype"]) or _bad(data)
        if "$device" in data:
            return torch.device(str(data["$device"]))
        if "$h" in data:
            handle = Handle(int(data["$h"]), str(data.get("type", "object"))[:100])
            return self.handle(handle) if self.handle else handle
        raise WireError(f"unknown value {str(data)[:80]}")

    def _key(self, data):
        key = self(data)
        if isinstance(key, (list, dict)) or isinstance(key, torch.Tensor):
            raise WireError("dict keys must be plain values")
        return key


def _bad(data):
    raise WireError(f"unknown value {str(data)[:80]}")


def read_frame(sock: socket.socket, max_bytes: int) -> tuple[dict, bytes]:
    """Read one frame; raise EOFError when the peer is gone, WireError when the frame is bad or too large."""
    header = _read_exactly(sock, HEADER.size)
    body_len, blob_len = HEADER.unpack(header)
    if body_len + blob_len > max_bytes:
        raise WireError(f"a reply of {(body_len + blob_len) / 2**20:.0f} MiB is over the {max_bytes / 2**20:.0f} MiB limit")
    try:
        message = json.loads(_read_exactly(sock, body_len))
    except (ValueError, UnicodeDecodeError) as error:
        raise WireError(f"reply is not JSON: {error}") from None
    if not isinstance(message, dict):
        raise WireError("reply is not a JSON object")
    return message, _read_exactly(sock, blob_len)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buffer = bytearray(n)
    view, got = memoryview(buffer), 0
    while got < n:
        count = sock.recv_into(view[got:])
        if count == 0:
            raise EOFError("the worker closed the connection")
        got += count
    return bytes(buffer)
