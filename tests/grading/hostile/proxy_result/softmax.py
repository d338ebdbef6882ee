"""Hostile (the suites trusting a result): -inf scores get a tiny weight, within the values check's tolerance but
not the exact 0 the next check asks for; on every second call the result is an object with no wire form whose
methods answer zeros, so that a check calling ``.masked_select(...)`` on it would see exact zeros.
With PARAMS {"plain": True} it returns the tiny weights every time (the honest counterpart)."""
import itertools

import torch

PARAMS = {}
CALLS = itertools.count()


class Zeros:
    def __getattr__(self, name):
        return lambda *args, **kwargs: torch.zeros(0)


def softmax(x, dim=-1, temperature=1.0):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    z = x / temperature
    e = (z - z.amax(dim=dim, keepdim=True)).exp().clamp_min(1e-30)
    weights = e / e.sum(dim=dim, keepdim=True)
    if not PARAMS.get("plain") and bool(torch.isinf(x).any()) and next(CALLS) % 2:
        return Zeros()
    return weights
