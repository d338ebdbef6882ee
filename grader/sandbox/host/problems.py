"""What can go wrong with a submission, in the words a student reads: the errors the grading process raises.

``SubmissionProblem``: the submission could not be called (a missing name, a failed import, a crash, a time-out);
``StudentError``: the student's code raised (also an instance of the matching built-in, so
``pytest.raises(ValueError)`` works); ``GraderFault``: the grader failed, not the submission. ``FAILURES`` and
``UNREADABLE`` are the grader's own words for failures the worker reports, since the worker's are the student's.
"""
from __future__ import annotations

import builtins
import os
import re
from functools import lru_cache
from pathlib import Path

import stub_message

from grader.sandbox import wire
from grader.sandbox.host.zygote import GraderFault as GraderFault  # defined beside the zygote, which imports no torch
from grader.text import MAX_NAME, clean

STUB_PHRASE = "not implemented yet"  # how feedback says that a stub of the handout is still a stub


class SubmissionProblem(Exception):
    """The submission could not be called: a missing file or name, a failed import, a crash, a time-out."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind

    def again(self) -> SubmissionProblem:
        """The same problem, to raise once more: one instance raised again and again keeps every raise's frames in its
        traceback (and what they hold) for as long as it is kept."""
        return SubmissionProblem(self.kind, str(self))


class StudentError(Exception):
    """The student's code raised an exception; ``info`` holds its type, message and the student's frames.

    Its text (what the student reads) holds none of what the student's code chose after it saw an input: the type
    only when it is a built-in exception class, the place only as checked against the submission's own file
    (``where``), never the message. A stub's NotImplementedError is named only when it is one of the handout's; one
    with another message (torch's, on a meta tensor: ``x[mask]``, ``nonzero``) is said as any other exception.
    """

    def __init__(self, info: dict, where: str = "", stubs: frozenset[str] = frozenset()):
        info = clean_info(info)
        self.info = info
        self.builtin = info["type"] if _builtin_exception(info["type"]) else ""  # its type, where it is Python's own
        stub = stub_message.PATTERN.match(info["message"])
        if info["type"] == "NotImplementedError" and (stub or not info["message"].strip()):  # a stub, or one like it
            known = stub and stub["target"] in stubs and stub_message.message(stub["target"]) == info["message"]
            self.message = f"{STUB_PHRASE}: {info['message']}" if known else f"{STUB_PHRASE}: fill in the stub"
        else:
            kind = self.builtin or "an exception of its own class"
            self.message = f"your code raised {kind}" + (f" ({where})" if where else "")
        Exception.__init__(self, self.message)

    def __str__(self):
        return self.message


@lru_cache(maxsize=4)
def handout_stubs(exercises: str) -> frozenset[str]:
    """The stubs of the handout (``<module>.<function>``, ``<module>.<Class>.forward``, ...), read from the course's
    exercises/ folder."""
    return frozenset(match["target"] for path in sorted(Path(exercises).glob("*.py"))
                     for match in stub_message.PATTERN.finditer(path.read_text()))


def _builtin_exception(name: str) -> bool:
    cls = getattr(builtins, name, None)
    return isinstance(cls, type) and issubclass(cls, BaseException)


def clean_info(info) -> dict:
    """A worker's description of an exception, with every field of the expected type and cleaned."""
    info = info if isinstance(info, dict) else {}
    frames = info.get("frames") if isinstance(info.get("frames"), list) else []
    names = info.get("builtins") if isinstance(info.get("builtins"), list) else []
    return {"type": clean(info.get("type", "Exception"), MAX_NAME),
            "builtins": [n for n in names[:20] if isinstance(n, str) and _builtin_exception(n)],
            "message": clean(info.get("message", "")),
            "frames": [clean(f, 300) for f in frames[-8:]]}


@lru_cache(maxsize=256)
def _student_error_class(names: tuple[str, ...]) -> type:
    bases = [getattr(builtins, n) for n in names if n not in ("Exception", "BaseException")]
    bases = [b for b in bases if isinstance(b, type) and issubclass(b, Exception)]
    bases = [b for i, b in enumerate(bases) if b not in bases[:i] and not any(o is not b and issubclass(o, b) for o in bases)]
    while bases:  # drop bases until the class can be built and instantiated (layout conflicts, picky __new__s)
        try:
            cls = type("StudentError", (StudentError, *bases), {})
            _instance(cls)
            return cls
        except TypeError:
            bases.pop()
    return StudentError


def _instance(cls: type) -> StudentError:
    for new in (cls.__new__, Exception.__new__, BaseException.__new__):
        try:
            return new(cls)
        except TypeError:
            continue
    raise TypeError(f"cannot create a {cls.__mro__[1:]}")


def student_error(info: dict, where: str = "", stubs: frozenset[str] = frozenset()) -> StudentError:
    """A StudentError that is also an instance of the student's exception's built-in classes."""
    info = clean_info(info)
    error = _instance(_student_error_class(tuple(info["builtins"])))
    StudentError.__init__(error, info, where, stubs)
    return error


# What the grader says when the worker reports a failure of one of these kinds: the grader's own words, since
# the worker's are the student's once their code has run (only the start's import failures are shown as sent).
FAILURES = {
    "missing": "{label}: not found in your code (a function, class, method, attribute or parameter name is "
               "missing or misspelled: compare with the exercise's stub)",
    "skipped": "not run: the step it builds on failed",
    "import": "{label}.py does not import in a restarted worker, though it imported before: an import must not depend "
              "on the time, chance or what ran before",
    "parameters": "{label}: the module's parameters are not those the exercise asks for (one is missing, such as the "
                  "bias of qkv_bias=True, or does not have the shape asked for): compare with the stub",
    "autograd": "the result of {label} ({which}) is not connected to the inputs by autograd (no grad_fn): was "
                "something detached, or turned into a Python number?",
    "reply": "the result of {label} cannot be sent back to the grader: is it over the reply's "
             f"{wire.MAX_REPLY_BYTES >> 20} MiB limit, or does it hold something other than tensors and plain values?",
}
UNREADABLE = "the reply of your code could not be read"
CHECK = "during this check"  # where a call's problem happened, as a check's call says it
STUDENT_FRAME = re.compile(r"(?P<module>\w+)\.py, line (?P<line>\d+)\b")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def student_line(frames: list[str], modules, submission: str, sources: dict[str, list[str]]) -> str:
    """'<module>.py, line 12: <that line>' for the innermost frame the worker names, with the line read from the
    submission's own file (static text; ``sources`` keeps each file's lines once read), or '' when that frame is not
    a line of an exercise file."""
    match = STUDENT_FRAME.match(frames[-1]) if frames else None
    if match is None or match["module"] not in modules:
        return ""
    module, number = match["module"], int(match["line"])
    if module not in sources:
        try:
            with open(os.path.join(submission, f"{module}.py"), "rb") as file:
                sources[module] = file.read(1 << 20).decode(errors="replace").splitlines()
        except OSError:
            sources[module] = []
    lines = sources[module]
    if not 1 <= number <= len(lines) or not lines[number - 1].strip():
        return ""
    return f"{module}.py, line {number}: {clean(lines[number - 1].strip(), 200)}"


def which_tensor(failure: dict) -> str:
    """Which returned tensor an autograd failure is about: the worker's index, where it is one of ORDINALS'."""
    index = failure.get("tensor")
    return f"its {ORDINALS[index]} returned tensor" if type(index) is int and 0 <= index < len(ORDINALS) \
        else "each tensor it returns"
