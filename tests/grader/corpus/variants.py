"""The corpus that proves the hidden suites: variants of the references, each one exercise file with a few edits.

Every variant is solutions/<module>.py with a few exact text edits (one real bug, another correct style, or
one Python loop or built-in), and a title naming what it is; a style that rewrites the whole exercise (code in the
manner of a known project: nanoGPT, the Annotated Transformer, d2l, ...) is the one edit of the ``STYLE`` marker to a
file of tests/grader/corpus/styles/ (``style(name)``). tests/test_mutants.py builds a submission from
each (solutions/ with that one file replaced) and grades it; benchmarks/batch.py draws its class from them.
An edit whose text no longer occurs exactly once in the reference fails the corpus test.
"""
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
STYLES = Path(__file__).resolve().parent / "styles"
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
KINDS = ("buggy", "correct", "partial")


@dataclass(frozen=True)
class Variant:
    kind: str  # buggy, correct or partial
    module: str
    name: str
    title: str  # "Bug: ...", "Correct: ..." or "Partial: ..."
    edits: tuple[tuple[str, str], ...]
    shows: tuple[str, ...] = ()  # the ids of the known mistakes (misconceptions.py) its feedback names: its bug's own

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.module}/{self.name}"

    def source(self) -> str:
        """The reference with the edits applied, the title as its docstring's first line, markers removed."""
        text = (ROOT / "solutions" / f"{self.module}.py").read_text(encoding="utf-8")
        for old, new in self.edits:
            if old == STYLE:  # the whole file, in another project's manner; later edits apply to it
                text = new
                continue
            count = text.count(old)
            if count != 1:
                raise ValueError(f"{self.id}: {old!r} occurs {count} times in solutions/{self.module}.py")
            text = text.replace(old, new)
        rest = text.split("\n", 1)[1]
        body = f'"""{self.title}\n\nA corpus variant of exercise {self.module}: the reference with one change.\n"""\n' + rest
        return "\n".join(line for line in body.splitlines() if line.strip() not in MARKERS) + "\n"


VARIANTS: list[Variant] = []
STYLE = "<the whole file>"


def style(name: str) -> tuple[str, str]:
    """The edit that replaces the whole reference by tests/grader/corpus/styles/<name>.py (its first line: a docstring)."""
    return STYLE, (STYLES / f"{name}.py").read_text(encoding="utf-8")


def bug(module, name, title, *edits, shows=()):
    """One real bug: the exercise must lose points, and no other exercise; its feedback names the mistakes ``shows``
    (ids of tests/course/public/misconceptions.py), each somewhere, and no other."""
    VARIANTS.append(Variant("buggy", module, name, "Bug: " + title, edits, tuple(shows)))


def ok(module, name, title, *edits):
    """Another correct style: full marks."""
    VARIANTS.append(Variant("correct", module, name, "Correct: " + title, edits))


def part(module, name, title, *edits):
    """Right values but a Python loop or a banned built-in: only the small share is lost."""
    VARIANTS.append(Variant("partial", module, name, "Partial: " + title, edits))


# ------------------------------------------------------------------ scores
bug("scores", "dot_item", "dot returns a Python float (.item()), not a 0-d tensor",
    ("return (a * b).sum()  # ()", "return (a * b).sum().item()"))
bug("scores", "pairwise_dot_T", "pairwise_scores uses x.T, which reverses every dim of a batched tensor",
    ("return x @ x.transpose(-2, -1)  # (..., T, T)", "return x @ x.T  # (..., T, T)"), shows=("scores.batched_T",))
bug("scores", "attention_scores_swapped", "attention_scores computes keys @ queries^T, shape (..., Tk, Tq)",
    ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)", "return keys @ queries.transpose(-2, -1)"), shows=("scores.swapped",))
bug("scores", "attention_scores_scaled", "attention_scores divides by sqrt(d) although this exercise has no scaling",
    ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)", "return queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5"), shows=("scores.scaled",))
bug("scores", "dot_no_length_check", "dot does not check the lengths (a RuntimeError instead of ValueError)",
    ("""    if a.dim() != 1 or b.dim() != 1 or a.shape != b.shape:
        raise ValueError(f"dot needs two 1-D tensors of the same length, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
""", ""))
bug("scores", "pairwise_float32", "pairwise_scores casts to float32 (.float()), losing float64",
    ("return x @ x.transpose(-2, -1)  # (..., T, T)", "x = x.float()\n    return x @ x.transpose(-2, -1)"))
bug("scores", "attention_scores_transpose_inplace", "attention_scores transposes the caller's keys in place (transpose_)",
    ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)", "keys.transpose_(-2, -1)\n    return queries @ keys"))
part("scores", "dot_torch_dot", "dot calls torch.dot (a banned built-in); everything else right",
     ("return (a * b).sum()  # ()", "return torch.dot(a, b)"))
part("scores", "dot_linalg_vecdot", "dot calls torch.linalg.vecdot (a banned built-in under another name); everything else right",
     ("return (a * b).sum()  # ()", "return torch.linalg.vecdot(a, b)"))
