"""Bug: CausalAttention fills future scores with 0 instead of -inf

A grader corpus variant of exercise causal (tests/test_mutants.py): the reference with one change.
"""
import math

import torch
from torch import nn


def causal_mask(T, device=None):
    """A bool (T, T) mask, ``True`` on and below the diagonal: position ``i`` may attend to ``j <= i``.

    >>> causal_mask(3)
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])

    Trap: ``torch.triu`` keeps the upper triangle, the future. In PyTorch's
    convention ``True`` means "may attend", so keep the lower one (``tril``).
    """
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)


class CausalAttention(nn.Module):
    """Single-head causal self-attention, as in a GPT decoder.

    ``__init__(d_in, d_out, context_length, dropout, qkv_bias=False)`` creates
    ``W_query``, ``W_key``, ``W_value`` (in that order) as ``nn.Linear(d_in,
    d_out, bias=qkv_bias)``, ``dropout = nn.Dropout(dropout)`` and a causal
    mask buffer of size ``context_length`` (``register_buffer``, so that it
    follows the module to the GPU).

    ``forward(x)``: scores ``Q K^T / sqrt(d_out)``, scores of later positions
    set to ``-inf``, softmax, dropout on the weights, weighted sum of values.

    Shapes: ``x``: (B, T, d_in) with ``T <= context_length`` -> (B, T, d_out).
    Raises ``ValueError`` when ``T > context_length``.

    Example: with 6 tokens, row 0 of the weights is ``[1, 0, 0, 0, 0, 0]``
    (the first token only sees itself) and row 1 splits between the first two.

    Traps: mask before the softmax (with ``-inf``, not 0: ``exp(0) = 1``);
    slice the buffer to ``[:T, :T]`` for sequences shorter than the context;
    dropout acts on the attention weights, and only in training mode
    (``nn.Dropout`` handles that when you use the module).
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length), persistent=False)

    def forward(self, x):
        """(B, T, d_in) -> (B, T, d_out): causal scaled dot-product attention."""
        T = x.shape[-2]
        if T > self.mask.shape[0]:
            raise ValueError(f"sequence length {T} exceeds context_length {self.mask.shape[0]}")
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (B, T, d_out) each
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])  # (B, T, T)
        scores = scores.masked_fill(~self.mask[:T, :T], 0.0)
        weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, T, T)
        return weights @ values  # (B, T, d_out)
