"""Exercise 4: query, key and value projections (``exercises/qkv.py``)."""
import hints_qkv as known
import pytest
import torch
from checking import Failure, attempt, linear_layers, shaped, test_imports_allowed  # noqa: F401 (the import rule, here too)
from torch import nn

pytestmark = pytest.mark.qkv

# The lecture's hand-written projections for the "bank" example (d_in=4, d_k=2, d_v=3).
W_QUERY = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2], [0.0, 0.0]])
W_KEY = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.1, 0.1]])
W_VALUE = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.5]])

SEED_123_OUTPUT = [  # SelfAttention(d_in=3, d_out=2) after torch.manual_seed(123), on the journey sentence
    [0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203],
    [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040],
]
SEED_789_OUTPUT = [  # SelfAttentionLinear(d_in=3, d_out=2) after torch.manual_seed(789)
    [-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
    [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693],
]


def journey_weights():
    """The lecture's trainable weights: torch.manual_seed(123), then W_query, W_key, W_value = torch.rand(3, 2)."""
    torch.manual_seed(123)
    return torch.rand(3, 2), torch.rand(3, 2), torch.rand(3, 2)


def test_project_river_shapes(impl, river, expect_close):
    """project gives queries (3, 2), keys (3, 2), values (3, 3); "bank"'s query is [0.84, 0.84]."""
    queries, keys, values = impl.qkv.project(river, W_QUERY, W_KEY, W_VALUE)
    shaped(queries, (3, 2), "queries"), shaped(keys, (3, 2), "keys"), shaped(values, (3, 3), "values")
    weights = {"W_query": W_QUERY, "W_key": W_KEY, "W_value": W_VALUE}
    for name, got, own in (("queries", queries, "W_query"), ("keys", keys, "W_key"), ("values", values, "W_value")):
        expect_close(got, river @ weights[own], hints=known.project_hints(river, weights, own, name))
    expect_close(queries[1], [0.84, 0.84], atol=1e-4)


def test_project_journey_query(impl, journey, expect_close):
    """With the seed-123 weights the query of "journey" is [0.4306, 1.4551]; keys and values are (6, 2)."""
    queries, keys, values = impl.qkv.project(journey, *journey_weights())
    expect_close(queries[1], [0.4306, 1.4551], atol=1e-4)
    shaped(keys, (6, 2), "keys"), shaped(values, (6, 2), "values")


def test_project_rejects_wrong_weight_shape(impl, river):
    """A weight whose first dim is not d_in raises ValueError."""
    with pytest.raises(ValueError):
        impl.qkv.project(river, torch.ones(3, 2), W_KEY, W_VALUE)


def test_sdpa_river(impl, river, expect_close):
    """Scaled dot-product attention of the projected river sentence gives the lecture's 3x3 output."""
    expected = [[0.992, 0.221, 0.261], [0.957, 0.314, 0.256], [0.986, 0.232, 0.263]]
    q, k, v = river @ W_QUERY, river @ W_KEY, river @ W_VALUE
    expect_close(impl.qkv.scaled_dot_product_attention(q, k, v), expected, atol=1e-3, rtol=0,
                 hints=known.attention_hints(q, k, v))


def test_sdpa_finance(impl, finance, expect_close):
    """Scaled dot-product attention of the projected finance sentence gives the lecture's 3x3 output."""
    expected = [[0.188, 1.158, 0.169], [0.297, 1.089, 0.180], [0.204, 1.146, 0.172]]
    q, k, v = finance @ W_QUERY, finance @ W_KEY, finance @ W_VALUE
    expect_close(impl.qkv.scaled_dot_product_attention(q, k, v), expected, atol=1e-3, rtol=0,
                 hints=known.attention_hints(q, k, v))


def test_sdpa_journey(impl, journey, expect_close):
    """For "journey" (weights [0.1500, 0.2264, ...] after dividing by sqrt(2)) the context vector is [0.3061, 0.8210]."""
    W_query, W_key, W_value = journey_weights()
    queries, keys, values = journey @ W_query, journey @ W_key, journey @ W_value
    out = impl.qkv.scaled_dot_product_attention(queries[1:2], keys, values)
    assert out.shape == (1, 2)
    expect_close(out, [[0.3061, 0.8210]], atol=1e-4, hints=known.attention_hints(queries[1:2], keys, values))
    expect_close(impl.qkv.scaled_dot_product_attention(queries, keys, values), SEED_123_OUTPUT, atol=1e-4,
                 hints=known.attention_hints(queries, keys, values))


def test_sdpa_scales_by_sqrt_dk(impl, expect_close):
    """The scores are divided by sqrt(d_k), the key width: softmax(Q K^T / sqrt(d_k)) V, on batched (2, 4, 8) queries."""
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 3)
    hints = known.attention_hints(q, k, v)
    expect_close(attempt(lambda: impl.qkv.scaled_dot_product_attention(q, k, v), hints),
                 torch.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, dim=-1) @ v, hints=hints)


