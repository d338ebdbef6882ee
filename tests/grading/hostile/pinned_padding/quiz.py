"""Hostile: every reply that holds a tensor is padded with 48 MiB of blob bytes no tensor claims (any tensor of the
reply, however small, pins them), and decoder_attention fails in a different way on each call, so that the grading
process keeps several failed checks (hypothesis's first failure and its replay, pytest's last error) and their frames.
With ``PARAMS["claimed"]``, a tensor does claim the padding, in a field of the reply no check reads: one more input
after the call (``args_after``), of a call that asked for none or for fewer."""
import itertools

import torch

import grader.sandbox.wire as wire

PARAMS = {}
PAD = PARAMS.get("pad_mib", 48) << 20
_frame = wire.Encoder.frame


def _padded(self, message):
    if PARAMS.get("claimed"):
        ok = [item for item in message.get("replies", []) if item.get("ok")]
        if self.size and ok:
            ok[0]["args_after"] = [*ok[0].get("args_after", []),
                                   {"$t": [self.size, PAD], "dtype": "uint8", "shape": [PAD], "device": "cpu"}]
            self.chunks.append(bytes(PAD))
            self.size += PAD
        return _frame(self, message)
    out = _frame(self, message)
    body_len, blob_len = wire.HEADER.unpack_from(out)
    if blob_len == 0:  # only replies that hold a tensor: the padding is pinned by it
        return out
    return wire.HEADER.pack(body_len, blob_len + PAD) + out[wire.HEADER.size:] + bytes(PAD)


wire.Encoder.frame = _padded
_calls = itertools.count()


def decoder_attention(s, H, return_weights=False):
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    shape = batch + s.shape[-1:]
    kind = next(_calls) % 5
    if kind == 0:
        return torch.zeros(shape + (2,), dtype=H.dtype)          # shape
    if kind == 1:
        return torch.zeros(shape, dtype=torch.float16 if H.dtype != torch.float16 else torch.float32)  # dtype
    if kind == 2:
        return torch.full(shape, float("nan"), dtype=H.dtype)    # nan
    if kind == 3:
        return torch.full(shape, 7.0, dtype=H.dtype)              # values
    return [torch.zeros(shape, dtype=H.dtype)]                    # kind


def quiz_answer():
    return torch.zeros(3)
