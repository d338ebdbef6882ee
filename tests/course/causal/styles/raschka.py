"""Causal attention in the manner of LLMs-from-scratch, chapter 3: a float triu buffer, masked_fill_, ** 0.5."""
import torch
import torch.nn as nn


def causal_mask(T, device=None):
    """True on and below the diagonal."""
    return ~torch.triu(torch.ones(T, T, device=device), diagonal=1).bool()


class CausalAttention(nn.Module):
    """Single-head causal attention."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out)."""
        b, num_tokens, d_in = x.shape
        if num_tokens > self.mask.shape[0]:
            raise ValueError(f"{num_tokens} tokens exceed context_length {self.mask.shape[0]}")
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = attn_weights @ values
        return context_vec
