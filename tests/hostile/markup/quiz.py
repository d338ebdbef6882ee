"""Hostile: messages (and a line of code) full of terminal escapes and rich markup, to forge or break the grader's terminal output."""
import torch

PARAMS = {}
NASTY = ("[/bold][/][link=file:///etc/passwd]click[/link] \x1b[2J\x1b[H\x1b]0;owned\x07 FAKE quiz 10/10 \r"
         "[bold green]ALL TESTS PASSED[/] \u202eevil\u202c")


class Nasty(RuntimeError):
    pass


def decoder_attention(s, H, return_weights=False):
    raise Nasty(NASTY)


def quiz_answer():  # the line below is what the feedback shows (messages never are); it holds real escapes
    raise RuntimeError(NASTY)  # [/bold][/][link=file:///etc/passwd]click[/link] [2J]0;owned FAKE quiz 10/10 [bold green]ALL TESTS PASSED[/] ‮evil‬
