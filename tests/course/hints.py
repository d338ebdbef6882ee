"""Known mistakes several exercises share: those of attention itself (the scaling, the softmax's dim, the mask, a
batched ``.T``, a softmax without its max). Each exercise's ``hints_<module>.py`` calls them with its own sizes and
names them with its own ids; every function here is a function of what the code under check computes (its
projected queries, keys and values, the configuration the contract gives), never of a module's private attributes.

Torch alone: it ships in the handout (tests/public/hints.py) with the public checks.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
from diagnosis import Hint

BATCHED_T = "with batch dims, .T reverses every dim: transpose only the last two, transpose(-2, -1) (or .mT)"
NO_MAX = ("exp overflows for large scores (inf / inf = NaN): subtract each row's max along the softmax dim "
          "(amax(dim, keepdim=True)) before exp; softmax does not change when a row moves by a constant.")
FILL_OVERFLOWS = ("-1e9 (or another huge finite fill) overflows float16, whose largest value is 65504: fill masked "
                  "scores with float('-inf').")
ONE_AHEAD = ("the mask lets each position see the next one too (tril(diagonal=1)): position i may attend to j <= i, "
             "tril() with its diagonal 0.")
NOT_SLICED = "the mask buffer is (context_length, context_length): slice it to [:T, :T] for a sequence of T tokens."


def softmax(z: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(z, dim)


def reversed_dims(t: torch.Tensor) -> torch.Tensor:
    """``t.T`` as it acts on a tensor of any rank (every dim reversed), without torch's warning."""
    return t.permute(*reversed(range(t.dim())))


