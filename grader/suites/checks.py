"""Value checks shared by the hidden suites: comparing a student's result with the reference, and saying why not.

What a check says about a failure is written here, so the rules hold in one place (the plugin adds only what is not
a check's: a missing file, a crash, a time-out, said once per exercise):

- a message names the property, the *class* of input (shapes, dtype, device,
  which dim, whether the temperature is below or above 1), never an input
  value or a reference output;
- what a message says about the student's result comes from a small fixed set
  (a kind of value, its dtype and device, how its shape differs, the order of
  magnitude of its error, the known mistake it matches): never a number, a
  name or a text of the student's choosing, which could carry a hidden input
  (``kind``, ``shape_fact``, ``error_scale``);
- a "Hint:" is a diagnosis: a known mistake (an exercise's ``hints_<module>.py``,
  recognised by ``diagnosis``) is named only when it reproduces the student's
  result (or raises their error) on the same input, and its id goes with the
  failure (``CheckFailed.misconception``); where none does, a message may say
  what is expected ("Expected: ..."), never a guessed cause.

Failures are raised as ``CheckFailed``; ``StudentError`` (the student's own
exception) is turned into one with the input class added;
``SubmissionProblem`` (missing file or name, crash, time-out) is left alone
for the plugin.
"""
from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Sequence

import torch
from diagnosis import (
    KIND_MEANINGS,
    RETURNS_NONE,
    Hint,
    Hints,
    as64,
    error_scale,
    labelled,
    matching,
    meaning_of,
    phrase,
    raising_alike,
    shape_fact,
)

from grader.sandbox import wire
from grader.sandbox.host.problems import STUB_PHRASE, StudentError
from grader.sandbox.host.proxy import CallResult, RemoteObject, StudentTensor, released
from grader.sandbox.seed import seed_torch


class CheckFailed(AssertionError):
    """A property of the submission does not hold; the message is written for the student. ``misconception``: the id
    of the known mistake the message names (one whose result on the same input reproduces the student's), if any."""

    def __init__(self, message: str, misconception: str = "", raised: bool = False):
        super().__init__(message)
        self.misconception = misconception
        self.raised = raised  # the student's code raised: the property could not be looked at on this input


HALF_DTYPES = (torch.float16, torch.bfloat16)
DTYPE_HINT = ("Hint: no .float()/.double(), no hard-coded dtype=... when you create tensors: use x.dtype, "
              "x.new_*(...) or torch.*_like(x)")
LESS_PRECISE = ("the float64 result is less precise than its input: right at float32 precision, not at float64, so "
                "part of it is computed in float32 (a .float(), or a tensor created without dtype=x.dtype) and cast "
                "back. Hint: keep the input's dtype throughout")
CUT_HINT = ("Hint: something cuts the autograd graph between the inputs and the result: .detach(), .data, .item(), "
            ".tolist(), torch.tensor(...) of a computed value, or an in-place copy into a new tensor.")


# ---------------------------------------------------------------- describing inputs (never their values)

def shape(t) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ("," if t.dim() == 1 else "") + ")"


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def describe(**named) -> str:
    """'x (2, 3, 5) float64 on cpu': names and shapes, the floating dtype and the device; never a value.

    Non-tensor values (dims, sizes) are shown as given; bool/int tensors carry their own dtype.
    """
    floating = [v for v in named.values() if isinstance(v, torch.Tensor) and v.is_floating_point()]
    dtypes = {v.dtype for v in floating}
    parts = []
    for name, value in named.items():
        if isinstance(value, torch.Tensor):
            own = len(dtypes) != 1 or not value.is_floating_point()
            parts.append(f"{name} {shape(value)}" + (f" {dtype_name(value.dtype)}" if own else ""))
            if not own and value is floating[-1]:
                parts[-1] += f" {dtype_name(value.dtype)}"
        elif value is not None:
            parts.append(f"{name} {value}")
    devices = sorted({v.device.type for v in named.values() if isinstance(v, torch.Tensor)})
    return ", ".join(parts) + (f" on {', '.join(devices)}" if devices else "")


