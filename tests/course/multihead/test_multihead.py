"""Exercise 8: multi-head attention (``exercises/multihead.py``)."""
import hints_multihead as known
import pytest
import torch
from checking import attempt, dropout_off_in_eval, dropout_on_weights, linear_layers, shaped, test_imports_allowed  # noqa: F401 (the grader's import rule, checked here too)
from torch import nn

pytestmark = pytest.mark.multihead


def make(impl, seed=0, **kwargs):
    """A seeded MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2) in eval mode, its
    arguments given by position in the contract's order, as the grader gives them."""
    arguments = dict(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2, qkv_bias=False) | kwargs
    torch.manual_seed(seed)
    return impl.multihead.MultiHeadAttention(*arguments.values()).eval()


def reference(module, x, num_heads):
    """Multi-head causal attention written out head by head with plain torch (loops are fine in a test)."""
    T = x.shape[1]
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    head_dim = q.shape[-1] // num_heads
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    heads = []
    for h in range(num_heads):
        part = slice(h * head_dim, (h + 1) * head_dim)
        scores = q[..., part] @ k[..., part].transpose(-2, -1) / head_dim ** 0.5
        heads.append(torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ v[..., part])
    return module.out_proj(torch.cat(heads, dim=-1))


def test_multihead_output_shape(impl, journey):
    """A batch (2, 6, 3) gives (2, 6, d_out) = (2, 6, 4)."""
    out = make(impl)(torch.stack([journey, journey]))
    shaped(out, (2, 6, 4), "the output", torch.float32)


def test_multihead_rejects_indivisible_d_out(impl):
    """d_out not divisible by num_heads raises ValueError."""
    with pytest.raises(ValueError):
        impl.multihead.MultiHeadAttention(3, 5, 6, 0.0, 2)


def test_multihead_layers(impl):
    """W_query, W_key, W_value are nn.Linear(d_in, d_out) and out_proj is nn.Linear(d_out, d_out), in that order."""
    module = make(impl)
    linear_layers(module, ["W_query", "W_key", "W_value"], 3, 4, after=("out_proj",))
    assert isinstance(module.out_proj, nn.Linear), "out_proj is an nn.Linear(d_out, d_out)"
    assert tuple(module.out_proj.weight.shape) == (4, 4), "out_proj is an nn.Linear(d_out, d_out): its weight is (4, 4)"
    assert module.out_proj.bias is not None, ("out_proj is an nn.Linear(d_out, d_out) with its bias (the default), "
                                              "whatever qkv_bias is: qkv_bias is W_query's, W_key's and W_value's")
    assert isinstance(module.dropout, nn.Dropout), "dropout is an nn.Dropout(dropout)"


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_multihead_matches_heads_computed_one_by_one(impl, journey, expect_close, num_heads):
    """The output equals num_heads causal heads of size d_out // num_heads, concatenated, then out_proj."""
    module = make(impl, seed=num_heads, num_heads=num_heads, d_out=8)
    x = torch.stack([journey, journey.flip(0)])
    hints = known.multihead_hints(module, x, num_heads, context_length=6)
    expect_close(attempt(lambda: module(x), hints), reference(module, x, num_heads), hints=hints)


def test_multihead_first_token_sees_only_itself(impl, journey, expect_close):
    """With dropout 0 the first output row is out_proj of the first token's value."""
    module = make(impl)
    x = journey.unsqueeze(0)
    expect_close(module(x)[:, 0], module.out_proj(module.W_value(x))[:, 0])


def test_multihead_ignores_the_future(impl, journey, expect_close):
    """Changing the last token leaves every earlier output row unchanged."""
    module = make(impl)
    x = journey.unsqueeze(0)
    changed = x.clone()
    changed[0, -1] = torch.tensor([5.0, -3.0, 2.0])
    expect_close(module(x)[:, :-1], module(changed)[:, :-1])


def test_multihead_shorter_sequence(impl, journey, expect_close):
    """A sequence shorter than context_length works: (1, 4, 3) gives (1, 4, 4), the mask cut to 4 tokens."""
    module = make(impl, seed=5)
    x = journey[:4].unsqueeze(0)
    hints = known.multihead_hints(module, x, 2, context_length=6)
    expect_close(attempt(lambda: module(x), hints), reference(module, x, 2), hints=hints)


def test_multihead_rejects_long_sequence(impl, journey):
    """A sequence longer than context_length raises ValueError."""
    module = make(impl, context_length=4)
    with pytest.raises(ValueError):
        module(journey.unsqueeze(0))


def test_multihead_dropout_acts_on_the_weights(impl, journey):
    """In training mode dropout acts once, on every head's attention weights after the softmax, before out_proj."""
    x = torch.stack([journey, journey])  # (2, 6, 3), 2 heads: 2 x 2 x 6 rows of 6 weights
    module = make(impl, dropout=0.5)
    bias = 0 if module.out_proj.bias is None else module.out_proj.bias.detach()  # a missing bias: the layers' check
    # out_proj(merged / 2) = (out_proj(merged) - bias) / 2 + bias
    dropout_on_weights(module, x, weights=2 * 2 * 6 * 6, rows=2 * 2 * 6, halved=lambda out: (out - bias) * 0.5 + bias)


def test_multihead_dropout_only_in_training(impl, journey):
    """In eval mode dropout is off: dropout=0.5 gives the same output as dropout=0.0 with the same weights."""
    x = journey.unsqueeze(0)
    dropout_off_in_eval(make(impl, dropout=0.5), make(impl, dropout=0.0), x)
