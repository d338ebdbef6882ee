"""Misconceptions: the known mistakes of each exercise, computed on the same input, so that feedback can name the one
a result shows.

A ``Hint`` is a diagnosis, never a guess: its text is shown only when its ``alternative`` (what the mistake
computes on the very input the check used) reproduces the student's result (``matching``: the same values within
the tolerance, NaN or inf where theirs are), or raises the error the student's code raised (``raising_alike``: the
same exception type, the same message with the same sizes). Mistakes about overflow and NaN are computed in the
input's dtype, the others in float64. Each has a stable ``id`` ("softmax.no_max"): the grader counts
misconceptions by it.

The fixed words for what a result got wrong live here too (``shape_fact``, ``error_scale``): the public checks say
the size of an error in the grader's buckets.

This module needs torch alone: the public checks of the handout use it, and so do the hidden suites.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Hint:
    """A known mistake: if the student's result equals ``alternative()`` (or their code raises what it raises),
    ``message`` says what went wrong; ``id`` names the mistake for counting."""
    message: str
    alternative: Callable[[], object]
    id: str = ""


Hints = Iterable[Hint] | Callable[[], Iterable[Hint]]


def labelled(label: str, text: str | None) -> str:
    """' <label>: <text>' with exactly one final period (or nothing, without a text)."""
    if not text:
        return ""
    text = text.rstrip()
    return f" {label}: {text}" + ("" if text.endswith((".", "?", "!", ")")) else ".")


def phrase(hint: Hint | None) -> str:
    """' Hint: ...' naming the mistake ``hint`` (or nothing)."""
    return labelled("Hint", hint.message if hint else None)


def as64(t: torch.Tensor) -> torch.Tensor:
    """A detached float64 copy on the CPU."""
    return t.detach().to("cpu", torch.float64)


def same(got: torch.Tensor, alternative, rtol: float, atol: float) -> bool:
    """Whether ``got`` equals ``alternative`` within the tolerance, NaN where it is NaN and inf where it is inf."""
    if (not isinstance(alternative, torch.Tensor) or alternative.device.type == "meta"
            or tuple(alternative.shape) != tuple(got.shape)):
        return False
    a, b = as64(got), as64(alternative)
    both_nan = torch.isnan(a) & torch.isnan(b)
    return bool((torch.isclose(a, b, rtol=rtol, atol=atol) | both_nan | (a == b)).all())


def shape_fact(got: Sequence[int], want: Sequence[int]) -> str:
    """How a result's shape differs from the expected one, in one of a few fixed phrases (never its sizes)."""
    got, want = tuple(got), tuple(want)
    if sorted(got) == sorted(want):
        return "the right sizes in the wrong order"
    if len(got) == len(want) - 1:
        return "one dim fewer than expected"
    if len(got) == len(want) + 1:
        return "one dim more than expected"
    if len(got) != len(want):
        return "several dims fewer than expected" if len(got) < len(want) else "several dims more than expected"
    return "the expected number of dims but other sizes"


def error_scale(error: float) -> str:
    """An error's order of magnitude, one of a dozen buckets: 'about 1e-3', 'about 1', '10 or more'."""
    if math.isnan(error) or error >= 10:
        return "10 or more"
    exponent = max(-10, math.floor(math.log10(error))) if error > 0 else -10
    return "about 1" if exponent >= 0 else f"about 1e{exponent}"


def _listed(hints: Hints) -> Iterable[Hint]:
    return hints() if callable(hints) else hints


def _only(found: list[Hint]) -> Hint | None:
    """The one mistake found; none where mistakes of different ids fit alike (the input cannot tell them apart)."""
    return found[0] if found and len({hint.id for hint in found}) == 1 else None


