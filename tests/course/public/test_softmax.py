"""Exercise 2: softmax (``exercises/softmax.py``)."""
import pytest
import torch
from checking import test_imports_allowed  # noqa: F401 (the grader's import rule, checked here too)

pytestmark = pytest.mark.softmax

JOURNEY_ROW = [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]  # scores of "journey" against the six tokens
JOURNEY_WEIGHTS = [
    [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
    [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
    [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
    [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
    [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
]


def test_softmax_journey_row(impl, close):
    """softmax of the scores of "journey" gives [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]."""
    close(impl.softmax.softmax(torch.tensor(JOURNEY_ROW)), JOURNEY_WEIGHTS[1], atol=1e-4)


def test_softmax_journey_matrix(impl, journey, close):
    """softmax over the last dim of the 6x6 journey scores gives the lecture's attn_weights."""
    close(impl.softmax.softmax(journey @ journey.T, dim=-1), JOURNEY_WEIGHTS, atol=1e-4)


def test_softmax_along_dim_0(impl, journey, close):
    """dim=0 normalizes columns: softmax(scores.T, dim=0).T is the row-wise softmax."""
    scores = journey @ journey.T
    close(impl.softmax.softmax(scores.T, dim=0).T, JOURNEY_WEIGHTS, atol=1e-4)


def test_softmax_rows_sum_to_one(impl):
    """Every row of a batch of random scores sums to 1 and every weight is positive."""
    torch.manual_seed(0)
    weights = impl.softmax.softmax(torch.randn(4, 5, 7) * 3)
    assert weights.shape == (4, 5, 7)
    assert (weights > 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 5))


def test_softmax_matches_torch(impl):
    """On ordinary scores the result matches torch.softmax, for every dim."""
    torch.manual_seed(1)
    x = torch.randn(3, 4, 5)
    for dim in (0, 1, 2, -1):
        torch.testing.assert_close(impl.softmax.softmax(x, dim=dim), torch.softmax(x, dim=dim))


def test_softmax_finite_on_scores_times_100(impl, journey):
    """Scores times 100 (and 1e4 in float32) stay finite: no inf, no NaN."""
    scores = journey @ journey.T * 100  # up to 149.5: exp overflows float32 above ~88.7
    weights = impl.softmax.softmax(scores)
    assert torch.isfinite(weights).all(), "exp overflowed: subtract the row maximum first"
    torch.testing.assert_close(weights.sum(-1), torch.ones(6))
    big = impl.softmax.softmax(torch.tensor([1e4, 0.0, -1e4]))
    assert torch.isfinite(big).all(), "exp overflowed: subtract the row maximum first"
    torch.testing.assert_close(big, torch.tensor([1.0, 0.0, 0.0]))


def test_softmax_minus_inf_gets_zero_weight(impl):
    """Entries equal to -inf (masked positions) get weight exactly 0."""
    x = torch.tensor([[1.0, float("-inf"), 2.0], [0.5, 0.5, float("-inf")]])
    weights = impl.softmax.softmax(x)
    assert torch.isfinite(weights).all()
    assert weights[0, 1] == 0 and weights[1, 2] == 0
    torch.testing.assert_close(weights, torch.softmax(x, dim=-1))


def test_softmax_low_temperature_is_almost_one_hot(impl, close):
    """At temperature 0.01 the scores [0, 1, 0] give (almost) the one-hot [0, 1, 0]."""
    close(impl.softmax.softmax(torch.tensor([0.0, 1.0, 0.0]), temperature=0.01), [0.0, 1.0, 0.0], atol=1e-4)


def test_softmax_temperature_divides_scores(impl):
    """softmax(x, temperature=t) equals torch.softmax(x / t)."""
    x = torch.tensor(JOURNEY_ROW)
    for t in (0.5, 2.0, 10.0):
        torch.testing.assert_close(impl.softmax.softmax(x, temperature=t), torch.softmax(x / t, dim=-1))


@pytest.mark.parametrize("temperature", [0.0, -1.0])
def test_softmax_rejects_non_positive_temperature(impl, temperature):
    """A temperature <= 0 raises ValueError."""
    with pytest.raises(ValueError):
        impl.softmax.softmax(torch.tensor([1.0, 2.0]), temperature=temperature)


def test_softmax_keeps_float64(impl):
    """A float64 input gives a float64 result of the same shape."""
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    weights = impl.softmax.softmax(x)
    assert weights.dtype == torch.float64 and weights.shape == (2, 3)
    torch.testing.assert_close(weights, torch.softmax(x, dim=-1))


def test_softmax_leaves_input_unchanged(impl):
    """The input tensor is not modified in place."""
    x = torch.tensor(JOURNEY_ROW)
    before = x.clone()
    impl.softmax.softmax(x, temperature=0.5)
    assert torch.equal(x, before)
