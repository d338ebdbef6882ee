"""Variants of exercise softmax's reference (grader/suites/variants.py): real bugs, which its suite must catch and
its hints name; other correct styles, which earn full marks; loops and banned built-ins, which lose only their rule's share.
`grader check-exercise softmax` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part = variants.bug, variants.ok, variants.part

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
bug("softmax", "max_unsqueezed_last", "softmax puts the row max back at the last dim (max(dim).values.unsqueeze(-1))",
    (SM, "z = z - z.max(dim=dim).values.unsqueeze(-1)"), shows=("softmax.max_at_last_dim",))
bug("softmax", "max_over_last_dim", "softmax subtracts the max along the last dim while it sums along dim",
    (SM, "z = z - z.amax(dim=-1, keepdim=True)"), shows=("softmax.max_at_last_dim",))
bug("softmax", "temperature_multiplied", "softmax multiplies by the temperature instead of dividing",
    ("z = x / temperature", "z = x * temperature"), shows=("softmax.temperature_multiplied",))
bug("softmax", "global_max", "softmax subtracts the max of the whole tensor, not each row's",
    (SM, "z = z - z.max()"), shows=("softmax.global_max",))
bug("softmax", "inplace", "softmax divides and shifts the caller's tensor in place (x /= t, x -= max)",
    ("z = x / temperature\n", "x /= temperature\n    z = x\n"), (SM, "z -= z.amax(dim=dim, keepdim=True)"))
bug("softmax", "inplace_at_temperature_one", "softmax shifts the caller's tensor in place when the temperature is 1",
    ("z = x / temperature\n", "z = x if temperature == 1 else x / temperature\n"),
    (SM, "z.sub_(z.amax(dim=dim, keepdim=True))"))
bug("softmax", "inplace_on_double", "softmax works in place on x.double(), which is x itself for float64 inputs",
    ("z = x / temperature\n", "z = x.double()\n    z /= temperature\n"), (SM, "z -= z.amax(dim=dim, keepdim=True)"),
    ("return e / e.sum(dim=dim, keepdim=True)", "return (e / e.sum(dim=dim, keepdim=True)).to(x.dtype)"))
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
part("softmax", "row_loop", "softmax normalizes one row at a time in a Python loop over the other dims",
     (SOFTMAX_BODY, "    z = (x / temperature).movedim(dim, -1)\n    flat = z.reshape(-1, z.shape[-1])\n"
                    "    rows = [(r - r.max()).exp() / (r - r.max()).exp().sum() for r in flat]\n"
                    "    return torch.stack(rows).reshape(z.shape).movedim(-1, dim) if rows else z.movedim(-1, dim)"))
part("softmax", "torch_softmax", "softmax calls torch.softmax (a banned built-in); everything else right",
     (SOFTMAX_BODY, "    return torch.softmax(x / temperature, dim=dim)"))
part("softmax", "special_softmax", "softmax calls torch.special.softmax (a banned built-in under another name)",
     (SOFTMAX_BODY, "    return torch.special.softmax(x / temperature, dim=dim)"))
part("softmax", "aten_softmax", "softmax calls the operator torch.ops.aten._softmax directly (a banned built-in)",
     (SOFTMAX_BODY, "    return torch.ops.aten._softmax.default(x / temperature, dim, False)"))
ok("softmax", "safe_rows", "softmax that shifts a row whose max is -inf by 0 instead, in an if on any such row",
   (SM, "row_max = z.amax(dim=dim, keepdim=True)\n    if torch.isneginf(row_max).any():\n        row_max = "
        "torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)\n    z = z - row_max"))
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
bug("softmax", "max_no_keepdim", "softmax takes the row max without keepdim=True",
    (SM, "z = z - z.amax(dim=dim)"), shows=("softmax.no_keepdim",))
bug("softmax", "max_namedtuple", "softmax subtracts x.max(dim, keepdim=True), a (values, indices) pair (a TypeError)",
    (SM, "z = z - z.max(dim=dim, keepdim=True)"))
bug("softmax", "whole_tensor", "softmax normalizes over the whole tensor (a global max and a global sum)",
    (SM, "z = z - z.max()"), ("return e / e.sum(dim=dim, keepdim=True)", "return e / e.sum()"),
    shows=("softmax.whole_tensor",))
bug("softmax", "temperature_ignored", "softmax ignores the temperature",
    ("z = x / temperature", "z = x"), shows=("softmax.temperature_ignored",))
bug("softmax", "dim_zero_always", "softmax always normalizes dim 0, whatever `dim` says",
    (SM, "z = z - z.amax(dim=0, keepdim=True)"), ("return e / e.sum(dim=dim, keepdim=True)", "return e / e.sum(dim=0, keepdim=True)"),
    shows=("softmax.wrong_dim",))
bug("softmax", "max_of_x", "softmax subtracts the max of x, not of x / t: NaN for large scores at t != 1 (walk-through 9)",
    (SM, "z = z - x.amax(dim=dim, keepdim=True)"))  # its NaNs are no other mistake's: the check says z = x / t
bug("softmax", "no_return", "softmax computes the weights and forgets to return them (handout walk-through 12)",
    ("return e / e.sum(dim=dim, keepdim=True)", "weights = e / e.sum(dim=dim, keepdim=True)"))