def matching(got: torch.Tensor, hints: Hints, rtol: float, atol: float, want: torch.Tensor | None = None) -> Hint | None:
    """The mistake whose result on the same input is ``got``. One that would also give ``want`` (the right result)
    tells nothing and is passed over; where several mistakes fit, none is named."""
    found = []
    for hint in _listed(hints):
        try:
            alternative = hint.alternative()
        except Exception:  # a mistake that cannot even be computed on this input is not the one made
            continue
        if same(got, alternative, rtol, atol) and not (want is not None and same(want, alternative, rtol, atol)):
            found.append(hint)
    return _only(found)


def _pattern(message: str) -> tuple[str, list[str]]:
    """An error message as its words (numbers replaced by #, spaces collapsed) and its numbers in order of size:
    the same error on the same input whatever operand came first."""
    text = " ".join(message.split())
    return re.sub(r"\d+", "#", text), sorted(re.findall(r"\d+", text), key=lambda n: (len(n), n))


def raising_alike(kind: str, message: str, hints: Hints) -> Hint | None:
    """The mistake that raises, on the same input, an exception of type ``kind`` with ``message`` (the same words and
    the same numbers, in any order): the error the student's code raised. Where several mistakes raise it, none is
    named."""
    found = []
    for hint in _listed(hints):
        try:
            hint.alternative()
        except Exception as error:
            if type(error).__name__ == kind and _pattern(str(error)) == _pattern(message):
                found.append(hint)
    return _only(found)


def _sm(z, dim=-1):
    return torch.softmax(z, dim)


def reversed_dims(t: torch.Tensor) -> torch.Tensor:
    """``t.T`` as it acts on a tensor of any rank (every dim reversed), without torch's warning."""
    return t.permute(*reversed(range(t.dim())))


