"""Bug: attention also divides by sqrt(d_k)

A grader corpus variant of exercise dictionary (tests/test_mutants.py): the reference with one change.
"""
import torch


def one_hot(index, n):
    """A float32 vector of length ``n`` with a single 1 at ``index``.

    One-hot vectors are orthonormal: the dot product of two of them is 1 when
    they are the same and 0 otherwise, exactly the match a dictionary needs.

    Raises ``ValueError`` when ``index`` is outside ``0 .. n-1``.

    >>> one_hot(1, 3)
    tensor([0., 1., 0.])
    """
    if not 0 <= index < n:
        raise ValueError(f"index {index} is outside 0..{n - 1}")
    vector = torch.zeros(n)  # (n,)
    vector[index] = 1.0
    return vector


def attention(Q, K, V, temperature=1.0):
    """``softmax(Q K^T / temperature) V``: query-key-value attention with a temperature, no ``sqrt(d_k)``.

    Shapes: ``Q``: (..., nq, dk), ``K``: (..., nk, dk), ``V``: (..., nk, dv)
    -> (..., nq, dv).
    Raises ``ValueError`` when ``temperature <= 0`` or the sizes do not match.

    Example: the quiz as one query, ``Q = [[s]]`` and ``K = V = [[h1, h2,
    h3]]``, at temperature 0.01 returns ``h1`` itself, the best match.

    Trap: divide the scores by the temperature (a low temperature sharpens);
    multiplying by it does the opposite.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError(f"need Q (..., nq, dk), K (..., nk, dk), V (..., nk, dv), got shapes {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
    weights = torch.softmax(Q @ K.transpose(-2, -1) / temperature / K.shape[-1] ** 0.5, dim=-1)
    return weights @ V  # (..., nq, dv)


def lookup(table, key, temperature):
    """Look ``key`` up in ``table`` with attention instead of hashing.

    The keys of the dict become one-hot vectors (in the dict's order), its
    values are stacked into a matrix, and the query is the one-hot vector of
    ``key``. A low temperature gives (almost) the stored value; temperature 1
    blends every value.

    Returns a float32 tensor of the values' length.
    Raises ``KeyError`` when ``key`` is not in ``table``.

    >>> table = {0: [2, 3], 1: [5, 7], 2: [3, 2]}
    >>> lookup(table, 1, temperature=0.01)
    tensor([5., 7.])
    >>> lookup(table, 1, temperature=1.0)
    tensor([3.9403, 5.0925])

    Trap: at temperature 1 the softmax of ``[0, 1, 0]`` is far from one-hot
    (``[0.21, 0.58, 0.21]``), which is why a plain softmax blends.
    """
    if key not in table:
        raise KeyError(key)
    keys = list(table)
    K = torch.stack([one_hot(i, len(keys)) for i in range(len(keys))])  # (n, n)
    V = torch.tensor([table[k] for k in keys], dtype=torch.float32)  # (n, dv)
    q = one_hot(keys.index(key), len(keys)).unsqueeze(0)  # (1, n)
    return attention(q, K, V, temperature).squeeze(0)  # (dv,)
