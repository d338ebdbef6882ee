"""Hidden suite, exercise 8: multi-head causal attention (MultiHeadAttention)."""
import hints_multihead as known
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites import modules as M
from grader.suites.contract import Contract, HalfInputs, Size, Subject
from solutions import multihead as ref

pytestmark = pytest.mark.multihead


@st.composite
def multihead_cases(draw, heads=(2, 4)) -> S.Case:
    """x (B, T, d_in), num_heads >= 2 and head_dim >= 2, all different, d_out = heads * head_dim (also different)."""
    n_heads = draw(st.integers(*heads))
    others = [v for v in range(S.LO, 8) if v != n_heads]
    B, T, d_in, head_dim = draw(st.permutations(others))[:4]
    d_out = n_heads * head_dim
    if d_out in (B, T, d_in):
        d_in = next(v for v in range(S.LO, 12) if v not in (B, T, n_heads, head_dim, d_out))
    return S.Case(dict(B=B, T=T, d_in=d_in, heads=n_heads, head_dim=head_dim, d_out=d_out), (), draw(S.SEEDS),
                  draw(st.sampled_from([1.0, 2.0])), extra_context=draw(st.sampled_from([0, 0, 2])),
                  qkv_bias=draw(st.booleans()))


WHAT = "MultiHeadAttention(x)"


def _reference(case, device, dropout=0.0):
    C.seed(case.seed)
    return ref.MultiHeadAttention(case.d_in, case.d_out, case.T + case.extra_context, dropout, case.heads,
                                  case.qkv_bias).to(device)


def _student(student, reference, case, device, dtype=None, dropout=0.0, mode="eval"):
    return M.twin(student.multihead.MultiHeadAttention, reference, case.d_in, case.d_out, case.T + case.extra_context,
                  dropout, case.heads, case.qkv_bias, what="MultiHeadAttention", device=device, dtype=dtype,
                  mode=mode)


def _on(x, heads, context_length):
    return (f"{C.describe(x=x)}, num_heads={heads}, "
            f"context_length {'= T' if context_length == x.shape[-2] else '> T'}")


def _check(student, course, module, reference, x, heads, context_length, what=WHAT, generic=None, magnitude=0.0):
    on = _on(x, heads, context_length)
    got = C.attempt(lambda: module(x), what, on, lambda: known.multihead_hints(reference.eval(), x, heads, context_length))
    rtol, atol = C.tolerance(course, torch.float32, magnitude) if magnitude else (None, None)
    C.expect_close(got, M.module_reference(reference.eval(), x), what=what, on=on, course=course, rtol=rtol, atol=atol,
                   hints=lambda: known.multihead_hints(*((reference.eval(), x) if magnitude else  # overflow: x's dtype
                                                         (M.wide(reference).eval(), x.double())), heads, context_length),
                   generic=generic or "project once, view(B, T, num_heads, head_dim).transpose(1, 2), "
                                      "scores / sqrt(head_dim), -inf above the diagonal, softmax, dropout, @ values, "
                                      "transpose(1, 2) back, reshape to (B, T, d_out), out_proj.")


@pytest.mark.rule
@pytest.mark.weight(1)
@S.examples(2)
@given(case=multihead_cases())
def test_seeded_init(student, course, case):
    """MultiHeadAttention creates W_query, W_key, W_value (nn.Linear(d_in, d_out)), then out_proj, in that order."""
    context_length = case.T + case.extra_context
    on = f"d_in={case.d_in}, d_out={case.d_out}, num_heads={case.heads}, qkv_bias={case.qkv_bias}"
    args = (case.d_in, case.d_out, context_length, 0.0, case.heads, case.qkv_bias)
    M.expect_seeded_init(student.multihead.MultiHeadAttention, args, {}, case.seed,
                         lambda: ref.MultiHeadAttention(*args), "MultiHeadAttention", on,
                         "create W_query, W_key, W_value (nn.Linear(d_in, d_out, bias=qkv_bias)), then out_proj = "
                         "nn.Linear(d_out, d_out), in that order; the mask is a buffer, not a parameter.")


