"""Multi-head attention in the manner of Llama: a float -inf triu(1) mask added to the scores, softmax then type_as."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    """Llama's Attention without rotary embeddings or a cache, with the course's names."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"dim {d_out} must be divisible by n_heads {num_heads}")
        self.n_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        mask = torch.full((context_length, context_length), float("-inf"))
        self.register_buffer("mask", torch.triu(mask, diagonal=1), persistent=False)

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out)."""
        bsz, seqlen, _ = x.shape
        if seqlen > self.mask.shape[0]:
            raise ValueError(f"seqlen {seqlen} > max_seq_len {self.mask.shape[0]}")
        xq, xk, xv = self.W_query(x), self.W_key(x), self.W_value(x)

        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_heads, self.head_dim)

        xq = xq.transpose(1, 2)  # (bs, n_heads, seqlen, head_dim)
        keys = xk.transpose(1, 2)
        values = xv.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + self.mask[:seqlen, :seqlen]  # (bs, n_heads, seqlen, seqlen)
        scores = F.softmax(scores, dim=-1).type_as(xq)
        scores = self.dropout(scores)
        output = torch.matmul(scores, values)  # (bs, n_heads, seqlen, head_dim)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.out_proj(output)
