"""Hidden suite, exercise 1: dot-product scores (dot, pairwise_scores, attention_scores)."""
import checks as C
import pytest
import strategies as S
import torch
from hypothesis import given

from solutions import scores as ref

pytestmark = pytest.mark.scores

TRANSPOSE_HINT = "with batch dims, x.T reverses every dim: transpose only the last two, x.transpose(-2, -1) (or x.mT)"


def _on_error_hint(x: torch.Tensor) -> str | None:
    return TRANSPOSE_HINT if x.dim() > 2 else None


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.vectors())
def test_dot_values(student, course, device, case):
    """dot(a, b) is the 0-d tensor sum_i a_i b_i for 1-D inputs of every length."""
    a, b = case.randn(case.d, dtype=torch.float32, device=device), case.randn(case.d, dtype=torch.float32, device=device)
    on = C.describe(a=a, b=b)
    got = C.attempt(lambda: student.scores.dot(a, b), "dot(a, b)", on)
    C.close(got, C.in_float64(ref.dot, a, b), what="dot(a, b)", on=on, course=course,
            hints=[C.Hint("you return the element-wise products: sum them to one number.", lambda: a * b)],
            generic="multiply element by element and sum: (a * b).sum().")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.sequences())
def test_pairwise_scores_values(student, course, device, case):
    """pairwise_scores(x) is x @ x^T for (..., T, d) inputs with 0, 1 or 2 batch dims."""
    x = case.randn(*case.batch, case.T, case.d, dtype=torch.float32, device=device)
    on = C.describe(x=x)
    got = C.attempt(lambda: student.scores.pairwise_scores(x), "pairwise_scores(x)", on, _on_error_hint(x))
    C.close(got, C.in_float64(ref.pairwise_scores, x), what="pairwise_scores(x)", on=on, course=course,
            hints=C.pairwise_hints(x), generic="entry [i, j] is the dot product of token i with token j: x @ x^T.")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.query_key_pairs())
def test_attention_scores_values(student, course, device, case):
    """attention_scores(queries, keys) is queries @ keys^T, (..., Tq, Tk), with Tq != Tk."""
    q = case.randn(*case.batch, case.Tq, case.d, dtype=torch.float32, device=device)
    k = case.randn(*case.batch, case.Tk, case.d, dtype=torch.float32, device=device)
    on = C.describe(queries=q, keys=k)
    got = C.attempt(lambda: student.scores.attention_scores(q, k), "attention_scores(queries, keys)", on,
                    _on_error_hint(q))
    C.close(got, C.in_float64(ref.attention_scores, q, k), what="attention_scores(queries, keys)", on=on,
            course=course, hints=C.score_hints(q, k), generic="row i holds query i against every key: queries @ keys^T.")


BROADCASTS = [((3,), ()), ((), (4,)), ((2, 1), (3,)), ((4, 1), (1, 3))]


@pytest.mark.weight(1)
@pytest.mark.parametrize("lead_q, lead_k", BROADCASTS, ids=["keys-unbatched", "queries-unbatched", "2-vs-1", "1-vs-1"])
def test_attention_scores_broadcasts_leading_dims(student, course, device, lead_q, lead_k):
    """attention_scores broadcasts the leading dims of queries and keys."""
    g = torch.Generator().manual_seed(course.seed)
    q = torch.randn(*lead_q, 5, 6, generator=g).to(device)
    k = torch.randn(*lead_k, 7, 6, generator=g).to(device)
    on = C.describe(queries=q, keys=k)
    got = C.attempt(lambda: student.scores.attention_scores(q, k), "attention_scores(queries, keys)", on,
                    "transpose only the last two dims of keys (transpose(-2, -1)) and let @ broadcast the leading dims")
    C.close(got, C.in_float64(ref.attention_scores, q, k), what="attention_scores(queries, keys)", on=on,
            course=course, hints=C.score_hints(q, k))


NAMES = {"dot": ("a", "b"), "pairwise_scores": ("x",), "attention_scores": ("queries", "keys")}


def _inputs(device, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, 3, generator=g, dtype=torch.float64).to(device, dtype)
    q = torch.randn(3, 4, 6, generator=g, dtype=torch.float64).to(device, dtype)
    k = torch.randn(3, 7, 6, generator=g, dtype=torch.float64).to(device, dtype)
    a, b = (torch.randn(9, generator=g, dtype=torch.float64).to(device, dtype) for _ in range(2))
    return {"dot": (a, b), "pairwise_scores": (x,), "attention_scores": (q, k)}


@pytest.mark.weight(1)
def test_float64_kept(student, course, device):
    """float64 inputs give float64 results at float64 precision, for all three functions."""
    for name, args in _inputs(device, torch.float64, course.seed).items():
        on = C.describe(**dict(zip(NAMES[name], args)))
        got = C.attempt(lambda: getattr(student.scores, name)(*args), name, on)
        C.close(got, getattr(ref, name)(*args), what=name, on=on, course=course)


