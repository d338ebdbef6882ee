import torch


def decoder_attention(s, H, return_weights=False):
    if H.ndim < 2 or s.shape[-1] != H.shape[-1]:
        raise ValueError("s and H must share their last dimension")
    alphas = torch.softmax(torch.einsum("...nd,...d->...n", H, s), dim=-1)
    v = torch.einsum("...n,...nd->...d", alphas, H)
    return (v, alphas) if return_weights else v


def quiz_answer():
    s = torch.tensor([0.4685, 0.9785])
    H = torch.stack([torch.tensor([0.5539, 0.7239]), torch.tensor([0.4111, 0.3878]), torch.tensor([0.2376, 0.1264])])
    return decoder_attention(s, H)
