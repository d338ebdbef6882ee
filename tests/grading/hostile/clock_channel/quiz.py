"""Hostile: the clock carries an input across a restart. The first call crashes the worker at a moment chosen from its
input (when ``time.monotonic() % 8`` reaches a quarter-second slot taken from the input); the worker restarted at
once, which has seen no input, fails its import with the slot of the clock it reads. While every import error was
shown with its message, that message carried about 5 bits of the input. Nothing else tells a re-import from the first
import, so the test (tests/grading/test_redteam.py::test_a_failed_reimport_is_said_in_the_graders_words) replays the
worker's replies rather than timing a real run. With PARAMS {"blind": True} the slot is a constant."""
import os
import time

import torch

PARAMS = {}
PERIOD, SLOTS = 8.0, 32
SLOT = int(time.monotonic() % PERIOD / PERIOD * SLOTS)

if PARAMS.get("restarted"):  # a real attack raises when SLOT follows the one its crash was timed for
    raise ImportError(f"clock slot {SLOT}")


def decoder_attention(s, H):
    slot = 7 if PARAMS.get("blind") else int(abs(float(H.flatten()[0])) * 1e4) % SLOTS
    while int(time.monotonic() % PERIOD / PERIOD * SLOTS) != slot:
        time.sleep(0.01)
    os._exit(1)
