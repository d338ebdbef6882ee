"""Variants of exercise context's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles, which earn full marks; loops and banned built-ins, which lose only their rule's share.
`grader check-exercise context` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part = variants.bug, variants.ok, variants.part

AW = "return torch.softmax(x @ x.transpose(-2, -1), dim=-1)  # (..., T, T)"

bug("context", "softmax_dim0", "attention_weights normalizes over dim 0 (columns), not the last dim",
    (AW, "return torch.softmax(x @ x.transpose(-2, -1), dim=0)"),
    shows=("context.softmax_dim0", "context.weights_transposed"))  # on one unbatched sequence dim 0 is dim -2
bug("context", "batched_T", "attention_weights uses x.T, which reverses every dim of a batched tensor",
    (AW, "return torch.softmax(x @ x.T, dim=-1)"), shows=("context.batched_T",))
bug("context", "transposed_weights", "context_vectors multiplies by the transposed weights",
    ("return weights @ x  # (..., T, d)", "return weights.transpose(-2, -1) @ x"), shows=("context.weights_transposed",))
bug("context", "x_at_weights", "context_vectors multiplies the wrong way round, x @ weights",
    ("return weights @ x  # (..., T, d)", "return x @ weights"), shows=("context.x_at_weights",))
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
bug("context", "returns_weights", "context_vectors returns the attention weights instead of the context vectors",
    ("return weights @ x  # (..., T, d)", "return weights"))
bug("context", "raschka_double_loop", "attention_weights fills torch.empty(T, T) with torch.dot in a double loop (one "
    "sequence only, float32)", (AW, "T = x.shape[-2]\n    attn_scores = torch.empty(T, T)\n    for i, x_i in enumerate(x):\n"
                                   "        for j, x_j in enumerate(x):\n            attn_scores[i, j] = torch.dot(x_i, x_j)\n"
                                   "    return torch.softmax(attn_scores, dim=-1)"))
bug("context", "softmax_dim1", "attention_weights normalizes over dim 1 (right for one sequence, the queries in a batch)",
    (AW, "return torch.softmax(x @ x.transpose(-2, -1), dim=1)"), shows=("context.weights_transposed",))
bug("context", "returns_x", "context_vectors returns x itself, not the weighted mix",
    ("return weights @ x  # (..., T, d)", "return x"), shows=("context.returns_x",))
