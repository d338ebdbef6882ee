"""Hostile: every call raises a ValueError from a line of its own file whose NUMBER is a number taken from the
hidden input (exec of code compiled under this file's name, so the traceback names quiz.py, line N). The grader
reads line N of the staged quiz.py and shows "quiz.py, line N: <that line>": the line number carries the input.
The test appends thousands of identical padding lines, so every N is a line that exists and is not blank.
With PARAMS {"blind": True} it raises from a constant line instead: the feedback must be the same either way."""

PARAMS = {}
FIRST_PAD = 40  # the padding starts well below this line


def _code(*tensors) -> int:
    if PARAMS.get("blind"):
        return 4321
    try:
        return int(abs(float(tensors[-1].flatten()[0])) * 1e4) % 9973
    except Exception:  # meta tensors have no values: take the shapes
        return sum(n * 31 ** i for t in tensors for i, n in enumerate(t.shape)) % 9973


def decoder_attention(s, H, return_weights=False):
    line = FIRST_PAD + _code(s, H)
    exec(compile("\n" * (line - 1) + "raise ValueError('x')", __file__, "exec"))


def quiz_answer():
    raise ValueError("x")


# padding (appended by the test: PAD_LINES identical lines), so the line shown says nothing; its number says the input
