"""Comparison and feedback helpers shared by the hidden suites.

Everything a student reads about a failed check is written here, so the rules
hold in one place:

- a message names the property, the *class* of input (shapes, dtype, device,
  which dim, whether the temperature is below or above 1), never an input
  value or a reference output;
- what a message says about the student's result comes from a small fixed set
  (a kind of value, its dtype and device, how its shape differs, the order of
  magnitude of its error, the known mistake it matches): never a number, a
  name or a text of the student's choosing, which could carry a hidden input
  (``kind``, ``shape_fact``, ``error_scale``);
- a "Hint:" is a diagnosis: a known mistake of tests/course/public/misconceptions.py
  is named only when it reproduces the student's result (or raises their error)
  on the same input, and its id goes with the failure
  (``CheckFailed.misconception``); where none does, a message may say what is
  expected ("Expected: ..."), never a guessed cause.

Failures are raised as ``grader.suites.plugin.CheckFailed``; ``StudentError`` (the
student's own exception) is turned into one with the input class added;
``SubmissionProblem`` (missing file or name, crash, time-out) is left alone
for the plugin.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch

from grader.sandbox.dropout import KeyedDropout, keyed_dropout
from grader.sandbox.problems import StudentError
from grader.sandbox.proxy import CallResult, RemoteObject, load_params_step
from grader.sandbox.seed import seed_torch
from grader.suites.plugin import CheckFailed
from tests.course.public.misconceptions import (  # noqa: F401 (the suites use them as C.*)
    Hint,
    Hints,
    alphas_hints,
    as64,
    attention_hints,
    causal_hints,
    causal_mask_hints,
    context_vector_hints,
    context_weight_hints,
    decoder_hints,
    dictionary_hints,
    dot_hints,
    error_scale,
    labelled,
    lookup_hints,
    matching,
    multihead_hints,
    one_hot_hints,
    pairwise_hints,
    phrase,
    project_hints,
    raising_alike,
    score_hints,
    self_attention_hints,
    shape_fact,
    softmax_hints,
)

HALF_DTYPES = (torch.float16, torch.bfloat16)
DEFERRED = ("not judged yet: this rule is checked once the values are right on the same inputs (the values checks "
            "say what is wrong)")
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


def diagnosed(message: str, hint: Hint | None) -> CheckFailed:
    """The CheckFailed saying ``message``, and the mistake ``hint`` (if any) that reproduces the result, by its id."""
    return CheckFailed(message + phrase(hint), misconception=hint.id if hint else "")


MEANINGS = [  # (part of torch's message, what it says happened, in the student's words)
    ("Mismatch in shape: grad_output", "the result's shape differs from the expected one (see the values checks)"),
    ("leaf Variable that requires grad is being used in an in-place operation",
     "an input that requires grad was changed in place"),
    ("cannot be called on meta tensors", "an operation needed the values of a meta tensor, which has none"),
]


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
    if kind == "NotImplementedError":
        return CheckFailed(message)  # a stub: the message says what to do
    found = raising_alike(kind, text, hints)
    if found is None:
        meaning = next((m for pattern, m in MEANINGS if pattern in text), None)
        message += f" This error means: {meaning}." if meaning else ""
    return diagnosed(message + (f" Note: {note}." if note else ""), found)


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
    a softmax weight by a relative eps * M whatever the algorithm; the
    tolerance grows with it, so a correct log-sum-exp formulation passes at
    1e4 while NaNs and wrong weights still fail.
    """
    tol = course.tolerance(dtype)
    widened = 8 * torch.finfo(dtype).eps * magnitude
    return max(tol.rtol, widened), max(tol.atol, widened)


def expect_tensor(got, what: str, on: str, like: torch.Tensor | None = None) -> torch.Tensor:
    """``got`` itself if it is a tensor; otherwise the check fails, saying what kind of value came back."""
    if isinstance(got, torch.Tensor):
        return got
    hint = ""
    if isinstance(got, (float, int)):
        hint = " Hint: return the tensor itself; .item(), float() or a Python sum turn it into a number, which loses autograd, dtype and device."
    elif isinstance(got, (list, tuple)):
        hint = " Hint: build the result with tensor operations (torch.stack, torch.cat) rather than a Python list."
    expected = f" of shape {shape(like)}" if like is not None else ""
    raise CheckFailed(f"{what} returned {kind(got)} on {on}; expected a tensor{expected}.{hint}")


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


