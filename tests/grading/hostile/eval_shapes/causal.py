"""Hostile (the grading process converting results it did not check): CausalAttention whose every call returns an
all-False bool vector of K = 16 Mi entries (PARAMS "k"), the same shape each time: the eval-mode dropout check
compared its three results (one 48 MiB reply, under the 64 MiB cap) with each other once their shapes agreed,
converting each to float64 (8x: 384 MB) before looking at what shape the result should have (with 32 Mi entries,
1,986 MiB against 253 MiB for the references)."""
import torch
from torch import nn

PARAMS = {}


def causal_mask(T, device=None):
    return torch.zeros(T, T, dtype=torch.bool, device=device)  # wrong too: nothing of the exercise is right


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).tril().bool(), persistent=False)

    def forward(self, x):
        if x.shape[-2] > self.mask.shape[0]:
            raise ValueError(f"sequence length {x.shape[-2]} exceeds context_length {self.mask.shape[0]}")
        return torch.zeros(PARAMS.get("k", 1 << 24), dtype=torch.bool)
