"""Hidden suite, exercise 3: attention without trainable weights (attention_weights, context_vectors)."""
import checks as C
import pytest
import strategies as S
import torch
from hypothesis import given

from solutions import context as ref

pytestmark = pytest.mark.context

TRANSPOSE_HINT = "with batch dims, x.T reverses every dim: transpose only the last two, x.transpose(-2, -1) (or x.mT)"
FUNCTIONS = {
    "attention_weights": (ref.attention_weights, C.context_weight_hints,
                          "softmax over the last dim of x @ x.transpose(-2, -1)"),
    "context_vectors": (ref.context_vectors, C.context_vector_hints, "attention_weights(x) @ x"),
}


def _check(student, course, name, x, rtol=None, atol=None):
    function, hints, formula = FUNCTIONS[name]
    on = C.describe(x=x)
    got = C.attempt(lambda: getattr(student.context, name)(x), f"{name}(x)", on, TRANSPOSE_HINT if x.dim() > 2 else None)
    diagnose = [C.rows_sum_to_one(-1)] if name == "attention_weights" else []
    C.close(got, C.in_float64(function, x), what=f"{name}(x)", on=on, course=course, rtol=rtol, atol=atol,
            hints=hints(x), diagnose=diagnose, nonfinite=C.STABLE_SOFTMAX, generic=f"{name}(x) is {formula}.")
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


@pytest.mark.weight(1)
def test_rows_sum_to_one(student, course, device):
    """Each row of the attention weights is a distribution over the sequence: positive, summing to 1."""
    g = torch.Generator().manual_seed(course.seed)
    x = torch.randn(2, 3, 6, 4, generator=g).to(device)
    on = C.describe(x=x)
    got = C.expect_tensor(C.attempt(lambda: student.context.attention_weights(x), "attention_weights(x)", on),
                          "attention_weights(x)", on)
    if tuple(got.shape) != (2, 3, 6, 6):
        raise C.CheckFailed(f"attention_weights(x): the result's shape has {C.shape_fact(got.shape, (2, 3, 6, 6))} on "
                            f"{on}; expected (2, 3, 6, 6).")
    message = C.rows_sum_to_one(-1)(got)
    if message or bool((got < 0).any()):
        raise C.CheckFailed(f"the rows of attention_weights(x) are not distributions on {on}. Hint: "
                            + (message or "weights must be positive: exp of the scores, normalized."))


@pytest.mark.weight(1)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_large_scores(student, course, device, name):
    """Inputs times 10 (scores times 100) give finite results that match the reference."""
    g = torch.Generator().manual_seed(course.seed + 1)
    x = torch.randn(2, 5, 3, generator=g).to(device) * 10
    scores = float((x @ x.transpose(-2, -1)).abs().max())
    rtol, atol = C.tolerance(course, torch.float32, scores)
    _check(student, course, name, x, rtol=rtol, atol=atol)


@pytest.mark.weight(1)
def test_float64_kept(student, course, device):
    """float64 inputs give float64 results at float64 precision."""
    g = torch.Generator().manual_seed(course.seed + 2)
    x = torch.randn(3, 5, 4, generator=g, dtype=torch.float64).to(device)
    for name in FUNCTIONS:
        _check(student, course, name, x)


@pytest.mark.weight(1)
def test_device_kept(student, course, device):
    """Results stay on the input's device (checked with meta tensors, which have no data)."""
    x = torch.randn(3, 5, 4)
    meta = C.on_meta(x)
    for name, (function, _, _) in FUNCTIONS.items():
        on = C.describe(x=meta)
        got = C.attempt(lambda: getattr(student.context, name)(meta), f"{name}(x)", on, C.META_HINT)
        C.close(got, C.on_meta(function(x)), what=f"{name}(x)", on=on, course=course)


@pytest.mark.weight(1)
def test_autograd(student, course, device):
    """Gradients flow back to x, equal to the reference's (float64)."""
    g = torch.Generator().manual_seed(course.seed + 3)
    x = torch.randn(2, 5, 4, generator=g, dtype=torch.float64).to(device)
    for name, (function, _, _) in FUNCTIONS.items():
        grad_output = torch.randn(function(x).shape, generator=g, dtype=torch.float64).to(device)
        want, _ = C.reference_grads(function, (x,), grad_output)
        on = C.describe(x=x)
        result = C.attempt(lambda: getattr(student.context, name).run(args=(x,), grad_output=grad_output), name, on)
        C.grads_close(result, want, ("x",), what=f"{name}(x)", on=on, course=course)


@pytest.mark.weight(1)
def test_input_not_modified(student, course, device):
    """x is not changed in place."""
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(course.seed + 4)).to(device)
    for name in FUNCTIONS:
        on = C.describe(x=x)
        result = C.attempt(lambda: getattr(student.context, name).run(args=(x,), return_args=True), name, on)
        C.unchanged([x], result, ("x",), what=f"{name}(x)", on=on)


@pytest.mark.weight(1)
def test_vectorized(student, device):
    """No Python loop over the sequence or the batch: the number of tensor operations stays the same."""
    g = torch.Generator().manual_seed(11)
    runs = [("T=3, batch 2", torch.randn(2, 3, 4, generator=g)), ("T=8, batch 2", torch.randn(2, 8, 4, generator=g)),
            ("T=3, batch 6", torch.randn(6, 3, 4, generator=g))]
    for name in FUNCTIONS:
        target = getattr(student.context, name)._target
        try:
            results = student.session.run_many([(target, (x.to(device),), None, {}) for _, x in runs])
        except C.StudentError as error:
            raise C.CheckFailed(f"{name} failed on a batched input: {error}") from None
        C.vectorized([(label, r) for (label, _), r in zip(runs, results)], name, "tokens or batch elements")


@pytest.mark.weight(1)
def test_own_implementation(student, course, device):
    """No built-in attention (torch.nn.functional.scaled_dot_product_attention, nn.MultiheadAttention)."""
    x = torch.randn(2, 5, 4, device=device)
    for name in FUNCTIONS:
        result = C.attempt(lambda: getattr(student.context, name).run(
            args=(x,), watch=course.banned[f"context.{name}"]), name, C.describe(x=x))
        C.own_implementation(result, name, "scores x @ x.transpose(-2, -1), torch.softmax over the last dim, then @ x.")


@pytest.mark.weight(1)
@pytest.mark.parametrize("dtype", C.HALF_DTYPES, ids=C.dtype_name)
def test_half_precision(student, course, device, dtype):
    """float16 and bfloat16 inputs (CUDA) give results of the same dtype within its tolerance."""
    C.skip_unless_cuda(device, dtype)
    x = (torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(course.seed + 5)) * 0.5).to(device, dtype)
    for name in FUNCTIONS:
        _check(student, course, name, x)
