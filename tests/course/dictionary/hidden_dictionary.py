"""Hidden suite, exercise 6: a dictionary made of attention (one_hot, attention, lookup)."""
import hints_dictionary as known
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites.contract import Contract, HalfInputs, Size, Subject
from solutions import dictionary as ref

pytestmark = pytest.mark.dictionary


def dictionary_cases() -> st.SearchStrategy[S.Case]:
    """Q (..., nq, dk), K (..., nk, dk), V (..., nk, dv) and a temperature."""
    return S.cases(("nq", "nk", "dk", "dv"), batch=(0, 2), scales=(1.0, 0.5),
                 temperature=st.sampled_from([1.0, 0.5, 2.0, 0.1, 3.0]))


def one_hot_cases() -> st.SearchStrategy[tuple[int, int]]:
    """(index, n) with 0 <= index < n <= 12."""
    return st.integers(1, 12).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n)))


TABLE_KEYS = ("apple", "pear", "fig", "kiwi", "lime", "plum", "date")


@st.composite
def tables(draw) -> tuple[dict, object]:
    """A dict of 2..6 keys (strings or ints, never in sorted order) to equal-length lists of numbers, and a key of it."""
    n = draw(st.integers(2, 6))
    dv = draw(st.integers(1, 5))
    if draw(st.booleans()):
        keys = draw(st.permutations(TABLE_KEYS))[:n]
    else:
        keys = draw(st.lists(st.integers(-20, 40), min_size=n, max_size=n, unique=True))
    if list(keys) == sorted(keys):
        keys = list(reversed(keys))
    values = draw(st.lists(st.lists(st.integers(-9, 9), min_size=dv, max_size=dv), min_size=n, max_size=n))
    floats = draw(st.booleans())  # tables of ints only, or of ints and floats mixed
    table = {k: [float(v) if floats and i % 2 else v for i, v in enumerate(row)] for k, row in zip(keys, values)}
    return table, draw(st.sampled_from(list(keys)))

ATTENTION = "attention(Q, K, V, temperature)"


# ---------------------------------------------------------------- one_hot

@pytest.mark.weight(3)
@S.examples(6)
@given(drawn=one_hot_cases())
def test_one_hot_values(student, course, drawn):
    """one_hot(index, n) is a float32 vector of length n with a single 1 at index."""
    index, n = drawn
    on = f"index {'0' if index == 0 else ('n - 1' if index == n - 1 else 'inside 0..n-1')}, n={n}"
    got = C.attempt(lambda: student.dictionary.one_hot(index, n), "one_hot(index, n)", on)
    C.expect_close(got, ref.one_hot(index, n), what="one_hot(index, n)", on=on, course=course,
                   dtype_note="the default dtype (torch.zeros(n) without a dtype argument)",
                   hints=known.one_hot_hints(index, n, ref.one_hot))


@pytest.mark.rule
@pytest.mark.weight(1)
def test_one_hot_error(student):
    """one_hot raises ValueError for an index outside 0..n-1 (negative ones included)."""
    for index, when in ((4, "the index is n"), (7, "the index is beyond n"), (-1, "the index is negative")):
        C.expect_raises(ValueError, lambda: student.dictionary.one_hot(index, 4), "one_hot(index, 4)", when,
                        "check 0 <= index < n yourself: a negative index counts from the end in Python and torch")


# ---------------------------------------------------------------- attention

def _check(student, course, Q, K, V, t, rtol=None, atol=None):
    on = f"{C.describe(Q=Q, K=K, V=V)}, {C.temperature_class(t)}"
    hints = known.dictionary_hints(Q, K, V, t)
    got = C.attempt(lambda: student.dictionary.attention(Q, K, V, t), ATTENTION, on, hints)
    C.expect_close(got, C.in_float64(ref.attention, Q, K, V, t), what=ATTENTION, on=on, course=course, rtol=rtol,
                   atol=atol, hints=hints,
                   generic="softmax(Q K^T / temperature) over the keys, then @ V; no sqrt(d_k) here.")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=dictionary_cases())
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
    C.expect_close(got, C.in_float64(ref.attention, Q, K, V), what="attention(Q, K, V) (default temperature)", on=on,
                   course=course, hints=known.dictionary_hints(Q, K, V, 1.0))