part("scores", "pairwise_loops", "pairwise_scores and attention_scores loop over the tokens in Python",
     ("return x @ x.transpose(-2, -1)  # (..., T, T)",
      "rows = [(x[..., i:i + 1, :] * x).sum(-1) for i in range(x.shape[-2])]\n    return torch.stack(rows, dim=-2)"),
     ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)",
      "rows = [queries[..., i:i + 1, :] @ keys.transpose(-2, -1) for i in range(queries.shape[-2])]\n    return torch.cat(rows, dim=-2)"))
ok("scores", "einsum", "pairwise_scores and attention_scores with torch.einsum, dot with torch.sum(torch.mul(...))",
   ("return (a * b).sum()  # ()", "return torch.sum(torch.mul(a, b))"),
   ("return x @ x.transpose(-2, -1)  # (..., T, T)", "return torch.einsum('...id,...jd->...ij', x, x)"),
   ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)", "return torch.einsum('...qd,...kd->...qk', queries, keys)"))

# ------------------------------------------------------------------ softmax
SM = "z = z - z.amax(dim=dim, keepdim=True)  # largest entry of each row is now 0"
SOFTMAX_BODY = f"""    z = x / temperature
    {SM}
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)"""  # a part variant replaces it whole
bug("softmax", "last_dim_only", "softmax always normalizes the last dim, whatever `dim` says",
    (SM, "z = z - z.amax(dim=-1, keepdim=True)"), ("return e / e.sum(dim=dim, keepdim=True)", "return e / e.sum(dim=-1, keepdim=True)"), shows=("softmax.last_dim_only",))
bug("softmax", "no_max_subtraction", "softmax does not subtract the row max (exp overflows for large scores)",
    ("    " + SM + "\n", ""), shows=("softmax.no_max",))
bug("softmax", "no_keepdim", "softmax sums without keepdim=True, so the sum broadcasts over the wrong dim",
    ("return e / e.sum(dim=dim, keepdim=True)", "return e / e.sum(dim=dim)"), shows=("softmax.no_keepdim",))
bug("softmax", "temperature_multiplied", "softmax multiplies by the temperature instead of dividing",
    ("z = x / temperature", "z = x * temperature"), shows=("softmax.temperature_multiplied",))
bug("softmax", "global_max", "softmax subtracts the max of the whole tensor, not each row's",
    (SM, "z = z - z.max()"), shows=("softmax.global_max",))
bug("softmax", "inplace", "softmax divides and shifts the caller's tensor in place (x /= t, x -= max)",
    ("z = x / temperature\n", "x /= temperature\n    z = x\n"), (SM, "z -= z.amax(dim=dim, keepdim=True)"))
bug("softmax", "no_temperature_check", "softmax accepts a temperature <= 0 (no ValueError)",
    ("""    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
""", ""))
bug("softmax", "detached", "softmax detaches its result from the autograd graph",
    ("return e / e.sum(dim=dim, keepdim=True)", "return (e / e.sum(dim=dim, keepdim=True)).detach()"))
bug("softmax", "float32", "softmax computes in float32 whatever the input dtype",
    ("z = x / temperature", "z = x.float() / temperature"))
bug("softmax", "clamp_instead_of_max", "softmax clamps the scores to [-80, 80] instead of subtracting the max",
    (SM, "z = z.clamp(-80, 80)"))
bug("softmax", "float32_cast_back", "softmax computes in float32 and casts the result back to the input's dtype",
    ("z = x / temperature", "z = x.float() / temperature"),
    ("return e / e.sum(dim=dim, keepdim=True)", "return (e / e.sum(dim=dim, keepdim=True)).to(x.dtype)"), shows=("float64.less_precise",))
bug("softmax", "abs_max", "softmax subtracts the row's largest absolute value, which is inf for rows with -inf",
    (SM, "z = z - z.abs().amax(dim=dim, keepdim=True)"))
part("softmax", "torch_softmax", "softmax calls torch.softmax (a banned built-in); everything else right",
     (SOFTMAX_BODY, "    return torch.softmax(x / temperature, dim=dim)"))
part("softmax", "special_softmax", "softmax calls torch.special.softmax (a banned built-in under another name)",
     (SOFTMAX_BODY, "    return torch.special.softmax(x / temperature, dim=dim)"))
part("softmax", "aten_softmax", "softmax calls the operator torch.ops.aten._softmax directly (a banned built-in)",
     (SOFTMAX_BODY, "    return torch.ops.aten._softmax.default(x / temperature, dim, False)"))
ok("softmax", "logsumexp", "softmax as exp(z - logsumexp(z))",
   ("""    z = z - z.amax(dim=dim, keepdim=True)  # largest entry of each row is now 0
    e = z.exp()
    return e / e.sum(dim=dim, keepdim=True)""", "    return torch.exp(z - torch.logsumexp(z, dim=dim, keepdim=True))"))
ok("softmax", "movedim", "softmax over the last dim of x.movedim(dim, -1), moved back afterwards",
   ("z = x / temperature", "z = x.movedim(dim, -1) / temperature"),
   (SM, "z = z - z.amax(dim=-1, keepdim=True)"),
   ("return e / e.sum(dim=dim, keepdim=True)", "return (e / e.sum(dim=-1, keepdim=True)).movedim(-1, dim)"))
