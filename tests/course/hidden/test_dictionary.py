"""Hidden suite, exercise 6: a dictionary made of attention (one_hot, attention, lookup)."""
import checks as C
import pytest
import strategies as S
import torch
from hypothesis import given
from hypothesis import strategies as st

from solutions import dictionary as ref

pytestmark = pytest.mark.dictionary

ATTENTION = "attention(Q, K, V, temperature)"


# ---------------------------------------------------------------- one_hot

@pytest.mark.weight(3)
@S.examples(6)
@given(drawn=S.one_hot_cases())
def test_one_hot_values(student, course, drawn):
    """one_hot(index, n) is a float32 vector of length n with a single 1 at index."""
    index, n = drawn
    on = f"index {'0' if index == 0 else ('n - 1' if index == n - 1 else 'inside 0..n-1')}, n={n}"
    got = C.attempt(lambda: student.dictionary.one_hot(index, n), "one_hot(index, n)", on)
    C.close(got, ref.one_hot(index, n), what="one_hot(index, n)", on=on, course=course,
            dtype_note="the default dtype (torch.zeros(n) without a dtype argument)",
            hints=[C.Hint("the 1 is off by one: put it at position index itself (positions start at 0).",
                          lambda: ref.one_hot(index - 1, n) if index else torch.zeros(n)),
                   C.Hint("the 1 is off by one: put it at position index itself (positions start at 0).",
                          lambda: ref.one_hot(index + 1, n))])


@pytest.mark.weight(1)
def test_one_hot_error(student):
    """one_hot raises ValueError for an index outside 0..n-1 (negative ones included)."""
    for index, when in ((4, "the index is n"), (7, "the index is beyond n"), (-1, "the index is negative")):
        C.expect_raises(ValueError, lambda: student.dictionary.one_hot(index, 4), "one_hot(index, 4)", when,
                        "check 0 <= index < n yourself: a negative index counts from the end in Python and torch")


# ---------------------------------------------------------------- attention

def _check(student, course, Q, K, V, t, rtol=None, atol=None):
    on = f"{C.describe(Q=Q, K=K, V=V)}, {C.temperature_class(t)}"
    got = C.attempt(lambda: student.dictionary.attention(Q, K, V, t), ATTENTION, on,
                    "with batch dims, .T reverses every dim: use K.transpose(-2, -1)" if Q.dim() > 2 else None)
    C.close(got, C.in_float64(ref.attention, Q, K, V, t), what=ATTENTION, on=on, course=course, rtol=rtol, atol=atol,
            hints=C.dictionary_hints(Q.double(), K.double(), V.double(), t), nonfinite=C.STABLE_SOFTMAX,
            generic="softmax(Q K^T / temperature) over the keys, then @ V; no sqrt(d_k) here.")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.dictionary_cases())
def test_attention_values(student, course, device, case):
    """attention(Q, K, V, t) is softmax(Q K^T / t) V, for (..., nq, dk), (..., nk, dk), (..., nk, dv), all sizes different."""
    Q = case.randn(*case.batch, case.nq, case.dk, dtype=torch.float32, device=device)
    K = case.randn(*case.batch, case.nk, case.dk, dtype=torch.float32, device=device)
    V = case.randn(*case.batch, case.nk, case.dv, dtype=torch.float32, device=device)
    _check(student, course, Q, K, V, case.temperature)


@pytest.mark.weight(1)
def test_attention_low_temperature(student, course, device):
    """A low temperature (0.01) gives finite results close to a hard lookup, matching the reference."""
    g = torch.Generator().manual_seed(course.seed)
    Q, K, V = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 6, generator=g)
    rtol, atol = C.tolerance(course, torch.float32, float((Q @ K.mT).abs().max()) / 0.01)
    _check(student, course, Q.to(device), K.to(device), V.to(device), 0.01, rtol=rtol, atol=atol)
    _check(student, course, Q.to(device), K.to(device), V.to(device), 1.0)  # default-like temperature


