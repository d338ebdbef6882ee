# Generated from solutions/ by `python -m grader stubs`: fill in the stubs below.
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
        raise NotImplementedError("multihead.MultiHeadAttention.__init__: fill in this stub (see its docstring)")

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out): multi-head causal attention."""
        raise NotImplementedError("multihead.MultiHeadAttention.forward: fill in this stub (see its docstring)")
