"""Multi-head attention in the manner of the Annotated Transformer: a module-level attention(), masked_fill(mask == 0)."""
import math

import torch
import torch.nn as nn


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadAttention(nn.Module):
    """Take in model size and number of heads."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_model must be divisible by h")
        # We assume d_v always equals d_k
        self.d_k = d_out // num_heads
        self.h = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)
        subsequent = torch.triu(torch.ones((1, context_length, context_length)), diagonal=1).type(torch.uint8)
        self.register_buffer("mask", subsequent == 0, persistent=False)

    def forward(self, x):
        "Implements Figure 2"
        nbatches, T = x.size(0), x.size(1)
        if T > self.mask.size(-1):
            raise ValueError(f"sequence of {T} positions, context of {self.mask.size(-1)}")
        mask = self.mask[:, :T, :T].unsqueeze(1)  # same mask applied to all h heads

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin in (self.W_query, self.W_key, self.W_value)
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)

        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.out_proj(x)
