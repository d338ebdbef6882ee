"""Exercise 1: dot-product scores (``exercises/scores.py``)."""
import hints_scores as known
import pytest
import torch
from checking import attempt, test_imports_allowed  # noqa: F401 (the grader's import rule, checked here too)

pytestmark = pytest.mark.scores

JOURNEY_SCORES = [  # "Your journey starts with one step": every token against every token
    [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
    [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
    [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
    [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
    [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
    [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
]


def projected_journey(journey):
    """Queries, keys and values of the lecture: torch.manual_seed(123), three torch.rand(3, 2) matrices."""
    torch.manual_seed(123)
    W_query, W_key, W_value = torch.rand(3, 2), torch.rand(3, 2), torch.rand(3, 2)
    return journey @ W_query, journey @ W_key, journey @ W_value


def test_dot_journey_against_your(impl, journey, expect_close):
    """dot("journey", "Your") is 0.9544, returned as a 0-d float32 tensor."""
    result = impl.scores.dot(journey[1], journey[0])
    assert isinstance(result, torch.Tensor) and result.shape == (), "dot must return a 0-d tensor (no .item())"
    assert result.dtype == torch.float32
    expect_close(result, 0.9544, atol=1e-4)


def test_dot_journey_against_every_token(impl, journey, expect_close):
    """dot of "journey" with each of the six tokens gives the lecture's row [0.9544, 1.4950, ...]."""
    result = torch.stack([impl.scores.dot(journey[1], token) for token in journey])
    expect_close(result, JOURNEY_SCORES[1], atol=1e-4)


def test_dot_quiz_scores(impl, decoder_states, expect_close):
    """The quiz's scores s·h1, s·h2, s·h3 are 0.9678, 0.5721, 0.2350."""
    s, H = decoder_states
    expect_close(torch.stack([impl.scores.dot(s, h) for h in H]), [0.9678, 0.5721, 0.2350], atol=1e-4)


def test_dot_of_projected_query_and_key(impl, journey, expect_close):
    """The projected query and key of "journey" score 1.8524 against each other."""
    queries, keys, _ = projected_journey(journey)
    expect_close(impl.scores.dot(queries[1], keys[1]), 1.8524, atol=1e-4)


def test_dot_keeps_float64(impl):
    """dot of two float64 vectors is a float64 tensor."""
    a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    b = torch.tensor([4.0, -5.0, 6.0], dtype=torch.float64)
    result = impl.scores.dot(a, b)
    assert result.dtype == torch.float64
    assert result.item() == 12.0


def test_dot_rejects_different_lengths(impl):
    """dot of vectors of different lengths raises ValueError."""
    with pytest.raises(ValueError):
        impl.scores.dot(torch.ones(3), torch.ones(4))


def test_pairwise_scores_river(impl, river, expect_close):
    """pairwise_scores of "stream bank mud" is the lecture's 3x3 matrix."""
    expected = [[1.530, 0.960, 1.350], [0.960, 1.320, 0.720], [1.350, 0.720, 1.620]]
    hints = known.pairwise_hints(river)
    expect_close(attempt(lambda: impl.scores.pairwise_scores(river), hints), expected, atol=1e-3, hints=hints)


def test_pairwise_scores_finance(impl, finance, expect_close):
    """pairwise_scores of "money bank loan" is the lecture's 3x3 matrix."""
    expected = [[1.970, 1.120, 1.600], [1.120, 1.320, 0.880], [1.600, 0.880, 1.570]]
    hints = known.pairwise_hints(finance)
    expect_close(attempt(lambda: impl.scores.pairwise_scores(finance), hints), expected, atol=1e-3, hints=hints)


def test_pairwise_scores_journey(impl, journey, expect_close):
    """pairwise_scores of "Your journey starts with one step" is the lecture's 6x6 attn_scores."""
    hints = known.pairwise_hints(journey)
    expect_close(attempt(lambda: impl.scores.pairwise_scores(journey), hints), JOURNEY_SCORES, atol=1e-4, hints=hints)


def test_pairwise_scores_batched(impl, river, finance, expect_close):
    """A batch (2, 3, 4) of sentences gives (2, 3, 3): each sentence's own scores."""
    x = torch.stack([river, finance])
    hints = known.pairwise_hints(x)
    expect_close(attempt(lambda: impl.scores.pairwise_scores(x), hints), x @ x.transpose(-2, -1), hints=hints)


def test_pairwise_scores_keeps_float64(impl, journey, expect_close):
    """pairwise_scores keeps float64 and is symmetric."""
    result = impl.scores.pairwise_scores(journey.double())
    assert result.dtype == torch.float64
    expect_close(result, result.T)


def test_attention_scores_projected_journey(impl, journey, expect_close):
    """The query of "journey" against the six keys scores [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]."""
    queries, keys, _ = projected_journey(journey)
    expect_close(queries[1], [0.4306, 1.4551], atol=1e-4)  # the lecture's query_2 (a check of this test's set-up)
    hints = known.score_hints(queries[1:2], keys)
    result = attempt(lambda: impl.scores.attention_scores(queries[1:2], keys), hints)
    expect_close(result, [[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]], atol=1e-4, hints=hints)


def test_attention_scores_rectangular(impl, expect_close):
    """Tq queries against Tk keys give a (Tq, Tk) matrix, not a square one."""
    torch.manual_seed(0)
    queries, keys = torch.randn(5, 4), torch.randn(7, 4)
    hints = known.score_hints(queries, keys)
    expect_close(attempt(lambda: impl.scores.attention_scores(queries, keys), hints), queries @ keys.T, hints=hints)


def test_attention_scores_broadcasts_leading_dims(impl, expect_close):
    """Leading dims broadcast: (1, 5, 4) queries with (3, 7, 4) keys give (3, 5, 7)."""
    torch.manual_seed(0)
    queries, keys = torch.randn(1, 5, 4), torch.randn(3, 7, 4)
    hints = known.score_hints(queries, keys)
    expect_close(attempt(lambda: impl.scores.attention_scores(queries, keys), hints), queries @ keys.transpose(-2, -1),
                 hints=hints)


def test_attention_scores_rejects_different_widths(impl):
    """Queries and keys of different widths d raise ValueError."""
    with pytest.raises(ValueError):
        impl.scores.attention_scores(torch.ones(2, 3), torch.ones(2, 4))
