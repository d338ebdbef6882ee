"""Right values, wrong gradients: every gradient reaching s is 0, but for one entry that is +inf.

The autograd check compares the gradients with how the result changes along a random direction; an infinite
gradient makes that comparison's both sides infinite, and a comparison of infinities must not pass."""
import torch

PARAMS = {}


class _Broken(torch.autograd.Function):
    """The identity forward; a backward that forgets the gradient, except for one infinite entry."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        out = torch.zeros_like(grad)
        out.view(-1)[0] = float("inf")
        return out


def decoder_attention(s, H, return_weights=False):
    if s.shape[-1] != H.shape[-1] or H.dim() < 2:
        raise ValueError(f"need s (..., d) and H (..., n, d) with the same d, got {tuple(s.shape)} and {tuple(H.shape)}")
    s, H = _Broken.apply(s), _Broken.apply(H)
    scores = (H * s.unsqueeze(-2)).sum(-1)
    alphas = torch.softmax(scores, dim=-1)
    v = (alphas.unsqueeze(-1) * H).sum(-2)
    return (v, alphas) if return_weights else v


def quiz_answer():
    return decoder_attention(torch.tensor([0.4685, 0.9785]),
                             torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]]))
