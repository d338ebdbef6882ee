"""Hostile: an endless loop in one function, and one that ignores SIGTERM and sleeps forever in the other."""
import signal
import time

PARAMS = {}


def decoder_attention(s, H, return_weights=False):
    while True:
        pass


def quiz_answer():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        time.sleep(1)
