"""Hostile: replies over the reply cap (a 320 MiB tensor; 20 MB of JSON)."""
import torch

PARAMS = {}


def decoder_attention(s, H, return_weights=False):
    return torch.empty(80 << 20)  # 320 MiB of float32 (never touched: the size alone is refused)


def quiz_answer():
    return [0.123456789] * 2_000_000  # ~26 MB of JSON
