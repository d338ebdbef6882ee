"""Known mistakes of exercise scores (dot, pairwise_scores, attention_scores), as functions of their inputs."""
import math

from diagnosis import Hint
from hints import BATCHED_T, reversed_dims


def dot_hints(a, b) -> list[Hint]:
    return [Hint("you return the element-wise products: sum them to one number.", lambda: a * b, "scores.dot_no_sum")]


def pairwise_hints(x) -> list[Hint]:
    return [Hint("x^T x compares features, not tokens: pairwise scores are x @ x^T, shape (..., T, T).",
                 lambda: x.transpose(-2, -1) @ x, "scores.pairwise_features"),
            Hint("no scaling here: x @ x^T.", lambda: x @ x.transpose(-2, -1) / math.sqrt(x.shape[-1]),
                 "scores.pairwise_scaled"),
            Hint(BATCHED_T, lambda: x @ reversed_dims(x), "scores.batched_T")]


def score_hints(queries, keys) -> list[Hint]:
    return [Hint("keys @ queries^T gives (..., Tk, Tq): the result is queries @ keys^T, one row per query.",
                 lambda: keys @ queries.transpose(-2, -1), "scores.swapped"),
            Hint("attention_scores has no scaling: plain queries @ keys^T (sqrt(d) comes in exercise 4).",
                 lambda: queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1]), "scores.scaled"),
            Hint("queries^T keys compares features, not tokens: queries @ keys.transpose(-2, -1).",
                 lambda: queries.transpose(-2, -1) @ keys, "scores.features"),
            Hint(BATCHED_T, lambda: queries @ reversed_dims(keys), "scores.batched_T")]
