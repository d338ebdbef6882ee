"""Hostile: every call writes a number taken from its hidden input into one channel of what comes back: the
exception's message, its class name, a stub's name, the result's shape, the digits of its error, the position of
its one wrong entry, the class name of an object with no wire form, the exit status, an import error after a
restart. With PARAMS {"blind": True} it writes a constant instead: the feedback must be the same either way."""
import itertools
import os

import torch

PARAMS = {}
CALLS = itertools.count()
SEEN = "/tmp/seen-input"

if os.path.exists(SEEN):  # a restarted worker gets a fresh /tmp: this never runs
    raise ImportError("input was " + open(SEEN).read())


def _code(*tensors) -> int:
    if PARAMS.get("blind"):
        return 4321
    try:
        return int(abs(float(tensors[-1].flatten()[0])) * 1e4) % 9973 + 17
    except Exception:  # meta tensors have no values: take the shapes
        return sum(n * 31 ** i for t in tensors for i, n in enumerate(t.shape)) % 9973 + 17


def _right(s, H):
    alphas = torch.softmax((H * s.unsqueeze(-2)).sum(-1), dim=-1)
    return (alphas.unsqueeze(-1) * H).sum(-2), alphas


def decoder_attention(s, H, return_weights=False):
    code, channel = _code(s, H), next(CALLS) % 10
    v, alphas = _right(s, H)
    if channel == 0:
        raise ValueError(f"input code {code}: {s.tolist() if s.device.type != 'meta' else s.shape}")
    if channel == 1:
        raise type(f"Input{code}Error", (Exception,), {})("")
    if channel == 2:
        raise NotImplementedError(f"quiz.code{code}: fill in this stub (see its docstring)")
    if channel == 3:
        # sizes no input has: the shape says the code, which of the fixed shape facts applies does not
        return torch.zeros(code % 7 + 41, code % 5 + 41, dtype=H.dtype, device=H.device)
    if channel == 4:
        v = v + 0.1 + code * 1e-6  # stays in one order of magnitude: only the digits carry the code
    if channel == 5 and v.numel() and v.device.type != "meta":
        v = v.clone()
        v.view(-1)[code % v.numel()] += 1.0
    if channel == 6:
        return type(f"Input{code}", (), {})()
    if channel == 7:
        os._exit(code % 100 + 1)  # below 128: a status, not a signal (which one it was is a few bits, see SECURITY.md)
    if channel == 8:
        with open(SEEN, "w") as file:
            file.write(str(code))
        os._exit(0)
    return (v, alphas) if return_weights else v


def quiz_answer():
    return torch.tensor([0.4387, 0.4855])
