"""Known mistakes of exercise multihead (MultiHeadAttention), as functions of what the module computes with its own
layers (W_query, W_key, W_value, out_proj: the contract's names) and the configuration the contract gives
(num_heads, context_length): the same hints run on a student's module in the public checks and on the reference
holding the same parameters in the hidden suites."""
import math

from diagnosis import Hint
from hints import attend, attention_mistakes, lower_triangle


def multihead_hints(module, x, num_heads: int, context_length: int | None = None) -> list[Hint]:
    """Mistakes of ``module(x)`` for x (B, T, d_in), computed in x's dtype."""
    B, T, _ = x.shape
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    d_out = q.shape[-1]
    head_dim = d_out // num_heads
    tril = lower_triangle(T, x.device)

    def split(t, transpose=True):
        return t.view(B, T, num_heads, head_dim).transpose(1, 2) if transpose else t.reshape(B, num_heads, T, head_dim)

    def merge(context, transpose=True, project=True):
        merged = (context.transpose(1, 2) if transpose else context).reshape(B, T, d_out)
        return module.out_proj(merged) if project else merged

    heads = split(q), split(k), split(v)
    scale = math.sqrt(head_dim)
    return attention_mistakes(*heads, group="multihead", scale_name="sqrt(head_dim) = sqrt(d_out // num_heads)",
                              mask=tril, causal=True, widths={"d_out": d_out}, finish=merge,
                              context_length=context_length) + [
        Hint("out_proj is not applied: the merged heads go through self.out_proj (nn.Linear(d_out, d_out)).",
             lambda: merge(attend(*heads, scale, tril), project=False), "multihead.no_out_proj"),
        Hint("the heads are split without a transpose: view(B, T, num_heads, head_dim) then transpose(1, 2); a "
             "direct view(B, num_heads, T, head_dim) mixes tokens across heads.",
             lambda: merge(attend(split(q, False), split(k, False), split(v, False), scale, tril)),
             "multihead.split_no_transpose"),
        Hint("the heads are split and merged without transposes: view(B, num_heads, T, head_dim) gives each head "
             "pieces of several tokens, and reshaping back does not undo the mixing that the attention did; split with "
             "view(B, T, num_heads, head_dim).transpose(1, 2), merge with transpose(1, 2) then reshape(B, T, d_out).",
             lambda: merge(attend(split(q, False), split(k, False), split(v, False), scale, tril), transpose=False),
             "multihead.split_merge_no_transpose"),
        Hint("the values are viewed as heads but not transposed: split them as the queries and keys, "
             "view(B, T, num_heads, head_dim).transpose(1, 2), so that each head's weights meet its own values.",
             lambda: merge(attend(heads[0], heads[1], v.view(B, T, num_heads, head_dim), scale, tril)),
             "multihead.values_not_transposed"),
        Hint("the heads are merged in the wrong order: transpose(1, 2) back to (B, T, num_heads, head_dim) first, "
             "then reshape to (B, T, d_out).", lambda: merge(attend(*heads, scale, tril), transpose=False),
             "multihead.merge_no_transpose"),
        Hint("the softmax runs over the heads (dim 1): each head's weights run over its keys, the last dim.",
             lambda: merge(attend(*heads, scale, tril, dim=1)), "multihead.softmax_over_heads")]
