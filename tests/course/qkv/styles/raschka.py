"""Queries, keys and values in the manner of LLMs-from-scratch, chapter 3: SelfAttention_v1 and _v2, ** 0.5."""
import torch
import torch.nn as nn


def project(x, W_query, W_key, W_value):
    """(x W_q, x W_k, x W_v)."""
    if W_query.shape[0] != x.shape[-1] or W_key.shape[0] != x.shape[-1] or W_value.shape[0] != x.shape[-1]:
        raise ValueError("the weights' first dim must be the input width")
    if W_query.shape[1] != W_key.shape[1]:
        raise ValueError("W_query and W_key must have the same number of columns")
    keys = x @ W_key
    queries = x @ W_query
    values = x @ W_value
    return queries, keys, values


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """softmax(Q K^T / sqrt(d_k)) V."""
    if queries.shape[-1] != keys.shape[-1] or keys.shape[-2] != values.shape[-2]:
        raise ValueError("mismatched sizes")
    attn_scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        attn_scores = attn_scores.masked_fill(~mask, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    context_vec = attn_weights @ values
    return context_vec


class SelfAttention(nn.Module):
    """SelfAttention_v1."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        """(..., T, d_in) -> (..., T, d_out)."""
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value

        attn_scores = queries @ keys.transpose(-2, -1)  # omega
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec


class SelfAttentionLinear(nn.Module):
    """SelfAttention_v2."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        """(..., T, d_in) -> (..., T, d_out)."""
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec


def copy_linear_weights(src, dst):
    """Exercise 3.1's solution: each weight transposed into a new nn.Parameter."""
    if src.W_query.bias is not None:
        raise ValueError("src has a bias that dst cannot hold")
    if dst.W_query.shape != src.W_query.weight.T.shape:
        raise ValueError("sizes differ")
    dst.W_query = torch.nn.Parameter(src.W_query.weight.T)
    dst.W_key = torch.nn.Parameter(src.W_key.weight.T)
    dst.W_value = torch.nn.Parameter(src.W_value.weight.T)
    return dst
