"""Variants of exercise causal's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles (whole files in other projects' manner among them, styles/), which earn full
marks; loops and banned built-ins, which lose only their rule's share. `grader check-exercise causal` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part, style = variants.bug, variants.ok, variants.part, variants.style

CM = "return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)"
CF = 'scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))'
CW = "weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, T, T)"
CS = "scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])  # (B, T, T)"

bug("causal", "mask_after_softmax", "CausalAttention zeroes future weights after the softmax",
    (CF, "pass"), (CW, "weights = self.dropout(torch.softmax(scores, dim=-1) * self.mask[:T, :T])"), shows=("causal.mask_after_softmax",))
bug("causal", "mask_with_zero", "CausalAttention fills future scores with 0 instead of -inf",
    (CF, "scores = scores.masked_fill(~self.mask[:T, :T], 0.0)"), shows=("causal.mask_with_zero",))
bug("causal", "mask_times_inf", "CausalAttention adds a mask made as triu(ones) * -inf, NaN where 0 * -inf (walk-through 10)",
    ('self.register_buffer("mask", causal_mask(context_length), persistent=False)',
     'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1) * float("-inf"))'),
    (CF, "scores = scores + self.mask[:T, :T]"), shows=("causal.mask_times_inf",))
bug("causal", "scores_transposed", "CausalAttention's einsum scores name the output indices 'bkq'",
    (CS, "scores = torch.einsum('bqd,bkd->bkq', queries, keys) / math.sqrt(keys.shape[-1])"),
    shows=("causal.scores_transposed",))
bug("causal", "weights_masked_in_place", "CausalAttention masks the softmax's output in place and renormalizes: right "
    "values on ordinary inputs, NaN where a masked score dwarfs the allowed ones, a backward pass that fails",
    (CF, "pass"), (CW, "weights = torch.softmax(scores, dim=-1)\n        weights.masked_fill_(~self.mask[:T, :T], 0.0)\n"
                       "        weights = self.dropout(weights / weights.sum(dim=-1, keepdim=True))"),
    shows=("causal.renormalized_after_softmax",))
bug("causal", "renormalized_after_softmax", "CausalAttention multiplies the softmax of every score by the mask and "
    "renormalizes (LLMs from scratch, 3.5.1): NaN once a masked score dwarfs the allowed ones (review 9)",
    (CF, "pass"), (CW, "weights = torch.softmax(scores, dim=-1) * self.mask[:T, :T]\n"
                       "        weights = self.dropout(weights / weights.sum(dim=-1, keepdim=True))"),
    shows=("causal.renormalized_after_softmax",))
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
bug("causal", "dropout_rate_fixed", "CausalAttention ignores its dropout argument: nn.Dropout(0.1) (walk-through 13)",
    ("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout(0.1)"), shows=("dropout.fixed_rate",))
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
bug("causal", "mask_not_buffer_reading_x", "CausalAttention keeps the mask as a plain attribute and reads a value of x "
    "first (an if on isfinite(x).all(), which meta tensors answered by raising: the device rule was judged elsewhere)",
    ('self.register_buffer("mask", causal_mask(context_length), persistent=False)', "self.mask = causal_mask(context_length)"),
    ("        T = x.shape[-2]\n", "        if not torch.isfinite(x).all():\n            raise ValueError(\"x holds NaN or inf\")\n"
                                   "        T = x.shape[-2]\n"))
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
ok("causal", "mask_if_any_hidden", "causal that masks only when the mask hides something (a bool mask's .all() in an if, "
   "which the syllabus allows off the differentiable path)",
   (CF, "allowed = self.mask[:T, :T]\n        if not allowed.all():\n            scores = scores.masked_fill(~allowed, "
        "float(\"-inf\"))"))
ok("causal", "where_float_mask", "causal with a float tril buffer, torch.where and F.dropout(training=self.training)",
   ('self.register_buffer("mask", causal_mask(context_length), persistent=False)',
    'self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))'),
   (CF, "scores = torch.where(self.mask[:T, :T] == 1, scores, float('-inf'))"),
   (CW, "weights = nn.functional.dropout(torch.softmax(scores, dim=-1), p=self.dropout.p, training=self.training)"))
ok("causal", "dropout_transposed", "causal with torch.dropout on a transposed copy of the weights (another layout in "
   "memory, so the random numbers fall in another order)",
   (CW, "weights = torch.dropout(torch.softmax(scores, dim=-1).mT.contiguous(), self.dropout.p, self.training).mT"))
ok("causal", "raschka", "causal as LLMs-from-scratch writes it: float triu buffer, masked_fill_(mask.bool(), -torch.inf)",
   style("raschka"))
ok("causal", "einsum", "causal with einsum, queries scaled by d_out ** -0.5 first, an additive -inf mask, .softmax(-1)",
   style("einsum"))
bug("causal", "raschka_mask_inverted", "causal as LLMs-from-scratch writes it, but hiding ~mask (the past) instead of the "
    "triu buffer", style("raschka"), ("masked_fill_(self.mask.bool()", "masked_fill_(~self.mask.bool()"),
    shows=("causal.mask_inverted",))
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
bug("causal", "dropout_on_scores", "CausalAttention applies dropout to the scores, before the softmax",
    (CW, "weights = torch.softmax(self.dropout(scores), dim=-1)"))
bug("causal", "scale_by_T", "CausalAttention scales by sqrt(keys.shape[1]), the sequence length",
    (CS, "scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[1])"), shows=("causal.scale_by_length",))
ok("causal", "mask_in_forward", "causal with Llama's -inf triu(1) mask made in forward on x's device and dtype, added",
   (CF, 'scores = scores + torch.full((T, T), float("-inf"), device=x.device, dtype=x.dtype).triu(1)'))
bug("causal", "relu_output", "CausalAttention applies a relu to its result",
    ("return weights @ values  # (B, T, d_out)", "return torch.relu(weights @ values)"),
    shows=("causal.activation_on_output",))
bug("causal", "mask_by_arithmetic", "CausalAttention inverts the bool mask with 1 - mask",
    ('scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))',
     'scores = scores.masked_fill((1 - self.mask[:T, :T]).bool(), float("-inf"))'))
bug("causal", "no_max", "CausalAttention's softmax is exp / sum without the max: NaN once exp overflows (walk-through 9)",
    (CW, "e = scores.exp()\n        weights = self.dropout(e / e.sum(-1, keepdim=True))"), shows=("causal.no_max",))
bug("causal", "dropout_in_place", "CausalAttention's dropout is nn.Dropout(dropout, inplace=True): right values, a "
    "training step's backward pass fails (walk-through 11)",
    ("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout(dropout, inplace=True)"))
bug("causal", "mask_one_ahead", "causal_mask keeps the first diagonal above too (tril(1)): each position sees the next",
    (CM, "return torch.ones(T, T, dtype=torch.bool, device=device).tril(1)"), shows=("causal.one_ahead",))
bug("causal", "bias_always", "CausalAttention gives its projections a bias whatever qkv_bias says (walk-through 11: the "
    "eval-mode dropout check blamed dropout for the extra biases)",
    ("""        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)""", """        self.W_query = nn.Linear(d_in, d_out)
        self.W_key = nn.Linear(d_in, d_out)
        self.W_value = nn.Linear(d_in, d_out)"""))
bug("causal", "output_detached", "CausalAttention detaches its result: only the gradients rule fails (review 11: the "
    "training-mode dropout check charged it too)",
    ("return weights @ values  # (B, T, d_out)", "return (weights @ values).detach()  # (B, T, d_out)"))
