"""Variants of exercise qkv's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles (whole files in other projects' manner among them, styles/), which earn full
marks; loops and banned built-ins, which lose only their rule's share. `grader check-exercise qkv` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part, style = variants.bug, variants.ok, variants.part, variants.style

PROJ = "return x @ W_query, x @ W_key, x @ W_value  # (..., T, d_k), (..., T, d_k), (..., T, d_v)"
SC = "scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)"
MF = 'scores = scores.masked_fill(~mask, float("-inf"))'
RET = "return torch.softmax(scores, dim=-1) @ values  # (..., Tq, d_v)"

bug("qkv", "keys_from_W_query", "project computes the keys with W_query",
    (PROJ, "return x @ W_query, x @ W_query, x @ W_value"), shows=("qkv.project_wrong_weight",))
bug("qkv", "scale_by_d_k", "scaled_dot_product_attention divides by d_k instead of sqrt(d_k)",
    (SC, "scores = queries @ keys.transpose(-2, -1) / d_k"), shows=("attention.scale_by_d",))
bug("qkv", "scale_by_length", "scaled_dot_product_attention takes d_k from the number of queries (shape[-2])",
    (SC, "scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-2])"), shows=("attention.scale_by_length",))
bug("qkv", "no_scaling", "scaled_dot_product_attention does not scale the scores",
    (SC, "scores = queries @ keys.transpose(-2, -1)"), shows=("attention.no_scaling",))
bug("qkv", "mask_after_softmax", "scaled_dot_product_attention zeroes masked weights after the softmax",
    (MF, "pass"), (RET, "weights = torch.softmax(scores, dim=-1)\n    if mask is not None:\n        weights = weights * mask\n    return weights @ values"), shows=("attention.mask_after_softmax",))
bug("qkv", "mask_times_inf", "scaled_dot_product_attention adds (~mask) * -inf to the scores, NaN where 0 * -inf",
    (MF, 'scores = scores + (~mask) * float("-inf")'), shows=("attention.mask_times_inf",))
bug("qkv", "mask_with_zero", "scaled_dot_product_attention fills masked scores with 0 instead of -inf",
    (MF, "scores = scores.masked_fill(~mask, 0.0)"), shows=("attention.mask_with_zero",))
bug("qkv", "mask_inverted", "scaled_dot_product_attention treats True as 'hide' (inverted mask)",
    (MF, 'scores = scores.masked_fill(mask, float("-inf"))'), shows=("attention.mask_inverted",))
bug("qkv", "keys_T", "scaled_dot_product_attention uses keys.T, wrong for batched keys",
    (SC, "scores = queries @ keys.T / math.sqrt(d_k)"), shows=("attention.batched_T",))
bug("qkv", "scores_transposed", "scaled_dot_product_attention scores keys against queries (keys @ queries^T)",
    (SC, "scores = keys @ queries.transpose(-2, -1) / math.sqrt(d_k)"), shows=("attention.scores_transposed",))
bug("qkv", "init_order", "SelfAttention creates W_key before W_query",
    ("""        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
""", """        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
"""))
bug("qkv", "init_randn", "SelfAttention initializes with torch.randn instead of torch.rand",
    ("""        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))""", """        self.W_query = nn.Parameter(torch.randn(d_in, d_out))
        self.W_key = nn.Parameter(torch.randn(d_in, d_out))
        self.W_value = nn.Parameter(torch.randn(d_in, d_out))"""))
bug("qkv", "scale_by_d_in", "SelfAttention scales the scores by sqrt(d_in) instead of sqrt(d_out)",
    ("""        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)  # (..., T, d_out) each
        return scaled_dot_product_attention(queries, keys, values)  # (..., T, d_out)""",
     """        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(x.shape[-1])
        return torch.softmax(scores, dim=-1) @ values"""), shows=("qkv.scale_by_d_in",))