@pytest.mark.rule
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
@given(drawn=tables(), t=st.sampled_from([0.01, 1.0, 0.5, 2.0]))
def test_lookup_values(student, course, drawn, t):
    """lookup(table, key, t) is attention of the one-hot query over one-hot keys (dict order) and stacked values."""
    table, key = drawn
    on = _table_on(table, key, t)
    got = C.attempt(lambda: student.dictionary.lookup(table, key, t), "lookup(table, key, temperature)", on)
    C.expect_close(got, ref.lookup(table, key, t), what="lookup(table, key, temperature)", on=on, course=course,
                   hints=known.lookup_hints(table, key, t, ref.lookup),
                   dtype_note="as the contract says: stack the values with dtype=torch.float32 (a table of ints "
                              "would give int64)",
                   generic="K = one-hot vectors of the keys in dict order, V = the values stacked, q = one_hot of "
                           "the key's position; return attention(q, K, V, temperature) as a float32 vector.")


@pytest.mark.rule
@pytest.mark.weight(1)
def test_lookup_missing_key(student):
    """lookup raises KeyError for a key that is not in the table."""
    table = {"fig": [1, 2], "apple": [3, 4], "kiwi": [5, 6]}
    C.expect_raises(KeyError, lambda: student.dictionary.lookup(table, "pear", 1.0), "lookup(table, key, temperature)",
                    "the key is not in the table", "check `key not in table` and raise KeyError(key)", need_message=False)
    C.expect_raises(KeyError, lambda: student.dictionary.lookup({3: [1.0], 1: [2.0]}, 2, 0.01),
                    "lookup(table, key, temperature)", "an int key is not in the table",
                    "check `key not in table` and raise KeyError(key)", need_message=False)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_lookup_attends_at_every_temperature(student, course):
    """lookup makes attention's tensor operations at a low temperature as at 1: no shortcut to the stored value."""
    table = {"fig": [1.0, -2.0], "apple": [3.0, 0.5], "kiwi": [-5.0, 6.0]}
    what = "lookup(table, key, temperature)"
    low, one = (C.attempt(lambda: student.dictionary.lookup.run(args=(table, "apple", t)), what, f"{on} of 3 keys")
                for t, on in ((0.01, "a temperature below 1"), (1.0, "temperature 1")))
    if low.ops is not None and one.ops is not None and low.ops < one.ops:
        # The counts are the worker's, so the student's code could set them: fixed words, never the numbers.
        raise C.CheckFailed(f"{what} makes fewer tensor operations at temperature 0.01 than at 1: at a low temperature "
                            "it returns the stored value without attention. Hint: compute attention(q, K, V, "
                            "temperature) at every temperature; a low one gives the stored value by itself.")


# ---------------------------------------------------------------- dtype, device, autograd, in-place, loops, built-ins


CONTRACT = Contract(subjects=(
    Subject("attention", ATTENTION, ("Q", "K", "V"), ((2, 3, 4), (2, 5, 4), (2, 5, 6)), ref.attention, options=(0.5,),
            describe=lambda Q, K, V, t: f"{C.describe(Q=Q, K=K, V=V)}, {C.temperature_class(t)}",
            values=lambda student, course, case: _check(student, course, *case.args),
            instead="Q @ K.transpose(-2, -1) / temperature, torch.softmax, @ V.",
            sizes=(Size("nq=3, nk=4, batch 2", ((2, 3, 5), (2, 4, 5), (2, 4, 2))),
                   Size("nq=8, nk=9, batch 2", ((2, 8, 5), (2, 9, 5), (2, 9, 2))),
                   Size("nq=3, nk=4, batch 6", ((6, 3, 5), (6, 4, 5), (6, 4, 2)))),
            loop_over="queries, keys or batch elements", half=(HalfInputs(0.5, (2.0,)),)),
))