def temperature_class(t: float) -> str:
    """The temperature's class, not its value."""
    return "temperature 1" if t == 1 else ("a temperature below 1" if t < 1 else "a temperature above 1")


# ---------------------------------------------------------------- describing the student's results (a fixed set of facts)

def kind(value) -> str:
    """What kind of value the student returned, in a few fixed words ('a tensor', 'a tuple', 'None', ...)."""
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if isinstance(value, RemoteObject):
        return "an object"
    for types_, words in ((type(None), "None"), (bool, "a bool"), ((int, float), "a number"), (str, "a string"),
                          (tuple, "a tuple"), (list, "a list"), (dict, "a dict")):
        if isinstance(value, types_):
            return words
    return "another kind of value"


# ---------------------------------------------------------------- calling the student

def _hint(text: str | None) -> str:
    """' Hint: ...' with exactly one final period (or nothing)."""
    return labelled("Hint", text)


def _expected(text: str | None) -> str:
    """' Expected: ...': what the check wants, said where no known mistake matches (not a diagnosis)."""
    return labelled("Expected", text)


def diagnosed(message: str, hint: Hint | None, raised: bool = False) -> CheckFailed:
    """The CheckFailed saying ``message``, and the mistake ``hint`` (if any) that reproduces the result, by its id."""
    return CheckFailed(message + phrase(hint), misconception=hint.id if hint else "", raised=raised)


WITNESSES = 4  # failing cases a test looks at for the mistake most of them name, when its first names none


def each(cases, check: Callable) -> None:
    """``check(case)`` for every case, stopping at a first failure that names a known mistake; where the first names
    none, at WITNESSES failing cases (or the last case), and the failure raised is the first naming a mistake that
    most of the failing cases seen name (at least half), else the first. The smallest case is often one where several
    mistakes give the same result, so none can be named (``tril(-1)`` and ``triu(1)`` at T=1); a mistake named on one
    case of many is a coincidence of sizes (sqrt(T) = d_out where T = d_out ** 2), not the student's. The bound keeps
    a test that fails on every case from costing every case (a 64 MiB reply to each)."""
    failures: list[CheckFailed] = []
    for case in cases:
        if len(failures) >= WITNESSES:
            break
        try:
            check(case)
        except CheckFailed as failure:
            if not failures and failure.misconception:
                raise
            failures.append(without_frames(failure))  # a 96 MB tensor returned to each of 14 cases held them all
    named = Counter(failure.misconception for failure in failures if failure.misconception)
    for failure in failures:
        if failure.misconception and 2 * named[failure.misconception] >= len(failures):
            raise failure
    if failures:
        raise failures[0]


@contextlib.contextmanager
def ahead(student, steps: Sequence[Callable[[], object]]):
    """Within the block, which runs ``steps`` (a check's cases or subjects) in their order, the first call of each into
    the student's code goes to the worker with the others, in one frame, once the first step's has returned
    (``grader.sandbox.host.ahead``): the block runs them as it would without, a round trip less for each."""
    calls = student.session.ahead
    calls.prepare(calls.plan(steps))
    try:
        yield
    finally:
        calls.forget()


def without_frames(failure: BaseException) -> BaseException:
    """``failure`` without its traceback and the exceptions it chains: their frames hold the results the check read,
    and so the replies' bytes. A check keeps a failure only so, and calls the worker again only once the results it
    read are gone (red team 11: a check holding two 254 MiB replies while it read a third ran the grading process out
    of memory, a grader fault on every run)."""
    failure.__traceback__ = failure.__context__ = failure.__cause__ = None
    return failure


