"""Bug: pairwise_scores uses x.T, which reverses every dim of a batched tensor

A grader corpus variant of exercise scores (tests/test_mutants.py): the reference with one change.
"""
import torch


def dot(a, b):
    """Dot product of two 1-D tensors: ``sum_i a[i] * b[i]``, as a 0-d tensor.

    The dot product measures how much two vectors point the same way: the
    larger it is, the more similar the tokens. Implement it with an
    element-wise product and a sum; ``torch.dot``, ``matmul``/``@``,
    ``einsum``, ``inner``, ``vdot`` and ``tensordot`` do the whole job for you
    and earn no credit here.

    Shapes: ``a``: (d,), ``b``: (d,) -> result: () (a 0-d tensor, not a float).
    Raises ``ValueError`` when ``a`` or ``b`` is not 1-D or their lengths differ.

    Example: in "Your journey starts with one step", the score of "journey"
    (the query) against "Your":

    >>> journey = torch.tensor([0.55, 0.87, 0.66])
    >>> your = torch.tensor([0.43, 0.15, 0.89])
    >>> dot(journey, your)
    tensor(0.9544)

    Trap: return a tensor, not ``.item()``: a Python float cuts the autograd
    graph and loses the input's dtype and device.
    """
    if a.dim() != 1 or b.dim() != 1 or a.shape != b.shape:
        raise ValueError(f"dot needs two 1-D tensors of the same length, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return (a * b).sum()  # ()


def pairwise_scores(x):
    """Scores of every token against every token of the same sequence.

    Entry ``[i, j]`` is ``dot(x[i], x[j])``, so the result is ``x @ x^T``:
    symmetric, with each token's squared length on the diagonal. No Python
    loops: one batched matrix product covers any number of leading dims.

    Shapes: ``x``: (..., T, d) -> (..., T, T).
    Raises ``ValueError`` when ``x`` has fewer than 2 dims.

    Example: the river sentence "stream bank mud", embedded in 4 dims:

    >>> river = torch.tensor([[1.2, 0.0, 0.0, 0.3],
    ...                       [0.8, 0.8, 0.2, 0.0],
    ...                       [0.9, 0.0, 0.0, 0.9]])
    >>> pairwise_scores(river)
    tensor([[1.5300, 0.9600, 1.3500],
            [0.9600, 1.3200, 0.7200],
            [1.3500, 0.7200, 1.6200]])

    Trap: ``x.T`` reverses *all* dims of a batched tensor; transpose only the
    last two with ``x.transpose(-2, -1)`` (or ``x.mT``).
    """
    if x.dim() < 2:
        raise ValueError(f"pairwise_scores needs a (..., T, d) tensor, got shape {tuple(x.shape)}")
    return x @ x.T  # (..., T, T)


def attention_scores(queries, keys):
    """Raw attention scores ``queries @ keys^T`` (no scaling yet).

    Row ``i`` holds how well query ``i`` matches every key. Queries and keys
    may come from different sequences (``Tq`` and ``Tk`` may differ) but must
    live in the same space (same last dim ``d``). Leading dims broadcast.

    Shapes: ``queries``: (..., Tq, d), ``keys``: (..., Tk, d) -> (..., Tq, Tk).
    Raises ``ValueError`` when the last dims differ or an input has fewer than 2 dims.

    Example: the query of "journey" after its projection, against the six keys
    of "Your journey starts with one step", gives scores
    ``[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]``.

    Trap: with ``Tq != Tk`` the result is not square; transposing the wrong
    tensor (or the wrong dims) silently works only for square inputs.
    """
    if queries.dim() < 2 or keys.dim() < 2 or queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries (..., Tq, d) and keys (..., Tk, d) must share d, got shapes {tuple(queries.shape)} and {tuple(keys.shape)}")
    return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)
