"""Exercise 7: causal attention (``exercises/causal.py``)."""
import hints_causal as known
import pytest
import torch
from checking import attempt, dropout_off_in_eval, dropout_on_weights, linear_layers, shaped, test_imports_allowed  # noqa: F401 (the grader's import rule, checked here too)
from torch import nn

pytestmark = pytest.mark.causal
MASK_DTYPE = "a mask's (torch.bool: dtype=torch.bool, or a comparison)"


def make(impl, seed=0, **kwargs):
    """A seeded CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0) in eval mode, its arguments given by
    position in the contract's order, as the grader gives them."""
    arguments = dict(d_in=3, d_out=2, context_length=6, dropout=0.0, qkv_bias=False) | kwargs
    torch.manual_seed(seed)
    return impl.causal.CausalAttention(*arguments.values()).eval()


def test_causal_mask_3(impl, expect_close):
    """causal_mask(3) is the bool lower triangle [[T, F, F], [T, T, F], [T, T, T]]."""
    expected = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
    expect_close(impl.causal.causal_mask(3), expected, atol=0, rtol=0, hints=known.causal_mask_hints(3),
                 dtype_from=MASK_DTYPE)


def test_causal_mask_6(impl, expect_close):
    """causal_mask(6) is True exactly where j <= i."""
    i, j = torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij")
    expect_close(impl.causal.causal_mask(6), j <= i, atol=0, rtol=0, hints=known.causal_mask_hints(6),
                 dtype_from=MASK_DTYPE)


def test_causal_attention_submodules(impl):
    """W_query, W_key, W_value are nn.Linear(d_in, d_out) without bias (in that order) and dropout is nn.Dropout."""
    module = make(impl)
    linear_layers(module, ["W_query", "W_key", "W_value"], 3, 2)
    assert isinstance(module.dropout, nn.Dropout), "dropout is an nn.Dropout(dropout)"
    linear_layers(make(impl, qkv_bias=True), ["W_query", "W_key", "W_value"], 3, 2, bias=True)


def test_causal_attention_shape(impl, journey):
    """A batch (2, 6, 3) gives (2, 6, 2), keeping the dtype."""
    module = make(impl)
    out = module(torch.stack([journey, journey]))
    shaped(out, (2, 6, 2), "the output", torch.float32)


def test_causal_attention_first_token_sees_only_itself(impl, journey, expect_close):
    """With dropout 0 the first output row equals the value of the first token: its weights are [1, 0, ..., 0]."""
    module = make(impl)
    x = journey.unsqueeze(0)
    out = module(x)
    expect_close(out[:, 0], module.W_value(x)[:, 0])


def test_causal_attention_ignores_the_future(impl, journey, expect_close):
    """Changing the last token leaves every earlier output row unchanged."""
    module = make(impl)
    x = journey.unsqueeze(0)
    changed = x.clone()
    changed[0, -1] = torch.tensor([5.0, -3.0, 2.0])
    before, after = module(x), module(changed)
    expect_close(before[:, :-1], after[:, :-1])
    assert not torch.allclose(before[:, -1], after[:, -1])


def masked_attention(module, x):
    """softmax(masked Q K^T / sqrt(d_out)) V with the module's own layers, written out here with plain torch."""
    T = x.shape[1]
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    scores = (q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(),
                                                                        float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def test_causal_attention_matches_masked_softmax(impl, journey, expect_close):
    """The output is softmax(masked Q K^T / sqrt(d_out)) V, computed here with plain torch."""
    module = make(impl, seed=1, d_out=4)
    x = journey.unsqueeze(0)
    hints = known.module_hints(module, x, context_length=6)
    expect_close(attempt(lambda: module(x), hints), masked_attention(module, x), hints=hints)


def test_causal_attention_shorter_sequence(impl, journey, expect_close):
    """A sequence shorter than context_length works: (1, 4, 3) gives (1, 4, 2), the mask cut to 4 tokens."""
    module = make(impl, seed=2)
    x = journey[:4].unsqueeze(0)
    hints = known.module_hints(module, x, context_length=6)
    expect_close(attempt(lambda: module(x), hints), masked_attention(module, x), hints=hints)


def test_causal_attention_rejects_long_sequence(impl, journey):
    """A sequence longer than context_length raises ValueError."""
    module = make(impl, context_length=4)
    with pytest.raises(ValueError):
        module(journey.unsqueeze(0))


def test_causal_attention_dropout_acts_on_the_weights(impl, journey):
    """In training mode dropout acts once, on the attention weights after the softmax, and the output uses them."""
    x = torch.stack([journey, journey])  # (2, 6, 3): 2 x 6 rows of 6 weights
    dropout_on_weights(make(impl, dropout=0.5), x, weights=2 * 6 * 6, rows=2 * 6, halved=lambda out: out * 0.5)


def test_causal_attention_dropout_only_in_training(impl, journey):
    """In eval mode dropout is off: dropout=0.5 gives the same output as dropout=0.0 with the same weights."""
    x = journey.unsqueeze(0)
    with_dropout = make(impl, dropout=0.5)
    without = make(impl, dropout=0.0)
    dropout_off_in_eval(with_dropout, without, x)
    with_dropout.train()
    torch.manual_seed(3)
    assert not torch.allclose(with_dropout(x), without(x)), "in training mode dropout should change the output"
