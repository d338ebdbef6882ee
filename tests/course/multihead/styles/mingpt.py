"""Multi-head attention in the manner of minGPT: query, key, value layers, a "mask" tril buffer, size() and view."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


class MultiHeadAttention(nn.Module):
    """A vanilla multi-head masked self-attention layer with a projection at the end."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if num_heads < 1 or d_out % num_heads:
            raise ValueError("d_out must be a multiple of num_heads")
        # key, query, value projections for all heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        # output projection
        self.out_proj = nn.Linear(d_out, d_out)
        # regularization
        self.dropout = nn.Dropout(dropout)
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length))
                             .view(1, 1, context_length, context_length))
        self.n_head = num_heads

    def forward(self, x, layer_past=None):
        """(B, T, d_in) -> (B, T, d_out)."""
        B, T, _ = x.size()
        if T > self.mask.size(-1):
            raise ValueError(f"sequence of {T} tokens is longer than the block size {self.mask.size(-1)}")
        C = self.out_proj.in_features

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        k = self.W_key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = self.W_query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = self.W_value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

        # output projection
        return self.out_proj(y)
