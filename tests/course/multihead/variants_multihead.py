"""Variants of exercise multihead's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles (whole files in other projects' manner among them, styles/), which earn full
marks; loops and banned built-ins, which lose only their rule's share. `grader check-exercise multihead` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part, style = variants.bug, variants.ok, variants.part, variants.style

SPLIT = "return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)"
MERGE = "context = (weights @ values).transpose(1, 2).reshape(B, T, -1)  # (B, T, d_out)"
MS = "scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, heads, T, T)"
MM = 'scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))'
MW = "weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, heads, T, T)"

bug("multihead", "split_no_transpose", "MultiHeadAttention splits heads with view(B, heads, T, head_dim), no transpose",
    (SPLIT, "return t.view(B, self.num_heads, T, self.head_dim)"), shows=("multihead.split_no_transpose",))
bug("multihead", "values_not_transposed", "MultiHeadAttention views the values as heads without transposing them",
    ("split_heads(self.W_value(x))", "self.W_value(x).view(B, T, self.num_heads, self.head_dim)"),
    shows=("multihead.values_not_transposed",))
bug("multihead", "merge_no_transpose", "MultiHeadAttention merges heads with reshape alone (no transpose back)",
    (MERGE, "context = (weights @ values).reshape(B, T, -1)"), shows=("multihead.merge_no_transpose",))
bug("multihead", "split_merge_no_transpose", "MultiHeadAttention splits heads with view(B, heads, T, head_dim) and merges "
    "them back with reshape alone (the handout's trap, made symmetrically)",
    (SPLIT, "return t.view(B, self.num_heads, T, self.head_dim)"), (MERGE, "context = (weights @ values).reshape(B, T, -1)"),
    shows=("multihead.split_merge_no_transpose",))
bug("multihead", "einsum_scores_transposed", "MultiHeadAttention's einsum scores name the output indices 'bhkq'",
    (MS, "scores = torch.einsum('bhqd,bhkd->bhkq', queries, keys) / math.sqrt(self.head_dim)"),
    shows=("multihead.scores_transposed",))
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
bug("multihead", "dropout_rate_fixed", "MultiHeadAttention ignores its dropout argument: nn.Dropout(0.1)",
    ("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout(0.1)"), shows=("dropout.fixed_rate",))
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
bug("multihead", "mask_times_inf", "MultiHeadAttention adds (~mask) * -inf to the scores, NaN where 0 * -inf",
    (MM, 'scores = scores + (~self.mask[:T, :T]) * float("-inf")'), shows=("multihead.mask_times_inf",))
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
ok("multihead", "raschka", "multihead as LLMs-from-scratch writes it: masked_fill_ on the scores, contiguous().view",
   style("raschka"))
ok("multihead", "nanogpt", "multihead as nanoGPT writes it: one fused projection split in three, (1, 1, T, T) bias buffer",
   style("nanogpt"))
ok("multihead", "mingpt", "multihead as minGPT writes it: size(), view and transpose per role, F.softmax",
   style("mingpt"))
ok("multihead", "hf_gpt2", "multihead as Hugging Face's GPT-2 writes it: torch.where with finfo(dtype).min, permute",
   style("hf_gpt2"))
ok("multihead", "llama", "multihead as Llama writes it: a -inf triu(1) float buffer added to the scores, type_as",
   style("llama"))
ok("multihead", "annotated", "multihead as the Annotated Transformer writes it: attention() with masked_fill(mask == 0)",
   style("annotated"))
ok("multihead", "d2l", "multihead as d2l writes it: heads folded into the batch, torch.bmm, masked_softmax of valid lens "
   "setting masked entries to -1e6 (X[~mask] = -1e6 stores -inf in float16; exp(-1e6 - max) is 0 in the wider dtypes)",
   style("d2l"))
ok("multihead", "einsum", "multihead with einsum on (B, T, heads, head_dim), torch.where on a triu future mask",
   style("einsum"))
bug("multihead", "llama_float32_softmax", "multihead as Llama writes it, softmax in float32 then type_as: float64 loses precision",
    style("llama"), ("F.softmax(scores, dim=-1).type_as(xq)", "F.softmax(scores.float(), dim=-1).type_as(xq)"),
    shows=("float64.less_precise",))
bug("multihead", "annotated_minus_1e9", "multihead as the Annotated Transformer writes it, masked_fill(mask == 0, -1e9): "
    "overflows float16", style("annotated"), ('float("-inf"))', "-1e9)"), shows=("multihead.fill_overflows",))
bug("multihead", "nanogpt_resid_dropout", "multihead as nanoGPT writes it with its residual dropout: dropout on the "
    "weights and again on the output", style("nanogpt"), ("return self.out_proj(y)", "return self.dropout(self.out_proj(y))"))
bug("multihead", "merge_view", "MultiHeadAttention merges the transposed heads with view (not contiguous: a RuntimeError)",
    (MERGE, "context = (weights @ values).transpose(1, 2).view(B, T, -1)"))
bug("multihead", "scale_by_head_dim", "MultiHeadAttention divides the scores by head_dim, not its square root",
    (MS, "scores = queries @ keys.transpose(-2, -1) / self.head_dim"), shows=("multihead.scale_by_d",))
bug("multihead", "softmax_over_heads", "MultiHeadAttention normalizes over dim 1, the heads",
    (MW, "weights = self.dropout(torch.softmax(scores, dim=1))"), shows=("multihead.softmax_over_heads",))
bug("multihead", "qkv_bias_ignored", "MultiHeadAttention ignores qkv_bias (bias=False always)",
    ("""        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)""", """        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)"""))
bug("multihead", "head_dim_float", "MultiHeadAttention computes head_dim = d_out / num_heads, a float",
    ("self.num_heads, self.head_dim = num_heads, d_out // num_heads", "self.num_heads, self.head_dim = num_heads, d_out / num_heads"))
bug("multihead", "assert_divisible", "MultiHeadAttention checks d_out % num_heads with assert (AssertionError, not "
    "ValueError), as LLMs-from-scratch does",
    ("""        if num_heads <= 0 or d_out % num_heads:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")""",
     """        assert d_out % num_heads == 0, "d_out must be divisible by num_heads\""""))
