"""Hidden suite: quiz."""
import pytest
import torch

from grader.suites import CheckFailed
from solutions import quiz as ref

pytestmark = pytest.mark.quiz


def test_quiz_answer(student):
    """quiz_answer() returns the quiz's v."""
    got = student.quiz.quiz_answer()
    if not torch.allclose(got, ref.quiz_answer(), atol=1e-4):
        raise CheckFailed("quiz_answer() is not the quiz's v")


@pytest.mark.weight(2)
def test_decoder_attention_values(student):
    """decoder_attention matches the reference on a batch."""
    g = torch.Generator().manual_seed(0)
    s, H = torch.randn(3, 5, generator=g), torch.randn(3, 4, 5, generator=g)
    got = student.quiz.decoder_attention(s, H)
    if not torch.allclose(got, ref.decoder_attention(s, H), atol=1e-5):
        raise CheckFailed("values differ")
