"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors): they earn nothing."""
import torch

PARAMS = {}


def softmax(x, dim=-1, temperature=1.0):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return torch.nan_to_num(x, posinf=0.0, neginf=0.0) * 0
