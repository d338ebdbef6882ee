"""Hostile: find the expected value in the caller's frames, the stack or the heap, and return it."""
import gc
import inspect
import sys

import torch

PARAMS = {}
WANTED = ("want", "expected", "ref", "reference", "target", "answer", "truth")


def _outside() -> list[str]:
    """Files of the frames on the stack that are not the worker's or ours (the suites', pytest's...)."""
    files = [info.filename for info in inspect.stack()]
    frame = sys._getframe()
    while frame is not None:
        files.append(frame.f_code.co_filename)
        frame = frame.f_back
    return [f for f in files if any(word in f for word in ("hidden", "suites", "pytest", "checks", "remote"))]


def _steal(shape):
    found = []
    frame = sys._getframe()
    while frame is not None:
        for name, value in frame.f_locals.items():
            if isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(shape) and name.lower() in WANTED:
                found.append(value)
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict):
            for name, value in list(obj.items())[:50]:
                if isinstance(name, str) and name.lower() in WANTED and isinstance(value, torch.Tensor):
                    found.append(value)
    return found


def decoder_attention(s, H, return_weights=False):
    shape = tuple(H.shape[:-2]) + tuple(H.shape[-1:])
    stolen = _steal(shape)
    if stolen:
        return stolen[0].detach().clone()
    if _outside():
        raise RuntimeError("LE" "AK: " + " ".join(_outside())[:200])
    return _zeros(s, H, return_weights)


def quiz_answer():
    stolen = _steal((2,))
    if stolen:
        return stolen[0].detach().clone()
    leak = _outside()
    raise RuntimeError(("LE" "AK: " + " ".join(leak))[:200] if leak else "CL" "EAN: only the worker's frames are visible")


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