@pytest.mark.weight(1)
def test_attention_default_temperature(student, course, device):
    """attention(Q, K, V) uses temperature 1.0 by default."""
    g = torch.Generator().manual_seed(course.seed + 1)
    Q, K, V = (torch.randn(3, 4, generator=g).to(device), torch.randn(5, 4, generator=g).to(device),
               torch.randn(5, 2, generator=g).to(device))
    on = C.describe(Q=Q, K=K, V=V)
    got = C.attempt(lambda: student.dictionary.attention(Q, K, V), "attention(Q, K, V)", on)
    C.close(got, C.in_float64(ref.attention, Q, K, V), what="attention(Q, K, V) (default temperature)", on=on,
            course=course, hints=C.dictionary_hints(Q.double(), K.double(), V.double(), 1.0))


@pytest.mark.weight(1)
def test_attention_errors(student, device):
    """attention raises ValueError for a temperature <= 0 and for mismatched sizes."""
    Q, K, V = torch.ones(3, 4, device=device), torch.ones(5, 4, device=device), torch.ones(5, 2, device=device)
    for t, when in ((0.0, "the temperature is zero"), (-0.5, "the temperature is negative")):
        C.expect_raises(ValueError, lambda: student.dictionary.attention(Q, K, V, t), ATTENTION, when,
                        "check temperature <= 0 first and raise ValueError(...)")
    C.expect_raises(ValueError, lambda: student.dictionary.attention(Q, torch.ones(5, 3, device=device), V, 1.0),
                    ATTENTION, "Q and K have different dk", "compare Q.shape[-1] with K.shape[-1]")
    C.expect_raises(ValueError, lambda: student.dictionary.attention(Q, K, torch.ones(6, 2, device=device), 1.0),
                    ATTENTION, "K and V have different nk", "compare K.shape[-2] with V.shape[-2]")


# ---------------------------------------------------------------- lookup

def _table_on(table, key, t):
    return (f"a table of {len(table)} keys ({type(next(iter(table))).__name__}) with values of length "
            f"{len(next(iter(table.values())))}, {C.temperature_class(t)}")


@pytest.mark.weight(4)
@S.examples(8)
@given(drawn=S.tables(), t=st.sampled_from([0.01, 1.0, 0.5, 2.0]))
def test_lookup_values(student, course, drawn, t):
    """lookup(table, key, t) is attention of the one-hot query over one-hot keys (dict order) and stacked values."""
    table, key = drawn
    on = _table_on(table, key, t)
    got = C.attempt(lambda: student.dictionary.lookup(table, key, t), "lookup(table, key, temperature)", on)
    keys = list(table)
    ranked = sorted(keys, key=repr)
    stored = torch.tensor(table[key], dtype=torch.float32)
    hints = [C.Hint("the values are stacked in one order and the keys in another: use the dict's own order "
                    "(list(table)) for both, and keys.index(key) for the query.",
                    lambda: ref.lookup({k: table[k] for k in ranked}, ranked[keys.index(key)], t)),
             C.Hint("the temperature multiplies the scores: divide by it (a low temperature must return the stored value).",
                    lambda: ref.lookup(table, key, 1 / t)),
             C.Hint("you return the stored value itself: lookup blends the values by attention, so a temperature of 1 "
                    "gives a mix.", lambda: stored)]
    C.close(got, ref.lookup(table, key, t), what="lookup(table, key, temperature)", on=on, course=course, hints=hints,
            dtype_note="as the contract says: stack the values with dtype=torch.float32 (a table of ints would give int64)",
            generic="K = one-hot vectors of the keys in dict order, V = the values stacked, q = one_hot of the key's "
                    "position; return attention(q, K, V, temperature) as a float32 vector.")


@pytest.mark.weight(1)
def test_lookup_missing_key(student):
    """lookup raises KeyError for a key that is not in the table."""
    table = {"fig": [1, 2], "apple": [3, 4], "kiwi": [5, 6]}
    C.expect_raises(KeyError, lambda: student.dictionary.lookup(table, "pear", 1.0), "lookup(table, key, temperature)",
                    "the key is not in the table", "check `key not in table` and raise KeyError(key)", need_message=False)
    C.expect_raises(KeyError, lambda: student.dictionary.lookup({3: [1.0], 1: [2.0]}, 2, 0.01),
                    "lookup(table, key, temperature)", "an int key is not in the table",
                    "check `key not in table` and raise KeyError(key)", need_message=False)


# ---------------------------------------------------------------- dtype, device, autograd, in-place, loops, built-ins