def naive_softmax(z: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(z) / sum(exp(z)) with no max subtracted, in z's dtype: inf / inf = NaN once exp overflows."""
    e = z.exp()
    return e / e.sum(dim, keepdim=True)


def lower_triangle(T: int, device=None) -> torch.Tensor:
    """The causal mask: True (may attend) on and below the diagonal."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def attend(q, k, v, scale: float, allowed=None, how: str = "-inf", fill: float = float("-inf"), dim: int = -1,
           normalize: Callable = softmax):
    """normalize(q k^T / scale, masked) v (``normalize``: softmax, or ``naive_softmax``), masked the way ``how`` says:
    "-inf" (``fill`` where ``allowed`` is False, before the softmax), "zero" (0 there), "times_inf" (the mask times
    -inf added to the scores), "after" (weights times the mask, after the softmax), "renormalize" (that, then each row
    divided by its sum) or "none"."""
    scores = q @ k.transpose(-2, -1) / scale
    if allowed is not None and how == "-inf":
        scores = scores.masked_fill(~allowed, fill)
    if allowed is not None and how == "zero":
        scores = scores.masked_fill(~allowed, 0.0)
    if allowed is not None and how == "times_inf":  # an additive mask made as (~allowed) * -inf: 0 * -inf is NaN
        scores = scores + (~allowed).to(scores.dtype) * float("-inf")
    weights = normalize(scores, dim)
    if allowed is not None and how in ("after", "renormalize"):
        weights = weights * allowed
    if allowed is not None and how == "renormalize":
        weights = weights / weights.sum(dim, keepdim=True)
    return weights @ v


def attention_mistakes(q, k, v, *, group: str, scale_name: str, scale: float | None = None, mask=None,
                       causal: bool = False, widths: dict[str, int] | None = None,
                       finish: Callable | None = None, context_length: int | None = None) -> list[Hint]:
    """The mistakes of ``finish(softmax(q k^T / scale, masked) v)`` (``finish``: what follows the weighted sum, such as
    merging heads and a projection), with ids ``<group>.<mistake>``.

    ``scale`` defaults to sqrt of the key width; ``widths`` names other widths a student may scale by instead
    ({"d_in": 5}: "you scale by sqrt(d_in)"). ``mask``: True where a query may attend. ``causal``: the mask is the
    lower triangle, which adds its own mistakes (the other triangle, the diagonal, a huge finite fill, and a buffer of
    ``context_length`` left unsliced)."""
    d_k = k.shape[-1]
    scale = math.sqrt(d_k) if scale is None else scale
    finish = finish or (lambda context: context)
    T = q.shape[-2]

    def run(**how):
        return finish(attend(q, k, v, how.pop("scale", scale), how.pop("allowed", mask), **how))

    def activated(on_projections: bool):
        """The result with an activation the attention has not: on the projections, or on the result."""
        return [lambda f=f: (finish(attend(f(q), f(k), f(v), scale, mask)) if on_projections else f(run()))
                for f in (torch.relu, torch.tanh, torch.sigmoid)]

    hints = [Hint(f"you divide the scores by the key width itself; divide by its square root, {scale_name}.",
                  lambda: run(scale=d_k), f"{group}.scale_by_d"),
             Hint(f"the scores are not scaled: divide Q K^T by {scale_name} before the softmax.", lambda: run(scale=1.0),
                  f"{group}.no_scaling"),
             Hint(f"you multiply the scores by {scale_name}: divide them by it, before the softmax.",
                  lambda: run(scale=1 / scale), f"{group}.scale_multiplied"),
             Hint(f"the scaling comes after the softmax: divide Q K^T by {scale_name} first, then normalize.",
                  lambda: finish(attend(q, k, v, 1.0, mask) / scale), f"{group}.scaled_after_softmax"),
             Hint("the softmax runs over the queries (dim -2); it must run over the keys, the last dim.",
                  lambda: run(dim=-2), f"{group}.softmax_over_queries"),
             Hint(BATCHED_T, lambda: finish(attend(q, reversed_dims(k).transpose(-2, -1), v, scale, mask)),
                  f"{group}.batched_T"),
             Hint("the scores are transposed (keys @ queries^T, or einsum's output indices as '...kq'): entry [i, j] "
                  "scores query i against key j, queries @ keys.transpose(-2, -1).",
                  lambda: finish(attend(k, q, v, scale, mask)), f"{group}.scores_transposed"),
             Hint(NO_MAX, lambda: run(normalize=naive_softmax), f"{group}.no_max")]  # on large inputs, in their dtype
    hints += [Hint(f"you scale by sqrt({name}); scale by {scale_name}.", lambda width=width: run(scale=math.sqrt(width)),
                   f"{group}.scale_by_{name}") for name, width in (widths or {}).items()]
    hints += [Hint(f"you scale by the square root of a sequence length (shape[-2]: the number of queries or keys); "
                   f"scale by {scale_name}, from the last dim of the keys.", lambda n=n: run(scale=math.sqrt(n)),
                   f"{group}.scale_by_length") for n in sorted({q.shape[-2], k.shape[-2]})]
    hints += [Hint("an activation (relu, tanh, sigmoid) is applied to the queries, keys or values: attention uses the "
                   "projections as they are.", alternative, f"{group}.activation_on_projections")
              for alternative in activated(on_projections=True)]
    hints += [Hint("an activation (relu, tanh, sigmoid) is applied to the result: attention returns the weighted "
                   "values (through the output projection, where there is one) as they are.", alternative,
                   f"{group}.activation_on_output") for alternative in activated(on_projections=False)]
    if mask is None:
        return hints
    hints += [Hint("no mask: a position sees what it must not; fill the masked scores with -inf before the softmax.",
                   lambda: run(how="none"), f"{group}.no_mask"),
              Hint("the mask adds NaN: 0 * float('-inf') is NaN, not 0, so a mask made by multiplying by -inf "
                   "((~mask) * float('-inf'), triu(ones) * float('-inf')) turns every score it is added to into NaN; "
                   "fill the masked scores instead: scores.masked_fill(~mask, float('-inf')).",
                   lambda: run(how="times_inf"), f"{group}.mask_times_inf"),
              Hint("the mask is applied after the softmax: fill masked scores with -inf *before* it, so that each row "
                   "still sums to 1.", lambda: run(how="after"), f"{group}.mask_after_softmax"),
              Hint("masked scores are set to 0, and exp(0) = 1 still gives them weight: fill with float('-inf').",
                   lambda: run(how="zero"), f"{group}.mask_with_zero"),
              Hint("the mask is applied after the softmax and the rows renormalized: right in exact arithmetic, but once "
                   "a masked score dwarfs the allowed ones their weights underflow to 0 / 0 = NaN; fill the masked "
                   "scores with -inf before the softmax.", lambda: run(how="renormalize"),
                   f"{group}.renormalized_after_softmax"),  # on large inputs, in their dtype
              Hint("the mask is inverted: True means 'may attend' (PyTorch's convention), so fill where the mask is "
                   "False (masked_fill(~mask, -inf)).", lambda: run(allowed=~mask), f"{group}.mask_inverted")]
    if causal:
        eye = torch.eye(T, dtype=torch.bool, device=q.device)
        hints += [Hint("the mask keeps the wrong triangle: position i may attend to j <= i (tril, True on and below "
                       "the diagonal).", lambda: run(allowed=mask.transpose(-2, -1)), f"{group}.wrong_triangle"),
                  Hint("the diagonal is masked too (tril(-1)): each position may attend to itself.",
                       lambda: run(allowed=mask & ~eye), f"{group}.mask_diagonal_missing"),
                  Hint(ONE_AHEAD, lambda: run(allowed=torch.ones_like(mask).tril(1)), f"{group}.one_ahead"),
                  Hint(FILL_OVERFLOWS, lambda: run(fill=-1e9), f"{group}.fill_overflows")]
        if context_length is not None and context_length != T:
            hints.append(Hint(NOT_SLICED, lambda: run(allowed=lower_triangle(context_length, q.device)),
                              f"{group}.mask_not_sliced"))
    return hints