@pytest.mark.weight(1)
def test_device_kept(student, course, device):
    """Results stay on the inputs' device (checked with meta tensors, which have no data)."""
    for name, args in _inputs("cpu", torch.float32, course.seed).items():
        meta = C.on_meta(args)
        on = C.describe(**dict(zip(NAMES[name], meta)))
        got = C.attempt(lambda: getattr(student.scores, name)(*meta), name, on, C.META_HINT)
        C.close(got, C.on_meta(getattr(ref, name)(*args)), what=name, on=on, course=course)


@pytest.mark.weight(1)
def test_autograd(student, course, device):
    """Gradients flow back to every input, equal to the reference's (float64)."""
    g = torch.Generator().manual_seed(course.seed + 1)
    for name, args in _inputs(device, torch.float64, course.seed).items():
        function = getattr(ref, name)
        out = function(*args)
        grad_output = torch.randn(out.shape, generator=g, dtype=torch.float64).to(device)
        want, _ = C.reference_grads(function, args, grad_output)
        on = C.describe(**dict(zip(NAMES[name], args)))
        result = C.attempt(lambda: getattr(student.scores, name).run(args=args, grad_output=grad_output), name, on)
        C.grads_close(result, want, NAMES[name], what=name, on=on, course=course)


@pytest.mark.weight(1)
def test_inputs_not_modified(student, course, device):
    """No function changes its input tensors in place."""
    for name, args in _inputs(device, torch.float32, course.seed).items():
        before = [a.clone() for a in args]
        on = C.describe(**dict(zip(NAMES[name], args)))
        result = C.attempt(lambda: getattr(student.scores, name).run(args=args, return_args=True), name, on)
        C.unchanged(before, result, NAMES[name], what=name, on=on)


@pytest.mark.weight(1)
def test_size_errors(student, device):
    """Mismatched sizes raise ValueError: dot of different lengths, attention_scores with different d."""
    a, b = torch.ones(4, device=device), torch.ones(5, device=device)
    C.expect_raises(ValueError, lambda: student.scores.dot(a, b), "dot(a, b)", "a and b have different lengths",
                    "compare a.shape and b.shape first and raise ValueError(...) naming them")
    q, k = torch.ones(2, 3, 4, device=device), torch.ones(2, 5, 6, device=device)
    C.expect_raises(ValueError, lambda: student.scores.attention_scores(q, k), "attention_scores(queries, keys)",
                    "queries and keys have different last dims",
                    "compare queries.shape[-1] with keys.shape[-1] and raise ValueError(...) naming them")


@pytest.mark.weight(1)
def test_vectorized(student, device):
    """pairwise_scores and attention_scores use no Python loop over the sequence or the batch."""
    g = torch.Generator().manual_seed(7)

    def x(B, T):
        return torch.randn(B, T, 4, generator=g).to(device)

    calls = {"pairwise_scores": [("T=3, batch 2", (x(2, 3),)), ("T=8, batch 2", (x(2, 8),)), ("T=3, batch 6", (x(6, 3),))],
             "attention_scores": [("Tq=3, Tk=4, batch 2", (x(2, 3), x(2, 4))), ("Tq=7, Tk=9, batch 2", (x(2, 7), x(2, 9))),
                                  ("Tq=3, Tk=4, batch 6", (x(6, 3), x(6, 4)))]}
    for name, runs in calls.items():
        target = getattr(student.scores, name)._target
        try:
            results = student.session.run_many([(target, args, None, {}) for _, args in runs])
        except C.StudentError as error:
            raise C.CheckFailed(f"{name} failed on a batched input: {error}") from None
        C.vectorized([(label, r) for (label, _), r in zip(runs, results)], name, "tokens or batch elements")


@pytest.mark.weight(1)
def test_dot_own_implementation(student, course, device):
    """dot is your own: no torch.dot, inner, vdot, matmul, @, einsum or tensordot."""
    a, b = torch.randn(6, device=device), torch.randn(6, device=device)
    result = C.attempt(lambda: student.scores.dot.run(args=(a, b), watch=course.banned["scores.dot"]),
                       "dot(a, b)", C.describe(a=a, b=b))
    C.own_implementation(result, "dot", "multiply element by element and sum: (a * b).sum().")


@pytest.mark.weight(1)
@pytest.mark.parametrize("dtype", C.HALF_DTYPES, ids=C.dtype_name)
def test_half_precision(student, course, device, dtype):
    """float16 and bfloat16 inputs (CUDA) give results of the same dtype within its tolerance."""
    C.skip_unless_cuda(device, dtype)
    for name, args in _inputs(device, dtype, course.seed).items():
        on = C.describe(**dict(zip(NAMES[name], args)))
        got = C.attempt(lambda: getattr(student.scores, name)(*args), name, on)
        C.close(got, C.in_float64(getattr(ref, name), *args), what=name, on=on, course=course)
