"""Exercise 6: a dictionary made of attention (``exercises/dictionary.py``)."""
import hints_dictionary as known
import pytest
import torch
from checking import attempt, test_imports_allowed  # noqa: F401 (the grader's import rule, checked here too)

pytestmark = pytest.mark.dictionary

TABLE = {0: [2, 3], 1: [5, 7], 2: [3, 2]}  # the lecture's dictionary


def dictionary_qkv():
    """The lecture's dictionary as one query (1, 1, 3), keys (1, 3, 3) and values (1, 3, 2)."""
    Q = torch.tensor([[[0.0, 1.0, 0.0]]])
    K = torch.eye(3).unsqueeze(0)
    V = torch.tensor([[[2.0, 3.0], [5.0, 7.0], [3.0, 2.0]]])
    return Q, K, V


ONE_HOT_DTYPE = "the default dtype (torch.zeros(n) without a dtype argument)"


def one_hot(index: int, n: int) -> torch.Tensor:
    """The one-hot vector, written out here: the right answer the known mistakes are computed from."""
    return torch.eye(n)[index]


def lookup(table: dict, key, temperature: float) -> torch.Tensor:
    """The lecture's lookup, written out here: softmax(one_hot(key) I^T / temperature) @ values."""
    keys = list(table)
    query = one_hot(keys.index(key), len(keys))
    values = torch.tensor([table[k] for k in keys], dtype=torch.float32)
    return torch.softmax(query @ torch.eye(len(keys)).T / temperature, dim=-1) @ values


def test_one_hot(impl, expect_close):
    """one_hot(1, 3) is the float32 vector [0, 1, 0]."""
    expect_close(impl.dictionary.one_hot(1, 3), torch.tensor([0.0, 1.0, 0.0]), atol=0, rtol=0,
                 hints=known.one_hot_hints(1, 3, one_hot), dtype_from=ONE_HOT_DTYPE)


def test_one_hot_vectors_are_orthonormal(impl, expect_close):
    """The one-hot vectors of 0..4 are the rows of the 5x5 identity."""
    for index in range(5):
        expect_close(impl.dictionary.one_hot(index, 5), torch.eye(5)[index], atol=0, rtol=0,
                     hints=known.one_hot_hints(index, 5, one_hot), dtype_from=ONE_HOT_DTYPE)


@pytest.mark.parametrize("index", [3, -1])
def test_one_hot_rejects_index_out_of_range(impl, index):
    """An index outside 0..n-1 raises ValueError."""
    with pytest.raises(ValueError):
        impl.dictionary.one_hot(index, 3)


def test_lookup_low_temperature_returns_stored_value(impl, expect_close):
    """lookup(table, 1, temperature=0.01) returns the stored value [5, 7] as float32."""
    value = impl.dictionary.lookup(TABLE, 1, temperature=0.01)
    expect_close(value, torch.tensor([5.0, 7.0]), atol=1e-4, hints=known.lookup_hints(TABLE, 1, 0.01, lookup))


def test_lookup_every_key(impl, expect_close):
    """At temperature 0.01 every key returns its own value."""
    for key, stored in TABLE.items():
        expect_close(impl.dictionary.lookup(TABLE, key, temperature=0.01), stored, atol=1e-4,
                     hints=known.lookup_hints(TABLE, key, 0.01, lookup))


def test_lookup_temperature_one_blends(impl, expect_close):
    """At temperature 1 the lookup of key 1 blends all values: [3.9403, 5.0925]."""
    expect_close(impl.dictionary.lookup(TABLE, 1, temperature=1.0), [3.9403, 5.0925], atol=1e-4,
                 hints=known.lookup_hints(TABLE, 1, 1.0, lookup))


def test_lookup_string_keys(impl, expect_close):
    """Keys need not be integers: the dict's order decides the one-hot vectors."""
    table = {"pear": [4.0, 4.0, 4.0], "apple": [1.0, 0.0, 2.0]}  # not in sorted order
    expect_close(impl.dictionary.lookup(table, "pear", temperature=0.01), [4.0, 4.0, 4.0], atol=1e-4,
                 hints=known.lookup_hints(table, "pear", 0.01, lookup))


def test_lookup_unknown_key(impl):
    """A key that is not in the table raises KeyError."""
    with pytest.raises(KeyError):
        impl.dictionary.lookup(TABLE, 7, temperature=0.01)


def test_attention_quiz_low_temperature(impl, decoder_states, expect_close):
    """attention of the quiz at temperature 0.01 returns h1 = [0.5539, 0.7239], shape (1, 1, 2)."""
    s, H = decoder_states
    Q, K, V = s[None, None], H[None], H[None]
    expect_close(impl.dictionary.attention(Q, K, V, temperature=0.01), [[[0.5539, 0.7239]]], atol=1e-4,
                 hints=known.dictionary_hints(Q, K, V, 0.01))


def test_attention_dictionary_example(impl, expect_close):
    """attention of the dictionary example at temperature 0.01 returns [[[5, 7]]]."""
    expect_close(impl.dictionary.attention(*dictionary_qkv(), temperature=0.01), [[[5.0, 7.0]]], atol=1e-4,
                 hints=known.dictionary_hints(*dictionary_qkv(), 0.01))


def test_attention_default_temperature_is_one(impl, expect_close):
    """The default temperature is 1: the dictionary example blends to [3.9403, 5.0925]."""
    expect_close(impl.dictionary.attention(*dictionary_qkv()), [[[3.9403, 5.0925]]], atol=1e-4,
                 hints=known.dictionary_hints(*dictionary_qkv(), 1.0))


def test_attention_has_no_sqrt_scaling(impl, expect_close):
    """attention is softmax(Q K^T / temperature) V, without dividing by sqrt(d_k)."""
    torch.manual_seed(0)
    Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    hints = known.dictionary_hints(Q, K, V, 0.5)
    expect_close(attempt(lambda: impl.dictionary.attention(Q, K, V, temperature=0.5), hints),
                 torch.softmax(Q @ K.transpose(-2, -1) / 0.5, dim=-1) @ V, hints=hints)


@pytest.mark.parametrize("temperature", [0.0, -0.5])
def test_attention_rejects_non_positive_temperature(impl, temperature):
    """A temperature <= 0 raises ValueError."""
    with pytest.raises(ValueError):
        impl.dictionary.attention(*dictionary_qkv(), temperature=temperature)


def test_attention_keeps_float64(impl):
    """float64 queries, keys and values give a float64 result."""
    Q, K, V = (t.double() for t in dictionary_qkv())
    assert impl.dictionary.attention(Q, K, V).dtype == torch.float64
