"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors): they earn nothing."""
import torch

PARAMS = {}


def dot(a, b):
    if a.dim() != 1 or b.dim() != 1 or a.shape != b.shape:
        raise ValueError(f"dot needs two 1-D tensors of the same length, got {tuple(a.shape)} and {tuple(b.shape)}")
    return (a * b * 0).sum()


def pairwise_scores(x):
    if x.dim() < 2:
        raise ValueError(f"pairwise_scores needs a (..., T, d) tensor, got {tuple(x.shape)}")
    return (x[..., :1] * x[..., :1].transpose(-2, -1)) * 0


def attention_scores(queries, keys):
    if queries.dim() < 2 or keys.dim() < 2 or queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries and keys must share d, got {tuple(queries.shape)} and {tuple(keys.shape)}")
    return (queries[..., :1] * keys[..., :1].transpose(-2, -1)) * 0