def close(got, want: torch.Tensor, *, what: str, on: str, course=None, rtol: float | None = None, atol: float | None = None,
          hints: Hints = (), generic: str | None = None, check_dtype: bool = True, dtype_note: str | None = None):
    """The student's ``got`` must be a tensor like ``want`` (shape, dtype, device) with close values.

    A failure names the mistake of ``hints`` whose result on the same input is ``got`` (a diagnosis); where none
    is, it says what is expected (``generic``). ``hints`` may be a function returning them, for hints that cost
    something to prepare: it runs on a failure only.
    """
    got = expect_tensor(got, what, on, want)
    if not want.is_floating_point():
        rtol, atol = 0.0, 0.0
    elif rtol is None or atol is None:
        rtol, atol = tolerance(course, want.dtype)
    if tuple(got.shape) != tuple(want.shape):
        found = matching(got, hints, rtol, atol) if want.device.type != "meta" else None
        raise diagnosed(f"{what}: the result's shape has {shape_fact(got.shape, want.shape)} on {on}; expected "
                        f"{shape(want)}.", found)
    if check_dtype and got.dtype != want.dtype:
        note = dtype_note or f"the input's dtype. {DTYPE_HINT.rstrip('.')}"
        raise CheckFailed(f"{what}: {dtype_name(got.dtype)} result on {on}; expected {dtype_name(want.dtype)}, {note}.")
    if got.device.type != want.device.type:
        raise CheckFailed(f"{what}: result on {got.device.type} for inputs on {want.device.type} ({on}). "
                          f"Hint: a device is hard-coded: create tensors with device=x.device (or torch.*_like, x.new_*), "
                          f"and register fixed tensors of a module as buffers so that they follow .to(device).")
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
            raise CheckFailed(f"{what}: result on {item.device.type} for inputs on {device_type} ({on}). Hint: a device "
                              f"is hard-coded: create tensors with device=x.device (or torch.*_like, x.new_*), and "
                              f"register fixed tensors of a module as buffers so that they follow .to(device).")


def unchanged(before: Sequence, result: CallResult, names: Sequence[str], *, what: str, on: str):
    """The student's call must leave its input tensors as they were."""
    after = list(result.args_after or [])
    for name, old, new in zip(names, before, after):
        if not isinstance(old, torch.Tensor):
            continue
        if not isinstance(new, torch.Tensor) or tuple(new.shape) != tuple(old.shape) or new.dtype != old.dtype:
            raise CheckFailed(f"{what} changes the shape or dtype of its input {name} in place ({on}). Hint: "
                              f"transpose_/t_/squeeze_/unsqueeze_/resize_ modify the caller's tensor; use the versions "
                              f"without the underscore, which return a new view.")
        if not torch.equal(new.to(old.device), old):
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


