"""Zeros that follow every rule (shape, dtype, device, autograd, no loop, no built-in, errors, parameters created
as the course says): they earn nothing."""
import torch
from torch import nn

PARAMS = {}


def project(x, W_query, W_key, W_value):
    d_in = x.shape[-1]
    if any(W.dim() != 2 or W.shape[0] != d_in for W in (W_query, W_key, W_value)):
        raise ValueError(f"each weight must be (d_in={d_in}, d_out)")
    if W_query.shape[1] != W_key.shape[1]:
        raise ValueError("queries and keys need the same width d_k")
    return tuple(x @ W * 0 for W in (W_query, W_key, W_value))


def scaled_dot_product_attention(queries, keys, values, mask=None):
    if queries.shape[-1] != keys.shape[-1] or keys.shape[-2] != values.shape[-2]:
        raise ValueError("need queries (..., Tq, d_k), keys (..., Tk, d_k), values (..., Tk, d_v)")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor, got {mask.dtype}")
    return (queries[..., :1] * keys[..., :1].transpose(-2, -1)) @ values * 0


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return (x @ self.W_query + x @ self.W_key + x @ self.W_value) * 0


class SelfAttentionLinear(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return (self.W_query(x) + self.W_key(x) + self.W_value(x)) * 0


def copy_linear_weights(src, dst):
    pairs = [(dst.W_query, src.W_query), (dst.W_key, src.W_key), (dst.W_value, src.W_value)]
    if any(linear.bias is not None for _, linear in pairs):
        raise ValueError("src must be a SelfAttentionLinear without bias (qkv_bias=False)")
    if any(param.shape != linear.weight.T.shape for param, linear in pairs):
        raise ValueError("sizes differ")
    with torch.no_grad():
        for param, _ in pairs:
            param.zero_()