def attempt(thunk: Callable, what: str, on: str, hints: Hints = (), note: str = ""):
    """Run ``thunk`` (a call into the student's code); their exception becomes a CheckFailed that names the input class,
    and the mistake among ``hints`` that raises the same error on the same input (``note``: what to know about the
    input, said after the error)."""
    try:
        return thunk()
    except StudentError as error:
        raise failed(error, what, on, hints, note) from None


def failed(error: StudentError, what: str, on: str, hints: Hints = (), note: str = "") -> CheckFailed:
    """The CheckFailed for the student's exception ``error`` raised by ``what`` on inputs of class ``on``: a mistake
    of ``hints`` that raises the same error is named; otherwise what torch's message means, where it is known."""
    message = f"{what} failed on {on}: {error}".rstrip(".") + "."
    kind, text = error.info.get("type", ""), error.info.get("message", "")
    if kind == "NotImplementedError" and STUB_PHRASE in error.message:
        return CheckFailed(message, raised=True)  # a stub: the message says what to do
    found = raising_alike(kind, text, hints)
    meaning = meaning_of(text) if found is None else None
    if found is None and meaning is None and error.builtin in KIND_MEANINGS:
        # said of the type alone: the message itself is never shown (it may hold values)
        meaning = f"{KIND_MEANINGS[error.builtin]} (to read the error's own message, call your code on an input like this one)"
    message += f" Note: {note}." if note else ""  # first: what is particular to this check outlasts the feedback's cap
    return diagnosed(message + (f" This error means: {meaning}." if meaning else ""), found, raised=True)


def run_all(session, calls: list, what: str | Sequence[str], on: str, hints: Hints = ()) -> list[CallResult]:
    """Several calls into the student's code in one round trip (``Session.run_many``); their exception fails the
    check, naming the call that raised (``what``, or ``what[i]`` for the i-th call) and the input class."""
    try:
        return session.run_many(calls)
    except StudentError as error:
        raise failed(error, what if isinstance(what, str) else what[error.step], on, hints) from None


def expect_raises(exception: type, thunk: Callable, what: str, when: str, hint: str, need_message: bool = True):
    """The student's code must raise ``exception`` (with a message) when ``when``."""
    name = exception.__name__
    try:
        value = thunk()
    except StudentError as error:
        if isinstance(error, exception):
            if need_message and not str(error.info.get("message", "")).strip():
                raise CheckFailed(f"{what} raises a {name} without a message when {when}: say what was wrong "
                                  f"(e.g. raise {name}(f\"... got {{...}}\"))") from None
            return error
        if isinstance(error, AssertionError):  # they did check, with assert: the hint says why a check is needed
            raise CheckFailed(f"{what} should raise {name} when {when}, but {error}: an assert checks the program's "
                              f"own invariants (and python -O removes it); raise {name}(...) with a message.") from None
        raise CheckFailed(f"{what} should raise {name} when {when}, but {error}.{_hint(hint)}") from None
    raise CheckFailed(f"{what} returned {kind(value)} instead of raising {name} when {when}.{_hint(hint)}")


# ---------------------------------------------------------------- comparing values

def tolerance(course, dtype, magnitude: float = 0.0) -> tuple[float, float]:
    """course.yaml's (rtol, atol) for ``dtype``; widened for inputs of large ``magnitude``.

    Rounding an input of size M already moves it by about eps * M, which moves
    an attention weight by a relative eps * M whatever the algorithm; the
    tolerance grows with it, so a correct log-sum-exp formulation passes at
    1e4 while NaNs and wrong weights still fail.
    """
    tol = course.tolerance(dtype)
    widened = 8 * torch.finfo(dtype).eps * magnitude
    return max(tol.rtol, widened), max(tol.atol, widened)


