"""Hostile: flood stdout and stderr (at import and in calls), then return garbage."""
import os
import sys
import time

import torch

PARAMS = {}
LINE = "FLOOD test_quiz.py::test_quiz_answer PASSED " * 4 + "\n"

for _ in range(20000):
    sys.stdout.write(LINE)
    sys.stderr.write(LINE)
os.write(1, LINE.encode() * 1000)


def decoder_attention(s, H, return_weights=False):
    end = time.monotonic() + 0.1
    while time.monotonic() < end:
        print(LINE * 100)
        os.write(2, LINE.encode() * 100)
    return _zeros(s, H, return_weights)


def quiz_answer():
    print(LINE * 200000)
    return torch.zeros(2)


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