bug("multihead", "no_scaling", "MultiHeadAttention does not scale the scores by sqrt(head_dim)",
    (MS, "scores = queries @ keys.transpose(-2, -1)  # (B, heads, T, T)"), shows=("multihead.no_scaling",))
bug("multihead", "view_after_transpose", "MultiHeadAttention merges the heads with view after a transpose",
    (MERGE, "context = (weights @ values).transpose(1, 2).view(B, T, -1)"))
bug("multihead", "no_max", "MultiHeadAttention's softmax is exp / sum without the max: NaN once exp overflows "
    "(walk-through 9)", (MW, "e = scores.exp()\n        weights = self.dropout(e / e.sum(-1, keepdim=True))"),
    shows=("multihead.no_max",))
bug("multihead", "renormalized_after_softmax", "MultiHeadAttention multiplies the softmax of every score by the mask and "
    "renormalizes: NaN once a masked score dwarfs the allowed ones (review 9)",
    (MM, "pass"), (MW, "weights = torch.softmax(scores, dim=-1) * self.mask[:T, :T]\n"
                       "        weights = self.dropout(weights / weights.sum(dim=-1, keepdim=True))"),
    shows=("multihead.renormalized_after_softmax",))
bug("multihead", "out_proj_bias_follows_qkv_bias", "MultiHeadAttention gives out_proj a bias only with qkv_bias "
    "(walk-through 10's S1: the checks name the parameter missing)",
    ("self.out_proj = nn.Linear(d_out, d_out)", "self.out_proj = nn.Linear(d_out, d_out, bias=qkv_bias)"))
bug("multihead", "dropout_in_place", "MultiHeadAttention's dropout is nn.Dropout(dropout, inplace=True): right values, "
    "a training step's backward pass fails (walk-through 11)",
    ("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout(dropout, inplace=True)"))
bug("multihead", "mask_one_ahead", "MultiHeadAttention's mask buffer keeps the first diagonal above too (tril(1))",
    ('self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)',
     'self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(1), persistent=False)'),
    shows=("multihead.one_ahead",))