def detached(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's parameters as plain tensors, by name (what ``load_params`` sends)."""
    return {name: p.detach().clone() for name, p in module.named_parameters()}


META_HINT = ("meta tensors (used here to check that your code keeps the input's device) have shapes but no values: "
             "avoid .item(), .tolist(), Python ifs on tensor values, and tensors created without device=x.device")


def on_meta(value):
    """The same tensors on the meta device (shape and dtype only); the reference itself is computed on real tensors."""
    if isinstance(value, torch.Tensor):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    if isinstance(value, (tuple, list)):
        return type(value)(on_meta(v) for v in value)
    return value


# ---------------------------------------------------------------- modules

def same_params(got: dict, want: dict, what: str, on: str, how: str):
    """Parameters of a module constructed right after torch.manual_seed must equal the reference's (kind and order)."""
    if not isinstance(got, dict) or set(got) - set(want):
        raise CheckFailed(f"{what} has parameters other than {', '.join(want)} ({on}). Hint: {how}")
    for name, w in want.items():
        if name not in got:
            raise CheckFailed(f"{what} has no parameter named {name} ({on}); expected {', '.join(want)}.")
        g = expect_tensor(got[name], f"the parameter {name} of {what}", on)
        if tuple(g.shape) != tuple(w.shape):
            turned = "is transposed" if tuple(g.shape) == tuple(w.shape)[::-1] else f"has {shape_fact(g.shape, w.shape)}"
            raise CheckFailed(f"parameter {name} of {what} {turned} ({on}); expected the shape {shape(w)}. "
                              f"Hint: {how}")
        if not torch.allclose(g.to(w), w):
            swapped = any(o != name and tuple(want[o].shape) == tuple(g.shape) and torch.allclose(g.to(w), want[o])
                          for o in want)
            reason = "the parameters are created in another order" if swapped else "it was drawn differently"
            raise CheckFailed(f"with torch.manual_seed(...) right before construction, parameter {name} of {what} "
                              f"differs from the expected one ({on}): {reason}. Hint: {how}")


def build_seeded(constructor, args, kwargs: dict, seed: int, what: str, on: str) -> RemoteObject:
    """The student's module built with ``args``/``kwargs`` right after the worker's generator is seeded with ``seed``."""
    return expect_object(attempt(lambda: constructor.run(args, kwargs, seed=seed, handles=True).value, what, on), what, on)


def twin(constructor, reference: torch.nn.Module, *args, what: str, dtype=None, device=None, mode: str | None = None,
         **kwargs):
    """The student's module built with ``args``, moved to ``dtype``/``device``, holding the reference's parameters
    (copied by name) and put in ``mode`` ('eval' or 'train') if given: one round trip to the worker."""
    params = detached(reference)
    if dtype is not None:
        params = {k: v.to(dtype) for k, v in params.items()}
    built = {"earlier": 0, "type": what}
    steps = [((constructor._target, args, kwargs, {"handles": True}), what)]
    if dtype is not None or (device is not None and torch.device(device).type != "cpu"):  # modules start on the CPU
        moved = {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
        steps.append((({**built, "path": ["to"]}, (), moved, {"handles": True}), f"{what}.to(...)"))
    steps.append((load_params_step(built, params), f"copying the parameters into the {what}"))
    if mode is not None:
        steps.append((({**built, "path": [mode]}, (), None, {"handles": True}), f"{what}.{mode}()"))
    built = run_all(constructor._session, [call for call, _ in steps], [label for _, label in steps], "construction")
    return expect_object(built[0].value, what, "construction")


def dropout_in_training(module: RemoteObject, reference: torch.nn.Module, x: torch.Tensor, *, what: str, on: str,
                        course, generic: str) -> None:
    """In training mode, the student's ``module`` gives the ``reference``'s result when both run with keyed dropout
    (``grader.sandbox.dropout``: each entry kept or dropped as a function of its value): dropout acts once, on the
    attention weights, in whatever layout and order. Where it does not and the module is wrong in eval mode too,
    the values checks report the mistake, and this check says so. Compared at float32's tolerance: dropout misplaced
    moves the result by about its size, and precision is the float64 rule's to judge."""
    got = attempt(lambda: module.run(args=(x,), dropout="keyed").value, what, on)
    plain = module_reference(reference.eval(), x)
    with torch.no_grad(), KeyedDropout():
        want = reference.train()(x)
    p = reference.dropout.p
    rtol, atol = tolerance(course, torch.float32)
    hints = [Hint("dropout is not applied in training mode: apply self.dropout to the attention weights (nn.Dropout "
                  "is active after .train()).", lambda: plain, "dropout.not_applied"),
             Hint("dropout acts on the output: apply self.dropout to the attention weights right after the softmax, "
                  "not to the result.", lambda: keyed_dropout(plain, p), "dropout.on_output")]
    try:
        close(got, want, what=f"{what} in training mode", on=on, course=course, rtol=rtol, atol=atol, hints=hints,
              generic=generic)
    except CheckFailed:
        evaluated = run_all(module._session, [({**module._target, "path": ["eval"]}, (), None, {"handles": True}),
                                              (module._target, (x,), None, {})], what, on)
        try:
            close(evaluated[1].value, plain, what=what, on=on, course=course, rtol=rtol, atol=atol)
        except CheckFailed:
            raise CheckFailed(f"{what} in training mode: not judged yet: the result in eval mode is wrong too (the "
                              f"values checks say what); dropout is checked once it is right.") from None
        raise


def dropout_off_in_eval(module: RemoteObject, without: RemoteObject, x: torch.Tensor, *, what: str, on: str,
                        course) -> None:
    """In eval mode, the student's ``module`` (dropout 0.5) gives the result of ``without`` (the same module and
    parameters, dropout 0) under two random states: dropout does nothing, whatever the result is. A call that raises
    or returns no tensor is the values checks' to report (an unfinished stub is said as such)."""
    try:
        results = module._session.run_many([(module._target, (x,), None, {"seed": 1}),
                                            (module._target, (x,), None, {"seed": 2}),
                                            (without._target, (x,), None, {"seed": 1})])
    except StudentError as error:
        if error.info.get("type") == "NotImplementedError":
            raise failed(error, what, on) from None
        raise CheckFailed(f"{what} in eval mode: {DEFERRED}.") from None
    got = [result.value for result in results]
    if not all(isinstance(g, torch.Tensor) for g in got) or len({tuple(g.shape) for g in got}) != 1:
        raise CheckFailed(f"{what} in eval mode: {DEFERRED}.")
    rtol, atol = tolerance(course, x.dtype)
    if not all(torch.allclose(as64(g), as64(got[2]), rtol, atol, equal_nan=True) for g in got[:2]):
        raise CheckFailed(f"{what} in eval mode changes with the dropout rate or the random state ({on}: dropout 0.5 "
                          f"against 0). Hint: dropout must be off in eval mode: use the nn.Dropout module "
                          f"(self.dropout), or F.dropout(..., training=self.training).")


def wide(module: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of a reference module (its float32 parameters convert exactly)."""
    import copy
    return copy.deepcopy(module).double()


def seed(n: int) -> None:
    """Seed the generators the references draw from: the CPU's (reference modules are built on it, then moved to the
    device) and, once initialized, CUDA's (dropout on the GPU); the worker seeds the student's call the same way.

    torch.manual_seed would do it too, but it also queues a lazy CUDA/XPU/MTIA seeding that formats a stack
    trace on every call while CUDA is not initialized: milliseconds each, hundreds of calls per submission.
    """
    seed_torch(n)


def module_reference(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The reference module's output on ``x``, computed in float64 and cast back to x's dtype (float32 parameters
    and buffers convert exactly; the module itself is left as it is, and no graph is built)."""
    with torch.no_grad():
        if x.dtype == torch.float64:
            return module(x)
        state = {name: t.double() if t.is_floating_point() else t
                 for name, t in itertools.chain(module.named_parameters(), module.named_buffers())}
        return torch.func.functional_call(module, state, (x.double(),)).to(x.dtype)


def earlier_outputs_unchanged(call, x: torch.Tensor, changed: torch.Tensor, t: int, *, what: str, on: str,
                              expected: str, hint: str) -> None:
    """Changing the tokens from position ``t`` on leaves every output before ``t`` as it was (no peeking).
    ``call`` is the student's function or module (both inputs go in one round trip)."""
    both = run_all(call._session, [(call._target, (x,), None, {}), (call._target, (changed,), None, {})], what, on)
    a, b = (expect_tensor(result.value, what, on) for result in both)
    if a.shape != b.shape or a.shape[:2] != x.shape[:2]:
        raise CheckFailed(f"{what} returned a result of another shape on {on}; expected {expected}.")
    if not bool(torch.isfinite(a).all()):
        raise CheckFailed(f"{what}: NaN or inf on {on}. Expected: every row keeps at least its diagonal entry, and "
                          f"masked scores get -inf before a (stable) softmax.")
    moved = ~((a[:, :t] - b[:, :t]).abs() <= 1e-9 + 1e-7 * a[:, :t].abs())
    if bool(moved.any()):
        raise CheckFailed(f"changing the tokens from position {t} on changes an output before position {t} ({on}). "
                          f"To look at: {hint}")
