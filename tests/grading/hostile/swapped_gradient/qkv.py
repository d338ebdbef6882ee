"""Hostile (the grading process computing on gradients it did not check): the reference's qkv, whose own code swaps
the gradients autograd leaves on its inputs and on its modules' parameters (a post-accumulate-grad hook) for an
all-False bool tensor of shape (K, 1, 1, 1, 1), K = 4 Mi (4 MiB; PARAMS "k"): the autograd check multiplied each
gradient by a direction of the input's shape before looking at its shape, a (K, 1, ...) float64 product of 1.8 GB."""
import math

import torch
from torch import nn

PARAMS = {}


def _swap(tensor):
    """On a leaf that autograd fills, swap its gradient once it is accumulated."""
    if tensor.is_leaf and tensor.requires_grad and not getattr(tensor, "_swapped", False):
        tensor._swapped = True
        tensor.register_post_accumulate_grad_hook(
            lambda t: setattr(t.grad, "data", torch.zeros(PARAMS.get("k", 1 << 22), 1, 1, 1, 1, dtype=torch.bool)))


def project(x, W_query, W_key, W_value):
    d_in = x.shape[-1]
    if any(W.dim() != 2 or W.shape[0] != d_in for W in (W_query, W_key, W_value)):
        raise ValueError(f"each weight must be (d_in={d_in}, d_out)")
    if W_query.shape[1] != W_key.shape[1]:
        raise ValueError("queries and keys need the same width d_k")
    return x @ W_query, x @ W_key, x @ W_value


def scaled_dot_product_attention(queries, keys, values, mask=None):
    for tensor in (queries, keys, values):
        _swap(tensor)
    d_k = keys.shape[-1]
    if queries.shape[-1] != d_k or keys.shape[-2] != values.shape[-2]:
        raise ValueError("need queries (..., Tq, d_k), keys (..., Tk, d_k), values (..., Tk, d_v)")
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        for parameter in self.parameters():
            _swap(parameter)
        return scaled_dot_product_attention(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttentionLinear(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        for parameter in self.parameters():
            _swap(parameter)
        return scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))


def copy_linear_weights(src, dst):
    pairs = [(dst.W_query, src.W_query), (dst.W_key, src.W_key), (dst.W_value, src.W_value)]
    if any(linear.bias is not None for _, linear in pairs):
        raise ValueError("src must be a SelfAttentionLinear without bias (qkv_bias=False)")
    if any(param.shape != linear.weight.T.shape for param, linear in pairs):
        raise ValueError("sizes differ")
    with torch.no_grad():
        for param, linear in pairs:
            param.copy_(linear.weight.T)
    return dst
