"""Hostile: leave marks in whatever process imports this module (builtins, the environment, sys.modules,
a file), to show that the grading process never imports it."""
import builtins
import os
import sys
import types

import torch

PARAMS = {}

builtins.GRADER_MARK = "imported"
os.environ["GRADER_MARK"] = "imported"
sys.modules["GRADER_MARK"] = types.ModuleType("GRADER_MARK")
try:
    with open(PARAMS["mark"], "w") as handle:
        handle.write("imported")
except (OSError, KeyError):
    pass


def decoder_attention(s, H, return_weights=False):
    if s.shape[-1] != H.shape[-1] or H.dim() < 2:
        raise ValueError(f"need s (..., d) and H (..., n, d) with the same d, got {tuple(s.shape)} and {tuple(H.shape)}")
    alphas = torch.softmax((H * s.unsqueeze(-2)).sum(-1), dim=-1)
    v = (alphas.unsqueeze(-1) * H).sum(-2)
    return (v, alphas) if return_weights else v


def quiz_answer():
    return decoder_attention(torch.tensor([0.4685, 0.9785]),
                             torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]]))