ok("softmax", "float64_inside", "softmax computed in float64 and cast back to the input's dtype",
   ("z = x / temperature", "z = x.to(torch.float64) / temperature"),
   ("return e / e.sum(dim=dim, keepdim=True)", "return (e / e.sum(dim=dim, keepdim=True)).to(x.dtype)"))

# ------------------------------------------------------------------ context
AW = "return torch.softmax(x @ x.transpose(-2, -1), dim=-1)  # (..., T, T)"
bug("context", "softmax_dim0", "attention_weights normalizes over dim 0 (columns), not the last dim",
    (AW, "return torch.softmax(x @ x.transpose(-2, -1), dim=0)"), shows=("context.softmax_dim0",))
bug("context", "batched_T", "attention_weights uses x.T, which reverses every dim of a batched tensor",
    (AW, "return torch.softmax(x @ x.T, dim=-1)"), shows=("context.batched_T",))
bug("context", "transposed_weights", "context_vectors multiplies by the transposed weights",
    ("return weights @ x  # (..., T, d)", "return weights.transpose(-2, -1) @ x"), shows=("context.weights_transposed",))
bug("context", "naive_softmax", "attention_weights uses its own softmax without subtracting the max",
    (AW, "e = (x @ x.transpose(-2, -1)).exp()\n    return e / e.sum(-1, keepdim=True)"), shows=("context.no_max",))
bug("context", "scaled", "attention_weights divides the scores by sqrt(d)",
    (AW, "return torch.softmax(x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5, dim=-1)"), shows=("context.scaled",))
bug("context", "float32_softmax", "attention_weights forces a float32 softmax (dtype=torch.float32)",
    (AW, "return torch.softmax(x @ x.transpose(-2, -1), dim=-1, dtype=torch.float32)"))
bug("context", "detached_weights", "context_vectors detaches the weights, so no gradient flows through them",
    ("weights = attention_weights(x)  # (..., T, T)", "weights = attention_weights(x).detach()"))
part("context", "row_loop", "attention_weights computes one row per token in a Python loop",
     (AW, "rows = [torch.softmax(x[..., i:i + 1, :] @ x.transpose(-2, -1), dim=-1) for i in range(x.shape[-2])]\n"
          "    return torch.cat(rows, dim=-2)"))
part("context", "builtin_sdpa", "context_vectors calls torch's scaled_dot_product_attention (banned); weights right",
     ("return weights @ x  # (..., T, d)", "return torch.nn.functional.scaled_dot_product_attention(x, x, x, scale=1.0)"))
ok("context", "broadcast_sum", "context with broadcast-and-sum instead of matmul, and the course's own softmax",
   ('"""Exercise 3: self-attention without trainable weights."""\nimport torch\n', '"""Exercise 3: self-attention without trainable weights."""\nimport torch\n\nfrom .softmax import softmax\n'),
   (AW, "scores = (x.unsqueeze(-2) * x.unsqueeze(-3)).sum(-1)  # (..., T, T)\n    return softmax(scores, dim=-1)"),
   ("return weights @ x  # (..., T, d)", "return (weights.unsqueeze(-1) * x.unsqueeze(-3)).sum(-2)"))

# ------------------------------------------------------------------ qkv
PROJ = "return x @ W_query, x @ W_key, x @ W_value  # (..., T, d_k), (..., T, d_k), (..., T, d_v)"
SC = "scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)  # (..., Tq, Tk)"
MF = 'scores = scores.masked_fill(~mask, float("-inf"))'
RET = "return torch.softmax(scores, dim=-1) @ values  # (..., Tq, d_v)"
bug("qkv", "keys_from_W_query", "project computes the keys with W_query",
    (PROJ, "return x @ W_query, x @ W_query, x @ W_value"), shows=("qkv.project_wrong_weight",))
bug("qkv", "scale_by_d_k", "scaled_dot_product_attention divides by d_k instead of sqrt(d_k)",
    (SC, "scores = queries @ keys.transpose(-2, -1) / d_k"), shows=("attention.scale_by_d",))
bug("qkv", "no_scaling", "scaled_dot_product_attention does not scale the scores",
    (SC, "scores = queries @ keys.transpose(-2, -1)"), shows=("attention.no_scaling",))
bug("qkv", "mask_after_softmax", "scaled_dot_product_attention zeroes masked weights after the softmax",
    (MF, "pass"), (RET, "weights = torch.softmax(scores, dim=-1)\n    if mask is not None:\n        weights = weights * mask\n    return weights @ values"), shows=("attention.mask_after_softmax",))
bug("qkv", "mask_with_zero", "scaled_dot_product_attention fills masked scores with 0 instead of -inf",
    (MF, "scores = scores.masked_fill(~mask, 0.0)"), shows=("attention.mask_with_zero",))
bug("qkv", "mask_inverted", "scaled_dot_product_attention treats True as 'hide' (inverted mask)",
    (MF, 'scores = scores.masked_fill(mask, float("-inf"))'), shows=("attention.mask_inverted",))
bug("qkv", "keys_T", "scaled_dot_product_attention uses keys.T, wrong for batched keys",
    (SC, "scores = queries @ keys.T / math.sqrt(d_k)"), shows=("attention.batched_T",))
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
bug("qkv", "copy_reshaped", "copy_linear_weights reshapes the nn.Linear weight instead of transposing it",
    ("param.copy_(linear.weight.T)  # (d_in, d_out)", "param.copy_(linear.weight.reshape(param.shape))"))
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

