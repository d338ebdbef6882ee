"""Known mistakes of exercise quiz (decoder_attention), as functions of the decoder state s and encoder states H."""
import math

from diagnosis import Hint
from hints import softmax

NO_SCALING = "decoder attention has no scaling: the scores are the plain dot products h_i . s (no sqrt(d))."
ATTENTION_WRONG = ("the mistake is in decoder_attention: quiz_answer() is what it gives on the quiz's s and H (the checks "
                   "of decoder_attention say what is wrong).")


def decoder_hints(s, H) -> list[Hint]:
    """Mistakes of decoder_attention(s, H); the one that fails on batched inputs in their own dtype."""
    s64, H64 = s.double(), H.double()
    scores = (H64 * s64.unsqueeze(-2)).sum(-1)
    alphas = softmax(scores)
    return [Hint("the result is not normalized: turn the scores into weights with a softmax over the n states first.",
                 lambda: (scores.unsqueeze(-1) * H64).sum(-2), "quiz.no_softmax"),
            Hint("the softmax runs over the wrong dim: the weights belong to the n encoder states (dim -1 of the "
                 "scores).", lambda: (softmax(scores, 0).unsqueeze(-1) * H64).sum(-2), "quiz.softmax_dim0"),
            Hint("the weights are applied per feature: alpha_i multiplies the whole state h_i and the sum runs over "
                 "the n states (dim -2 of H).", lambda: (alphas.unsqueeze(-1) * H64).sum(-1), "quiz.sum_over_features"),
            Hint("you return the weights, not the weighted sum of the states.", lambda: alphas, "quiz.returns_weights"),
            Hint(NO_SCALING, lambda: (softmax(scores / math.sqrt(s.shape[-1])).unsqueeze(-1) * H64).sum(-2),
                 "quiz.scaled"),
            Hint("with batch dims, H @ s multiplies the wrong dims: score each state with (H * s.unsqueeze(-2)).sum(-1) "
                 "or H @ s.unsqueeze(-1).", lambda: (softmax(H @ s).unsqueeze(-1) * H).sum(-2), "quiz.H_matmul_s")]


def alphas_hints(s, H) -> list[Hint]:
    """Mistakes of the weights decoder_attention returns."""
    scores = (H.double() * s.double().unsqueeze(-2)).sum(-1)
    return [Hint("the alphas are the raw scores: apply the softmax over the n states.", lambda: scores, "quiz.no_softmax"),
            Hint("the softmax runs over the wrong dim: the weights belong to the n encoder states (dim -1 of the "
                 "scores).", lambda: softmax(scores, 0), "quiz.softmax_dim0"),
            Hint(NO_SCALING, lambda: softmax(scores / math.sqrt(s.shape[-1])), "quiz.scaled"),
            Hint("these are v, not the alphas: the pair is (v, alphas), in that order.",
                 lambda: (softmax(scores).unsqueeze(-1) * H.double()).sum(-2), "quiz.swapped_return")]


def answer_hints(decoder_attention, s, H) -> list[Hint]:
    """Mistakes of quiz_answer() (the quiz's s and H): one made in ``decoder_attention``, which it calls."""
    return [Hint(ATTENTION_WRONG, lambda: decoder_attention(s, H), "quiz.answer_from_wrong_attention")]
