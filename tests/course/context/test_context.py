"""Exercise 3: attention without trainable weights (``exercises/context.py``)."""
import hints_context as known
import pytest
import torch
from checking import attempt, test_imports_allowed  # noqa: F401 (the grader's import rule, checked here too)

pytestmark = pytest.mark.context

JOURNEY_WEIGHTS = [
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
]
JOURNEY_CONTEXT = [
    [0.4421, 0.5931, 0.5790],
    [0.4419, 0.6515, 0.5683],
    [0.4431, 0.6496, 0.5671],
    [0.4304, 0.6298, 0.5510],
    [0.4671, 0.5910, 0.5266],
    [0.4177, 0.6503, 0.5645],
]


def test_attention_weights_journey(impl, journey, expect_close):
    """attention_weights of "Your journey starts with one step" is the lecture's 6x6 attn_weights."""
    expect_close(impl.context.attention_weights(journey), JOURNEY_WEIGHTS, atol=1e-4, rtol=0,
                 hints=known.context_weight_hints(journey))


def test_attention_weights_row_of_journey(impl, journey, expect_close):
    """Row 2 ("journey") is [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]."""
    expect_close(impl.context.attention_weights(journey)[1], JOURNEY_WEIGHTS[1], atol=1e-4)


def test_attention_weights_rows_sum_to_one(impl, expect_close):
    """The weights of a random batch (2, 5, 3) are softmax(x x^T) over the last dim: every row sums to 1."""
    torch.manual_seed(0)
    x = torch.randn(2, 5, 3)
    hints = known.context_weight_hints(x)
    weights = attempt(lambda: impl.context.attention_weights(x), hints)
    expect_close(weights, torch.softmax(x @ x.transpose(-2, -1), -1), hints=hints)
    expect_close(weights.sum(-1), torch.ones(2, 5))


def test_context_vectors_journey(impl, journey, expect_close):
    """context_vectors of the journey sentence are the lecture's six vectors ([0.4419, 0.6515, 0.5683] for "journey")."""
    hints = known.context_vector_hints(journey)
    expect_close(attempt(lambda: impl.context.context_vectors(journey), hints), JOURNEY_CONTEXT, atol=1e-4, rtol=0,
                 hints=hints)


def test_context_vectors_river(impl, river, expect_close):
    """context_vectors of "stream bank mud" are the lecture's river vectors."""
    expected = [[1.001, 0.188, 0.047, 0.438], [0.949, 0.356, 0.089, 0.313], [0.987, 0.150, 0.037, 0.520]]
    hints = known.context_vector_hints(river)
    expect_close(attempt(lambda: impl.context.context_vectors(river), hints), expected, atol=1e-3, hints=hints)


def test_context_vectors_finance(impl, finance, expect_close):
    """context_vectors of "money bank loan" are the lecture's finance vectors."""
    expected = [[0.161, 1.181, 0.040, 0.243], [0.325, 1.078, 0.081, 0.190], [0.158, 1.163, 0.040, 0.278]]
    hints = known.context_vector_hints(finance)
    expect_close(attempt(lambda: impl.context.context_vectors(finance), hints), expected, atol=1e-3, hints=hints)


def test_context_vectors_batched(impl, river, finance, expect_close):
    """A batch (2, 3, 4) gives (2, 3, 4): "bank" (row 1) differs between the river and the finance sentence."""
    x = torch.stack([river, finance])
    hints = known.context_vector_hints(x)
    result = attempt(lambda: impl.context.context_vectors(x), hints)
    expect_close(result, torch.softmax(x @ x.transpose(-2, -1), -1) @ x, hints=hints)
    assert not torch.allclose(result[0, 1], result[1, 1], atol=0.1)


def test_context_vectors_keeps_float64(impl, journey):
    """A float64 input gives float64 weights and context vectors."""
    x = journey.double()
    assert impl.context.attention_weights(x).dtype == torch.float64
    assert impl.context.context_vectors(x).dtype == torch.float64
