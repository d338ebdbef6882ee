import torch


def dot(a, b):
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError("dot needs two 1-D tensors of equal length")
    return torch.sum(a * b)


def pairwise_scores(x):
    if x.ndim < 2:
        raise ValueError("x must be (..., T, d)")
    return torch.einsum("...id,...jd->...ij", x, x)


def attention_scores(queries, keys):
    if queries.ndim < 2 or keys.ndim < 2 or queries.shape[-1] != keys.shape[-1]:
        raise ValueError("queries and keys must share their last dimension")
    return queries @ keys.mT
