"""Hostile: results of the wrong kind that hold (or compute) the right values: an object with no wire form that
answers every method, a tuple with such an object inside, a list, a dict, a nested list of tensors."""
import itertools

import torch

PARAMS = {}
CALLS = itertools.count()


class Anything:
    """Answers every attribute with itself and every call with zeros: a proxy's method calls would run here."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return torch.zeros(0)


def decoder_attention(s, H, return_weights=False):
    alphas = torch.softmax((H * s.unsqueeze(-2)).sum(-1), dim=-1)
    v = (alphas.unsqueeze(-1) * H).sum(-2)
    right = (v, alphas) if return_weights else v
    return [Anything(), (v, Anything()), v.tolist() if v.device.type != "meta" else [v], {"v": v}, [right]][next(CALLS) % 5]


def quiz_answer():
    return Anything()