# ------------------------------------------------------------------ quiz
QS = "alphas = torch.softmax(scores, dim=-1)  # (..., n)"
QV = "v = (alphas.unsqueeze(-1) * H).sum(-2)  # (..., d)"
bug("quiz", "softmax_dim0", "decoder_attention normalizes the scores over dim 0 (wrong with batch dims)",
    (QS, "alphas = torch.softmax(scores, dim=0)"), shows=("quiz.softmax_dim0",))
bug("quiz", "no_softmax", "decoder_attention uses the raw scores as weights (no softmax)",
    (QS, "alphas = scores"), shows=("quiz.no_softmax",))
bug("quiz", "swapped_return", "decoder_attention returns (alphas, v) instead of (v, alphas)",
    ("return (v, alphas) if return_weights else v", "return (alphas, v) if return_weights else v"))
bug("quiz", "answer_float64", "quiz_answer returns a float64 tensor",
    ("s = torch.tensor([0.4685, 0.9785])  # (d,)", "s = torch.tensor([0.4685, 0.9785], dtype=torch.float64)"),
    ("H = torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]])  # (n, d)",
     "H = torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]], dtype=torch.float64)"))
bug("quiz", "H_matmul_s", "decoder_attention scores with H @ s, which breaks with batch dims",
    ("scores = (H * s.unsqueeze(-2)).sum(-1)  # (..., n)", "scores = H @ s"), shows=("quiz.H_matmul_s",))
bug("quiz", "scaled", "decoder_attention divides the scores by sqrt(d), though decoder attention has no scaling",
    (QS, "alphas = torch.softmax(scores / s.shape[-1] ** 0.5, dim=-1)"), shows=("quiz.scaled",))
bug("quiz", "sum_over_features", "decoder_attention sums the weighted states over the features, not the states",
    (QV, "v = (alphas.unsqueeze(-1) * H).sum(-1)"), shows=("quiz.sum_over_features",))
bug("quiz", "detached_alphas", "decoder_attention detaches the weights",
    (QS, "alphas = torch.softmax(scores, dim=-1).detach()"))
part("quiz", "state_loop", "decoder_attention scores and sums the states in a Python loop",
     ("scores = (H * s.unsqueeze(-2)).sum(-1)  # (..., n)",
      "scores = torch.stack([(H[..., i, :] * s).sum(-1) for i in range(H.shape[-2])], dim=-1)"))
part("quiz", "builtin_sdpa", "decoder_attention gets v from torch's scaled_dot_product_attention (banned)",
     (QV, "v = torch.nn.functional.scaled_dot_product_attention(s.unsqueeze(-2), H, H, scale=1.0).squeeze(-2)"))
ok("quiz", "matmul", "decoder_attention with matmuls (H @ s and alphas @ H) instead of broadcast sums",
   ("scores = (H * s.unsqueeze(-2)).sum(-1)  # (..., n)", "scores = (H @ s.unsqueeze(-1)).squeeze(-1)"),
   (QV, "v = (alphas.unsqueeze(-2) @ H).squeeze(-2)"))

# ------------------------------------------------------------------ dictionary
DW = "weights = torch.softmax(Q @ K.transpose(-2, -1) / temperature, dim=-1)  # (..., nq, nk)"
bug("dictionary", "one_hot_negative", "one_hot accepts negative indices (only index >= n raises)",
    ("if not 0 <= index < n:", "if index >= n:"))
bug("dictionary", "one_hot_long", "one_hot returns an int64 vector",
    ("vector = torch.zeros(n)  # (n,)", "vector = torch.zeros(n, dtype=torch.long)"),
    ("K = torch.stack([one_hot(i, len(keys)) for i in range(len(keys))])  # (n, n)",
     "K = torch.stack([one_hot(i, len(keys)) for i in range(len(keys))]).float()"),
    ("q = one_hot(keys.index(key), len(keys)).unsqueeze(0)  # (1, n)", "q = one_hot(keys.index(key), len(keys)).float().unsqueeze(0)"))
bug("dictionary", "temperature_multiplied", "attention multiplies the scores by the temperature",
    (DW, "weights = torch.softmax(Q @ K.transpose(-2, -1) * temperature, dim=-1)"), shows=("dictionary.temperature_multiplied",))
bug("dictionary", "sqrt_scaling", "attention also divides by sqrt(d_k)",
    (DW, "weights = torch.softmax(Q @ K.transpose(-2, -1) / temperature / K.shape[-1] ** 0.5, dim=-1)"), shows=("dictionary.sqrt_scaling",))
bug("dictionary", "no_temperature_check", "attention accepts a temperature <= 0",
    ("""    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
""", ""))
bug("dictionary", "sorted_values", "lookup stacks the values in sorted key order but queries by dict position",
    ("V = torch.tensor([table[k] for k in keys], dtype=torch.float32)  # (n, dv)",
     "V = torch.tensor([table[k] for k in sorted(keys, key=repr)], dtype=torch.float32)"), shows=("dictionary.lookup_order",))
