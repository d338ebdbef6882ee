"""Hidden suite, exercise 5: the decoder-attention quiz (decoder_attention, quiz_answer)."""
import hints_quiz as known
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites.contract import Contract, Size, Subject
from solutions import quiz as ref

pytestmark = pytest.mark.quiz


def decoder_cases() -> st.SearchStrategy[S.Case]:
    """s (..., d), H (..., n, d) with n != d."""
    return S.cases(("n", "d"), batch=(0, 2), scales=(1.0, 0.5, 2.0))


WHAT = "decoder_attention(s, H)"
WEIGHTED = "decoder_attention(s, H, return_weights=True)"
QUIZ_V = (0.4387, 0.4855)  # published with the quiz (the docstring's example)
QUIZ_S = (0.4685, 0.9785)  # the quiz's decoder state s and encoder states h1, h2, h3
QUIZ_H = ((0.5539, 0.7239), (0.4111, 0.3878), (0.2376, 0.1264))


def _inputs(case, device, dtype=torch.float32):
    s = case.randn(*case.batch, case.d, dtype=dtype, device=device)
    H = case.randn(*case.batch, case.n, case.d, dtype=dtype, device=device)
    return s, H


def _check(student, course, s, H, return_weights=False, rtol=None, atol=None):
    """decoder_attention(s, H) close to the reference's v; with ``return_weights``, the pair (v, alphas)."""
    on = C.describe(s=s, H=H)
    if not return_weights:
        got = C.attempt(lambda: student.quiz.decoder_attention(s, H), WHAT, on, known.decoder_hints(s, H))
        C.expect_close(got, C.in_float64(ref.decoder_attention, s, H), what=WHAT, on=on, course=course, rtol=rtol,
                       atol=atol, hints=known.decoder_hints(s, H),
                       generic="scores H s (one per state), alphas = softmax over the n states, v = sum_i alpha_i h_i.")
        return
    got = C.attempt(lambda: student.quiz.decoder_attention(s, H, return_weights=True), WEIGHTED, on,
                    known.decoder_hints(s, H))
    got = C.expect_tensors(got, 2, WEIGHTED, on, "the pair (v, alphas)")
    v_want, alphas_want = C.in_float64(ref.decoder_attention, s, H, return_weights=True)
    if (tuple(v_want.shape) != tuple(alphas_want.shape)
            and tuple(got[0].shape) == tuple(alphas_want.shape) and tuple(got[1].shape) == tuple(v_want.shape)):
        raise C.CheckFailed(f"{WEIGHTED} returned (alphas, v) on {on}. Hint: the pair is (v, alphas), in that order.",
                            misconception="quiz.swapped_return")
    C.expect_close(got[1], alphas_want, what="the alphas of decoder_attention", on=on, course=course,
                   hints=known.alphas_hints(s, H))
    C.expect_close(got[0], v_want, what="the v of decoder_attention", on=on, course=course,
                   hints=known.decoder_hints(s, H))


@pytest.mark.weight(2)
def test_quiz_answer(student, course):
    """quiz_answer() is the quiz's v = [0.4387, 0.4855] as a float32 tensor."""
    got = C.expect_tensor(C.attempt(student.quiz.quiz_answer, "quiz_answer()", "no arguments"), "quiz_answer()",
                          "no arguments")
    want = torch.tensor(QUIZ_V)
    if tuple(got.shape) != (2,):
        raise C.CheckFailed(f"quiz_answer(): the result's shape has {C.shape_fact(got.shape, (2,))}; expected (2,), "
                            f"the vector v.")
    if got.dtype != torch.float32:
        raise C.CheckFailed(f"quiz_answer() returned {C.dtype_name(got.dtype)}; expected float32 (torch.tensor of "
                            f"Python floats is float32 by default).")
    got = C.checked(got, want, what="quiz_answer()", on="no arguments")
    error = float((got.double() - want.double()).abs().max())
    if not error <= 1e-4:
        hint = known.ATTENTION_WRONG if _own_attention_gives(student, got) else (
            "use the quiz's s and h1, h2, h3 as given, H = [h1, h2, h3] (one state per row), and call decoder_attention.")
        raise C.CheckFailed(f"quiz_answer() is not the quiz's v (off by {C.error_scale(error)}). Hint: {hint}")


