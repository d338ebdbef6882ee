"""Multi-head attention with einsum on (B, T, heads, head_dim) tensors: no transpose, reshape to merge."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("future", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out)."""
        B, T, _ = x.shape
        if T > self.future.shape[-1]:
            raise ValueError(f"T={T} exceeds context_length={self.future.shape[-1]}")
        q, k, v = (w(x).reshape(B, T, self.num_heads, -1) for w in (self.W_query, self.W_key, self.W_value))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
        scores = torch.where(self.future[:T, :T], float("-inf"), scores)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return self.out_proj(torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, -1))
