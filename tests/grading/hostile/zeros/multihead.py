"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors, parameters and buffer
created as the course says, no peeking): they earn nothing."""
import torch
from torch import nn

PARAMS = {}


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if num_heads <= 0 or d_out % num_heads:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(),
                             persistent=False)

    def forward(self, x):
        if x.shape[1] > self.mask.shape[0]:
            raise ValueError(f"sequence length {x.shape[1]} exceeds context_length {self.mask.shape[0]}")
        return self.out_proj(self.W_query(x) + self.W_key(x) + self.W_value(x)) * 0
