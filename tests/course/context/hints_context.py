"""Known mistakes of exercise context (attention_weights, context_vectors), as functions of the input x."""
import math

from diagnosis import Hint
from hints import BATCHED_T, NO_MAX, naive_softmax, reversed_dims, softmax

TRANSPOSED = ("the weights are transposed: their columns sum to 1, not the rows (a softmax over dim -2, or "
              "weights.transpose(-2, -1) @ x); the context vectors are softmax(x x^T, dim=-1) @ x.")
DIM0 = "your softmax runs over dim 0 (the batch here): use dim=-1, the keys."


def _over_dim0(x, alternative):
    """The dim-0 mistake, where dim 0 is a batch dim; on an unbatched x it is dim -2, the transposed weights' hint."""
    return [Hint(DIM0, alternative, "context.softmax_dim0")] if x.dim() > 2 else []


def context_weight_hints(x) -> list[Hint]:
    x64 = x.double()
    scores = x64 @ x64.transpose(-2, -1)
    return [Hint("your weights' columns sum to 1, not the rows: the softmax runs over the last dim (dim=-1).",
                 lambda: softmax(scores, -2), "context.weights_transposed"),
            *_over_dim0(x, lambda: softmax(scores, 0)),
            Hint("attention_weights has no scaling: softmax(x x^T); the sqrt(d) scaling comes with queries and keys.",
                 lambda: softmax(scores / math.sqrt(x.shape[-1])), "context.scaled"),
            Hint(BATCHED_T, lambda: softmax(x @ reversed_dims(x)), "context.batched_T"),
            Hint(NO_MAX, lambda: naive_softmax(x @ x.transpose(-2, -1)), "context.no_max")]


def context_vector_hints(x) -> list[Hint]:
    x64 = x.double()
    scores = x64 @ x64.transpose(-2, -1)
    return [Hint(TRANSPOSED, lambda: softmax(scores, -2) @ x64, "context.weights_transposed"),
            *_over_dim0(x, lambda: softmax(scores, 0) @ x64),
            Hint(TRANSPOSED, lambda: softmax(scores).transpose(-2, -1) @ x64, "context.weights_transposed"),
            Hint("the context vectors use the unscaled weights softmax(x x^T): no sqrt(d) here.",
                 lambda: softmax(scores / math.sqrt(x.shape[-1])) @ x64, "context.scaled"),
            Hint("you return the weights' input, not the mix: context_vectors is attention_weights(x) @ x.", lambda: x64,
                 "context.returns_x"),
            Hint("the product is the wrong way round: x @ weights; the context vectors are attention_weights(x) @ x "
                 "(row i of the weights mixes the rows of x).", lambda: x64 @ softmax(scores), "context.x_at_weights"),
            Hint(BATCHED_T, lambda: softmax(x @ reversed_dims(x)) @ x, "context.batched_T"),
            Hint(NO_MAX, lambda: naive_softmax(x @ x.transpose(-2, -1)) @ x, "context.no_max")]
