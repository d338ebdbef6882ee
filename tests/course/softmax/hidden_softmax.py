"""Hidden suite, exercise 2: a numerically stable softmax with a temperature."""
import hints_softmax as known
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites.contract import Contract, HalfInputs, Subject, sequences
from solutions import softmax as ref

pytestmark = pytest.mark.softmax


def softmax_cases(max_rank: int = 4) -> st.SearchStrategy[S.Case]:
    """Any shape of rank 1..max_rank (sizes all different), a dim (either sign) and a temperature."""
    @st.composite
    def build(draw):
        rank = draw(st.integers(1, max_rank))
        sizes = draw(st.lists(st.integers(S.LO, S.HI), min_size=rank, max_size=rank, unique=True))
        dim = draw(st.integers(-rank, rank - 1))
        temperature = draw(st.sampled_from([1.0, 0.5, 2.0, 0.25, 3.0]))
        return S.Case({}, (), draw(S.SEEDS), draw(st.sampled_from([1.0, 3.0])), shape=tuple(sizes), dim=dim,
                    temperature=temperature)
    return build()

WHAT = "softmax(x, dim, temperature)"


def _on(x, dim, t):
    return f"{C.describe(x=x)}, dim={dim}, {C.temperature_class(t)}"


MATH = "exp(z - max) / sum(exp(z - max)) for z = x / t, with max and sum taken along `dim` (keepdim=True)."


def _check(student, course, x, dim, t, rtol=None, atol=None, what=WHAT):
    on = _on(x, dim, t)
    hints = known.softmax_hints(x, dim, t)
    got = C.attempt(lambda: student.softmax.softmax(x, dim=dim, temperature=t), what, on, hints)
    want = C.in_float64(ref.softmax, x, dim=dim, temperature=t)
    C.expect_close(got, want, what=what, on=on, course=course, rtol=rtol, atol=atol, hints=hints, generic=MATH)


@pytest.mark.weight(5)
@S.examples(14)
@given(case=softmax_cases())
def test_values(student, course, device, case):
    """Equals torch.softmax(x / t, dim) for shapes of rank 1 to 4, every dim (either sign) and several temperatures."""
    x = case.randn(*case.shape, dtype=torch.float32, device=device)
    _check(student, course, x, case.dim, case.temperature)


@pytest.mark.weight(1)
def test_defaults(student, course, device):
    """softmax(x) normalizes the last dim at temperature 1; positional (x, dim, temperature) work too."""
    g = torch.Generator().manual_seed(course.seed)
    x = torch.randn(3, 4, 5, generator=g).to(device)
    on = C.describe(x=x)
    got = C.attempt(lambda: student.softmax.softmax(x), "softmax(x)", on, known.softmax_hints(x, -1, 1.0))
    C.expect_close(got, C.in_float64(torch.softmax, x, -1), what="softmax(x) (defaults dim=-1, temperature=1.0)", on=on,
                   course=course, hints=known.softmax_hints(x, -1, 1.0))
    # named first: the signature is blamed only where the same call with its arguments named is right
    want, hints, on = C.in_float64(ref.softmax, x, 1, 2.0), known.softmax_hints(x, 1, 2.0), on + ", dim=1, a temperature above 1"
    named = C.attempt(lambda: student.softmax.softmax(x, dim=1, temperature=2.0), "softmax(x, dim=1, temperature=2.0)", on, hints)
    C.expect_close(named, want, what="softmax(x, dim=1, temperature=2.0)", on=on, course=course, hints=hints, generic=MATH)
    got = C.attempt(lambda: student.softmax.softmax(x, 1, 2.0), "softmax(x, 1, 2.0)", on, hints,
                    note="softmax(x, dim=1, temperature=2.0) works: the signature is softmax(x, dim=-1, temperature=1.0)")
    C.expect_close(got, want, what="softmax(x, 1, 2.0) (positional dim and temperature)", on=on, course=course, hints=hints,
                   generic="softmax(x, dim=1, temperature=2.0) is right: the signature is softmax(x, dim=-1, "
                           "temperature=1.0), in that order.")


