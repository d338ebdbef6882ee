"""Multi-head attention in the manner of nanoGPT: one fused projection split in three, a (1, 1, T, T) bias buffer."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


class MultiHeadAttention(nn.Module):
    """Causal self-attention (nanoGPT's CausalSelfAttention, with the course's names)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out {d_out} is not a multiple of num_heads {num_heads}")
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.n_head = num_heads
        self.n_embd = d_out
        self.register_buffer("bias", torch.tril(torch.ones(context_length, context_length))
                             .view(1, 1, context_length, context_length))

    def c_attn(self, x):
        """The three projections as one matmul, like nanoGPT's c_attn."""
        weight = torch.cat([self.W_query.weight, self.W_key.weight, self.W_value.weight], dim=0)
        bias = None
        if self.W_query.bias is not None:
            bias = torch.cat([self.W_query.bias, self.W_key.bias, self.W_value.bias])
        return F.linear(x, weight, bias)

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out)."""
        B, T, _ = x.size()
        if T > self.bias.size(-1):
            raise ValueError(f"Cannot forward sequence of length {T}, block size is only {self.bias.size(-1)}")
        C = self.n_embd
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.out_proj(y)
