"""Diagnosis: how a known mistake is recognised in a result, so that feedback names the one a result shows.

A ``Hint`` is a diagnosis, never a guess: its text is shown only when its ``alternative`` (what the mistake
computes on the very input the check used) reproduces the student's result (``matching``: the same values within
the tolerance, NaN or inf where theirs are), or raises the error the student's code raised (``raising_alike``: the
same exception type, the same message with the same sizes). Each has a stable ``id`` ("attention.no_scaling"): the grader
counts misconceptions by it. The mistakes themselves are the course's: each exercise's ``hints_<module>.py`` and
the shared ``hints.py`` (tests/course), written as functions of what the code under check does (its inputs, the
configuration the contract gives, its own layers), so that the same hint runs on a student's module in the public
checks and on the reference's twin in the hidden suites.

The fixed words for what a result got wrong live here too (``shape_fact``, ``error_scale``): the public checks say
the size of an error in the grader's buckets.

This module needs torch alone: it ships in the handout (tests/public/diagnosis.py), and the grader's suites use the
same file.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Hint:
    """A known mistake: if the student's result equals ``alternative()`` (or their code raises what it raises),
    ``message`` says what went wrong; ``id`` names the mistake for counting."""
    message: str
    alternative: Callable[[], object]
    id: str = ""


Hints = Iterable[Hint] | Callable[[], Iterable[Hint]]


def labelled(label: str, text: str | None) -> str:
    """' <label>: <text>' with exactly one final period (or nothing, without a text)."""
    if not text:
        return ""
    text = text.rstrip()
    return f" {label}: {text}" + ("" if text.endswith((".", "?", "!", ")")) else ".")


RETURNS_NONE = ("does every path of the function end with a return (a function that reaches its end returns "
                "None), and does each function it calls return its result?")
DROPOUT_IN_EVAL = ("dropout must be off in eval mode: use the nn.Dropout module (self.dropout), or "
                   "F.dropout(..., training=self.training).")

MEANINGS = [  # (part of torch's message, what it says happened and what to do, in the student's words)
    ("Mismatch in shape: grad_output", "the result's shape differs from the expected one (see the values checks)"),
    ("leaf Variable that requires grad is being used in an in-place operation",
     "a tensor that requires grad (an input, or a module's parameter) was changed in place: never change an input "
     "in place, and copy values into a parameter under torch.no_grad() (with torch.no_grad(): param.copy_(...))"),
    ("modified by an inplace operation",
     "a tensor autograd keeps for the backward pass (the attention weights, an intermediate) was changed in place "
     "afterwards (masked_fill_, +=, x[...] = ..., nn.Dropout(p, inplace=True)): use the out-of-place form "
     "(masked_fill, x = x + ..., nn.Dropout(p))"),
    ("is only implemented on integer and Boolean-type tensors",
     "~ (invert) of a float tensor: make the mask a bool tensor (dtype=torch.bool, or a comparison such as mask == 0)"),
    ("cannot be called on meta tensors", "an operation needed the values of a meta tensor, which has none"),
    ("Cannot copy out of meta tensor", "the values of a meta tensor were copied out (into a tensor made without "
                                       "device=x.device, such as torch.empty(T, T), or by .item(), .tolist()): make "
                                       "every tensor on the input's device and keep to tensor operations"),
    ("view size is not compatible with input tensor's size and stride",
     "view() of a tensor whose memory is not laid out in order (after a transpose): use reshape(...), or "
     ".contiguous() before view(...)"),
    ("with a bool tensor is not supported", "arithmetic on a bool mask (1 - mask, -mask): invert it with ~mask and "
                                            "apply it with masked_fill"),
    ("on a bool tensor is not supported", "arithmetic on a bool mask (1 - mask, -mask): invert it with ~mask and "
                                          "apply it with masked_fill"),
    ("as parameter", "a plain tensor was assigned to a module's parameter: create it as nn.Parameter(...), or copy "
                     "values into the existing one under torch.no_grad() (param.copy_(...))"),
    ("must be a 3D tensor", "torch.bmm takes 3-D tensors only: use @ (torch.matmul), which handles any number of batch "
                            "dims"),
    ("shapes cannot be multiplied", "a matrix product of tensors whose inner sizes differ: check which dims you "
                                    "multiply (transpose(-2, -1) of the keys, the weights' orientation)"),
    ("to have the same dtype", "tensors of different dtypes in one operation: an integer tensor used as values, or a "
                               "tensor created without dtype=x.dtype"),
    ("only supports boolean masks", "masked_fill needs a bool mask: compare (mask == 0) or create it with "
                                    "dtype=torch.bool"),
    ("not implemented for 'Long'", "an integer tensor was used where values must be floating point (torch.arange and "
                                   "torch.tensor of ints give int64): pass dtype=x.dtype"),
    ("is not on the expected device", "a tensor made without device=x.device (a mask built in forward) is on "
                                      "another device than the input"),
    ("does not match the shape of the indexed tensor",
     "a bool mask used as an index (x[~mask] = ...) must have the tensor's whole shape: indexing does not "
     "broadcast over batch dims; use masked_fill(~mask, value), which does"),
]


# What an exception of a built-in type means where its message matches none of ``MEANINGS``: said of the type
# alone, so that it tells nothing of an input (the hidden feedback never shows the message).
KIND_MEANINGS = {
    "AssertionError": "an assert of your code failed; an assert checks the program's own invariants (python -O "
                      "removes it): to refuse bad arguments, raise ValueError(...) with a message",
    "TypeError": "an operation got a value of the wrong type, or the wrong number of arguments: a float where a size "
                 "must be an int (view, reshape, torch.ones), a Python number or list where a tensor is needed, a "
                 "tuple where one tensor is",
    "IndexError": "an index past a dim's size, or a dim the tensor does not have (dim=-3 of a 2-D tensor, shape[2] of "
                  "a 2-D shape): inputs may have any number of batch dims, so count dims from the end",
    "NameError": "a name used where it is not defined: a typo, a variable of another function, or, in a notebook, a "
                 "name defined in another cell (the solution cell is graded on its own)",
    "UnboundLocalError": "a local variable used before it is assigned (a branch that does not assign it)",
    "KeyError": "a dict was looked up with a key it does not hold",
    "AttributeError": "an object has no attribute of that name: a typo, a layer created under another name than the "
                      "contract's (self.W_query, self.out_proj), or a method of a tensor called on a Python number",
    "ValueError": "a value of the right type was refused: unpacking a shape into the wrong number of names (B, T, d = "
                  "x.shape of a 2-D tensor), or a condition of your own code's checks that holds for valid inputs",
    "RuntimeError": "torch refused an operation: most often sizes that do not fit (a matrix product, a broadcast, a "
                    "view) or tensors of different dtypes or devices",
    "ZeroDivisionError": "a division by zero of Python numbers (a size computed as 0)",
    "NotImplementedError": "an operation torch has not got for these inputs: on the meta device (which the device "
                           "rule uses), one whose result's shape depends on the values (x[mask], nonzero, "
                           "masked_select, unique) or that reads them (.item(), .tolist()); use masked_fill, where and "
                           "other operations whose result's shape follows from the inputs' shapes",
    "RecursionError": "a function that calls itself without end",
}


def meaning_of(message: str, kind: str = "") -> str | None:
    """What an error means, in the student's words: by its message where torch's is one of ``MEANINGS``, else by its
    type ``kind`` (``KIND_MEANINGS``)."""
    return next((meaning for pattern, meaning in MEANINGS if pattern in message), KIND_MEANINGS.get(kind))


def phrase(hint: Hint | None) -> str:
    """' Hint: ...' naming the mistake ``hint`` (or nothing)."""
    return labelled("Hint", hint.message if hint else None)


def as64(t: torch.Tensor) -> torch.Tensor:
    """A detached float64 copy on the CPU."""
    return t.detach().to("cpu", torch.float64)


def same(got: torch.Tensor, alternative, rtol: float, atol: float) -> bool:
    """Whether ``got`` equals ``alternative`` within the tolerance, NaN where it is NaN and inf where it is inf."""
    if (not isinstance(alternative, torch.Tensor) or alternative.device.type == "meta"
            or tuple(alternative.shape) != tuple(got.shape)):
        return False
    a, b = as64(got), as64(alternative)
    both_nan = torch.isnan(a) & torch.isnan(b)
    return bool((torch.isclose(a, b, rtol=rtol, atol=atol) | both_nan | (a == b)).all())


def shape_fact(got: Sequence[int], want: Sequence[int]) -> str:
    """How a result's shape differs from the expected one, in one of a few fixed phrases (never its sizes)."""
    got, want = tuple(got), tuple(want)
    if sorted(got) == sorted(want):
        return "the right sizes in the wrong order"
    if len(got) == len(want) - 1:
        return "one dim fewer than expected"
    if len(got) == len(want) + 1:
        return "one dim more than expected"
    if len(got) != len(want):
        return "several dims fewer than expected" if len(got) < len(want) else "several dims more than expected"
    return "the expected number of dims but other sizes"