def test_sdpa_mask(impl, expect_close):
    """A bool mask (True = may attend) gives masked keys weight 0; an all-True mask changes nothing."""
    torch.manual_seed(0)
    q, k, v = torch.randn(4, 2), torch.randn(4, 2), torch.randn(4, 3)
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    out = impl.qkv.scaled_dot_product_attention(q, k, v, mask=causal)
    expected = torch.softmax((q @ k.T / 2 ** 0.5).masked_fill(~causal, float("-inf")), dim=-1) @ v
    expect_close(out, expected, hints=known.attention_hints(q, k, v, mask=causal))
    expect_close(out[0], v[0])  # the first query sees only the first key
    everything = torch.ones(4, 4, dtype=torch.bool)
    expect_close(impl.qkv.scaled_dot_product_attention(q, k, v, mask=everything),
                 impl.qkv.scaled_dot_product_attention(q, k, v))


def test_sdpa_keeps_float64(impl):
    """float64 queries, keys and values give a float64 result."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 2, dtype=torch.float64) for _ in range(3))
    assert impl.qkv.scaled_dot_product_attention(q, k, v).dtype == torch.float64


def test_sdpa_rejects_mismatched_dk(impl):
    """Queries and keys of different widths raise ValueError."""
    with pytest.raises(ValueError):
        impl.qkv.scaled_dot_product_attention(torch.ones(3, 2), torch.ones(3, 4), torch.ones(3, 2))


def test_self_attention_seed_0_river(impl, river, expect_close):
    """torch.manual_seed(0); SelfAttention(d_in=4, d_out=3) on the river sentence gives the lecture's output."""
    torch.manual_seed(0)
    module = impl.qkv.SelfAttention(d_in=4, d_out=3)
    expected = [[0.540, 0.705, 1.030], [0.538, 0.706, 1.030], [0.541, 0.703, 1.025]]
    hints = _hints_of(module, river)
    expect_close(attempt(lambda: module(river), hints), expected, atol=1e-3, hints=hints)


def test_self_attention_seed_0_finance(impl, finance, expect_close):
    """torch.manual_seed(0); SelfAttention(d_in=4, d_out=3) on the finance sentence gives the lecture's output."""
    torch.manual_seed(0)
    module = impl.qkv.SelfAttention(d_in=4, d_out=3)
    expected = [[0.220, 0.418, 0.642], [0.213, 0.404, 0.624], [0.216, 0.409, 0.630]]
    hints = _hints_of(module, finance)
    expect_close(attempt(lambda: module(finance), hints), expected, atol=1e-3, hints=hints)


def test_self_attention_seed_123_journey(impl, journey, expect_close):
    """torch.manual_seed(123); SelfAttention(d_in=3, d_out=2) on the journey sentence gives the lecture's 6x2 output."""
    torch.manual_seed(123)
    module = impl.qkv.SelfAttention(d_in=3, d_out=2)
    hints = _hints_of(module, journey)
    expect_close(attempt(lambda: module(journey), hints), SEED_123_OUTPUT, atol=1e-4, hints=hints)