@pytest.mark.weight(5)
@S.examples(6)
@given(case=multihead_cases())
def test_values(student, course, device, case):
    """MultiHeadAttention(x) equals the reference with the same weights: 2-4 heads of size >= 2, T > 1, all sizes different."""
    reference = _reference(case, device)
    module = _student(student, reference, case, device)
    x = case.randn(case.B, case.T, case.d_in, dtype=torch.float32, device=device)
    _check(student, course, module, reference, x, case.heads, case.T + case.extra_context)


@pytest.mark.weight(1)
def test_single_head_and_head_dim_one(student, course, device):
    """One head (head_dim = d_out) and heads of size 1 (head_dim = 1) both match the reference."""
    for heads, d_out in ((1, 6), (6, 6)):
        C.seed(course.seed + heads)
        reference = ref.MultiHeadAttention(4, d_out, 5, 0.0, heads).to(device)
        module = M.twin(student.multihead.MultiHeadAttention, reference, 4, d_out, 5, 0.0, heads,
                        what="MultiHeadAttention", device=device, mode="eval")
        x = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(course.seed)).to(device)
        _check(student, course, module, reference, x, heads, 5)


@pytest.mark.weight(1)
def test_out_proj_applied(student, course, device):
    """The merged heads go through out_proj (its weight and its non-zero bias change the result)."""
    C.seed(course.seed)
    reference = ref.MultiHeadAttention(3, 8, 6, 0.0, 2).to(device)
    with torch.no_grad():
        reference.out_proj.bias.uniform_(0.5, 1.0)
    module = M.twin(student.multihead.MultiHeadAttention, reference, 3, 8, 6, 0.0, 2, what="MultiHeadAttention",
                    device=device, mode="eval")
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(course.seed)).to(device)
    _check(student, course, module, reference, x, 2, 6,
           generic="the last step is self.out_proj(context): an nn.Linear(d_out, d_out) with a bias, created after the "
                   "three projections.")


LARGEST_SCORE = 300.0  # exp of a float32 past 88 overflows: a softmax that does not subtract the row's max gives NaN


@pytest.mark.weight(1)
def test_large_inputs(student, course, device):
    """Large inputs (a head's largest allowed score 300) give finite results: -inf masking, then a stable softmax."""
    C.seed(course.seed + 2)
    reference = ref.MultiHeadAttention(4, 6, 5, 0.0, 2).to(device)
    module = M.twin(student.multihead.MultiHeadAttention, reference, 4, 6, 5, 0.0, 2, what="MultiHeadAttention",
                    device=device, mode="eval")
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(course.seed + 2)).to(device)
    with torch.no_grad():  # no bias: the scores grow with the square of x
        queries, keys = (layer(x).view(2, 5, 2, 3).transpose(1, 2) for layer in (reference.W_query, reference.W_key))
        scores = (queries @ keys.transpose(-2, -1)).tril() / 3 ** 0.5
    x = x * (LARGEST_SCORE / float(scores.abs().max())) ** 0.5
    _check(student, course, module, reference, x, 2, 5, magnitude=LARGEST_SCORE)


@pytest.mark.weight(1)
def test_head_scaling(student, course, device):
    """Each head scales its scores by sqrt(head_dim), not by sqrt(d_out) or d_out."""
    C.seed(course.seed + 1)
    reference = ref.MultiHeadAttention(5, 12, 4, 0.0, 4).to(device)
    with torch.no_grad():
        reference.W_query.weight.mul_(3)
        reference.W_key.weight.mul_(3)
    module = M.twin(student.multihead.MultiHeadAttention, reference, 5, 12, 4, 0.0, 4, what="MultiHeadAttention",
                    device=device, mode="eval")
    x = torch.randn(2, 4, 5, generator=torch.Generator().manual_seed(course.seed + 1)).to(device)
    _check(student, course, module, reference, x, 4, 4,
           generic="divide each head's scores by math.sqrt(head_dim), head_dim = d_out // num_heads.")


