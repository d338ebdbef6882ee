"""Known mistakes of exercise softmax, as functions of its input, dim and temperature."""
from diagnosis import Hint
from hints import naive_softmax, softmax

NO_MAX = ("exp overflows for large scores (inf / inf = NaN): subtract the max of z = x / t (after dividing by the "
          "temperature) along `dim` (amax(dim, keepdim=True)) before exp; softmax does not change when a row moves by "
          "a constant.")
NO_KEEPDIM = ("a reduction is taken without keepdim=True (the row max or the sum), so it broadcasts over the wrong dim: "
              "x.amax(dim, keepdim=True) and e.sum(dim, keepdim=True).")
MAX_AT_LAST_DIM = ("the row max is taken along, or put back at, the last dim (amax(-1, keepdim=True), or "
                   "max(dim).values.unsqueeze(-1)), not along `dim`, so it is subtracted along the wrong dim: "
                   "x.amax(dim, keepdim=True) takes it along `dim` and keeps it in place.")


def _sm_all(z):
    """exp(z) / sum(exp(z)) over every entry of z (shifted by its max, which changes nothing)."""
    e = (z - z.max()).exp()
    return e / e.sum()


def softmax_hints(x, dim: int, t: float) -> list[Hint]:
    """Mistakes of softmax(x, dim, t); the numerical ones in x's dtype, the others in float64."""
    rank, x64 = x.dim(), x.double()
    hints = []
    if dim % rank != rank - 1:
        hints.append(Hint("you normalize along the last dim whatever `dim` says: reduce along `dim` "
                          "(amax(dim, keepdim=True), sum(dim, keepdim=True)).", lambda: softmax(x64 / t, -1),
                          "softmax.last_dim_only"))
    for other in range(rank):
        if other != dim % rank and other != rank - 1:
            hints.append(Hint(f"your weights sum to 1 along dim {other}, not along `dim`: use `dim` in every reduction.",
                              lambda other=other: softmax(x64 / t, other), "softmax.wrong_dim"))
    if t != 1:
        hints.append(Hint("the temperature multiplies the scores: divide by it, exp(x / t), so that a low temperature "
                          "sharpens.", lambda: softmax(x64 * t, dim), "softmax.temperature_multiplied"))
        hints.append(Hint("the temperature is ignored: divide the scores by it before exp.", lambda: softmax(x64, dim),
                          "softmax.temperature_ignored"))
    e = (x64 / t - x64.amax(dim, keepdim=True) / t).exp()

    def max_without_keepdim():  # broadcasts (or raises) as the student's does: shapes alone decide
        z = (x64 / t - (x64 / t).amax(dim)).exp()
        return z / z.sum(dim, keepdim=True)

    def max_unsqueezed_last():  # the row max put back at the last dim, wherever `dim` is
        z = (x64 / t - (x64 / t).amax(dim).unsqueeze(-1)).exp()
        return z / z.sum(dim, keepdim=True)

    def max_over_last_dim():  # the max taken along the last dim, the sum along `dim`
        z = (x64 / t - (x64 / t).amax(-1, keepdim=True)).exp()
        return z / z.sum(dim, keepdim=True)

    if dim % rank != rank - 1:  # one mistake, two spellings: on a symmetric input they give the same values
        hints += [Hint(MAX_AT_LAST_DIM, max_unsqueezed_last, "softmax.max_at_last_dim"),
                  Hint(MAX_AT_LAST_DIM, max_over_last_dim, "softmax.max_at_last_dim")]
    hints += [Hint(NO_KEEPDIM, lambda: e / e.sum(dim), "softmax.no_keepdim"),
              Hint(NO_KEEPDIM, max_without_keepdim, "softmax.no_keepdim"),
              Hint(NO_MAX, lambda: naive_softmax(x / t, dim), "softmax.no_max"),
              Hint("each row needs its own max: a max over the whole tensor (x.max()) leaves rows of small scores "
                   "underflowing to 0 / 0; use x.amax(dim, keepdim=True).",
                   lambda: naive_softmax(x / t - (x / t).max(), dim), "softmax.global_max"),
              Hint("you normalize over the whole tensor: the sum (and the max) run along `dim` only, so that each row "
                   "along it sums to 1 (e.sum(dim, keepdim=True)).", lambda: _sm_all(x64 / t), "softmax.whole_tensor")]
    return hints
