"""Exercise 8: multi-head causal attention."""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    """``num_heads`` causal attention heads computed together, then mixed by ``out_proj``.

    ``__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)``
    creates ``W_query``, ``W_key``, ``W_value`` as ``nn.Linear(d_in, d_out,
    bias=qkv_bias)``, then ``out_proj = nn.Linear(d_out, d_out)``, in that
    order, plus ``dropout = nn.Dropout(dropout)`` and a causal mask buffer.
    Each head works in ``head_dim = d_out // num_heads`` dims.

    ``forward(x)``: project once, split the last dim into heads, attend within
    each head (scaled by ``sqrt(head_dim)``, causal, dropout on the weights),
    merge the heads back and apply ``out_proj``. Different heads can learn to
    look for different things; computing them as one batched tensor keeps
    that free of Python loops.

    Shapes: ``x``: (B, T, d_in) -> queries split to (B, num_heads, T,
    head_dim) -> weights (B, num_heads, T, T) -> merged (B, T, d_out).
    Raises ``ValueError``: the constructor when ``d_out`` is not divisible by
    ``num_heads``, ``forward`` when ``T > context_length``.

    Traps: ``view(B, T, num_heads, head_dim)`` must be followed by
    ``transpose(1, 2)``; a direct ``view(B, num_heads, T, head_dim)`` mixes
    tokens across heads. Merge in the reverse order (transpose back, then
    reshape). Scale by ``sqrt(head_dim)``, not ``sqrt(d_out)``.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        if num_heads <= 0 or d_out % num_heads:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)
        ### END SOLUTION

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out): multi-head causal attention."""
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        if T > self.mask.shape[0]:
            raise ValueError(f"sequence length {T} exceeds context_length {self.mask.shape[0]}")

        def split_heads(t):  # (B, T, d_out) -> (B, heads, T, head_dim)
            return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

        queries, keys, values = split_heads(self.W_query(x)), split_heads(self.W_key(x)), split_heads(self.W_value(x))
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, heads, T, T)
        scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, heads, T, T)
        context = (weights @ values).transpose(1, 2).reshape(B, T, -1)  # (B, T, d_out)
        return self.out_proj(context)  # (B, T, d_out)
        ### END SOLUTION
