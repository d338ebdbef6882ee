"""Hostile (the grading process computing on results before checking their shape): the right softmax where autograd
is asked for (so the autograd check goes on to the calls on moved inputs), and otherwise all-False bool tensors of
shapes (K, 1, 1, 1, 1) and (1, K, 1, 1, 1) on alternate calls: 4 KiB of results for K = 2048 (PARAMS "k"), which
broadcast to (K, K, 3, 5, 4) float64 (2 GB) where trusted code subtracts one from the other and multiplies by the
check's grad_output before looking at their shapes."""
import itertools

import torch

PARAMS = {}
CALLS = itertools.count()


def softmax(x, dim=-1, temperature=1.0):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if x.requires_grad:
        z = x / temperature
        e = (z - z.amax(dim=dim, keepdim=True)).exp()
        return e / e.sum(dim=dim, keepdim=True)
    shape = [1] * 5
    shape[next(CALLS) % 2] = PARAMS.get("k", 2048)
    return torch.zeros(shape, dtype=torch.bool)
