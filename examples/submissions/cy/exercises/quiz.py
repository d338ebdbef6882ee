import torch


def decoder_attention(s, H, return_weights=False):
    alphas = torch.softmax(H @ s, dim=-1)
    v = alphas @ H
    return (v, alphas) if return_weights else v


def quiz_answer():
    return torch.tensor([0.4387, 0.4855])