def error_scale(error: float) -> str:
    """An error's order of magnitude, one of a dozen buckets: 'about 1e-3', 'about 1', '10 or more'."""
    if math.isnan(error) or error >= 10:
        return "10 or more"
    exponent = max(-10, math.floor(math.log10(error))) if error > 0 else -10
    return "about 1" if exponent >= 0 else f"about 1e{exponent}"


def _listed(hints: Hints) -> Iterable[Hint]:
    return hints() if callable(hints) else hints


def _only(found: list[Hint]) -> Hint | None:
    """The one mistake found; none where mistakes of different ids fit alike (the input cannot tell them apart)."""
    return found[0] if found and len({hint.id for hint in found}) == 1 else None


def matching(got: torch.Tensor, hints: Hints, rtol: float, atol: float, want: torch.Tensor | None = None) -> Hint | None:
    """The mistake whose result on the same input is ``got``. One that would also give ``want`` (the right result)
    tells nothing and is passed over; where several mistakes fit, none is named."""
    found = []
    for hint in _listed(hints):
        try:
            alternative = hint.alternative()
        except Exception:  # a mistake that cannot even be computed on this input is not the one made
            continue
        if same(got, alternative, rtol, atol) and not (want is not None and same(want, alternative, rtol, atol)):
            found.append(hint)
    return _only(found)


def _pattern(message: str) -> tuple[str, list[str]]:
    """An error message as its words (numbers replaced by #, spaces collapsed) and its numbers in order of size:
    the same error on the same input whatever operand came first."""
    text = " ".join(message.split())
    return re.sub(r"\d+", "#", text), sorted(re.findall(r"\d+", text), key=lambda n: (len(n), n))


def raising_alike(kind: str, message: str, hints: Hints) -> Hint | None:
    """The mistake that raises, on the same input, an exception of type ``kind`` with ``message`` (the same words and
    the same numbers, in any order): the error the student's code raised. Where several mistakes raise it, none is
    named."""
    found = []
    for hint in _listed(hints):
        try:
            hint.alternative()
        except Exception as error:
            if type(error).__name__ == kind and _pattern(str(error)) == _pattern(message):
                found.append(hint)
    return _only(found)