bug("dictionary", "missing_key_valueerror", "lookup raises ValueError (from list.index) for a missing key",
    ("""    if key not in table:
        raise KeyError(key)
""", ""))
bug("dictionary", "values_no_dtype", "lookup stacks the values without dtype=torch.float32 (int tables stay int64)",
    ("V = torch.tensor([table[k] for k in keys], dtype=torch.float32)  # (n, dv)", "V = torch.tensor([table[k] for k in keys])"))
part("dictionary", "builtin_sdpa", "attention calls torch's scaled_dot_product_attention with scale=1/t (banned)",
     ("    " + DW + "\n", ""), ("return weights @ V  # (..., nq, dv)",
                       "return torch.nn.functional.scaled_dot_product_attention(Q, K, V, scale=1.0 / temperature)"))
part("dictionary", "query_loop", "attention answers one query at a time in a Python loop",
     ("return weights @ V  # (..., nq, dv)",
      "return torch.cat([weights[..., i:i + 1, :] @ V for i in range(weights.shape[-2])], dim=-2)"))
ok("dictionary", "einsum_eye", "dictionary with torch.eye keys, einsum and nn.functional.softmax",
   (DW, "weights = torch.nn.functional.softmax(torch.einsum('...qd,...kd->...qk', Q, K) / temperature, dim=-1)"),
   ("return weights @ V  # (..., nq, dv)", "return torch.einsum('...qk,...kv->...qv', weights, V)"),
   ("K = torch.stack([one_hot(i, len(keys)) for i in range(len(keys))])  # (n, n)", "K = torch.eye(len(keys))"))

# ------------------------------------------------------------------ causal
CM = "return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)"
CF = 'scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))'
CW = "weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, T, T)"
CS = "scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])  # (B, T, T)"
bug("causal", "mask_after_softmax", "CausalAttention zeroes future weights after the softmax",
    (CF, "pass"), (CW, "weights = self.dropout(torch.softmax(scores, dim=-1) * self.mask[:T, :T])"), shows=("causal.mask_after_softmax",))
bug("causal", "mask_with_zero", "CausalAttention fills future scores with 0 instead of -inf",
    (CF, "scores = scores.masked_fill(~self.mask[:T, :T], 0.0)"), shows=("causal.mask_with_zero",))
bug("causal", "wrong_triangle", "causal_mask keeps the upper triangle (triu)",
    (CM, "return torch.ones(T, T, dtype=torch.bool, device=device).triu()"), shows=("causal.wrong_triangle",))
bug("causal", "mask_float", "causal_mask returns a float mask (torch.tril(torch.ones(T, T)))",
    (CM, "return torch.tril(torch.ones(T, T, device=device))"),
    (CF, 'scores = scores.masked_fill(self.mask[:T, :T] == 0, float("-inf"))'))
bug("causal", "mask_not_sliced", "CausalAttention does not slice the mask to the sequence length",
    (CF, 'scores = scores.masked_fill(~self.mask, float("-inf"))'), shows=("causal.mask_not_sliced",))
bug("causal", "dropout_always", "CausalAttention applies dropout in eval mode too",
    (CW, "weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), self.dropout.p, training=True)"))
bug("causal", "dropout_on_output", "CausalAttention applies dropout to the output, not to the weights",
    (CW, "weights = torch.softmax(scores, dim=-1)"), ("return weights @ values  # (B, T, d_out)", "return self.dropout(weights @ values)"),
    shows=("dropout.on_output",))
bug("causal", "scale_by_d_in", "CausalAttention scales by sqrt(d_in) instead of sqrt(d_out)",
    (CS, "scores = queries @ keys.transpose(-2, -1) / math.sqrt(x.shape[-1])"), shows=("causal.scale_by_d_in",))
bug("causal", "scale_by_d_out", "CausalAttention divides the scores by d_out itself, not by its square root",
    (CS, "scores = queries @ keys.transpose(-2, -1) / keys.shape[-1]"), shows=("causal.scale_by_d",))
bug("causal", "fill_minus_1e9", "CausalAttention fills future scores with -1e9, which overflows float16",
    (CF, "scores = scores.masked_fill(~self.mask[:T, :T], -1e9)"), shows=("causal.fill_overflows",))
bug("causal", "mask_ignores_device", "causal_mask ignores its device argument",
    (CM, "return torch.ones(T, T, dtype=torch.bool).tril()"))
bug("causal", "mask_not_buffer", "CausalAttention keeps the mask as a plain attribute, not a buffer",
    ('self.register_buffer("mask", causal_mask(context_length), persistent=False)', "self.mask = causal_mask(context_length)"))
bug("causal", "no_length_check", "CausalAttention does not raise ValueError for T > context_length",
    ("""        if T > self.mask.shape[0]:
            raise ValueError(f"sequence length {T} exceeds context_length {self.mask.shape[0]}")
""", ""))
bug("causal", "diagonal_masked", "causal_mask hides the diagonal too (tril(-1)): a token cannot see itself",
    (CM, "return torch.ones(T, T, dtype=torch.bool, device=device).tril(-1)"), shows=("causal.mask_diagonal_missing",))
bug("causal", "init_order", "CausalAttention creates W_value before W_query and W_key",
    ("""        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)""", """        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)"""))
