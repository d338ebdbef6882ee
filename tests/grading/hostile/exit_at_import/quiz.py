"""Hostile: print fake "passed" lines and end the worker while being imported."""
import os

PARAMS = {}
FAKE = "FAKE-PASSED test_quiz.py::test_quiz_answer PASSED [100%] score 100/100\n"

print(FAKE * 50, flush=True)
os.write(2, FAKE.encode())
os._exit(0)


def decoder_attention(s, H, return_weights=False):
    raise AssertionError("never reached")


def quiz_answer():
    raise AssertionError("never reached")
