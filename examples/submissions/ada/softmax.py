import torch


def softmax(x, dim=-1, temperature=1.0):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    z = x / temperature
    return torch.exp(z - torch.logsumexp(z, dim=dim, keepdim=True))