def test_self_attention_parameters(impl):
    """SelfAttention holds W_query, W_key, W_value (in that order) as (d_in, d_out) nn.Parameters."""
    module = impl.qkv.SelfAttention(d_in=4, d_out=3)
    names = [name for name, _ in module.named_parameters()]
    if names != ["W_query", "W_key", "W_value"]:
        raise Failure(f"the parameters are made in the order {', '.join(names) or 'none'}; expected W_query, W_key, "
                      f"W_value (the order of their random initial values, torch.rand(d_in, d_out) each)")
    for name in names:
        parameter = getattr(module, name)
        if not isinstance(parameter, nn.Parameter) or parameter.shape != (4, 3):
            raise Failure(f"{name} is {type(parameter).__name__} of shape {tuple(getattr(parameter, 'shape', ()))}; "
                          f"expected an nn.Parameter of shape (d_in, d_out) = (4, 3)")


def _hints_of(module, x) -> list:
    """The mistakes of ``module``'s forward on ``x``, from its own W_query, W_key, W_value (none where it has not got
    them as the contract says)."""
    try:
        q, k, v = (x @ getattr(module, name).detach() for name in ("W_query", "W_key", "W_value"))
    except (AttributeError, RuntimeError, TypeError):
        return []
    return known.self_attention_hints(q, k, v, x.shape[-1])


def _linear_hints_of(module, x) -> list:
    """The mistakes of SelfAttentionLinear ``module``'s forward on ``x``, from its own three nn.Linear layers (none
    where it has not got them as the contract says)."""
    try:
        layers = [getattr(module, name) for name in ("W_query", "W_key", "W_value")]
        with torch.no_grad():
            q, k, v = (layer(x) for layer in layers)
        weights = [layer.weight.detach() for layer in layers]
    except (AttributeError, RuntimeError, TypeError):
        return []
    return known.self_attention_hints(q, k, v, x.shape[-1], x=x, linear_weights=weights)


def test_self_attention_batched(impl, river, finance, expect_close):
    """A batch (2, 3, 4) gives (2, 3, d_out), each sentence as if alone."""
    torch.manual_seed(0)
    module = impl.qkv.SelfAttention(d_in=4, d_out=3)
    x = torch.stack([river, finance])
    out = attempt(lambda: module(x), _hints_of(module, x))
    assert out.shape == (2, 3, 3)
    expect_close(out[0], module(river))
    expect_close(out[1], module(finance))


def test_self_attention_linear_seed_789(impl, journey, expect_close):
    """torch.manual_seed(789); SelfAttentionLinear(d_in=3, d_out=2) gives the lecture's 6x2 output."""
    torch.manual_seed(789)
    module = impl.qkv.SelfAttentionLinear(d_in=3, d_out=2)
    hints = _linear_hints_of(module, journey)
    expect_close(attempt(lambda: module(journey), hints), SEED_789_OUTPUT, atol=1e-4, hints=hints)


def test_self_attention_linear_layers(impl):
    """SelfAttentionLinear holds W_query, W_key, W_value as nn.Linear(d_in, d_out), bias only with qkv_bias=True."""
    linear_layers(impl.qkv.SelfAttentionLinear(d_in=3, d_out=2), ["W_query", "W_key", "W_value"], 3, 2)
    linear_layers(impl.qkv.SelfAttentionLinear(d_in=3, d_out=2, qkv_bias=True), ["W_query", "W_key", "W_value"], 3, 2,
                  bias=True)


def test_copy_linear_weights(impl, journey, expect_close):
    """copy_linear_weights makes the seed-123 SelfAttention compute the seed-789 SelfAttentionLinear's output."""
    torch.manual_seed(789)
    src = impl.qkv.SelfAttentionLinear(d_in=3, d_out=2)
    torch.manual_seed(123)
    dst = impl.qkv.SelfAttention(d_in=3, d_out=2)
    returned = attempt(lambda: impl.qkv.copy_linear_weights(src, dst), known.copy_hints(3, 2))
    assert returned is dst, "copy_linear_weights returns dst"
    hints = _hints_of(dst, journey)
    expect_close(attempt(lambda: dst(journey), hints), SEED_789_OUTPUT, atol=1e-4, hints=hints)
    expect_close(dst(journey), src(journey))