def expect_tensor(got, what: str, on: str, like: torch.Tensor | None = None) -> torch.Tensor:
    """``got`` itself if it is a dense tensor (still to be verified: ``checked``); otherwise the check fails, saying
    what kind of value came back."""
    if type(got) in (torch.Tensor, StudentTensor) and got.layout == torch.strided and not got.is_nested:
        return got
    hint = ""
    if got is None:
        hint = f" Hint: {RETURNS_NONE}"
    elif isinstance(got, (float, int)):
        hint = " Hint: return the tensor itself; .item(), float() or a Python sum turn it into a number, which loses autograd, dtype and device."
    elif isinstance(got, tuple) and got and type(got[0]) in (torch.Tensor, StudentTensor):
        hint = " Hint: return the result tensor alone, not a tuple of tensors (such as (output, weights)): see the docstring."
    elif isinstance(got, (list, tuple)):
        hint = " Hint: build the result with tensor operations (torch.stack, torch.cat) rather than a Python list."
    expected = f" of shape {shape(like)}" if like is not None else ""
    dense = " dense" if isinstance(got, torch.Tensor) else ""  # a sparse, nested or subclassed tensor came back
    raise CheckFailed(f"{what} returned {kind(got)} on {on}; expected a{dense} tensor{expected}.{hint}")


FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
ANY_DTYPE = tuple(wire.DTYPES.values())  # every dtype a reply may hold


def checked(got, like: torch.Tensor, *, what: str, on: str, dtypes: tuple[torch.dtype, ...] | None = None,
            dtype_note: str | None = None, hints: Hints = (), rtol: float = 0.0, atol: float = 0.0) -> torch.Tensor:
    """The student's ``got`` (a result, a gradient, a parameter, an input after the call) as a plain tensor, once it is
    verified to be a dense tensor like ``like``: its shape, its dtype (or one of ``dtypes``), its kind of device, and
    so no larger than it. The one way a student's tensor reaches a computation of the grading process (until then it
    is a ``StudentTensor``, whose values cannot be used): what the student sends is checked before trusted code
    computes with it, whatever its shape (a (K, 1, 1, 1, 1) result broadcast against a (1, K, 1, 1, 1) one), dtype or
    device. Anything else fails the check for the student, saying what is wrong; a wrong shape names the mistake of
    ``hints`` (within ``rtol``/``atol``) whose result has that shape and those values, compared only there."""
    got = expect_tensor(got, what, on, like)
    if tuple(got.shape) != tuple(like.shape):
        comparable = "meta" not in (got.device.type, like.device.type) and got.device.type == like.device.type
        found = matching(_released(got), hints, rtol, atol) if comparable else None
        raise diagnosed(f"{what}: the result's shape has {shape_fact(got.shape, like.shape)} on {on}; expected "
                        f"{shape(like)}.", found)
    if dtypes is None and got.dtype != like.dtype:
        note = dtype_note or f"the input's dtype. {DTYPE_HINT.rstrip('.')}"
        raise CheckFailed(f"{what}: {dtype_name(got.dtype)} result on {on}; expected {dtype_name(like.dtype)}, {note}.")
    if dtypes is not None and got.dtype not in dtypes:
        raise CheckFailed(f"{what}: {dtype_name(got.dtype)} result on {on}; expected {' or '.join(map(dtype_name, dtypes))}.")
    if got.device.type != like.device.type:
        raise CheckFailed(f"{what}: result on {got.device.type} for inputs on {like.device.type} ({on}). "
                          f"Hint: {DEVICE_HINT}")
    return _released(got)


DEVICE_HINT = ("a device is hard-coded: create tensors on the device the call gives (device=x.device for an input x, "
               "device=device where the function takes a device; or torch.*_like, x.new_*), and register fixed tensors "
               "of a module as buffers so that they follow .to(device).")


def _released(got: torch.Tensor) -> torch.Tensor:
    """The plain tensor ``got`` is (a tensor a test made itself is one already)."""
    return released(got) if isinstance(got, StudentTensor) else got


def expect_object(got, what: str, on: str) -> RemoteObject:
    """``got`` itself if it is an object kept in the worker (the student's module); otherwise the check fails."""
    if isinstance(got, RemoteObject):
        return got
    raise CheckFailed(f"{what} returned {kind(got)} on {on}; expected the object itself (an nn.Module).")


