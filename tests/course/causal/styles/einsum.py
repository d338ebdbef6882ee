"""Causal attention with einsum, the queries scaled by ** -0.5 before the product, an additive -inf mask, .softmax(-1)."""
import torch
from torch import nn


def causal_mask(T, device=None):
    """True on and below the diagonal."""
    return torch.tril(torch.ones(T, T, device=device)).bool()


class CausalAttention(nn.Module):
    """Single-head causal attention."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.scale = d_out ** -0.5
        self.register_buffer("causal", causal_mask(context_length))

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out)."""
        T = x.size(1)
        if T > self.causal.size(0):
            raise ValueError(f"T={T} > context_length={self.causal.size(0)}")
        q = self.W_query(x) * self.scale
        k, v = self.W_key(x), self.W_value(x)
        scores = torch.einsum("bqd,bkd->bqk", q, k)
        scores = scores + torch.zeros_like(scores).masked_fill(~self.causal[:T, :T], float("-inf"))
        weights = self.dropout(scores.softmax(-1))
        return torch.einsum("bqk,bkd->bqd", weights, v)
