"""Partial: scaled_dot_product_attention calls torch's built-in (banned); everything else right

A grader corpus variant of exercise qkv (tests/test_mutants.py): the reference with one change.
"""
import math

import torch
from torch import nn


def project(x, W_query, W_key, W_value):
    """Project every token into its query, key and value: ``(x W_q, x W_k, x W_v)``.

    The query is what a token is looking for, the key what it offers for
    matching, the value what it passes on once attended to. Three learned
    matrices let attention decide each of these on its own.

    Shapes: ``x``: (..., T, d_in); ``W_query``, ``W_key``: (d_in, d_k);
    ``W_value``: (d_in, d_v) -> ``(queries, keys, values)`` of shapes
    (..., T, d_k), (..., T, d_k), (..., T, d_v).
    Raises ``ValueError`` when a weight's first dim is not ``d_in`` or the
    query and key widths differ.

    Example: "bank" in the river sentence is ``[0.8, 0.8, 0.2, 0.0]``; with
    the lecture's ``W_query`` (the 2x2 identity on the first two features,
    plus 0.2 of the third) its query is ``[0.84, 0.84]``.
    """
    d_in = x.shape[-1]
    if any(W.dim() != 2 or W.shape[0] != d_in for W in (W_query, W_key, W_value)):
        raise ValueError(f"each weight must be (d_in={d_in}, d_out), got {tuple(W_query.shape)}, {tuple(W_key.shape)}, {tuple(W_value.shape)}")
    if W_query.shape[1] != W_key.shape[1]:
        raise ValueError(f"queries and keys need the same width d_k, got {W_query.shape[1]} and {W_key.shape[1]}")
    return x @ W_query, x @ W_key, x @ W_value  # (..., T, d_k), (..., T, d_k), (..., T, d_v)


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """``softmax(Q K^T / sqrt(d_k)) V``, optionally masked.

    Each query is scored against every key, the scores are divided by
    ``sqrt(d_k)``, turned into weights with a softmax over the keys, and the
    values are averaged with those weights.

    ``mask`` is a bool tensor broadcastable to (..., Tq, Tk); ``True`` means
    "may attend" (PyTorch's convention). Masked scores become ``-inf`` before
    the softmax, so they get weight exactly 0.

    Shapes: ``queries``: (..., Tq, d_k), ``keys``: (..., Tk, d_k),
    ``values``: (..., Tk, d_v) -> (..., Tq, d_v).
    Raises ``ValueError`` on mismatched ``d_k``, mismatched ``Tk`` or a mask
    that is not bool.

    Example: for "journey" in "Your journey starts with one step" with
    ``d_k = 2``, the scores ``[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]``
    divided by ``sqrt(2)`` give the weights
    ``[0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]``.

    Trap: the dot product of two random d-dim vectors grows like ``sqrt(d)``;
    without the scaling, wide keys push the softmax towards one-hot weights
    whose gradients vanish. Scale by ``sqrt(d_k)``, the key width, not by
    ``d_k`` and not by the input width. Mask *before* the softmax: zeroing
    weights afterwards leaves rows that no longer sum to 1.
    """
    d_k = keys.shape[-1]
    if queries.shape[-1] != d_k or keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"need queries (..., Tq, d_k), keys (..., Tk, d_k), values (..., Tk, d_v), got shapes {tuple(queries.shape)}, {tuple(keys.shape)}, {tuple(values.shape)}")
    if mask is not None:
        if mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool tensor (True = may attend), got {mask.dtype}")
        pass
    return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)


class SelfAttention(nn.Module):
    """Self-attention with three trainable weight matrices.

    ``forward(x)`` projects ``x`` into queries, keys and values and returns
    ``softmax(Q K^T / sqrt(d_out)) V``.

    ``__init__(d_in, d_out)`` creates ``W_query``, ``W_key`` and ``W_value``,
    in that order, each ``nn.Parameter(torch.rand(d_in, d_out))``. The order
    matters: with ``torch.manual_seed(0)`` first, the river and finance
    sentences reproduce the lecture's outputs.

    Shapes: ``x``: (..., T, d_in) -> (..., T, d_out).

    Example:

    >>> torch.manual_seed(123)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> journey = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
    ...                         [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
    >>> SelfAttention(d_in=3, d_out=2)(journey)[1]
    tensor([0.3061, 0.8210], grad_fn=<SelectBackward0>)

    Trap: ``keys.T`` works for one sequence but breaks (or silently
    misbehaves) with a batch dim; use ``keys.transpose(-2, -1)``.
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        """(..., T, d_in) -> (..., T, d_out): scaled dot-product self-attention."""
        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)  # (..., T, d_out) each
        return scaled_dot_product_attention(queries, keys, values)  # (..., T, d_out)


class SelfAttentionLinear(nn.Module):
    """Self-attention whose projections are ``nn.Linear`` layers.

    Same ``forward`` as ``SelfAttention``, but ``__init__(d_in, d_out,
    qkv_bias=False)`` creates ``W_query``, ``W_key`` and ``W_value``, in that
    order, as ``nn.Linear(d_in, d_out, bias=qkv_bias)``: better initialized
    than ``torch.rand`` and optionally with a bias.

    Shapes: ``x``: (..., T, d_in) -> (..., T, d_out).

    Example: with ``torch.manual_seed(789)`` and ``d_in=3, d_out=2``, the six
    tokens of "Your journey starts with one step" give outputs close to
    ``[-0.075, 0.070]`` for every token.

    Trap: ``nn.Linear`` stores its weight as (d_out, d_in) and computes
    ``x @ weight.T``; call the layer (``self.W_query(x)``) rather than
    multiplying by ``.weight`` yourself.
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        """(..., T, d_in) -> (..., T, d_out): scaled dot-product self-attention."""
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (..., T, d_out) each
        return scaled_dot_product_attention(queries, keys, values)  # (..., T, d_out)


def copy_linear_weights(src, dst):
    """Copy a bias-free ``SelfAttentionLinear``'s weights into a ``SelfAttention``; return ``dst``.

    Afterwards ``dst(x)`` equals ``src(x)``: the two classes compute the same
    function and differ only in how they store it.

    Raises ``ValueError`` when ``src`` has a bias (``SelfAttention`` has none
    to hold it) or the sizes differ.

    Trap: ``nn.Linear`` keeps its weight transposed, (d_out, d_in), so the
    matrix ``SelfAttention`` multiplies by is ``weight.T``. Copy under
    ``torch.no_grad()`` (or wrap in a new ``nn.Parameter``) so that the copy
    is not recorded as part of the graph.
    """
    pairs = [(dst.W_query, src.W_query), (dst.W_key, src.W_key), (dst.W_value, src.W_value)]
    if any(linear.bias is not None for _, linear in pairs):
        raise ValueError("src must be a SelfAttentionLinear without bias (qkv_bias=False)")
    if any(param.shape != linear.weight.T.shape for param, linear in pairs):
        raise ValueError(f"sizes differ: dst holds {tuple(dst.W_query.shape)}, src holds {tuple(src.W_query.weight.T.shape)}")
    with torch.no_grad():
        for param, linear in pairs:
            param.copy_(linear.weight.T)  # (d_in, d_out)
    return dst
