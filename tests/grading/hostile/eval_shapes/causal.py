"""Hostile (the grading process converting results it did not check): CausalAttention whose every call returns an
all-False bool vector of K = 1 Mi entries (PARAMS "k") in eval mode, the same shape each time (one entry in training
mode, so that the checks before it leave the exercise's share of replies to it): the eval-mode dropout check
compared its three results (one 3 MiB reply, within the exercise's 16 MiB share of replies, which refuses the 48 MiB
of K = 16 Mi) with each other once their shapes agreed, converting each to float64 (8x) before looking at what shape
the result should have (with 32 Mi entries, 1,986 MiB against 253 MiB for the references)."""
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
        return torch.zeros(PARAMS.get("k", 1 << 20) if not self.training else 1, dtype=torch.bool)
