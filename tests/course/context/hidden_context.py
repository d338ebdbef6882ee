"""Hidden suite, exercise 3: attention without trainable weights (attention_weights, context_vectors)."""
import hints_context as known
import pytest
import torch
from hypothesis import given

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites.contract import Contract, Subject, sequences
from solutions import context as ref

pytestmark = pytest.mark.context

FUNCTIONS = {
    "attention_weights": (ref.attention_weights, known.context_weight_hints,
                          "softmax over the last dim of x @ x.transpose(-2, -1)"),
    "context_vectors": (ref.context_vectors, known.context_vector_hints, "attention_weights(x) @ x"),
}


def _check(student, course, name, x, rtol=None, atol=None):
    function, hints, formula = FUNCTIONS[name]
    on = C.describe(x=x)
    got = C.attempt(lambda: getattr(student.context, name)(x), f"{name}(x)", on, hints(x))
    C.expect_close(got, C.in_float64(function, x), what=f"{name}(x)", on=on, course=course, rtol=rtol, atol=atol,
                   hints=hints(x), generic=f"{name}(x) is {formula}.")
    return got


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.sequences())
def test_attention_weights_values(student, course, device, case):
    """attention_weights(x) equals softmax(x x^T) over the last dim, for (..., T, d) with 0-2 batch dims."""
    _check(student, course, "attention_weights", case.randn(*case.batch, case.T, case.d, dtype=torch.float32, device=device))


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.sequences())
def test_context_vectors_values(student, course, device, case):
    """context_vectors(x) equals attention_weights(x) @ x, for (..., T, d) with 0-2 batch dims."""
    _check(student, course, "context_vectors", case.randn(*case.batch, case.T, case.d, dtype=torch.float32, device=device))


@pytest.mark.rule
@pytest.mark.weight(1)
def test_rows_sum_to_one(student, course, device):
    """Each row of the attention weights is a distribution over the sequence: positive, summing to 1."""
    g = torch.Generator().manual_seed(course.seed)
    x = torch.randn(2, 3, 6, 4, generator=g).to(device)
    on = C.describe(x=x)
    got = C.checked(C.attempt(lambda: student.context.attention_weights(x), "attention_weights(x)", on),
                    x.new_empty(2, 3, 6, 6), what="attention_weights(x)", on=on, dtypes=C.FLOATING)
    fact = C.rows_sum_to_one(got, -1) or ("some weights are negative." if bool((got < 0).any()) else None)
    if fact:
        raise C.CheckFailed(f"the rows of attention_weights(x) are not distributions on {on}: {fact}")


@pytest.mark.weight(1)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_large_scores(student, course, device, name):
    """Inputs times 10 (scores times 100) give finite results that match the reference."""
    g = torch.Generator().manual_seed(course.seed + 1)
    x = torch.randn(2, 5, 3, generator=g).to(device) * 10
    scores = float((x @ x.transpose(-2, -1)).abs().max())
    rtol, atol = C.tolerance(course, torch.float32, scores)
    _check(student, course, name, x, rtol=rtol, atol=atol)


CONTRACT = Contract(subjects=tuple(
    Subject(name, f"{name}(x)", ("x",), ((3, 5, 4),), function,
            values=lambda student, course, case, name=name: _check(student, course, name, *case.args),
            instead="scores x @ x.transpose(-2, -1), torch.softmax over the last dim, then @ x.", sizes=sequences(4))
    for name, (function, _, _) in FUNCTIONS.items()))