def _fixed(device, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, generator=g, dtype=torch.float64).to(device, dtype)
                 for shape in ((2, 3, 4), (2, 5, 4), (2, 5, 6)))


@pytest.mark.weight(1)
def test_float64_kept(student, course, device):
    """float64 inputs give a float64 result at float64 precision."""
    _check(student, course, *_fixed(device, torch.float64, course.seed), 0.5)


@pytest.mark.weight(1)
def test_device_kept(student, course, device):
    """attention's result stays on the inputs' device (checked with meta tensors, which have no data)."""
    Q, K, V = _fixed("cpu", torch.float32, course.seed)
    meta = C.on_meta((Q, K, V))
    on = C.describe(Q=meta[0], K=meta[1], V=meta[2])
    got = C.attempt(lambda: student.dictionary.attention(*meta, 0.5), ATTENTION, on, C.META_HINT)
    C.close(got, C.on_meta(ref.attention(Q, K, V, 0.5)), what=ATTENTION, on=on, course=course)


@pytest.mark.weight(1)
def test_autograd(student, course, device):
    """Gradients flow back to Q, K and V, equal to the reference's (float64)."""
    Q, K, V = _fixed(device, torch.float64, course.seed)
    grad_output = torch.randn(2, 3, 6, generator=torch.Generator().manual_seed(course.seed + 2),
                              dtype=torch.float64).to(device)
    want, _ = C.reference_grads(lambda q, k, v: ref.attention(q, k, v, 0.5), (Q, K, V), grad_output)
    on = C.describe(Q=Q, K=K, V=V)
    result = C.attempt(lambda: student.dictionary.attention.run(args=(Q, K, V, 0.5), grad_output=grad_output), ATTENTION, on)
    C.grads_close(result, want, ("Q", "K", "V"), what=ATTENTION, on=on, course=course)


@pytest.mark.weight(1)
def test_inputs_not_modified(student, course, device):
    """Q, K and V are not changed in place."""
    args = _fixed(device, torch.float32, course.seed)
    on = C.describe(Q=args[0], K=args[1], V=args[2])
    result = C.attempt(lambda: student.dictionary.attention.run(args=(*args, 0.5), return_args=True), ATTENTION, on)
    C.unchanged([a.clone() for a in args], result, ("Q", "K", "V"), what=ATTENTION, on=on)


@pytest.mark.weight(1)
def test_vectorized(student, device):
    """attention uses no Python loop over queries, keys or the batch: the number of tensor operations stays the same."""
    g = torch.Generator().manual_seed(19)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(device)
    runs = [("nq=3, nk=4, batch 2", (2, 3, 4)), ("nq=8, nk=9, batch 2", (2, 8, 9)), ("nq=3, nk=4, batch 6", (6, 3, 4))]
    calls = [(student.dictionary.attention._target, (r(B, nq, 5), r(B, nk, 5), r(B, nk, 2), 0.5), None,
              {}) for _, (B, nq, nk) in runs]
    try:
        results = student.session.run_many(calls)
    except C.StudentError as error:
        raise C.CheckFailed(f"{ATTENTION} failed on a batched input: {error}") from None
    C.vectorized([(label, r_) for (label, _), r_ in zip(runs, results)], ATTENTION, "queries, keys or batch elements")


@pytest.mark.weight(1)
def test_own_implementation(student, course, device):
    """No built-in attention (torch's scaled_dot_product_attention, nn.MultiheadAttention) in attention."""
    args = _fixed(device, torch.float32, course.seed)
    result = C.attempt(lambda: student.dictionary.attention.run(args=(*args, 0.5), watch=course.banned["dictionary.attention"]), ATTENTION,
                       C.describe(Q=args[0], K=args[1], V=args[2]))
    C.own_implementation(result, "attention", "Q @ K.transpose(-2, -1) / temperature, torch.softmax, @ V.")


@pytest.mark.weight(1)
@pytest.mark.parametrize("dtype", C.HALF_DTYPES, ids=C.dtype_name)
def test_half_precision(student, course, device, dtype):
    """float16 and bfloat16 inputs (CUDA) give a result of the same dtype within its tolerance."""
    C.skip_unless_cuda(device, dtype)
    Q, K, V = (t * 0.5 for t in _fixed(device, dtype, course.seed))
    _check(student, course, Q, K, V, 2.0)
