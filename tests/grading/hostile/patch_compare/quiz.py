"""Hostile: make every comparison say "equal" (in the worker, where it fools nobody), return zeros."""
import math
import unittest

import torch
import torch.testing

PARAMS = {}


def _yes(*args, **kwargs):
    return True


def _ones(self, *args, **kwargs):
    return torch.ones(self.shape, dtype=torch.bool)


torch.allclose = _yes
torch.equal = _yes
torch.isclose = lambda a, *args, **kwargs: torch.ones(a.shape, dtype=torch.bool)
torch.Tensor.allclose = _yes
torch.Tensor.equal = _yes
torch.Tensor.__eq__ = _ones
torch.Tensor.__ne__ = lambda self, *args: torch.zeros(self.shape, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None
torch.testing.assert_allclose = lambda *args, **kwargs: None
math.isclose = _yes
unittest.TestCase.assertEqual = lambda *args, **kwargs: None


def decoder_attention(s, H, return_weights=False):
    return _zeros(s, H, return_weights)


def quiz_answer():
    return torch.zeros(2)


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