bug("qkv", "self_attention_T", "SelfAttention computes its own attention with keys.T, wrong for batched input",
    ("""        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)  # (..., T, d_out) each
        return scaled_dot_product_attention(queries, keys, values)  # (..., T, d_out)""",
     """        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)
        scores = queries @ keys.T / math.sqrt(keys.shape[-1])
        return torch.softmax(scores, dim=-1) @ values"""), shows=("attention.batched_T",))
bug("qkv", "linear_weight_untransposed", "SelfAttentionLinear multiplies by .weight without transposing it",
    ("queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (..., T, d_out) each",
     "queries, keys, values = x @ self.W_query.weight, x @ self.W_key.weight, x @ self.W_value.weight"), shows=("qkv.linear_weight_untransposed",))
bug("qkv", "copy_untransposed", "copy_linear_weights copies the nn.Linear weight as stored, without .T",
    ("""    if any(param.shape != linear.weight.T.shape for param, linear in pairs):
        raise ValueError(f"sizes differ: dst holds {tuple(dst.W_query.shape)}, src holds {tuple(src.W_query.weight.T.shape)}")
""", ""), ("param.copy_(linear.weight.T)  # (d_in, d_out)", "param.copy_(linear.weight)"),
    shows=("qkv.copy_untransposed",))
bug("qkv", "copy_reshaped", "copy_linear_weights reshapes the nn.Linear weight instead of transposing it",
    ("param.copy_(linear.weight.T)  # (d_in, d_out)", "param.copy_(linear.weight.reshape(param.shape))"))
bug("qkv", "seeds_itself", "SelfAttention calls torch.manual_seed(123) in __init__, so every instance draws alike",
    ("""        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))""", """        torch.manual_seed(123)
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))"""))
bug("qkv", "copy_transposes_src", "copy_linear_weights transposes src's weight in place with .t_(), changing src",
    ("param.copy_(linear.weight.T)  # (d_in, d_out)", "param.copy_(linear.weight.t_())"))
bug("qkv", "project_no_width_check", "project does not check that W_query and W_key have the same width",
    ("""    if W_query.shape[1] != W_key.shape[1]:
        raise ValueError(f"queries and keys need the same width d_k, got {W_query.shape[1]} and {W_key.shape[1]}")
""", ""))
part("qkv", "builtin_sdpa", "scaled_dot_product_attention calls torch's built-in (banned); everything else right",
     ("    " + SC + "\n", ""), (MF, "pass"),
     (RET, "return torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)"))
part("qkv", "query_loop", "scaled_dot_product_attention computes one query row at a time in a Python loop",
     (RET, "rows = [torch.softmax(scores[..., i:i + 1, :], dim=-1) @ values for i in range(scores.shape[-2])]\n"
           "    return torch.cat(rows, dim=-2)"))
ok("qkv", "new_parameters", "copy_linear_weights gives dst new nn.Parameters holding each weight.T",
   ("""    with torch.no_grad():
        for param, linear in pairs:
            param.copy_(linear.weight.T)  # (d_in, d_out)""",
    """    for name in ("W_query", "W_key", "W_value"):
        setattr(dst, name, nn.Parameter(getattr(src, name).weight.detach().T.clone()))"""))
ok("qkv", "where_mask", "qkv with torch.where masks, .mT, F.linear and scaling of the queries",
   (SC, "scores = (queries / math.sqrt(d_k)) @ keys.mT"),
   (MF, "scores = torch.where(mask, scores, torch.full_like(scores, float('-inf')))"),
   ("queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)  # (..., T, d_out) each",
    "queries, keys, values = (nn.functional.linear(x, layer.weight, layer.bias) for layer in (self.W_query, self.W_key, self.W_value))"),
   ("""    with torch.no_grad():
        for param, linear in pairs:
            param.copy_(linear.weight.T)  # (d_in, d_out)""", """    for name in ("W_query", "W_key", "W_value"):
        setattr(dst, name, nn.Parameter(getattr(src, name).weight.detach().t().clone()))"""))
