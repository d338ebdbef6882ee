"""Exercise 5: the decoder-attention quiz (``exercises/quiz.py``)."""
import hints_quiz as known
import pytest
import torch
from checking import Failure, attempt, operations, test_imports_allowed  # noqa: F401 (the import rule, here too)

pytestmark = pytest.mark.quiz


def test_decoder_attention_quiz_weights(impl, decoder_states, expect_close):
    """With return_weights=True the quiz gives v = [0.4387, 0.4855] and alphas [0.4643, 0.3126, 0.2231]."""
    s, H = decoder_states
    v, alphas = attempt(lambda: impl.quiz.decoder_attention(s, H, return_weights=True), known.decoder_hints(s, H))
    expect_close(alphas, [0.4643, 0.3126, 0.2231], atol=1e-4, rtol=0, hints=known.alphas_hints(s, H))
    expect_close(v, [0.4387, 0.4855], atol=1e-4, rtol=0, hints=known.decoder_hints(s, H))


def test_decoder_attention_returns_only_v_by_default(impl, decoder_states, expect_close):
    """Without return_weights the result is the tensor v alone."""
    s, H = decoder_states
    v = attempt(lambda: impl.quiz.decoder_attention(s, H), known.decoder_hints(s, H))
    assert isinstance(v, torch.Tensor), "return_weights=False returns v only, not a tuple"
    expect_close(v, [0.4387, 0.4855], atol=1e-4, rtol=0, hints=known.decoder_hints(s, H))


def test_quiz_answer(impl, decoder_states, expect_close):
    """quiz_answer() is the float32 tensor [0.4387, 0.4855]."""
    expect_close(impl.quiz.quiz_answer(), torch.tensor([0.4387, 0.4855]), atol=1e-4,
                 dtype_from="the default dtype (torch.tensor of Python floats, without a dtype argument)",
                 hints=known.answer_hints(impl.quiz.decoder_attention, *decoder_states))


def test_quiz_answer_calls_decoder_attention(impl, decoder_states):
    """quiz_answer() computes v with decoder_attention, not as numbers typed in."""
    s, H = decoder_states
    if operations(impl.quiz.quiz_answer) < operations(lambda: impl.quiz.decoder_attention(s, H)):
        raise Failure("quiz_answer() makes fewer tensor operations than decoder_attention(s, H) on the quiz's s and H: "
                      "v is typed in, not computed; build s and H = [h1, h2, h3] and return decoder_attention(s, H)")


def test_decoder_attention_batched(impl, expect_close):
    """A batch of 4 decoder states (4, d) over (4, n, d) encoder states gives (4, d) and (4, n), one per item."""
    torch.manual_seed(0)
    s, H = torch.randn(4, 2), torch.randn(4, 3, 2)
    v, alphas = attempt(lambda: impl.quiz.decoder_attention(s, H, return_weights=True), known.decoder_hints(s, H))
    expected = torch.softmax((H * s.unsqueeze(-2)).sum(-1), dim=-1)  # (4, 3): one row of weights per item
    expect_close(alphas, expected, hints=known.alphas_hints(s, H))
    expect_close(v, (expected.unsqueeze(-1) * H).sum(-2), hints=known.decoder_hints(s, H))


def test_decoder_attention_keeps_dims_of_size_one(impl, expect_close):
    """A batch of one decoder state over one encoder state, (1, d) over (1, 1, d), gives v (1, d) and alphas (1, 1)."""
    torch.manual_seed(2)
    s, H = torch.randn(1, 3), torch.randn(1, 1, 3)
    v, alphas = attempt(lambda: impl.quiz.decoder_attention(s, H, return_weights=True), known.decoder_hints(s, H))
    expect_close(alphas, torch.ones(1, 1), hints=known.alphas_hints(s, H))  # one state: all the weight is its
    expect_close(v, H[:, 0], hints=known.decoder_hints(s, H))


def test_decoder_attention_weights_are_softmax_of_dot_products(impl, expect_close):
    """alphas = softmax(H s) over the n states and v = sum_i alpha_i h_i."""
    torch.manual_seed(1)
    s, H = torch.randn(5), torch.randn(4, 5)
    v, alphas = attempt(lambda: impl.quiz.decoder_attention(s, H, return_weights=True), known.decoder_hints(s, H))
    expected = torch.softmax(H @ s, dim=-1)
    expect_close(alphas, expected, hints=known.alphas_hints(s, H))
    expect_close(v, expected @ H, hints=known.decoder_hints(s, H))


def test_decoder_attention_keeps_float64(impl, decoder_states):
    """float64 states give a float64 v."""
    s, H = decoder_states
    assert impl.quiz.decoder_attention(s.double(), H.double()).dtype == torch.float64


def test_decoder_attention_rejects_different_widths(impl):
    """A decoder state and encoder states of different widths d raise ValueError."""
    with pytest.raises(ValueError):
        impl.quiz.decoder_attention(torch.ones(2), torch.ones(3, 4))
