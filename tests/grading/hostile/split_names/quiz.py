"""The reference solution with every local name starting with ℘, a character Python takes in identifiers (Other_ID_Start)
and the tokenize module splits off as an error token (after an error token of the space before it): the same code
to Python, every name two or three symbols to the similarity check, which flagged nothing."""
import torch


def decoder_attention(℘s, ℘H, return_weights=False):
    """Attention of a decoder state over encoder states.

    Each encoder state ``h_i`` is scored against the decoder state ``s`` with
    a dot product, the scores are turned into weights ``alpha`` with a
    softmax over the ``n`` states, and the result is the weighted sum
    ``v = sum_i alpha_i h_i``.

    Shapes: ``s``: (..., d), ``H``: (..., n, d) -> ``v``: (..., d); with
    ``return_weights=True`` returns ``(v, alphas)``, ``alphas``: (..., n).
    Raises ``ValueError`` when the last dims of ``s`` and ``H`` differ.

    Example (the quiz): ``s = [0.4685, 0.9785]`` against ``h1 = [0.5539,
    0.7239]``, ``h2 = [0.4111, 0.3878]``, ``h3 = [0.2376, 0.1264]`` scores
    ``[0.9678, 0.5721, 0.2350]``, weighs them ``[0.4643, 0.3126, 0.2231]`` and
    gives ``v = [0.4387, 0.4855]``.

    Trap: the weights belong to the encoder states, one per state: the
    softmax runs over ``n``, not over the ``d`` features.
    """
    if ℘s.shape[-1] != ℘H.shape[-1] or ℘H.dim() < 2:
        raise ValueError(f"need s (..., d) and H (..., n, d) with the same d, got shapes {tuple(℘s.shape)} and {tuple(℘H.shape)}")
    ℘scores = (℘H * ℘s.unsqueeze(-2)).sum(-1)  # (..., n)
    ℘alphas = torch.softmax(℘scores, dim=-1)  # (..., n)
    ℘v = (℘alphas.unsqueeze(-1) * ℘H).sum(-2)  # (..., d)
    return (℘v, ℘alphas) if return_weights else ℘v


def quiz_answer():
    """The quiz's ``v`` as a float32 tensor, computed with ``decoder_attention``.

    >>> quiz_answer()
    tensor([0.4387, 0.4855])
    """
    ℘s = torch.tensor([0.4685, 0.9785])  # (d,)
    ℘H = torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]])  # (n, d)
    return decoder_attention(℘s, ℘H)  # (d,)

PARAMS = {}
