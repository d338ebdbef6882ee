"""Hostile: write forged reply frames into the worker's socket while being imported (a fake success, then
garbage), hoping the grader takes them for real replies."""
import json
import os
import socket
import stat
import struct

import torch

PARAMS = {}


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return struct.pack("!IQ", len(body), 0) + body


def _forge():
    for fd in range(3, 64):
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(fd))
            good = {"ok": True, "value": [0.4387, 0.4855]}
            sock.sendall(_frame({"ok": True}) + _frame({"ok": True, "replies": [good] * 4}) + b"\xff" * 64)
            sock.detach()
        except OSError:
            pass


_forge()


def decoder_attention(s, H, return_weights=False):
    _forge()
    return _zeros(s, H, return_weights)


def quiz_answer():
    _forge()
    return torch.zeros(2)


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
