"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors): they earn nothing."""
import torch

PARAMS = {}


def one_hot(index, n):
    if not 0 <= index < n:
        raise ValueError(f"index {index} is outside 0..{n - 1}")
    return torch.zeros(n)


def attention(Q, K, V, temperature=1.0):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError(f"shapes differ: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
    return (Q[..., :1] * K[..., :1].transpose(-2, -1)) @ V * 0


def lookup(table, key, temperature):
    if key not in table:
        raise KeyError(key)
    return torch.zeros(len(table[key]))
