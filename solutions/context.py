"""Exercise 3: self-attention without trainable weights."""
import torch


def attention_weights(x):
    """How much each token attends to every token: ``softmax(x x^T)`` over the last dim.

    Each row is a probability distribution over the sequence (it sums to 1),
    so row ``i`` says where token ``i`` looks for context.

    Shapes: ``x``: (..., T, d) -> (..., T, T).
    Raises ``ValueError`` when ``x`` has fewer than 2 dims.

    Example: "Your journey starts with one step"; row 2 ("journey") is
    ``[0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]``.

    Trap: normalize over the *last* dim (the keys). A softmax over dim 0
    makes the columns, not the rows, sum to 1 (for one unbatched sequence,
    whose scores are symmetric, it returns the transposed weights), and with
    a batch dim it normalizes across the batch. ``torch.softmax`` is allowed
    from here on.
    """
    ### BEGIN SOLUTION
    if x.dim() < 2:
        raise ValueError(f"attention_weights needs a (..., T, d) tensor, got shape {tuple(x.shape)}")
    return torch.softmax(x @ x.transpose(-2, -1), dim=-1)  # (..., T, T)
    ### END SOLUTION


def context_vectors(x):
    """Context vectors: each token replaced by the attention-weighted mean of all tokens.

    ``z_i = sum_j alpha_ij x_j``, i.e. ``attention_weights(x) @ x``. The same
    word gets a different vector in a different sentence: "bank" among
    "stream" and "mud" moves towards the river, among "money" and "loan"
    towards finance.

    Shapes: ``x``: (..., T, d) -> (..., T, d).
    Raises ``ValueError`` when ``x`` has fewer than 2 dims.

    Example: the river sentence "stream bank mud":

    >>> river = torch.tensor([[1.2, 0.0, 0.0, 0.3],
    ...                       [0.8, 0.8, 0.2, 0.0],
    ...                       [0.9, 0.0, 0.0, 0.9]])
    >>> context_vectors(river)
    tensor([[1.0014, 0.1884, 0.0471, 0.4381],
            [0.9487, 0.3561, 0.0890, 0.3130],
            [0.9868, 0.1499, 0.0375, 0.5203]])

    Trap: ``weights @ x`` (weights first) mixes tokens; ``x @ weights`` or an
    element-wise product does not.
    """
    ### BEGIN SOLUTION
    weights = attention_weights(x)  # (..., T, T)
    return weights @ x  # (..., T, d)
    ### END SOLUTION