ok("qkv", "raschka", "qkv as LLMs-from-scratch writes SelfAttention_v1/_v2 (** 0.5, weights as new nn.Parameter(weight.T))",
   style("raschka"))
bug("qkv", "raschka_keys_T", "SelfAttention_v1 as written for one sequence: queries @ keys.T",
    style("raschka"), ("attn_scores = queries @ keys.transpose(-2, -1)  # omega", "attn_scores = queries @ keys.T  # omega"),
    shows=("attention.batched_T",))
bug("qkv", "d2l_bmm", "scaled_dot_product_attention with torch.bmm (d2l's DotProductAttention): 3-D inputs only",
    (SC, "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d_k)"), (RET, "return torch.bmm(torch.softmax(scores, dim=-1), values)"))
bug("qkv", "softmax_over_queries", "scaled_dot_product_attention normalizes over the queries (dim=-2)",
    (RET, "return torch.softmax(scores, dim=-2) @ values"), shows=("attention.softmax_over_queries",))
bug("qkv", "queries_scaled_inplace", "scaled_dot_product_attention scales the caller's queries in place (queries /= ...)",
    (SC, "queries /= math.sqrt(d_k)\n    scores = queries @ keys.transpose(-2, -1)"))
ok("qkv", "finfo_quarter", "qkv scaling queries and keys each by d_k ** -0.25, masked scores filled with "
   "torch.finfo(dtype).min, SelfAttention with einsum",
   (SC, "scores = (queries * d_k ** -0.25) @ (keys * d_k ** -0.25).transpose(-2, -1)"),
   (MF, "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"),
   ("""        queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)  # (..., T, d_out) each
        return scaled_dot_product_attention(queries, keys, values)  # (..., T, d_out)""",
    """        q = torch.einsum("...ti,io->...to", x, self.W_query)
        k = torch.einsum("...ti,io->...to", x, self.W_key)
        v = torch.einsum("...ti,io->...to", x, self.W_value)
        weights = torch.einsum("...qo,...ko->...qk", q, k).div(k.shape[-1] ** 0.5).softmax(dim=-1)
        return torch.einsum("...qk,...ko->...qo", weights, v)"""),
   ("""    with torch.no_grad():
        for param, linear in pairs:
            param.copy_(linear.weight.T)  # (d_in, d_out)""",
    """    dst.load_state_dict({name: getattr(src, name).weight.T for name in ("W_query", "W_key", "W_value")})"""))
bug("qkv", "mask_added", "scaled_dot_product_attention adds the bool mask to the scores",
    (MF, "scores = scores + mask"))
bug("qkv", "scale_multiplied", "scaled_dot_product_attention multiplies the scores by sqrt(d_k)",
    (SC, "scores = queries @ keys.transpose(-2, -1) * math.sqrt(d_k)"), shows=("attention.scale_multiplied",))
bug("qkv", "scaled_after_softmax", "scaled_dot_product_attention divides by sqrt(d_k) after the softmax",
    (SC, "scores = queries @ keys.transpose(-2, -1)"),
    (RET, "return torch.softmax(scores, dim=-1) / math.sqrt(d_k) @ values"), shows=("attention.scaled_after_softmax",))
bug("qkv", "bmm_3d_only", "scaled_dot_product_attention uses torch.bmm, which takes 3-D tensors only",
    (SC, "scores = torch.bmm(queries, keys.transpose(-2, -1)) / math.sqrt(d_k)"))
bug("qkv", "project_transposed", "project multiplies by the transposed weights, x @ W.T",
    (PROJ, "return x @ W_query.T, x @ W_key.T, x @ W_value.T"), shows=("qkv.project_transposed",))
bug("qkv", "no_max", "scaled_dot_product_attention's softmax is exp / sum without the max (walk-through 9)",
    (RET, "e = scores.exp()\n    return e / e.sum(-1, keepdim=True) @ values"), shows=("attention.no_max",))