part("causal", "batch_loop", "CausalAttention computes the scores of each batch element in a Python loop",
     (CS, "scores = torch.stack([q @ k.transpose(-2, -1) for q, k in zip(queries, keys)]) / math.sqrt(keys.shape[-1])"))
ok("causal", "where_float_mask", "causal with a float tril buffer, torch.where and F.dropout(training=self.training)",
   ('self.register_buffer("mask", causal_mask(context_length), persistent=False)',
    'self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))'),
   (CF, "scores = torch.where(self.mask[:T, :T] == 1, scores, float('-inf'))"),
   (CW, "weights = nn.functional.dropout(torch.softmax(scores, dim=-1), p=self.dropout.p, training=self.training)"))
ok("causal", "dropout_transposed", "causal with torch.dropout on a transposed copy of the weights (another layout in "
   "memory, so the random numbers fall in another order)",
   (CW, "weights = torch.dropout(torch.softmax(scores, dim=-1).mT.contiguous(), self.dropout.p, self.training).mT"))

# ------------------------------------------------------------------ multihead
SPLIT = "return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)"
MERGE = "context = (weights @ values).transpose(1, 2).reshape(B, T, -1)  # (B, T, d_out)"
MS = "scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, heads, T, T)"
MM = 'scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))'
MW = "weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, heads, T, T)"
bug("multihead", "split_no_transpose", "MultiHeadAttention splits heads with view(B, heads, T, head_dim), no transpose",
    (SPLIT, "return t.view(B, self.num_heads, T, self.head_dim)"), shows=("multihead.split_no_transpose",))
bug("multihead", "merge_no_transpose", "MultiHeadAttention merges heads with reshape alone (no transpose back)",
    (MERGE, "context = (weights @ values).reshape(B, T, -1)"), shows=("multihead.merge_no_transpose",))
bug("multihead", "no_out_proj", "MultiHeadAttention never applies out_proj",
    ("return self.out_proj(context)  # (B, T, d_out)", "return context"), shows=("multihead.no_out_proj",))
bug("multihead", "scale_by_d_out", "MultiHeadAttention scales by sqrt(d_out) instead of sqrt(head_dim)",
    (MS, "scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.num_heads * self.head_dim)"), shows=("multihead.scale_by_d_out",))
bug("multihead", "mask_not_sliced", "MultiHeadAttention does not slice the mask to the sequence length",
    (MM, 'scores = scores.masked_fill(~self.mask, float("-inf"))'), shows=("multihead.mask_not_sliced",))
bug("multihead", "no_divisibility_check", "MultiHeadAttention floors d_out // num_heads without a ValueError",
    ("""        if num_heads <= 0 or d_out % num_heads:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
""", ""))
bug("multihead", "dropout_after_out_proj", "MultiHeadAttention applies dropout to the output instead of the weights",
    (MW, "weights = torch.softmax(scores, dim=-1)"), ("return self.out_proj(context)  # (B, T, d_out)", "return self.dropout(self.out_proj(context))"),
    shows=("dropout.on_output",))
bug("multihead", "wrong_triangle", "MultiHeadAttention's mask keeps the upper triangle (triu)",
    ('torch.ones(context_length, context_length, dtype=torch.bool).tril()', 'torch.ones(context_length, context_length, dtype=torch.bool).triu()'), shows=("multihead.wrong_triangle",))
bug("multihead", "out_proj_first", "MultiHeadAttention creates out_proj before the three projections",
    ("""        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)""", """        self.out_proj = nn.Linear(d_out, d_out)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)"""))
bug("multihead", "mask_with_zero", "MultiHeadAttention fills future scores with 0 instead of -inf",
    (MM, "scores = scores.masked_fill(~self.mask[:T, :T], 0.0)"), shows=("multihead.mask_with_zero",))
part("multihead", "head_loop", "MultiHeadAttention computes the scores of each head in a Python loop",
     (MS, "scores = torch.stack([queries[:, h] @ keys[:, h].transpose(-2, -1) for h in range(self.num_heads)], dim=1) / math.sqrt(self.head_dim)"))
ok("multihead", "nanogpt_bias", "multihead with a float (1, 1, T, T) tril buffer named bias, compared with 0, and einsum scores",
   ('self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)',
    'self.register_buffer("bias", torch.tril(torch.ones(context_length, context_length)).view(1, 1, context_length, context_length))'),
   ("if T > self.mask.shape[0]:", "if T > self.bias.shape[-1]:"),
   ("exceeds context_length {self.mask.shape[0]}", "exceeds context_length {self.bias.shape[-1]}"),
   (MS, "scores = torch.einsum('bhqd,bhkd->bhqk', queries, keys) * (1.0 / math.sqrt(keys.size(-1)))"),
   (MM, "scores = scores.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))"))
ok("multihead", "contiguous_view", "multihead with unflatten/permute to split and contiguous().view to merge",
   (SPLIT, "return t.unflatten(-1, (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)"),
   (MERGE, "context = (weights @ values).transpose(1, 2).contiguous().view(B, T, self.num_heads * self.head_dim)"))
ok("multihead", "dropout_flat_heads", "multihead with dropout on the weights flattened to (B * heads, T, T)",
   (MW, "weights = self.dropout(torch.softmax(scores, dim=-1).flatten(0, 1)).view(B, self.num_heads, T, T)"))
