"""Variants of exercise dictionary's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles, which earn full marks; loops and banned built-ins, which lose only their rule's share.
`grader check-exercise dictionary` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part = variants.bug, variants.ok, variants.part

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
ok("dictionary", "f_one_hot", "one_hot with nn.functional.one_hot(...).float(), the values from table.values()",
   ("""    vector = torch.zeros(n)  # (n,)
    vector[index] = 1.0
    return vector""", "    return torch.nn.functional.one_hot(torch.tensor(index), n).float()"),
   ("V = torch.tensor([table[k] for k in keys], dtype=torch.float32)  # (n, dv)",
    "V = torch.tensor(list(table.values()), dtype=torch.float32)"))
bug("dictionary", "keys_T", "attention uses K.T, which reverses every dim of batched keys",
    (DW, "weights = torch.softmax(Q @ K.T / temperature, dim=-1)"), shows=("dictionary.batched_T",))
bug("dictionary", "lookup_returns_stored", "lookup returns the stored value instead of blending by attention",
    ("return attention(q, K, V, temperature).squeeze(0)  # (dv,)", "return V[keys.index(key)]"),
    shows=("dictionary.lookup_stored_value",))
bug("dictionary", "no_max", "attention's softmax is exp / sum without the max (overflows for large scores)",
    (DW, "scores = Q @ K.transpose(-2, -1) / temperature\n    weights = scores.exp() / scores.exp().sum(-1, keepdim=True)"),
    shows=("dictionary.no_max",))
bug("dictionary", "one_hot_shifted", "one_hot puts the 1 one position too far",
    ("vector[index] = 1.0", "vector[(index + 1) % n] = 1.0"), shows=("dictionary.one_hot_off_by_one",))
bug("dictionary", "softmax_over_queries", "attention normalizes over the queries (dim -2)",
    (DW, "weights = torch.softmax(Q @ K.transpose(-2, -1) / temperature, dim=-2)"),
    shows=("dictionary.softmax_over_queries",))
bug("dictionary", "temperature_ignored", "attention ignores the temperature",
    (DW, "weights = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)"), shows=("dictionary.temperature_ignored",))
part("dictionary", "low_temperature_shortcut", "lookup returns the stored value without attention at a low temperature",
     ("    return attention(q, K, V, temperature).squeeze(0)  # (dv,)",
      "    if temperature < 0.1:\n        return V[keys.index(key)]\n"
      "    return attention(q, K, V, temperature).squeeze(0)  # (dv,)"))
