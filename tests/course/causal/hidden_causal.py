"""Hidden suite, exercise 7: causal attention (causal_mask, CausalAttention)."""
import hints_causal as known
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites import modules as M
from grader.suites.contract import Contract, HalfInputs, Subject, sequences
from solutions import causal as ref

pytestmark = pytest.mark.causal


def causal_cases() -> st.SearchStrategy[S.Case]:
    """x (B, T, d_in), d_out, context_length >= T (sometimes equal, sometimes longer)."""
    return S.cases(("B", "T", "d_in", "d_out"), batch=(0, 0), hi=8, scales=(1.0, 2.0),
                 extra_context=st.sampled_from([0, 0, 1, 3]), qkv_bias=st.booleans())

WHAT = "CausalAttention(x)"


def _reference(case, device, dropout=0.0):
    C.seed(case.seed)
    return ref.CausalAttention(case.d_in, case.d_out, case.T + case.extra_context, dropout, case.qkv_bias).to(device)


def _student(student, reference, case, device, dtype=None, dropout=0.0, mode="eval"):
    return M.twin(student.causal.CausalAttention, reference, case.d_in, case.d_out, case.T + case.extra_context,
                  dropout, case.qkv_bias, what="CausalAttention", device=device, dtype=dtype,
                  mode=mode)


def _on(x, context_length):
    return f"{C.describe(x=x)}, context_length {'= T' if context_length == x.shape[-2] else '> T'}"


def _hints(reference, x, context_length, in_dtype=False):
    """The mistakes of causal attention with the reference's layers on x (the student's module holds the same
    parameters): in float64 (for values), or in x's dtype (``in_dtype``, for errors and overflow)."""
    module = reference if in_dtype or x.dtype == torch.float64 else M.wide(reference)
    return known.module_hints(module, x if in_dtype else x.double(), context_length)


def _check(student, course, module, reference, x, context_length, what=WHAT, magnitude=0.0):
    on = _on(x, context_length)
    got = C.attempt(lambda: module(x), what, on, lambda: _hints(reference, x, context_length, in_dtype=True))
    rtol, atol = C.tolerance(course, torch.float32, magnitude) if magnitude else (None, None)
    C.expect_close(got, M.module_reference(reference.eval(), x), what=what, on=on, course=course, rtol=rtol, atol=atol,
                   hints=lambda: _hints(reference, x, context_length, in_dtype=bool(magnitude)),
                   generic="scores Q K^T / sqrt(d_out), -inf above the diagonal, softmax over the last dim, "
                           "dropout, @ V.")


# ---------------------------------------------------------------- causal_mask

@pytest.mark.weight(2)
@S.examples(4)
@given(T=st.integers(1, 9))
def test_causal_mask(student, course, T):
    """causal_mask(T) is the bool (T, T) mask with True on and below the diagonal."""
    on = f"T={T}"
    got = C.expect_tensor(C.attempt(lambda: student.causal.causal_mask(T), "causal_mask(T)", on), "causal_mask(T)", on)
    want = ref.causal_mask(T)
    if tuple(got.shape) != (T, T):
        raise C.CheckFailed(f"causal_mask(T): the result's shape has {C.shape_fact(got.shape, (T, T))} for {on}; "
                            f"expected ({T}, {T}).")
    if got.dtype != torch.bool:
        raise C.CheckFailed(f"causal_mask(T) returned {C.dtype_name(got.dtype)} for {on}; expected bool "
                            f"(True = may attend). Hint: create it with dtype=torch.bool or compare (== 1).")
    got = C.checked(got, want, what="causal_mask(T)", on=on)
    if not torch.equal(got, want):
        found = C.matching(got, known.causal_mask_hints(T), 0.0, 0.0)
        expected = "" if found else " Expected: True on and below the diagonal (position i may attend to j <= i)."
        raise C.diagnosed(f"causal_mask(T) is wrong for {on}.{expected}", found)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_causal_mask_device(student, course):
    """causal_mask(T, device=...) creates the mask on that device (checked with the meta device)."""
    got = C.attempt(lambda: student.causal.causal_mask(4, device=torch.device("meta")), "causal_mask(4, device=meta)",
                    "T=4, device meta")
    C.expect_close(got, C.on_meta(ref.causal_mask(4)), what="causal_mask(T, device)", on="T=4, device meta",
                   course=course, check_dtype=False)


# ---------------------------------------------------------------- CausalAttention

@pytest.mark.rule
@pytest.mark.weight(1)
@S.examples(2)
@given(case=causal_cases())
def test_seeded_init(student, course, case):
    """CausalAttention creates W_query, W_key, W_value = nn.Linear(d_in, d_out, bias=qkv_bias), in that order."""
    context_length = case.T + case.extra_context
    on = f"d_in={case.d_in}, d_out={case.d_out}, qkv_bias={case.qkv_bias}"
    args = (case.d_in, case.d_out, context_length, 0.0, case.qkv_bias)
    M.expect_seeded_init(student.causal.CausalAttention, args, {}, case.seed, lambda: ref.CausalAttention(*args),
                         "CausalAttention", on, "create W_query, W_key, W_value in that order, each nn.Linear(d_in, "
                         "d_out, bias=qkv_bias); the mask is a buffer, not a parameter.")