ok("multihead", "dropout_heads_last", "multihead with F.dropout on a (B, T, T, heads) copy of the weights, permuted back",
   (MW, "weights = nn.functional.dropout(torch.softmax(scores, dim=-1).permute(0, 2, 3, 1).contiguous(), "
        "self.dropout.p, self.training).permute(0, 3, 1, 2)"))
bug("multihead", "dropout_always", "MultiHeadAttention applies dropout in eval mode too",
    (MW, "weights = nn.functional.dropout(torch.softmax(scores, dim=-1), self.dropout.p, training=True)"))

# ------------------------------------------------------------------ whole files in other projects' manner (styles/)
ok("qkv", "raschka", "qkv as LLMs-from-scratch writes SelfAttention_v1/_v2 (** 0.5, weights as new nn.Parameter(weight.T))",
   style("qkv_raschka"))
ok("causal", "raschka", "causal as LLMs-from-scratch writes it: float triu buffer, masked_fill_(mask.bool(), -torch.inf)",
   style("causal_raschka"))
ok("causal", "einsum", "causal with einsum, queries scaled by d_out ** -0.5 first, an additive -inf mask, .softmax(-1)",
   style("causal_einsum"))
ok("multihead", "raschka", "multihead as LLMs-from-scratch writes it: masked_fill_ on the scores, contiguous().view",
   style("multihead_raschka"))
ok("multihead", "nanogpt", "multihead as nanoGPT writes it: one fused projection split in three, (1, 1, T, T) bias buffer",
   style("multihead_nanogpt"))
ok("multihead", "mingpt", "multihead as minGPT writes it: size(), view and transpose per role, F.softmax",
   style("multihead_mingpt"))
ok("multihead", "hf_gpt2", "multihead as Hugging Face's GPT-2 writes it: torch.where with finfo(dtype).min, permute",
   style("multihead_hf_gpt2"))
ok("multihead", "llama", "multihead as Llama writes it: a -inf triu(1) float buffer added to the scores, type_as",
   style("multihead_llama"))
ok("multihead", "annotated", "multihead as the Annotated Transformer writes it: attention() with masked_fill(mask == 0)",
   style("multihead_annotated"))
ok("multihead", "d2l", "multihead as d2l writes it: heads folded into the batch, torch.bmm, masked_softmax of valid lens "
   "setting masked entries to -1e6 (X[~mask] = -1e6 stores -inf in float16; exp(-1e6 - max) is 0 in the wider dtypes)",
   style("multihead_d2l"))
ok("multihead", "einsum", "multihead with einsum on (B, T, heads, head_dim), torch.where on a triu future mask",
   style("multihead_einsum"))

# ------------------------------------------------------------------ real projects' code where it breaks the contract
bug("multihead", "llama_float32_softmax", "multihead as Llama writes it, softmax in float32 then type_as: float64 loses precision",
    style("multihead_llama"), ("F.softmax(scores, dim=-1).type_as(xq)", "F.softmax(scores.float(), dim=-1).type_as(xq)"),
    shows=("float64.less_precise",))
bug("multihead", "annotated_minus_1e9", "multihead as the Annotated Transformer writes it, masked_fill(mask == 0, -1e9): "
    "overflows float16", style("multihead_annotated"), ('float("-inf"))', "-1e9)"), shows=("multihead.fill_overflows",))
bug("multihead", "nanogpt_resid_dropout", "multihead as nanoGPT writes it with its residual dropout: dropout on the "
    "weights and again on the output", style("multihead_nanogpt"), ("return self.out_proj(y)", "return self.dropout(self.out_proj(y))"))
bug("causal", "raschka_mask_inverted", "causal as LLMs-from-scratch writes it, but hiding ~mask (the past) instead of the "
    "triu buffer", style("causal_raschka"), ("masked_fill_(self.mask.bool()", "masked_fill_(~self.mask.bool()"),
    shows=("causal.mask_inverted",))
bug("qkv", "raschka_keys_T", "SelfAttention_v1 as written for one sequence: queries @ keys.T",
    style("qkv_raschka"), ("attn_scores = queries @ keys.transpose(-2, -1)  # omega", "attn_scores = queries @ keys.T  # omega"),
    shows=("attention.batched_T",))
bug("qkv", "d2l_bmm", "scaled_dot_product_attention with torch.bmm (d2l's DotProductAttention): 3-D inputs only",
    (SC, "scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d_k)"), (RET, "return torch.bmm(torch.softmax(scores, dim=-1), values)"))

# ------------------------------------------------------------------ more students' bugs
bug("qkv", "softmax_over_queries", "scaled_dot_product_attention normalizes over the queries (dim=-2)",
    (RET, "return torch.softmax(scores, dim=-2) @ values"), shows=("attention.softmax_over_queries",))
bug("qkv", "queries_scaled_inplace", "scaled_dot_product_attention scales the caller's queries in place (queries /= ...)",
    (SC, "queries /= math.sqrt(d_k)\n    scores = queries @ keys.transpose(-2, -1)"))
