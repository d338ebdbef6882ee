"""Hostile: sleep for an hour while being imported (and ignore SIGTERM meanwhile)."""
import signal
import time

PARAMS = {}

signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(3600)


def decoder_attention(s, H, return_weights=False):
    raise AssertionError("never reached")


def quiz_answer():
    raise AssertionError("never reached")