@pytest.mark.weight(4)
@S.examples(6)
@given(case=causal_cases())
def test_values(student, course, device, case):
    """CausalAttention(x) equals the reference with the same weights, for T <= context_length, with and without bias."""
    reference = _reference(case, device)
    module = _student(student, reference, case, device)
    x = case.randn(case.B, case.T, case.d_in, dtype=torch.float32, device=device)
    _check(student, course, module, reference, x, case.T + case.extra_context)


@pytest.mark.weight(1)
def test_shorter_than_context(student, course, device):
    """A sequence shorter than context_length works: the mask is cut to the sequence length."""
    C.seed(course.seed)
    reference = ref.CausalAttention(4, 3, 9, 0.0).to(device)
    module = M.twin(student.causal.CausalAttention, reference, 4, 3, 9, 0.0, what="CausalAttention", device=device,
                    mode="eval")
    C.each((1, 5), lambda T: _check(student, course, module, reference,
                                     torch.randn(2, T, 4, generator=torch.Generator().manual_seed(course.seed + T)).to(device), 9))


LARGEST_SCORE = 300.0  # exp of a float32 past 88 overflows: a softmax that does not subtract the row's max gives NaN


@pytest.mark.weight(1)
def test_large_inputs(student, course, device):
    """Large inputs (largest allowed score 300) give finite results: -inf in masked scores, then a stable softmax."""
    C.seed(course.seed + 2)
    reference = ref.CausalAttention(4, 3, 6, 0.0).to(device)
    module = M.twin(student.causal.CausalAttention, reference, 4, 3, 6, 0.0, what="CausalAttention", device=device,
                    mode="eval")
    x = torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(course.seed + 2)).to(device)
    with torch.no_grad():  # no bias: the scores grow with the square of x
        scores = (reference.W_query(x) @ reference.W_key(x).transpose(-2, -1)).tril() / 3 ** 0.5
    x = x * (LARGEST_SCORE / float(scores.abs().max())) ** 0.5
    _check(student, course, module, reference, x, 6, magnitude=LARGEST_SCORE)


@pytest.mark.rule
@pytest.mark.weight(2)
@S.examples(4)
@given(drawn=S.with_split(causal_cases()))
def test_no_peeking(student, course, device, drawn):
    """Changing later tokens leaves every earlier output unchanged."""
    case, t = drawn
    reference = _reference(case, device)
    module = _student(student, reference, case, device, dtype=torch.float64)
    x = case.randn(case.B, case.T, case.d_in, dtype=torch.float64, device=device)
    changed = x.clone()
    changed[:, t:] = case.randn(case.B, case.T - t, case.d_in, dtype=torch.float64, device=device) * 3
    on = _on(x, case.T + case.extra_context)
    M.earlier_outputs_unchanged(module, x, changed, t, result_shape=(case.B, case.T, case.d_out), what=WHAT, on=on,
                                hint="check which triangle your mask keeps (True on and below the diagonal may attend) "
                                     "and that it is applied with -inf before the softmax.")


@pytest.mark.weight(2)
@S.examples(3)
@given(case=causal_cases())
def test_dropout_training(student, course, device, case):
    """In training mode, dropout acts once on the attention weights (in any layout, drawn in any order)."""
    reference = _reference(case, device, dropout=0.5).double()
    module = _student(student, reference, case, device, dtype=torch.float64, dropout=0.5, mode="train")
    x = case.randn(case.B, case.T, case.d_in, dtype=torch.float64, device=device)
    on = _on(x, case.T + case.extra_context) + ", training mode, dropout 0.5"
    M.dropout_in_training(module, reference, x, what=WHAT, on=on, course=course,
                          generic="apply self.dropout once, to the attention weights right after the softmax (not to "
                                  "the scores, the values or the output).")


@pytest.mark.rule
@pytest.mark.weight(1)
def test_dropout_eval(student, course, device):
    """In eval mode, dropout does nothing: the result depends neither on the dropout rate nor on the random state."""
    C.seed(course.seed)
    reference = ref.CausalAttention(5, 3, 6, 0.5).to(device)
    module, without = (M.twin(student.causal.CausalAttention, reference, 5, 3, 6, p, what="CausalAttention",
                              device=device, mode="eval") for p in (0.5, 0.0))
    x = torch.randn(2, 6, 5, generator=torch.Generator().manual_seed(course.seed)).to(device)
    M.dropout_off_in_eval(module, without, x, result_shape=(2, 6, 3), what=WHAT, on=_on(x, 6) + ", eval mode",
                          course=course)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_context_length_error(student, device):
    """A sequence longer than context_length raises ValueError."""
    module = C.attempt(lambda: student.causal.CausalAttention.build(4, 3, 5, 0.0), "CausalAttention(4, 3, 5, 0.0)",
                       "construction")
    module.to.build(device=device)
    x = torch.ones(2, 7, 4, device=device)
    C.expect_raises(ValueError, lambda: module(x), WHAT, "T (7) is larger than context_length (5)",
                    "compare x.shape[1] with the mask's size first and raise ValueError(...)")


CONTRACT = Contract(subjects=(
    Subject("CausalAttention", WHAT, ("x",), ((2, 6, 5),), ref.CausalAttention, ctor=(5, 3, 7, 0.0, True),
            describe=lambda x: _on(x, 7),
            values=lambda student, course, case: _check(student, course, case.call, case.reference, *case.args, 7),
            instead="scores, masked_fill with -inf, torch.softmax, self.dropout, @ values.", sizes=sequences(5, T=7),
            half=(HalfInputs(0.5),)),
))
