"""Variants of exercise scores's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles, which earn full marks; loops and banned built-ins, which lose only their rule's share.
`grader check-exercise scores` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part = variants.bug, variants.ok, variants.part

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
bug("scores", "dot_item_loop", "dot sums a[i].item() * b[i].item() in a Python loop into a new tensor",
    ("return (a * b).sum()  # ()", "return torch.tensor(sum(a[i].item() * b[i].item() for i in range(a.shape[0])), "
     "dtype=a.dtype, device=a.device)"))
bug("scores", "attention_scores_bmm", "attention_scores uses torch.bmm, which takes 3-D tensors only",
    ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)", "return torch.bmm(queries, keys.transpose(-2, -1))"))
bug("scores", "dot_no_sum", "dot returns the element-wise products, not their sum",
    ("return (a * b).sum()  # ()", "return a * b"), shows=("scores.dot_no_sum",))
bug("scores", "pairwise_features", "pairwise_scores computes x^T x, comparing features instead of tokens",
    ("return x @ x.transpose(-2, -1)  # (..., T, T)", "return x.transpose(-2, -1) @ x"),
    shows=("scores.pairwise_features",))
bug("scores", "pairwise_scaled", "pairwise_scores divides by sqrt(d) although this exercise has no scaling",
    ("return x @ x.transpose(-2, -1)  # (..., T, T)", "return x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5"),
    shows=("scores.pairwise_scaled",))
bug("scores", "attention_scores_features", "attention_scores computes queries^T keys, comparing features",
    ("return queries @ keys.transpose(-2, -1)  # (..., Tq, Tk)", "return queries.transpose(-2, -1) @ keys"),
    shows=("scores.features",))