def expect_tensors(got, count: int, what: str, on: str, expected: str) -> tuple[torch.Tensor, ...]:
    """``got`` must be a tuple (or list) of ``count`` tensors, described as ``expected`` ('the pair (v, alphas)')."""
    if not isinstance(got, (tuple, list)) or len(got) != count:
        many = " of another length" if isinstance(got, (tuple, list)) else ""
        raise CheckFailed(f"{what} returned {kind(got)}{many} on {on}; expected {expected}.")
    return tuple(expect_tensor(item, f"item {i} of the result of {what}", on) for i, item in enumerate(got))


def expect_close(got, want: torch.Tensor, *, what: str, on: str, course=None, rtol: float | None = None,
                 atol: float | None = None, hints: Hints = (), generic: str | None = None, check_dtype: bool = True,
                 dtype_note: str | None = None):
    """The student's ``got`` must be a tensor like ``want`` (shape, dtype, device: ``checked``) with close values.

    A failure names the mistake of ``hints`` whose result on the same input is ``got`` (a diagnosis); where none
    is, it says what is expected (``generic``). ``hints`` may be a function returning them, for hints that cost
    something to prepare: it runs on a failure only.
    """
    if not want.is_floating_point():
        rtol, atol = 0.0, 0.0
    elif rtol is None or atol is None:
        rtol, atol = tolerance(course, want.dtype)
    got = checked(got, want, what=what, on=on, dtypes=None if check_dtype else ANY_DTYPE, dtype_note=dtype_note,
                  hints=hints, rtol=rtol, atol=atol)
    if want.device.type == "meta":
        return got
    a, b = as64(got), as64(want)
    finite = torch.isfinite(b)
    if bool((finite & ~torch.isfinite(a)).any()):
        problem = f"{what}: NaN or inf on {on} where the result is finite."
    elif bool((torch.isclose(a, b, rtol=rtol, atol=atol) | (a == b)).all()):
        return got
    else:
        difference = (a - b).abs().where(finite, torch.zeros((), dtype=torch.float64))
        problem = f"{what}: wrong values on {on}: off by {error_scale(float(difference.max()))} at worst."
    found = matching(got, hints, rtol, atol, want)
    raise diagnosed(problem + ("" if found else _expected(generic)), found)


def rows_sum_to_one(got: torch.Tensor, dim: int = -1, what: str = "weights") -> str | None:
    """What the result's sums along ``dim`` show, if they are not all 1: a fact, not a cause."""
    a = as64(got)
    if a.dim() == 0:
        return None
    sums = a.sum(dim)
    if torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        return None
    for other in range(a.dim()):
        if other != dim % a.dim():
            s = a.sum(other)
            if torch.allclose(s, torch.ones_like(s), atol=1e-4):
                return f"your {what} sum to 1 along dim {other - a.dim()}, not along dim {dim}."
    return f"your {what} do not sum to 1 along dim {dim}."


# ---------------------------------------------------------------- gradients, in-place changes, operator counts, built-ins

def kept_on(got, device_type: str, *, what: str, on: str) -> None:
    """Every tensor of the result ``got`` is on ``device_type`` (what else is wrong with it, the values checks say)."""
    for item in got if isinstance(got, (tuple, list)) else (got,):
        if isinstance(item, torch.Tensor) and item.device.type != device_type:
            raise CheckFailed(f"{what}: result on {item.device.type} for inputs on {device_type} ({on}). "
                              f"Hint: {DEVICE_HINT}")


def reported(values, count: int) -> list:
    """The first ``count`` entries of a list the worker reported about a call (its inputs' gradients, its inputs after
    the call), None for each it did not report (all of them where it reported something other than a list)."""
    return [*(values if isinstance(values, list) else []), *[None] * count][:count]


