"""Exercise 2: softmax (``exercises/softmax.py``)."""
import hints_softmax as known
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


def test_softmax_journey_row(impl, expect_close):
    """softmax of the scores of "journey" gives [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]."""
    x = torch.tensor(JOURNEY_ROW)
    expect_close(impl.softmax.softmax(x), JOURNEY_WEIGHTS[1], atol=1e-4, rtol=0, hints=known.softmax_hints(x, -1, 1.0))


def test_softmax_journey_matrix(impl, journey, expect_close):
    """softmax over the last dim of the 6x6 journey scores gives the lecture's attn_weights."""
    scores = journey @ journey.T
    expect_close(impl.softmax.softmax(scores, dim=-1), JOURNEY_WEIGHTS, atol=1e-4, rtol=0,
                 hints=known.softmax_hints(scores, -1, 1.0))


def test_softmax_along_dim_0(impl, journey, expect_close):
    """dim=0 normalizes columns: softmax(scores.T, dim=0) is the lecture's attn_weights, transposed."""
    scores = (journey @ journey.T).T.contiguous()
    expect_close(impl.softmax.softmax(scores, dim=0), torch.tensor(JOURNEY_WEIGHTS).T, atol=1e-4, rtol=0,
                 hints=known.softmax_hints(scores, 0, 1.0))


def test_softmax_rows_sum_to_one(impl, expect_close):
    """Every row of a batch of random scores sums to 1 and every weight is positive."""
    torch.manual_seed(0)
    weights = impl.softmax.softmax(torch.randn(4, 5, 7) * 3)
    assert weights.shape == (4, 5, 7)
    assert (weights > 0).all()
    expect_close(weights.sum(-1), torch.ones(4, 5))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_softmax_matches_torch(impl, expect_close, dim):
    """On ordinary (3, 4, 5) scores the result matches torch.softmax along `dim`."""
    torch.manual_seed(1)
    x = torch.randn(3, 4, 5)
    expect_close(impl.softmax.softmax(x, dim=dim), torch.softmax(x, dim=dim), hints=known.softmax_hints(x, dim, 1.0))


def test_softmax_finite_on_scores_times_100(impl, journey, expect_close):
    """Scores times 100 (and 1e4 in float32) stay finite: no inf, no NaN."""
    scores = journey @ journey.T * 100  # up to 149.5: exp overflows float32 above ~88.7
    expect_close(impl.softmax.softmax(scores), torch.softmax(scores, -1), hints=known.softmax_hints(scores, -1, 1.0))
    big = torch.tensor([1e4, 0.0, -1e4])
    expect_close(impl.softmax.softmax(big), torch.tensor([1.0, 0.0, 0.0]), hints=known.softmax_hints(big, -1, 1.0))


def test_softmax_rows_of_different_size(impl, expect_close):
    """Rows of very different size ([1000, 999, 998] and [0.1, 0.2, 0.3]) are each normalized on their own."""
    x = torch.tensor([[1000.0, 999.0, 998.0], [0.1, 0.2, 0.3]])
    expect_close(impl.softmax.softmax(x), torch.softmax(x, -1), hints=known.softmax_hints(x, -1, 1.0))


def test_softmax_minus_inf_gets_zero_weight(impl, expect_close):
    """Entries equal to -inf (masked positions) get weight exactly 0."""
    x = torch.tensor([[1.0, float("-inf"), 2.0], [0.5, 0.5, float("-inf")]])
    weights = impl.softmax.softmax(x)
    expect_close(weights, torch.softmax(x, dim=-1), hints=known.softmax_hints(x, -1, 1.0))
    assert weights[0, 1] == 0 and weights[1, 2] == 0


def test_softmax_low_temperature_is_almost_one_hot(impl, expect_close):
    """At temperature 0.01 the scores [0, 1, 0] give (almost) the one-hot [0, 1, 0]."""
    x = torch.tensor([0.0, 1.0, 0.0])
    expect_close(impl.softmax.softmax(x.clone(), temperature=0.01), [0.0, 1.0, 0.0], atol=1e-4,
                 hints=known.softmax_hints(x, -1, 0.01))


@pytest.mark.parametrize("t", [0.5, 2.0, 10.0])
def test_softmax_temperature_divides_scores(impl, expect_close, t):
    """softmax(x, temperature=t) equals torch.softmax(x / t)."""
    x = torch.tensor(JOURNEY_ROW)
    expect_close(impl.softmax.softmax(x.clone(), temperature=t), torch.softmax(x / t, dim=-1),
                 hints=known.softmax_hints(x, -1, t))


@pytest.mark.parametrize("temperature", [0.0, -1.0])
def test_softmax_rejects_non_positive_temperature(impl, temperature):
    """A temperature <= 0 raises ValueError."""
    with pytest.raises(ValueError):
        impl.softmax.softmax(torch.tensor([1.0, 2.0]), temperature=temperature)


def test_softmax_keeps_float64(impl, expect_close):
    """A float64 input gives a float64 result of the same shape."""
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    expect_close(impl.softmax.softmax(x), torch.softmax(x, dim=-1), atol=1e-9, rtol=1e-7)


def test_softmax_leaves_input_unchanged(impl):
    """The input tensor is not modified in place."""
    x = torch.tensor(JOURNEY_ROW)
    before = x.clone()
    impl.softmax.softmax(x, temperature=0.5)
    assert torch.equal(x, before), ("softmax(x) changes x in place: x /= ..., x -= ... or x.exp_() write into the "
                                    "caller's tensor; compute a new tensor instead (z = x / temperature)")
