"""Keyed dropout: dropout as a function of its input's values, so a check sees the same dropout whatever the layout of
the tensor it acts on ((B, T, T), (B, heads, T, T), (B * heads, T, T), transposed) and whatever was drawn before.

While ``KeyedDropout`` (a torch function mode) is active, every dropout call (the ``nn.Dropout`` module,
``F.dropout``, ``torch.dropout`` and their in-place forms) keeps an entry ``w`` iff frac(|w| * KEY) >= p and scales
the kept ones by 1 / (1 - p), as dropout does, and draws no random number; with ``training=False`` it returns its
input, as dropout does. The worker runs a student's call under it when a check asks (``dropout="keyed"``), and the
suites run the reference under it: the same weights get the same dropout, in whatever layout or order.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

KEY = 7919.0  # a float64 weight computed in another order moves frac(|w| * KEY) by ~1e-12: the same entries are kept
# Each dropout function's positional parameters, and their defaults (F.dropout's).
SIGNATURES = {F.dropout: ("input", "p", "training", "inplace"), torch.dropout: ("input", "p", "training"),
              torch.dropout_: ("input", "p", "training")}
DEFAULTS = {"p": 0.5, "training": True, "inplace": False}


def keyed_dropout(x: torch.Tensor, p: float, inplace: bool = False) -> torch.Tensor:
    """``x`` with the entries whose key falls below ``p`` zeroed and the others scaled by 1 / (1 - p)."""
    keep = torch.frac(x.detach().abs() * KEY) >= p
    scale = keep.to(x.dtype) / (1 - p) if p < 1 else torch.zeros_like(x)
    return x.mul_(scale) if inplace else x * scale


class KeyedDropout(TorchFunctionMode):
    """Every dropout call made while active is ``keyed_dropout`` (in training mode) or the identity (in eval mode)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func not in SIGNATURES:
            return func(*args, **(kwargs or {}))
        named = {**DEFAULTS, **dict(zip(SIGNATURES[func], args)), **(kwargs or {})}
        named["training"] = named.pop("train", named["training"])
        if not named["training"]:
            return named["input"]
        return keyed_dropout(named["input"], float(named["p"]), bool(named["inplace"]) or func is torch.dropout_)
