import math

import torch
import torch.nn as nn


def project(x, W_query, W_key, W_value):
    if not W_query.shape[0] == W_key.shape[0] == W_value.shape[0] == x.shape[-1]:
        raise ValueError("weights must have d_in rows")
    if W_query.shape[1] != W_key.shape[1]:
        raise ValueError("queries and keys need the same width")
    return torch.matmul(x, W_query), torch.matmul(x, W_key), torch.matmul(x, W_value)


def scaled_dot_product_attention(queries, keys, values, mask=None):
    if queries.shape[-1] != keys.shape[-1] or keys.shape[-2] != values.shape[-2]:
        raise ValueError("mismatched sizes")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError("mask must be bool")
    scores = torch.einsum("...qd,...kd->...qk", queries, keys) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, torch.full_like(scores, -math.inf))
    return torch.einsum("...qk,...kv->...qv", scores.softmax(-1), values)


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return scaled_dot_product_attention(*project(x, self.W_query, self.W_key, self.W_value))


class SelfAttentionLinear(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))


def copy_linear_weights(src, dst):
    for name in ("W_query", "W_key", "W_value"):
        linear = getattr(src, name)
        if linear.bias is not None:
            raise ValueError("src must not have a bias")
        if getattr(dst, name).shape != linear.weight.T.shape:
            raise ValueError("sizes differ")
        setattr(dst, name, nn.Parameter(linear.weight.detach().T.clone()))
    return dst