def naive_softmax(z: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(z) / sum(exp(z)) with no max subtracted, in z's dtype: inf / inf = NaN once exp overflows."""
    e = z.exp()
    return e / e.sum(dim, keepdim=True)


BATCHED_T = ("with batch dims, .T reverses every dim: transpose only the last two, transpose(-2, -1) (or .mT)")
NO_MAX = ("exp overflows for large scores (inf / inf = NaN): subtract each row's max along the softmax dim "
          "(amax(dim, keepdim=True)) before exp; softmax does not change when a row moves by a constant.")


# ---------------------------------------------------------------- scores

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


# ---------------------------------------------------------------- softmax

NO_KEEPDIM = ("a reduction is taken without keepdim=True (the row max or the sum), so it broadcasts over the wrong dim: "
              "x.amax(dim, keepdim=True) and e.sum(dim, keepdim=True).")


def softmax_hints(x: torch.Tensor, dim: int, t: float) -> list[Hint]:
    """Mistakes of softmax(x, dim, t); the numerical ones in x's dtype."""
    rank, x64 = x.dim(), x.double()
    hints = []
    if dim % rank != rank - 1:
        hints.append(Hint("you normalize along the last dim whatever `dim` says: reduce along `dim` "
                          "(amax(dim, keepdim=True), sum(dim, keepdim=True)).", lambda: _sm(x64 / t, -1),
                          "softmax.last_dim_only"))
    for other in range(rank):
        if other != dim % rank and other != rank - 1:
            hints.append(Hint(f"your weights sum to 1 along dim {other}, not along `dim`: use `dim` in every reduction.",
                              lambda other=other: _sm(x64 / t, other), "softmax.wrong_dim"))
    if t != 1:
        hints.append(Hint("the temperature multiplies the scores: divide by it, exp(x / t), so that a low temperature "
                          "sharpens.", lambda: _sm(x64 * t, dim), "softmax.temperature_multiplied"))
        hints.append(Hint("the temperature is ignored: divide the scores by it before exp.", lambda: _sm(x64, dim),
                          "softmax.temperature_ignored"))
    e = (x64 / t - x64.amax(dim, keepdim=True) / t).exp()

    def max_without_keepdim():  # broadcasts (or raises) as the student's does: shapes alone decide
        z = (x64 / t - (x64 / t).amax(dim)).exp()
        return z / z.sum(dim, keepdim=True)

    hints += [Hint(NO_KEEPDIM, lambda: e / e.sum(dim), "softmax.no_keepdim"),
              Hint(NO_KEEPDIM, max_without_keepdim, "softmax.no_keepdim"),
              Hint(NO_MAX, lambda: naive_softmax(x / t, dim), "softmax.no_max"),
              Hint("each row needs its own max: a max over the whole tensor (x.max()) leaves rows of small scores "
                   "underflowing to 0 / 0; use x.amax(dim, keepdim=True).",
                   lambda: naive_softmax(x / t - (x / t).max(), dim), "softmax.global_max")]
    return hints


# ---------------------------------------------------------------- context

def context_weight_hints(x) -> list[Hint]:
    x64 = x.double()
    scores = x64 @ x64.transpose(-2, -1)
    return [Hint("your weights' columns sum to 1, not the rows: the softmax runs over the last dim (dim=-1).",
                 lambda: _sm(scores, -2), "context.weights_transposed"),
            Hint("your softmax runs over dim 0 (the batch here): use dim=-1, the keys.", lambda: _sm(scores, 0),
                 "context.softmax_dim0"),
            Hint("attention_weights has no scaling: softmax(x x^T); the sqrt(d) scaling comes with queries and keys.",
                 lambda: _sm(scores / math.sqrt(x.shape[-1])), "context.scaled"),
            Hint(BATCHED_T, lambda: _sm(x @ reversed_dims(x)), "context.batched_T"),
            Hint(NO_MAX, lambda: naive_softmax(x @ x.transpose(-2, -1)), "context.no_max")]


def context_vector_hints(x) -> list[Hint]:
    x64 = x.double()
    scores = x64 @ x64.transpose(-2, -1)
    return [Hint("the weights are transposed: their columns sum to 1, not the rows (a softmax over dim -2, or "
                 "weights.transpose(-2, -1) @ x); the context vectors are softmax(x x^T, dim=-1) @ x.",
                 lambda: _sm(scores, -2) @ x64, "context.weights_transposed"),
            Hint("your softmax runs over dim 0 (the batch here): use dim=-1, the keys.", lambda: _sm(scores, 0) @ x64,
                 "context.softmax_dim0"),
            Hint("the weights are transposed: their columns sum to 1, not the rows (a softmax over dim -2, or "
                 "weights.transpose(-2, -1) @ x); the context vectors are softmax(x x^T, dim=-1) @ x.",
                 lambda: _sm(scores).transpose(-2, -1) @ x64, "context.weights_transposed"),
            Hint("the context vectors use the unscaled weights softmax(x x^T): no sqrt(d) here.",
                 lambda: _sm(scores / math.sqrt(x.shape[-1])) @ x64, "context.scaled"),
            Hint("you return the weights' input, not the mix: context_vectors is attention_weights(x) @ x.", lambda: x64,
                 "context.returns_x"),
            Hint(BATCHED_T, lambda: _sm(x @ reversed_dims(x)) @ x, "context.batched_T"),
            Hint(NO_MAX, lambda: naive_softmax(x @ x.transpose(-2, -1)) @ x, "context.no_max")]


# ---------------------------------------------------------------- qkv

def project_hints(x, weights: dict[str, torch.Tensor], own: str, name: str) -> list[Hint]:
    """Mistakes of the ``name`` output of project(x, W_query, W_key, W_value), which should be x @ weights[own]."""
    hints = [Hint(f"your {name} are computed with {other}; use {own}.", lambda W=W: x @ W, "qkv.project_wrong_weight")
             for other, W in weights.items() if other != own]
    hints.append(Hint(f"x @ {own} is (..., T, d_in) @ (d_in, width): no transpose of {own} here.",
                      lambda: x @ weights[own].transpose(-2, -1), "qkv.project_transposed"))
    return hints


def attention_hints(q, k, v, mask=None, scale_name="sqrt(d_k)", scale: float | None = None) -> list[Hint]:
    """Mistakes of softmax(Q K^T / scale, masked) V."""
    d_k, d_v = k.shape[-1], v.shape[-1]
    scale = math.sqrt(d_k) if scale is None else scale
    raw = q @ k.transpose(-2, -1)

    def attend(scores, how="-inf", mask_=mask, dim=-1):
        if mask_ is not None and how == "-inf":
            scores = scores.masked_fill(~mask_, float("-inf"))
        if mask_ is not None and how == "zero":
            scores = scores.masked_fill(~mask_, 0.0)
        weights = _sm(scores, dim)
        if mask_ is not None and how == "after":
            weights = weights * mask_
        return weights @ v

    hints = [Hint(f"you divide the scores by d_k; divide by {scale_name}.", lambda: attend(raw / d_k),
                  "attention.scale_by_d"),
             Hint(f"the scores are not scaled: divide Q K^T by {scale_name} before the softmax.", lambda: attend(raw),
                  "attention.no_scaling"),
             Hint(f"you scale by sqrt of the value width d_v; scale by {scale_name}.",
                  lambda: attend(raw / math.sqrt(d_v)), "attention.scale_by_d_v"),
             Hint("the softmax runs over the queries (dim -2); it must run over the keys, the last dim.",
                  lambda: attend(raw / scale, dim=-2), "attention.softmax_over_queries"),
             Hint(BATCHED_T, lambda: attend(q @ reversed_dims(k) / scale), "attention.batched_T")]
    if mask is not None:
        hints += [Hint("the mask is applied after the softmax: set masked scores to -inf *before* the softmax, so that "
                       "each row still sums to 1.", lambda: attend(raw / scale, "after"), "attention.mask_after_softmax"),
                  Hint("masked scores are set to 0, but exp(0) = 1 still gives them weight: use float('-inf').",
                       lambda: attend(raw / scale, "zero"), "attention.mask_with_zero"),
                  Hint("the mask is inverted: True means 'may attend' (PyTorch's convention), so fill where the mask "
                       "is False (masked_fill(~mask, -inf)).", lambda: attend(raw / scale, "-inf", ~mask),
                       "attention.mask_inverted"),
                  Hint("the mask is ignored: masked_fill(~mask, float('-inf')) before the softmax.",
                       lambda: attend(raw / scale, "none"), "attention.mask_ignored")]
    return hints


def self_attention_hints(q, k, v, d_in: int, x=None, linear_weights=None) -> list[Hint]:
    """Mistakes of a SelfAttention(Linear) forward on its projected q, k, v; with ``x`` and the three nn.Linear
    weights (``linear_weights``), also the mistake of multiplying by them as stored."""
    hints = attention_hints(q, k, v, scale_name="sqrt(d_out)") + [
        Hint("you scale by sqrt(d_in), the input width; scale by sqrt(d_out), the key width.",
             lambda: _sm(q @ k.transpose(-2, -1) / math.sqrt(d_in)) @ v, "qkv.scale_by_d_in")]
    if linear_weights is not None:
        def untransposed():
            q_, k_, v_ = (x @ w for w in linear_weights)
            return _sm(q_ @ k_.transpose(-2, -1) / math.sqrt(k_.shape[-1])) @ v_
        hints.append(Hint("x @ layer.weight multiplies by the weight as nn.Linear stores it, (d_out, d_in): call the "
                          "layer itself, self.W_query(x), which multiplies by weight.T and adds the bias.",
                          untransposed, "qkv.linear_weight_untransposed"))
    return hints


# ---------------------------------------------------------------- quiz

def decoder_hints(s, H) -> list[Hint]:
    """Mistakes of decoder_attention(s, H); the one that fails on batched inputs in their own dtype."""
    s64, H64 = s.double(), H.double()
    scores = (H64 * s64.unsqueeze(-2)).sum(-1)
    alphas = _sm(scores)
    return [Hint("the result is not normalized: turn the scores into weights with a softmax over the n states first.",
                 lambda: (scores.unsqueeze(-1) * H64).sum(-2), "quiz.no_softmax"),
            Hint("the softmax runs over the wrong dim: the weights belong to the n encoder states (dim -1 of the "
                 "scores).", lambda: (_sm(scores, 0).unsqueeze(-1) * H64).sum(-2), "quiz.softmax_dim0"),
            Hint("the weights are applied per feature: alpha_i multiplies the whole state h_i and the sum runs over "
                 "the n states (dim -2 of H).", lambda: (alphas.unsqueeze(-1) * H64).sum(-1), "quiz.sum_over_features"),
            Hint("you return the weights, not the weighted sum of the states.", lambda: alphas, "quiz.returns_weights"),
            Hint("decoder attention has no scaling: the scores are the plain dot products h_i . s (no sqrt(d)).",
                 lambda: (_sm(scores / math.sqrt(s.shape[-1])).unsqueeze(-1) * H64).sum(-2), "quiz.scaled"),
            Hint("with batch dims, H @ s multiplies the wrong dims: score each state with (H * s.unsqueeze(-2)).sum(-1) "
                 "or H @ s.unsqueeze(-1).", lambda: (_sm(H @ s).unsqueeze(-1) * H).sum(-2), "quiz.H_matmul_s")]


def alphas_hints(s, H) -> list[Hint]:
    """Mistakes of the weights decoder_attention returns."""
    return [Hint("the alphas are the raw scores: apply the softmax over the n states.",
                 lambda: (H.double() * s.double().unsqueeze(-2)).sum(-1), "quiz.no_softmax")]


# ---------------------------------------------------------------- dictionary

def dictionary_hints(Q, K, V, t) -> list[Hint]:
    Q64, K64, V64 = Q.double(), K.double(), V.double()
    raw = Q64 @ K64.transpose(-2, -1)
    return [Hint("the temperature multiplies the scores: divide by it (a low temperature must sharpen).",
                 lambda: _sm(raw * t) @ V64, "dictionary.temperature_multiplied"),
            Hint("no sqrt(d_k) scaling in this exercise: softmax(Q K^T / temperature) V.",
                 lambda: _sm(raw / t / math.sqrt(K.shape[-1])) @ V64, "dictionary.sqrt_scaling"),
            Hint("the temperature is ignored: divide the scores by it before the softmax.", lambda: _sm(raw) @ V64,
                 "dictionary.temperature_ignored"),
            Hint("the softmax runs over the queries: it must run over the keys (the last dim of Q K^T).",
                 lambda: _sm(raw / t, -2) @ V64, "dictionary.softmax_over_queries"),
            Hint(BATCHED_T, lambda: _sm(Q @ reversed_dims(K) / t) @ V, "dictionary.batched_T"),
            Hint(NO_MAX, lambda: naive_softmax(Q @ K.transpose(-2, -1) / t) @ V, "dictionary.no_max")]


def one_hot_hints(index: int, n: int, one_hot: Callable) -> list[Hint]:
    """Mistakes of one_hot(index, n); ``one_hot`` is a right one."""
    off = "the 1 is off by one: put it at position index itself (positions start at 0)."
    return [Hint(off, lambda: one_hot((index - 1) % n, n), "dictionary.one_hot_off_by_one"),  # v[-1] is the last
            Hint(off, lambda: one_hot(index + 1, n), "dictionary.one_hot_off_by_one")]


def lookup_hints(table: dict, key, t: float, lookup: Callable) -> list[Hint]:
    """Mistakes of lookup(table, key, t); ``lookup`` is a right one."""
    keys = list(table)
    ranked = sorted(keys, key=repr)
    return [Hint("the values are stacked in one order and the keys in another: use the dict's own order "
                 "(list(table)) for both, and keys.index(key) for the query.",
                 lambda: lookup({k: table[k] for k in ranked}, ranked[keys.index(key)], t), "dictionary.lookup_order"),
            Hint("the temperature multiplies the scores: divide by it (a low temperature must return the stored value).",
                 lambda: lookup(table, key, 1 / t), "dictionary.temperature_multiplied"),
            Hint("you return the stored value itself: lookup blends the values by attention, so a temperature of 1 "
                 "gives a mix.", lambda: torch.tensor(table[key], dtype=torch.float32), "dictionary.lookup_stored_value")]


# ---------------------------------------------------------------- causal and multi-head

def causal_mask_hints(T: int) -> list[Hint]:
    """Mistakes of causal_mask(T) (compared exactly)."""
    tril = torch.ones(T, T, dtype=torch.bool).tril()
    return [Hint("the diagonal is missing: each position may attend to itself (tril, not tril(-1)).",
                 lambda: tril & ~torch.eye(T, dtype=torch.bool), "causal.mask_diagonal_missing"),
            Hint("you keep the upper triangle (the future): use tril, so position i may attend to j <= i.",
                 lambda: tril.T, "causal.wrong_triangle"),
            Hint("True marks the positions to hide; here True means 'may attend' (PyTorch's convention): invert it.",
                 lambda: ~tril, "causal.mask_inverted")]


FILL_OVERFLOWS = ("-1e9 (or another huge finite fill) overflows float16, whose largest value is 65504: fill masked "
                  "scores with float('-inf').")
NOT_SLICED = "the mask buffer is (context_length, context_length): slice it to [:T, :T] for a sequence of T tokens."


def causal_hints(q, k, v, d_in: int, out_proj: Callable | None = None, context_length: int | None = None) -> list[Hint]:
    """Mistakes of causal attention on projected q, k, v (..., T, d) (heads already split where relevant), computed
    in their dtype; ``context_length``: the mask buffer's size, for the mistakes about the buffer."""
    T, d = q.shape[-2], k.shape[-1]
    tril = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    raw = q @ k.transpose(-2, -1)
    finish = out_proj or (lambda context: context)

    def attend(scores, allowed=tril, how="-inf", fill=float("-inf")):
        if allowed is not None and how == "-inf":
            scores = scores.masked_fill(~allowed, fill)
        if allowed is not None and how == "zero":
            scores = scores.masked_fill(~allowed, 0.0)
        weights = _sm(scores)
        if allowed is not None and how == "after":
            weights = weights * allowed
        return finish(weights @ v)

    s = raw / math.sqrt(d)
    hints = [Hint("no mask: a position sees later ones; set the scores above the diagonal to -inf before the softmax.",
                  lambda: attend(s, None), "causal.no_mask"),
             Hint("the mask is inverted: True means 'may attend' and must be on and below the diagonal (torch.tril), "
                  "so position i sees j <= i.", lambda: attend(s, ~tril), "causal.mask_inverted"),
             Hint("the mask keeps the wrong triangle: position i may attend to j <= i (tril, True on and below "
                  "the diagonal).", lambda: attend(s, tril.T), "causal.wrong_triangle"),
             Hint("the diagonal is masked too (tril(-1)): each position may attend to itself, so the first one has a "
                  "weight to give.", lambda: attend(s, tril & ~torch.eye(T, dtype=torch.bool, device=q.device)),
                  "causal.mask_diagonal_missing"),
             Hint("the mask is applied after the softmax: fill masked scores with -inf *before* it, so rows still sum "
                  "to 1.", lambda: attend(s, tril, "after"), "causal.mask_after_softmax"),
             Hint("masked scores are set to 0, and exp(0) = 1 still gives the future weight: fill with float('-inf').",
                  lambda: attend(s, tril, "zero"), "causal.mask_with_zero"),
             Hint("you scale by sqrt(d_in), the input width; scale by sqrt of the key width.",
                  lambda: attend(raw / math.sqrt(d_in)), "causal.scale_by_d_in"),
             Hint("you divide the scores by the key width itself; divide by its square root.", lambda: attend(raw / d),
                  "causal.scale_by_d"),
             Hint("the scores are not scaled: divide Q K^T by sqrt(key width).", lambda: attend(raw), "causal.no_scaling"),
             Hint(FILL_OVERFLOWS, lambda: attend(s, tril, fill=-1e9), "causal.fill_overflows")]
    if context_length is not None and context_length != T:
        full = torch.ones(context_length, context_length, dtype=torch.bool, device=q.device).tril()
        hints.append(Hint(NOT_SLICED, lambda: attend(s, full), "causal.mask_not_sliced"))
    return hints


def multihead_hints(module, x, context_length: int | None = None) -> list[Hint]:
    """Mistakes of multi-head attention, computed with ``module``'s own layers (a right MultiHeadAttention) in x's
    dtype; ``context_length``: the mask buffer's size, for the mistakes about the buffer."""
    B, T, _ = x.shape
    h, hd = module.num_heads, module.head_dim
    d_out = h * hd
    tril = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)

    def split(t, transpose=True):
        return t.view(B, T, h, hd).transpose(1, 2) if transpose else t.reshape(B, h, T, hd)

    def run(scale=None, split_t=True, merge_t=True, proj=True, allowed=tril, how="-inf", fill=float("-inf")):
        scale = math.sqrt(hd) if scale is None else scale
        qs, ks, vs = split(q, split_t), split(k, split_t), split(v, split_t)
        s = qs @ ks.transpose(-2, -1) / scale
        if allowed is not None and how == "-inf":
            s = s.masked_fill(~allowed, fill)
        if how == "zero":
            s = s.masked_fill(~allowed, 0.0)
        w = _sm(s)
        if how == "after":
            w = w * allowed
        context = w @ vs
        context = context.transpose(1, 2).reshape(B, T, d_out) if merge_t else context.reshape(B, T, d_out)
        return module.out_proj(context) if proj else context

    hints = [Hint("out_proj is not applied: the merged heads go through self.out_proj (nn.Linear(d_out, d_out)).",
                  lambda: run(proj=False), "multihead.no_out_proj"),
             Hint("you scale by sqrt(d_out); each head scales by sqrt(head_dim) = sqrt(d_out // num_heads).",
                  lambda: run(scale=math.sqrt(d_out)), "multihead.scale_by_d_out"),
             Hint("you divide each head's scores by head_dim itself; divide by its square root, sqrt(head_dim).",
                  lambda: run(scale=hd), "multihead.scale_by_d"),
             Hint("the heads are split without a transpose: view(B, T, num_heads, head_dim) then transpose(1, 2); a "
                  "direct view(B, num_heads, T, head_dim) mixes tokens across heads.", lambda: run(split_t=False),
                  "multihead.split_no_transpose"),
             Hint("the heads are merged in the wrong order: transpose(1, 2) back to (B, T, num_heads, head_dim) "
                  "first, then reshape to (B, T, d_out).", lambda: run(merge_t=False), "multihead.merge_no_transpose"),
             Hint("no causal mask: set the scores above the diagonal to -inf before the softmax.",
                  lambda: run(allowed=None), "multihead.no_mask"),
             Hint("the mask keeps the wrong triangle: True (may attend) on and below the diagonal (tril).",
                  lambda: run(allowed=tril.T), "multihead.wrong_triangle"),
             Hint("the mask is applied after the softmax: fill with -inf before it.", lambda: run(how="after"),
                  "multihead.mask_after_softmax"),
             Hint("masked scores are set to 0, and exp(0) = 1: fill with float('-inf').", lambda: run(how="zero"),
                  "multihead.mask_with_zero"),
             Hint(FILL_OVERFLOWS, lambda: run(fill=-1e9), "multihead.fill_overflows")]
    if context_length is not None and context_length != T:
        full = torch.ones(context_length, context_length, dtype=torch.bool, device=x.device).tril()
        hints.append(Hint(NOT_SLICED, lambda: run(allowed=full), "multihead.mask_not_sliced"))
    return hints
