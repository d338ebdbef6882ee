"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors): they earn nothing.
Also the baseline a trick is measured against: whatever a trick scores above zeros, it got by the trick."""
import torch

PARAMS = {}


def decoder_attention(s, H, return_weights=False):
    if s.shape[-1] != H.shape[-1] or H.dim() < 2:
        raise ValueError(f"need s (..., d) and H (..., n, d) with the same d, got {tuple(s.shape)} and {tuple(H.shape)}")
    scores = (H * s.unsqueeze(-2)).sum(-1) * 0  # (..., n), zeros in the graph
    v = (scores.unsqueeze(-1) * H).sum(-2)
    return (v, scores) if return_weights else v


def quiz_answer():
    return torch.zeros(2)