@pytest.mark.weight(2)
@pytest.mark.parametrize("magnitude, dtype", [(100.0, torch.float32), (100.0, torch.float64), (1e4, torch.float32)],
                         ids=["x100-float32", "x100-float64", "1e4-float32"])
def test_large_scores(student, course, device, magnitude, dtype):
    """Scores times 100 (float32, float64) and around 1e4 (float32) give finite weights at temperatures 1, 0.5 and 2."""
    # the reference's weights, within a tolerance widened for the magnitude; at t != 1 a max of x, not of x / t, fails
    g = torch.Generator().manual_seed(course.seed + 2)
    x = (torch.randn(4, 6, 5, generator=g, dtype=torch.float64) * magnitude).to(device, dtype)
    for dim, t in ((-1, 1.0), (1, 1.0), (-1, 0.5), (1, 2.0)):
        rtol, atol = C.tolerance(course, dtype, float(x.abs().max()) / t)
        _check(student, course, x, dim, t, rtol=rtol, atol=atol, what=f"{WHAT} on scores of size {magnitude:g}")


@pytest.mark.weight(1)
def test_negative_infinity(student, course, device):
    """-inf entries get weight exactly 0 while their row has a finite entry (masked scores)."""
    g = torch.Generator().manual_seed(course.seed + 3)
    x = torch.randn(5, 7, generator=g).to(device)
    masked = torch.rand(5, 7, generator=g).to(device) < 0.5
    masked[:, 2] = False  # every row keeps a finite entry
    masked[0, :] = True
    masked[0, 4] = False  # a row with a single finite entry
    x = x.masked_fill(masked, float("-inf"))
    for dim, t in ((-1, 1.0), (-1, 0.5)):
        _check(student, course, x, dim, t)
        got = C.checked(C.attempt(lambda: student.softmax.softmax(x, dim=dim, temperature=t), WHAT, _on(x, dim, t)),
                        x, what=WHAT, on=_on(x, dim, t))
        if bool((got.masked_select(masked) != 0).any()):
            raise C.CheckFailed(f"{WHAT} gives -inf entries a weight other than exactly 0 ({_on(x, dim, t)}).")


@pytest.mark.weight(1)
def test_rows_of_different_magnitude(student, course, device):
    """Rows whose scores differ in magnitude by orders of ten are each normalized on their own."""
    g = torch.Generator().manual_seed(course.seed + 4)
    scale = torch.tensor([1e-3, 1.0, 30.0, 300.0, 3000.0], dtype=torch.float64).view(5, 1)
    x = (torch.randn(5, 6, generator=g, dtype=torch.float64) * scale - scale * 10).to(device, torch.float32)
    rtol, atol = C.tolerance(course, torch.float32, float(x.abs().max()))
    _check(student, course, x, -1, 1.0, rtol=rtol, atol=atol)
    _check(student, course, x.T.contiguous(), 0, 1.0, rtol=rtol, atol=atol)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_temperature_error(student, device):
    """A temperature <= 0 raises ValueError."""
    x = torch.randn(2, 3, device=device)
    for t, when in ((0.0, "the temperature is zero"), (-1.0, "the temperature is negative")):
        C.expect_raises(ValueError, lambda: student.softmax.softmax(x, dim=-1, temperature=t), WHAT, when,
                        "check `temperature <= 0` before computing and raise ValueError(...) saying what it was")


CONTRACT = Contract(subjects=(
    Subject("softmax", WHAT, ("x",), ((3, 5, 4),), ref.softmax, options=(-2, 0.5), describe=_on,
            values=lambda student, course, case: _check(student, course, *case.args, *C.tolerance(
                course, case.args[0].dtype, float(case.args[0].abs().max()))),
            instead="exp of the shifted scores divided by their sum along dim, with amax/exp/sum (keepdim=True).",
            half=(HalfInputs(2.0, (-1, 1.0)), HalfInputs(100.0, (-1, 1.0))), sizes=sequences(4),
            also_unchanged_with=((-2, 1.0),)),  # x /= t changes x where t != 1; z = x, then z.sub_(...), where t == 1
))
