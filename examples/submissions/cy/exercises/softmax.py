import torch


def softmax(x, dim=-1, temperature=1.0)
    z = x / temperature
    return torch.exp(z) / torch.exp(z).sum(dim, keepdim=True)
