"""Hostile: fork in every call and let the child return into the worker instead of exiting, with an answer
of its own (ones) that would race the parent's (zeros) on the shared socket."""
import os

import torch

PARAMS = {}


def decoder_attention(s, H, return_weights=False):
    fill = torch.ones if os.fork() == 0 else torch.zeros
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = fill(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, fill(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v


def quiz_answer():
    return torch.ones(2) if os.fork() == 0 else torch.zeros(2)
