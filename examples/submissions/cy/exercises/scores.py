import torch


def dot(a, b):
    total = torch.zeros((), dtype=a.dtype)
    i = 0
    while i < len(a):  # forgets to advance i: never ends
        total = total + a[i] * b[i]
    return total


def pairwise_scores(x):
    return x @ x.transpose(-2, -1)


def attention_scores(queries, keys):
    return queries @ keys.transpose(-2, -1)
