"""Hostile: crash the worker with a segmentation fault (and an abort)."""
import ctypes
import os

PARAMS = {}


def decoder_attention(s, H, return_weights=False):
    ctypes.string_at(0)


def quiz_answer():
    os.abort()
