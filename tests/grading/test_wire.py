"""The wire (grader/sandbox/wire.py) under random and adversarial frames: whatever a worker sends, the grading process gets
plain values or a WireError, and never holds more than about one frame per reply."""
from __future__ import annotations

import gc
import json
import socket
import threading
import time
import tracemalloc

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.sandbox import wire

FUZZ = settings(max_examples=300, deadline=None, derandomize=True)
DTYPES = sorted(wire.DTYPES)


def tensors() -> st.SearchStrategy[torch.Tensor]:
    """Small random tensors of every dtype the wire knows."""
    def build(dtype_name, shape, seed):
        dtype, generator = wire.DTYPES[dtype_name], torch.Generator().manual_seed(seed)
        if dtype.is_floating_point or dtype.is_complex:
            return torch.randn(shape, dtype=torch.complex128 if dtype.is_complex else torch.float64,
                               generator=generator).to(dtype)
        return torch.randint(0, 2 if dtype == torch.bool else 100, shape, generator=generator).to(dtype)
    return st.builds(build, st.sampled_from(DTYPES), st.lists(st.integers(0, 4), max_size=4), st.integers(0, 2**31))


plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**62, 2**62) | st.floats(allow_nan=False) | st.text(max_size=20) | tensors(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and _bytes(a) == _bytes(b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _bytes(t: torch.Tensor) -> bytes:
    return bytes(t.reshape(-1).contiguous().view(torch.uint8).tolist())


def through_socket(frame: bytes) -> tuple[dict, bytearray]:
    """``frame`` read back by read_frame from the other end of a socket pair, as the grading process reads a reply."""
    ours, theirs = socket.socketpair()

    def send():
        try:
            theirs.sendall(frame)
            theirs.shutdown(socket.SHUT_WR)
        except OSError:  # the reader refused the frame and closed its end
            pass
    sender = threading.Thread(target=send)
    sender.start()
    try:
        with ours:
            return wire.read_frame(ours, wire.MAX_REPLY_BYTES, deadline=time.monotonic() + 60)[:2]
    finally:
        sender.join()
        theirs.close()


def decoded_bytes(value) -> int:
    """The bytes of distinct memory that the tensors of a decoded value hold (tensors sharing memory count once)."""
    spans = set()

    def walk(v):
        if isinstance(v, torch.Tensor) and v.device.type == "cpu" and v.numel():
            spans.add((v.untyped_storage().data_ptr() + v.storage_offset() * v.element_size(), v.numel() * v.element_size()))
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)
        elif isinstance(v, dict):
            for item in v.values():
                walk(item)
    walk(value)
    ordered, total, end = sorted(spans), 0, 0
    for start, size in ordered:
        total += max(0, start + size - max(start, end))
        end = max(end, start + size)
    return total


@FUZZ
@given(plain_values)
def test_values_survive_the_round_trip(value):
    """What the encoder sends, the decoder rebuilds exactly: same types, dtypes, shapes and bytes, every byte of the
    blob taken by a tensor (a reply with bytes left over was changed by the student's code: host.strikes)."""
    message, blob = through_socket(wire.encode({"value": value}))
    decoder = wire.Decoder(blob)
    assert same(value, decoder(message["value"]))
    assert decoder.unclaimed() == 0


descriptor = st.fixed_dictionaries({
    "$t": st.one_of(st.none(), st.lists(st.integers(-4, 80), min_size=2, max_size=2), st.just("x"),
                    st.lists(st.integers(0, 80), max_size=3)),
    "dtype": st.sampled_from([*DTYPES, "object", 3]),
    "shape": st.one_of(st.lists(st.integers(-1, 9), max_size=3), st.just([2**40, 2**40]), st.just("3")),
    "device": st.sampled_from(["cpu", "meta", "cuda:99", "tpu", 1]),
})
adversarial = st.recursive(
    st.none() | st.integers() | st.text(max_size=5) | descriptor
    | st.fixed_dictionaries({"$h": st.one_of(st.integers(), st.text(max_size=3)), "type": st.text(max_size=5)})
    | st.fixed_dictionaries({"$f": st.sampled_from(["nan", "inf", "1e999", "x"])})
    | st.fixed_dictionaries({"$dtype": st.sampled_from([*DTYPES, "torch.float32", ""])})
    | st.fixed_dictionaries({"$device": st.sampled_from(["cpu", "cuda:1234", "meta", ""])}),
    lambda inner: st.lists(inner, max_size=5) | st.fixed_dictionaries({"$tuple": st.lists(inner, max_size=3)})
    | st.fixed_dictionaries({"$dict": st.lists(st.lists(inner, min_size=2, max_size=2), max_size=3)})
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=20)


@FUZZ
@given(adversarial, st.binary(max_size=64))
def test_adversarial_values_decode_to_plain_values_within_the_blob(data, blob):
    """Hostile tensor descriptions (ranges outside the blob or overlapping, shapes that do not match the bytes,
    unknown dtypes and devices) give a WireError or plain values that hold no more bytes than the blob."""
    try:
        value = wire.Decoder(blob)(data)
    except wire.WireError:
        return
    assert decoded_bytes(value) <= len(blob)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_are_refused_cleanly(raw):
    """A frame of random bytes ends in a WireError or EOFError (never another exception, never a hang)."""
    try:
        message, blob = through_socket(raw)
        wire.Decoder(blob)(message)
    except (wire.WireError, EOFError):
        pass


def test_tensors_sharing_bytes_are_refused():
    """120 tensors pointing at one range of the blob: refused at the second, nothing copied."""
    blob = bytearray(1 << 20)
    tensor = {"$t": [0, len(blob)], "dtype": "uint8", "shape": [len(blob)], "device": "cpu"}
    with pytest.raises(wire.WireError, match="share bytes"):
        wire.Decoder(blob)([tensor] * 120)
    half = {"$t": [len(blob) // 2, len(blob) // 2], "dtype": "uint8", "shape": [len(blob) // 2], "device": "cpu"}
    with pytest.raises(wire.WireError, match="share bytes"):
        wire.Decoder(blob)([tensor, half])


def test_a_tensor_on_a_device_the_grading_does_not_use_is_refused():
    """A reply claiming a CUDA tensor while grading on the CPU is refused before any device is touched."""
    blob = bytearray(16)
    cuda = {"$t": [0, 16], "dtype": "float32", "shape": [4], "device": "cuda:0"}
    with pytest.raises(wire.WireError, match="does not use"):
        wire.Decoder(blob, devices=("cpu", "meta"))(cuda)
    assert wire.Decoder(blob, devices=("cpu", "meta"))({**cuda, "device": "cpu"}).shape == (4,)


def test_a_decoded_tensor_shares_the_frame_only_where_it_covers_most_of_it():
    """A tensor covering at least half of the reply's blob is a view of it (no copy); a smaller one is copied, so that
    bytes no tensor claims (padding) are never kept alive by a tensor the grading process holds on to."""
    big, small = torch.arange(64.0), torch.arange(4, dtype=torch.uint8)
    message, blob = through_socket(wire.encode({"value": [small, big]}))
    got_small, got_big = wire.Decoder(blob)(message["value"])
    base = torch.frombuffer(blob, dtype=torch.uint8).data_ptr()
    assert got_big.data_ptr() == base + 4  # 4 bytes in: aligned for float32, a view
    assert not base <= got_small.data_ptr() < base + len(blob)  # a copy
    assert got_small.tolist() == small.tolist() and got_big.tolist() == big.tolist()
    padded = blob + bytearray(1 << 20)
    decoder = wire.Decoder(padded)
    (alone,) = decoder([message["value"][1]])
    assert decoder.unclaimed() == len(padded) - big.numel() * 4
    padded_base = torch.frombuffer(padded, dtype=torch.uint8).data_ptr()
    assert not padded_base <= alone.data_ptr() < padded_base + len(padded) and alone.tolist() == big.tolist()


@pytest.mark.parametrize("text, why", [
    (json.dumps({"ok": True, "value": [0] * (wire.MAX_VALUES + 1)}), "values"),
    (json.dumps({"ok": True, "value": "x" * (wire.MAX_BODY_BYTES + 1)}), "MiB of JSON"),
])
def test_json_past_its_limits_is_refused_before_it_is_parsed(text, why):
    """A reply's JSON is bounded in bytes and in values (each value costs the grading process a Python object)."""
    body = text.encode()
    with pytest.raises(wire.WireError, match=why):
        through_socket(wire.HEADER.pack(len(body), 0) + body)


def test_the_worker_refuses_results_past_the_value_limit_itself():
    """A result of too many plain values is refused by the worker's encoder with a message saying what to return."""
    with pytest.raises(wire.WireError, match="return tensors"):
        wire.encode({"value": list(range(wire.MAX_VALUES + 1))}, max_bytes=wire.MAX_REPLY_BYTES)


def test_replies_that_only_garbage_holds_are_freed_before_more_arrive(tmp_path):
    """A failed check's exception holds its frames, and they the reply's bytes, in a cycle only the garbage collector
    frees, and reading replies makes too few objects to start it (found by our eighth red team: a softmax returning
    one 240 MB tensor to every check piled a reply per failed test past the grading process's memory bound, a grader
    fault on every run): the session collects once SWEEP_BYTES of replies were read, so that such garbage never
    holds more than that, besides the reply being read."""
    from grader.course import course
    from grader.sandbox.host import client

    reply = wire.encode({"ok": True, "value": torch.zeros(40 * 2**20 // 8, dtype=torch.float64)})
    rounds = 10
    ours, theirs = socket.socketpair()
    session = client.WorkerSession(None, str(tmp_path), course().grading.limits, modules=("softmax",))
    session.pid, session.sock = -1, ours  # a worker that only answers
    writer = threading.Thread(target=lambda: [theirs.sendall(reply) for _ in range(rounds)], daemon=True)
    tracemalloc.start()
    gc.disable()  # only the session's collections run
    peak = 0
    try:
        writer.start()
        for _ in range(rounds):
            message = session._exchange(None, 30, "while testing")
            held = [session._decoder()(message["value"], "softmax")]
            held.append(held)  # a cycle holding the reply's bytes, as a failed check's traceback does
            del held, message
            peak = max(peak, tracemalloc.get_traced_memory()[0])
    finally:
        gc.enable()
        tracemalloc.stop()
        session.pid = None
        ours.close(), theirs.close()
    assert client.SWEEP_BYTES <= 2 * len(reply)
    assert peak < 4 * len(reply), f"{peak / 2**20:.0f} MiB held by {rounds} replies of {len(reply) / 2**20:.0f} MiB"


def test_a_lazy_conjugate_or_negative_view_is_sent_as_its_values():
    """``z.conj()`` and its negative are views whose bytes are not their values until resolved: they arrive as the
    values they stand for."""
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    for view in (z.conj(), torch._neg_view(z), z.conj().imag):
        message, blob = through_socket(wire.encode({"value": view}))
        assert torch.equal(wire.Decoder(blob)(message["value"]), view.resolve_conj().resolve_neg())


def test_the_worker_refuses_results_past_the_tensor_limit_itself():
    """A result of more tensors than a reply may hold is refused by the worker's encoder, with a message that says so,
    before the grading process would refuse the whole reply."""
    many = [torch.zeros(1) for _ in range(wire.MAX_TENSORS + 1)]
    with pytest.raises(wire.WireError, match=f"more than {wire.MAX_TENSORS} tensors"):
        wire.encode({"value": many}, max_bytes=wire.MAX_REPLY_BYTES)
    message, blob = through_socket(wire.encode({"value": many[1:]}, max_bytes=wire.MAX_REPLY_BYTES))
    assert len(wire.Decoder(blob)(message["value"])) == wire.MAX_TENSORS


def test_a_frame_is_read_with_its_size_and_a_frame_too_large_is_refused_from_its_header():
    """Reading a frame says how many bytes it took (what an exercise's checks are charged); a frame over the bytes the
    reader takes is refused as TooLarge before its JSON or blob is read."""
    frame = wire.encode({"value": torch.arange(5.0)})
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(frame + frame)
        message, blob, size = wire.read_frame(ours, wire.MAX_REPLY_BYTES)
        assert size == len(frame) and len(blob) == 20
        with pytest.raises(wire.TooLarge, match=r"a reply of \d+ KiB is over the \d+ KiB limit"):
            wire.read_frame(ours, len(frame) - wire.HEADER.size - 1)
        assert len(ours.recv(len(frame))) == len(frame) - wire.HEADER.size  # the rest was left unread