def _own_attention_gives(student, answer: torch.Tensor) -> bool:
    """Whether the student's decoder_attention, on the quiz's s and H, gives ``answer`` (a wrong v then comes from it)."""
    try:
        own = C.attempt(lambda: student.quiz.decoder_attention(torch.tensor(QUIZ_S), torch.tensor(QUIZ_H)), WHAT,
                        "the quiz's s and H")
        own = C.checked(C.expect_tensor(own, WHAT, "the quiz's s and H"), answer, what=WHAT, on="the quiz's s and H")
    except C.CheckFailed:
        return False
    return bool(torch.equal(own, answer))


@pytest.mark.rule
@pytest.mark.weight(1)
def test_quiz_answer_is_computed(student, course):
    """quiz_answer() computes v with decoder_attention: at least the tensor operations decoder_attention makes."""
    s, H = torch.tensor(QUIZ_S), torch.tensor(QUIZ_H)
    answer = C.attempt(lambda: student.quiz.quiz_answer.run(), "quiz_answer()", "no arguments")
    direct = C.attempt(lambda: student.quiz.decoder_attention.run(args=(s, H)), WHAT, "the quiz's s and H")
    if answer.ops is not None and direct.ops is not None and answer.ops < direct.ops:
        # The counts are the worker's, so the student's code could set them: fixed words, never the numbers.
        raise C.CheckFailed("quiz_answer() makes fewer tensor operations than decoder_attention(s, H) on the quiz's s "
                            "and H: v is typed in, not computed. Hint: build s and H = [h1, h2, h3] and return "
                            "decoder_attention(s, H).")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=decoder_cases())
def test_values(student, course, device, case):
    """decoder_attention(s, H) equals sum_i softmax(H s)_i h_i for s (..., d), H (..., n, d), n != d, 0-2 batch dims."""
    _check(student, course, *_inputs(case, device))


@pytest.mark.weight(2)
@S.examples(6)
@given(case=decoder_cases())
def test_return_weights(student, course, device, case):
    """With return_weights=True the result is (v, alphas), alphas of shape (..., n), summing to 1 over the states."""
    _check(student, course, *_inputs(case, device), return_weights=True)


@pytest.mark.weight(1)
def test_dims_of_size_one(student, course, device):
    """Dims of size 1 stay, in v and in the alphas: a batch of one, a single encoder state (n = 1), d = 1."""
    g = torch.Generator().manual_seed(course.seed)
    for s_shape, H_shape in (((1, 4), (1, 1, 4)), ((3, 1), (3, 5, 1)), ((4,), (1, 4))):
        s, H = torch.randn(*s_shape, generator=g).to(device), torch.randn(*H_shape, generator=g).to(device)
        _check(student, course, s, H)
        _check(student, course, s, H, return_weights=True)


@pytest.mark.weight(1)
def test_large_scores(student, course, device):
    """Large scores (s and H times 10) give finite results that match the reference."""
    g = torch.Generator().manual_seed(course.seed)
    s, H = torch.randn(3, 4, generator=g) * 10, torch.randn(3, 5, 4, generator=g) * 10
    rtol, atol = C.tolerance(course, torch.float32, float((H @ s.unsqueeze(-1)).abs().max()))
    _check(student, course, s.to(device), H.to(device), rtol=rtol, atol=atol)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_size_error(student, device):
    """decoder_attention raises ValueError when s and H have different last dims."""
    C.expect_raises(ValueError, lambda: student.quiz.decoder_attention(torch.ones(2, 3, device=device),
                                                                      torch.ones(2, 5, 4, device=device)),
                    WHAT, "s and the states in H have different sizes d",
                    "compare s.shape[-1] with H.shape[-1] and raise ValueError(...) naming them")


CONTRACT = Contract(subjects=(
    Subject("decoder_attention", WHAT, ("s", "H"), ((2, 3), (2, 5, 3)), ref.decoder_attention,
            values=lambda student, course, case: _check(student, course, *case.args),
            autograd_with=(WEIGHTED, (True,)),  # gradients flow through v and the alphas
            instead="dot products, torch.softmax over the states, weighted sum.",
            sizes=(Size("n=3, batch 2", ((2, 4), (2, 3, 4))), Size("n=9, batch 2", ((2, 4), (2, 9, 4))),
                   Size("n=3, batch 6", ((6, 4), (6, 3, 4)))), loop_over="the encoder states or the batch"),
))
