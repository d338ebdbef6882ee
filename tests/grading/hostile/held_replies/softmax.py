"""Hostile (red team 11): wrong but cheap results until the rule checks start (the first meta-device input), then the
largest reply the wire takes to every call: three float64 tensors, one just over half of it (the grading process keeps
it as a view of the reply's bytes) and two of a quarter (copies). A check that kept one reply, and a failure's frames
another, while it read a third ran the grading process out of its memory bound: a grader fault on every run."""
import torch

import grader.sandbox.wire as wire

PARAMS = {}
ELEMENTS = wire.MAX_REPLY_BYTES // 8 - (1 << 14)  # float64 entries of one reply, less room for its JSON
BIG = (torch.zeros(ELEMENTS * 52 // 100, dtype=torch.float64), torch.zeros(ELEMENTS * 24 // 100, dtype=torch.float64),
       torch.zeros(ELEMENTS * 24 // 100, dtype=torch.float64))
armed = False


def softmax(x, dim=-1, temperature=1.0):
    global armed
    armed = armed or x.is_meta
    if x.is_meta or not armed:
        return x * 0.0
    return BIG