def leading(result, count: int) -> list:
    """The first ``count`` entries of a call's result (a tuple or list; any other result is its one entry), None for
    each it does not have."""
    return reported(list(result) if isinstance(result, (tuple, list)) else [result], count)


def unchanged(before: Sequence, result: CallResult, names: Sequence[str], *, what: str, on: str):
    """The student's call must leave its input tensors as they were."""
    for name, old, new in zip(names, before, reported(result.args_after, len(names))):
        if not isinstance(old, torch.Tensor):
            continue
        if not isinstance(new, torch.Tensor) or tuple(new.shape) != tuple(old.shape) or new.dtype != old.dtype:
            raise CheckFailed(f"{what} changes the shape or dtype of its input {name} in place ({on}). Hint: "
                              f"transpose_/t_/squeeze_/unsqueeze_/resize_ modify the caller's tensor; use the versions "
                              f"without the underscore, which return a new view.")
        if not torch.equal(checked(new, old, what=f"its input {name} after {what}", on=on), old):
            raise CheckFailed(f"{what} modifies its input {name} in place ({on}). Hint: x -= ..., x /= ..., x.sub_(), "
                              f"x.div_(), x.exp_() or x[...] = ... write into the caller's tensor; compute a new tensor "
                              f"instead (z = x - ...).")


def vectorized(results: Sequence[tuple[str, CallResult]], what: str, loop_over: str):
    """The number of torch functions, methods and operators called must not grow from the first call to the others
    (larger T, batch or heads)."""
    base_label, base = results[0]
    for label, result in results[1:]:
        if result.ops is not None and base.ops is not None and result.ops > base.ops:
            raise CheckFailed(f"{what} calls more tensor operations for {label} than for "
                              f"{base_label}: the work grows with the size, so a Python loop runs over {loop_over}. "
                              f"Hint: use batched tensor operations (matmul/@ on (..., T, d) tensors, broadcasting, "
                              f"transpose(-2, -1)) that handle every position and batch element at once.")


def own_implementation(result: CallResult, what: str, instead: str):
    """None of the exercise's banned built-ins (course.yaml) may be called (``result.called`` holds only the names
    the check watched for)."""
    if result.called:
        names = ", ".join(result.called)
        raise CheckFailed(f"{what} calls the built-in {names}, which does the whole job of this exercise, so this part "
                          f"earns no credit.{_hint(instead)}")


# ---------------------------------------------------------------- references

def in_float64(function: Callable, *args, **kwargs):
    """The reference ``function`` evaluated in float64 (exact for any float input), cast back to the inputs' dtype.

    Comparing with the exact answer rather than with another float32 rounding
    keeps the tolerance for the student's own rounding alone.
    """
    dtypes = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
    if not dtypes or dtypes[0] == torch.float64 or any(a.device.type == "meta" for a in args if isinstance(a, torch.Tensor)):
        return function(*args, **kwargs)
    wide = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    return _cast(function(*wide, **kwargs), dtypes[0])


def _cast(value, dtype):
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


META_HINT = ("meta tensors (which check that your code keeps the input's device) have shapes but no values (reading "
             "one, an if on a mask's .all(), answers True): avoid .tolist(), .cpu(), .numpy() and tensors made without "
             "device=x.device")


def on_meta(value):
    """The same tensors on the meta device (shape and dtype only); the reference itself is computed on real tensors."""
    if isinstance(value, torch.Tensor):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    if isinstance(value, (tuple, list)):
        return type(value)(on_meta(v) for v in value)
    return value


def seed(n: int) -> None:
    """Seed the generators the references draw from: the CPU's (reference modules are built on it, then moved to the
    device) and, once initialized, CUDA's (dropout on the GPU); the worker seeds the student's call the same way.

    torch.manual_seed would do it too, but it also queues a lazy CUDA/XPU/MTIA seeding that formats a stack
    trace on every call while CUDA is not initialized: milliseconds each, hundreds of calls per submission.
    """
    seed_torch(n)


