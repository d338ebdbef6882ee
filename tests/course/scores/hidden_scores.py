"""Hidden suite, exercise 1: dot-product scores (dot, pairwise_scores, attention_scores)."""
import hints_scores as known
import pytest
import torch
from hypothesis import given

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites.contract import Contract, Size, Subject, sequences
from solutions import scores as ref

pytestmark = pytest.mark.scores

@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.vectors())
def test_dot_values(student, course, device, case):
    """dot(a, b) is the 0-d tensor sum_i a_i b_i for 1-D inputs of every length."""
    a, b = case.randn(case.d, dtype=torch.float32, device=device), case.randn(case.d, dtype=torch.float32, device=device)
    on = C.describe(a=a, b=b)
    got = C.attempt(lambda: student.scores.dot(a, b), "dot(a, b)", on)
    C.expect_close(got, C.in_float64(ref.dot, a, b), what="dot(a, b)", on=on, course=course,
                   hints=known.dot_hints(a, b), generic="multiply element by element and sum: (a * b).sum().")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.sequences())
def test_pairwise_scores_values(student, course, device, case):
    """pairwise_scores(x) is x @ x^T for (..., T, d) inputs with 0, 1 or 2 batch dims."""
    x = case.randn(*case.batch, case.T, case.d, dtype=torch.float32, device=device)
    on = C.describe(x=x)
    got = C.attempt(lambda: student.scores.pairwise_scores(x), "pairwise_scores(x)", on, known.pairwise_hints(x))
    C.expect_close(got, C.in_float64(ref.pairwise_scores, x), what="pairwise_scores(x)", on=on, course=course,
                   hints=known.pairwise_hints(x),
                   generic="entry [i, j] is the dot product of token i with token j: x @ x^T.")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.query_key_pairs())
def test_attention_scores_values(student, course, device, case):
    """attention_scores(queries, keys) is queries @ keys^T, (..., Tq, Tk), with Tq != Tk."""
    q = case.randn(*case.batch, case.Tq, case.d, dtype=torch.float32, device=device)
    k = case.randn(*case.batch, case.Tk, case.d, dtype=torch.float32, device=device)
    on = C.describe(queries=q, keys=k)
    got = C.attempt(lambda: student.scores.attention_scores(q, k), "attention_scores(queries, keys)", on,
                    known.score_hints(q, k))
    C.expect_close(got, C.in_float64(ref.attention_scores, q, k), what="attention_scores(queries, keys)", on=on,
                   course=course, hints=known.score_hints(q, k),
                   generic="row i holds query i against every key: queries @ keys^T.")


BROADCASTS = [((3,), ()), ((), (4,)), ((2, 1), (3,)), ((4, 1), (1, 3))]


@pytest.mark.weight(1)
@pytest.mark.parametrize("lead_q, lead_k", BROADCASTS, ids=["unbatched keys", "unbatched queries", "2 vs 1 leading dims", "1 vs 1 leading dims"])
def test_attention_scores_broadcasts_leading_dims(student, course, device, lead_q, lead_k):
    """attention_scores broadcasts the leading dims of queries and keys."""
    g = torch.Generator().manual_seed(course.seed)
    q = torch.randn(*lead_q, 5, 6, generator=g).to(device)
    k = torch.randn(*lead_k, 7, 6, generator=g).to(device)
    on = C.describe(queries=q, keys=k)
    got = C.attempt(lambda: student.scores.attention_scores(q, k), "attention_scores(queries, keys)", on,
                    known.score_hints(q, k))
    C.expect_close(got, C.in_float64(ref.attention_scores, q, k), what="attention_scores(queries, keys)", on=on,
                   course=course, hints=known.score_hints(q, k))


NAMES = {"dot": ("a", "b"), "pairwise_scores": ("x",), "attention_scores": ("queries", "keys")}


@pytest.mark.rule
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


CONTRACT = Contract(subjects=(
    Subject("dot", "dot(a, b)", ("a", "b"), ((9,), (9,)), ref.dot,
            instead="multiply element by element and sum: (a * b).sum()."),
    Subject("pairwise_scores", "pairwise_scores(x)", ("x",), ((2, 5, 3),), ref.pairwise_scores, sizes=sequences(4)),
    Subject("attention_scores", "attention_scores(queries, keys)", ("queries", "keys"), ((3, 4, 6), (3, 7, 6)),
            ref.attention_scores,
            sizes=(Size("Tq=3, Tk=4, batch 2", ((2, 3, 4), (2, 4, 4))), Size("Tq=7, Tk=9, batch 2", ((2, 7, 4), (2, 9, 4))),
                   Size("Tq=3, Tk=4, batch 6", ((6, 3, 4), (6, 4, 4))))),
))
