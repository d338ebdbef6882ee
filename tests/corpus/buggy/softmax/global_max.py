"""Bug: softmax subtracts the max of the whole tensor, not each row's

A grader corpus variant of exercise softmax (tests/test_mutants.py): the reference with one change.
"""
import torch


def softmax(x, dim=-1, temperature=1.0):
    """Turn scores into positive weights that sum to 1 along ``dim``.

    ``softmax(x)_i = exp(x_i / t) / sum_j exp(x_j / t)``. Dividing by the
    temperature ``t`` before the exponential sharpens the weights when
    ``t < 1`` (towards a one-hot vector, a hard lookup) and flattens them when
    ``t > 1``.

    Shapes: any; the result has the shape, dtype and device of ``x``.
    Raises ``ValueError`` when ``temperature <= 0``.

    Example: the scores of "journey" against the six tokens of
    "Your journey starts with one step":

    >>> scores = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
    >>> softmax(scores)
    tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])

    Trap: ``exp`` overflows to ``inf`` for scores around 89 in float32 (and
    ``inf / inf`` is NaN). Subtract the row's maximum first: softmax does not
    change when every entry of a row moves by the same amount, and afterwards
    the largest exponent is ``exp(0) = 1``. Entries equal to ``-inf`` (masked
    positions) then get weight exactly 0. Reduce with ``keepdim=True`` so the
    row max and row sum broadcast back over their own row. Do not use any
    softmax or log-softmax of torch here.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    z = x / temperature
    z = z - z.max()
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)
