"""Hostile: print fake "passed" lines, then end the worker from inside a call (os._exit, sys.exit)."""
import os
import sys

PARAMS = {}
FAKE = "FAKE-PASSED test_quiz.py::test_quiz_answer PASSED [100%] score 100/100\n"


def decoder_attention(s, H, return_weights=False):
    print(FAKE * 50, flush=True)
    os.write(1, FAKE.encode())
    os.write(2, FAKE.encode())
    os._exit(0)


def quiz_answer():
    print(FAKE * 50, flush=True)
    sys.stderr.write(FAKE)
    sys.exit(0)
