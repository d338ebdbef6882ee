"""Hostile: allocate memory until something gives (and fill the private /tmp on the way)."""
import torch

PARAMS = {}


def _fill_tmp():
    try:
        with open("/tmp/filler", "wb") as handle:
            while True:
                handle.write(b"x" * (1 << 20))
    except OSError:
        pass


def decoder_attention(s, H, return_weights=False):
    _fill_tmp()
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def quiz_answer():
    return torch.ones(1 << 36)
