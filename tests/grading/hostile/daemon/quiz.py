"""Hostile: daemonized children (double fork, setsid where allowed, SIGTERM and SIGHUP ignored), started at import and in a
call, meant to outlive the grading; named so that the test can look for survivors."""
import ctypes
import os
import signal
import time

import torch

PARAMS = {}


def _daemon():
    if os.fork():
        return
    try:
        os.setsid()
    except OSError:  # the sandbox refuses new sessions: stay a double-forked orphan all the same
        pass
    if os.fork():
        os._exit(0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    ctypes.CDLL(None).prctl(15, PARAMS["token"].encode()[:15], 0, 0, 0)  # PR_SET_NAME
    for fd in range(3, 64):  # keep nothing of the worker's, the socket included
        try:
            os.close(fd)
        except OSError:
            pass
    while True:
        time.sleep(0.1)


_daemon()


def decoder_attention(s, H, return_weights=False):
    _daemon()
    return _zeros(s, H, return_weights)


def quiz_answer():
    _daemon()
    return torch.zeros(2)


def _zeros(s, H, return_weights=False):
    """What tests/grading/hostile/zeros returns: a trick must not score more than that."""
    batch = torch.broadcast_shapes(s.shape[:-1], H.shape[:-2])
    v = torch.zeros(batch + s.shape[-1:], dtype=H.dtype, device=H.device)
    return (v, torch.zeros(batch + H.shape[-2:-1], dtype=H.dtype, device=H.device)) if return_weights else v
