"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors): they earn nothing."""
import torch

PARAMS = {}


def attention_weights(x):
    if x.dim() < 2:
        raise ValueError(f"attention_weights needs a (..., T, d) tensor, got {tuple(x.shape)}")
    return (x[..., :1] * x[..., :1].transpose(-2, -1)) * 0


def context_vectors(x):
    return attention_weights(x) @ x