@pytest.mark.rule
@pytest.mark.weight(1)
@S.examples(4)
@given(drawn=S.with_split(multihead_cases()))
def test_no_peeking(student, course, device, drawn):
    """Changing later tokens leaves every earlier output unchanged, in every head."""
    case, t = drawn
    reference = _reference(case, device)
    module = _student(student, reference, case, device, dtype=torch.float64)
    x = case.randn(case.B, case.T, case.d_in, dtype=torch.float64, device=device)
    changed = x.clone()
    changed[:, t:] = case.randn(case.B, case.T - t, case.d_in, dtype=torch.float64, device=device) * 3
    on = _on(x, case.heads, case.T + case.extra_context)
    M.earlier_outputs_unchanged(module, x, changed, t, result_shape=(case.B, case.T, case.d_out), what=WHAT, on=on,
                                hint="check which triangle your mask keeps, that it is applied with -inf before the softmax, "
                                     "and that the heads are split with view(B, T, num_heads, head_dim).transpose(1, 2) (a direct view mixes tokens).")


@pytest.mark.weight(1)
@S.examples(3)
@given(case=multihead_cases())
def test_dropout_training(student, course, device, case):
    """In training mode, dropout acts once on the attention weights (in any layout, drawn in any order)."""
    reference = _reference(case, device, dropout=0.5).double()
    module = _student(student, reference, case, device, dtype=torch.float64, dropout=0.5, mode="train")
    x = case.randn(case.B, case.T, case.d_in, dtype=torch.float64, device=device)
    on = _on(x, case.heads, case.T + case.extra_context) + ", training mode, dropout 0.5"
    M.dropout_in_training(module, reference, x, what=WHAT, on=on, course=course,
                          generic="apply self.dropout once, to the attention weights of every head right after the "
                                  "softmax (not to the scores, the context or the output).")


@pytest.mark.rule
@pytest.mark.weight(1)
def test_dropout_eval(student, course, device):
    """In eval mode, dropout does nothing: the result depends neither on the dropout rate nor on the random state."""
    C.seed(course.seed)
    reference = ref.MultiHeadAttention(3, 6, 5, 0.5, 3).to(device)
    module, without = (M.twin(student.multihead.MultiHeadAttention, reference, 3, 6, 5, p, 3,
                              what="MultiHeadAttention", device=device, mode="eval") for p in (0.5, 0.0))
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(course.seed)).to(device)
    M.dropout_off_in_eval(module, without, x, result_shape=(2, 5, 6), what=WHAT, on=_on(x, 3, 5) + ", eval mode",
                          course=course)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_errors(student, device):
    """d_out not divisible by num_heads raises ValueError, and so does a sequence longer than context_length."""
    for d_out, heads in ((5, 2), (6, 4)):
        C.expect_raises(ValueError, lambda: student.multihead.MultiHeadAttention.build(3, d_out, 6, 0.0, heads),
                        f"MultiHeadAttention(d_in, d_out={d_out}, ..., num_heads={heads})",
                        "d_out is not divisible by num_heads",
                        "check d_out % num_heads in __init__ and raise ValueError(...): d_out // num_heads would "
                        "silently drop dimensions")
    module = C.attempt(lambda: student.multihead.MultiHeadAttention.build(3, 4, 5, 0.0, 2), "MultiHeadAttention(3, 4, 5, 0.0, 2)",
                       "construction")
    module.to.build(device=device)
    C.expect_raises(ValueError, lambda: module(torch.ones(2, 7, 3, device=device)), WHAT,
                    "T (7) is larger than context_length (5)",
                    "compare x.shape[1] with the mask's size first and raise ValueError(...)")


def _heads(heads: int, B: int, T: int) -> Size:
    """A call of the vectorization check on a module with ``heads`` heads of size 2."""
    return Size(f"{heads} heads, T={T}, batch {B}", ((B, T, 4),), (4, 12, 10, 0.0, heads))


CONTRACT = Contract(subjects=(
    Subject("MultiHeadAttention", WHAT, ("x",), ((2, 4, 5),), ref.MultiHeadAttention, ctor=(5, 6, 7, 0.0, 3, True),
            describe=lambda x: _on(x, 3, 7),
            values=lambda student, course, case: _check(student, course, case.call, case.reference, *case.args, 3, 7),
            instead="batched scores per head, masked_fill with -inf, torch.softmax, self.dropout, @ values.",
            sizes=(_heads(2, 2, 3), _heads(6, 2, 3), _heads(2, 2, 8), _heads(2, 6, 3)),
            loop_over="heads, tokens or batch elements", half=(HalfInputs(0.5),)),
))