bug("scores", "dot_item_loop", "dot sums a[i].item() * b[i].item() in a Python loop into a new tensor",
    ("return (a * b).sum()  # ()", "return torch.tensor(sum(a[i].item() * b[i].item() for i in range(a.shape[0])), "
     "dtype=a.dtype, device=a.device)"))
bug("quiz", "returns_weights", "decoder_attention returns the weights instead of the weighted sum",
    ("return (v, alphas) if return_weights else v", "return (v, alphas) if return_weights else alphas"),
    shows=("quiz.returns_weights",))
bug("context", "returns_weights", "context_vectors returns the attention weights instead of the context vectors",
    ("return weights @ x  # (..., T, d)", "return weights"))
bug("causal", "qkv_bias_ignored", "CausalAttention ignores qkv_bias (bias=False always)",
    ("""        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)""", """        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)"""))
bug("causal", "softmax_dim0", "CausalAttention normalizes over dim 0, the batch",
    (CW, "weights = self.dropout(torch.softmax(scores, dim=0))"))
bug("causal", "tilde_float_mask", "CausalAttention keeps a float tril buffer and inverts it with ~ (a TypeError)",
    ('self.register_buffer("mask", causal_mask(context_length), persistent=False)',
     'self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))'))
bug("causal", "mask_rows_sliced", "CausalAttention slices the mask's rows only (mask[:T])",
    (CF, 'scores = scores.masked_fill(~self.mask[:T], float("-inf"))'), shows=("causal.mask_not_sliced",))
bug("multihead", "merge_view", "MultiHeadAttention merges the transposed heads with view (not contiguous: a RuntimeError)",
    (MERGE, "context = (weights @ values).transpose(1, 2).view(B, T, -1)"))
bug("multihead", "scale_by_head_dim", "MultiHeadAttention divides the scores by head_dim, not its square root",
    (MS, "scores = queries @ keys.transpose(-2, -1) / self.head_dim"), shows=("multihead.scale_by_d",))
bug("multihead", "softmax_over_heads", "MultiHeadAttention normalizes over dim 1, the heads",
    (MW, "weights = self.dropout(torch.softmax(scores, dim=1))"))
bug("multihead", "qkv_bias_ignored", "MultiHeadAttention ignores qkv_bias (bias=False always)",
    ("""        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)""", """        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)"""))
bug("context", "raschka_double_loop", "attention_weights fills torch.empty(T, T) with torch.dot in a double loop (one "
    "sequence only, float32)", (AW, "T = x.shape[-2]\n    attn_scores = torch.empty(T, T)\n    for i, x_i in enumerate(x):\n"
                                   "        for j, x_j in enumerate(x):\n            attn_scores[i, j] = torch.dot(x_i, x_j)\n"
                                   "    return torch.softmax(attn_scores, dim=-1)"))
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
bug("softmax", "max_no_keepdim", "softmax takes the row max without keepdim=True",
    (SM, "z = z - z.amax(dim=dim)"), shows=("softmax.no_keepdim",))
bug("multihead", "head_dim_float", "MultiHeadAttention computes head_dim = d_out / num_heads, a float",
    ("self.num_heads, self.head_dim = num_heads, d_out // num_heads", "self.num_heads, self.head_dim = num_heads, d_out / num_heads"))
bug("causal", "dropout_on_scores", "CausalAttention applies dropout to the scores, before the softmax",
    (CW, "weights = torch.softmax(self.dropout(scores), dim=-1)"))
bug("causal", "scale_by_T", "CausalAttention scales by sqrt(keys.shape[1]), the sequence length",
    (CS, "scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[1])"))
ok("causal", "mask_in_forward", "causal with Llama's -inf triu(1) mask made in forward on x's device and dtype, added",
   (CF, 'scores = scores + torch.full((T, T), float("-inf"), device=x.device, dtype=x.dtype).triu(1)'))
bug("multihead", "assert_divisible", "MultiHeadAttention checks d_out % num_heads with assert (AssertionError, not "
    "ValueError), as LLMs-from-scratch does",
    ("""        if num_heads <= 0 or d_out % num_heads:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")""",
     """        assert d_out % num_heads == 0, "d_out must be divisible by num_heads\""""))
bug("context", "softmax_dim1", "attention_weights normalizes over dim 1 (right for one sequence, the queries in a batch)",
    (AW, "return torch.softmax(x @ x.transpose(-2, -1), dim=1)"), shows=("context.weights_transposed",))
bug("softmax", "max_namedtuple", "softmax subtracts x.max(dim, keepdim=True), a (values, indices) pair (a TypeError)",
    (SM, "z = z - z.max(dim=dim, keepdim=True)"))
ok("dictionary", "f_one_hot", "one_hot with nn.functional.one_hot(...).float(), the values from table.values()",
   ("""    vector = torch.zeros(n)  # (n,)
    vector[index] = 1.0
    return vector""", "    return torch.nn.functional.one_hot(torch.tensor(index), n).float()"),
   ("V = torch.tensor([table[k] for k in keys], dtype=torch.float32)  # (n, dv)",
    "V = torch.tensor(list(table.values()), dtype=torch.float32)"))
bug("scores", "attention_scores_bmm", "attention_scores uses torch.bmm, which takes 3-D tensors only",
    ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)", "return torch.bmm(queries, keys.transpose(-2, -1))"))
