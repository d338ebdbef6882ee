"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors, parameters and buffer
created as the course says, no peeking): they earn nothing."""
import torch
from torch import nn

PARAMS = {}


def causal_mask(T, device=None):
    return torch.zeros(T, T, dtype=torch.bool, device=device)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length), persistent=False)

    def forward(self, x):
        if x.shape[1] > self.mask.shape[0]:
            raise ValueError(f"sequence length {x.shape[1]} exceeds context_length {self.mask.shape[0]}")
        return (self.W_query(x) + self.W_key(x) + self.W_value(x)) * 0
