"""Variants of exercise quiz's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles, which earn full marks; loops and banned built-ins, which lose only their rule's share.
`grader check-exercise quiz` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part = variants.bug, variants.ok, variants.part

QS = "alphas = torch.softmax(scores, dim=-1)  # (..., n)"
QV = "v = (alphas.unsqueeze(-1) * H).sum(-2)  # (..., d)"

bug("quiz", "softmax_dim0", "decoder_attention normalizes the scores over dim 0 (wrong with batch dims)",
    (QS, "alphas = torch.softmax(scores, dim=0)"), shows=("quiz.softmax_dim0",))
bug("quiz", "no_softmax", "decoder_attention uses the raw scores as weights (no softmax)",
    (QS, "alphas = scores"), shows=("quiz.no_softmax",))
bug("quiz", "swapped_return", "decoder_attention returns (alphas, v) instead of (v, alphas)",
    ("return (v, alphas) if return_weights else v", "return (alphas, v) if return_weights else v"),
    shows=("quiz.swapped_return",))
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
bug("quiz", "weights_returned_detached", "decoder_attention returns the weights detached (gradients reach v only)",
    ("return (v, alphas) if return_weights else v", "return (v, alphas.detach()) if return_weights else v"))
bug("quiz", "result_detached", "decoder_attention returns v detached when it returns v alone",
    ("return (v, alphas) if return_weights else v", "return (v, alphas) if return_weights else v.detach()"))
part("quiz", "state_loop", "decoder_attention scores and sums the states in a Python loop",
     ("scores = (H * s.unsqueeze(-2)).sum(-1)  # (..., n)",
      "scores = torch.stack([(H[..., i, :] * s).sum(-1) for i in range(H.shape[-2])], dim=-1)"))
part("quiz", "builtin_sdpa", "decoder_attention gets v from torch's scaled_dot_product_attention (banned)",
     (QV, "v = torch.nn.functional.scaled_dot_product_attention(s.unsqueeze(-2), H, H, scale=1.0).squeeze(-2)"))
ok("quiz", "matmul", "decoder_attention with matmuls (H @ s and alphas @ H) instead of broadcast sums",
   ("scores = (H * s.unsqueeze(-2)).sum(-1)  # (..., n)", "scores = (H @ s.unsqueeze(-1)).squeeze(-1)"),
   (QV, "v = (alphas.unsqueeze(-2) @ H).squeeze(-2)"))
bug("quiz", "returns_weights", "decoder_attention returns the weights instead of the weighted sum",
    ("return (v, alphas) if return_weights else v", "return (v, alphas) if return_weights else alphas"),
    shows=("quiz.returns_weights",))
part("quiz", "typed_answer", "quiz_answer returns v typed in, not computed with decoder_attention",
     ("return decoder_attention(s, H)  # (d,)", "return torch.tensor([0.4387, 0.4855])"))
