"""Checks of the student's nn.Modules: the twin of a reference module (the student's class, built in the worker, holding
the reference's parameters), seeded construction and its parameters, dropout in training and in eval mode, and no
peeking at later tokens. Built on the value checks of ``checks``.
"""
from __future__ import annotations

import functools
import inspect
import itertools

import torch
from diagnosis import DROPOUT_IN_EVAL

from grader.points import DEFERRED
from grader.sandbox.dropout import KeyedDropout, keyed_dropout
from grader.sandbox.host.problems import StudentError, SubmissionProblem
from grader.sandbox.host.proxy import RemoteObject, load_params_step
from grader.suites.checks import (
    FLOATING,
    CheckFailed,
    Hint,
    as64,
    attempt,
    checked,
    expect_close,
    expect_object,
    expect_tensor,
    failed,
    run_all,
    shape,
    shape_fact,
    tolerance,
    without_frames,
)
from grader.suites.checks import seed as seed_references
from grader.text import MAX_NAME, clean

TWIN_SEED = 0  # the worker's generator is seeded with it before a twin is built (``twin``)


def detached(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's parameters as plain tensors, by name (what ``load_params`` sends)."""
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def same_params(got: dict, want: dict, what: str, on: str, how: str):
    """Parameters of a module constructed right after torch.manual_seed must equal the reference's (kind and order)."""
    extra = sorted(str(name) for name in got if name not in want) if isinstance(got, dict) else []
    if not isinstance(got, dict) or extra:  # the first one named (walk-through 13: which one was not said)
        named = f"; {clean(extra[0], MAX_NAME)} is not one of them" if extra else ""
        if extra and extra[0].endswith(".bias"):
            named += " (a bias where qkv_bias=False? nn.Linear(..., bias=qkv_bias))"
        raise CheckFailed(f"{what} has parameters other than {', '.join(want)} ({on}){named}. Hint: {how}")
    shaped_like(got, want, what, on, how)
    for name, w in want.items():
        g = checked(got[name], w, what=f"the parameter {name} of {what}", on=on, dtypes=FLOATING)
        if not torch.allclose(g.to(w), w):
            swapped = any(o != name and tuple(want[o].shape) == tuple(g.shape) and torch.allclose(g.to(w), want[o])
                          for o in want)
            reason = ("the parameters are created in another order" if swapped else
                      "it was drawn differently: another creation order, or another initialization")
            raise CheckFailed(f"with torch.manual_seed(...) right before construction, parameter {name} of {what} "
                              f"differs from the expected one ({on}): {reason}. Hint: {how}")


def shaped_like(got: dict, want: dict, what: str, on: str, how: str | None = None) -> None:
    """The module's parameters ``got`` (by name) hold each of ``want``'s names, each a tensor of its shape."""
    for name, w in want.items():
        if name not in got:
            raise CheckFailed(f"{what} has no parameter named {name} ({on}); expected {', '.join(want)}.")
        g = expect_tensor(got[name], f"the parameter {name} of {what}", on)
        if tuple(g.shape) != tuple(w.shape):
            turned = ("is transposed" if tuple(g.shape) == tuple(w.shape)[::-1] else
                      f"has {shape_fact(g.shape, w.shape)}")
            raise CheckFailed(f"parameter {name} of {what} {turned} ({on}); expected the shape {shape(w)}."
                              + (f" Hint: {how}" if how else ""))


def expect_seeded_init(constructor, args, kwargs: dict, seed: int, reference, what: str, on: str, how: str) -> None:
    """The student's module built right after seeding with ``seed`` holds the parameters ``reference()``, built after
    the same seed, holds (``same_params``). Where it does not, and a second build after another seed draws the very
    same parameters, the constructor seeds torch itself, and the failure says so (walk-through 10: the hint named the
    draw, which was right)."""
    label = f"{what}(...)"
    got = build_seeded(constructor, args, kwargs, seed, label, on).params()
    seed_references(seed)
    want = detached(reference())
    try:
        same_params(got, want, what, on, how)
        return
    except CheckFailed as caught:
        failure = without_frames(caught)
    try:
        again = build_seeded(constructor, args, kwargs, seed + 1, label, on).params()
    except CheckFailed:
        raise failure from None
    if set(again) == set(got) == set(want) and all(_same_draw(got[n], again[n], want[n]) for n in want):
        raise CheckFailed(f"{what} draws the same parameters whatever torch.manual_seed(...) set before it ({on}): "
                          "it seeds torch itself; leave seeding to the caller (no torch.manual_seed in __init__).")
    raise failure


def _same_draw(first, second, like: torch.Tensor) -> bool:
    """Whether two draws of one parameter by the student's constructor are tensors like the reference's ``like``
    (checked before torch compares them) and equal; anything else is no equal draw, and the first failure stands."""
    try:
        first, second = (checked(t, like, what="a parameter", on="", dtypes=FLOATING) for t in (first, second))
    except CheckFailed:
        return False
    return torch.equal(first.to(like), second.to(like))


def build_seeded(constructor, args, kwargs: dict, seed: int, what: str, on: str) -> RemoteObject:
    """The student's module built with ``args``/``kwargs`` right after the worker's generator is seeded with ``seed``,
    as on the CPU whatever the device (``as_on_cpu``): its draws are the CPU generator's, as the reference's are."""
    return expect_object(attempt(lambda: constructor.run(args, kwargs, seed=seed, handles=True, as_on_cpu=True).value,
                                 what, on), what, on)


def twin(constructor, reference: torch.nn.Module, *args, what: str, dtype=None, device=None, mode: str | None = None,
         **kwargs):
    """The student's module built with ``args``, moved to ``dtype``/``device``, holding the reference's parameters
    (copied by name) and put in ``mode`` ('eval' or 'train') if given: one round trip to the worker. It is built after
    seeding (``TWIN_SEED``), so that parameters the reference lacks (a bias with qkv_bias=False) are the same in every
    twin: two twins that differ in their dropout rate alone give the same result in eval mode (walk-through 11: random
    extra biases were blamed on dropout), and a twin is the same on every run."""
    params = detached(reference)
    if dtype is not None:
        params = {k: v.to(dtype) for k, v in params.items()}
    built = {"earlier": 0, "type": what}
    built_as = called_as(reference, what, args)
    steps = [((constructor._target, args, kwargs, {"handles": True, "seed": TWIN_SEED}), built_as)]
    if dtype is not None or (device is not None and torch.device(device).type != "cpu"):  # modules start on the CPU
        moved = {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
        steps.append((({**built, "path": ["to"]}, (), moved, {"handles": True}), f"{what}.to(...)"))
    steps.append((load_params_step(built, params), f"copying the parameters into the {what}"))
    if mode is not None:
        steps.append((({**built, "path": [mode]}, (), None, {"handles": True}), f"{what}.{mode}()"))
    try:
        built = run_all(constructor._session, [call for call, _ in steps], [label for _, label in steps],
                        "construction")
    except SubmissionProblem as problem:
        if problem.kind == "parameters":  # which one, said in the reference's names (the worker's words are not shown)
            on = f"built as {what}({', '.join(map(repr, (*args, *kwargs.values())))})"
            own = expect_object(attempt(lambda: constructor.run(args, kwargs, handles=True).value, what, on), what, on)
            shaped_like(own.params(), params, what, on)
        raise
    return expect_object(built[0].value, what, "construction")


def called_as(reference: torch.nn.Module, what: str, args: tuple) -> str:
    """How a construction is named where it fails: with the reference's parameter names in the order ``args`` give
    them, since a module's arguments are given by position (walk-through 13: two of them swapped said only "your code
    raised ValueError")."""
    return f"{what}({', '.join(_parameters(type(reference))[:len(args)])}) (its arguments given by position)"


@functools.cache
def _parameters(kind: type) -> tuple[str, ...]:
    """The names of a reference module class's constructor parameters, after self."""
    return tuple(inspect.signature(kind.__init__).parameters)[1:]


def dropout_in_training(module: RemoteObject, reference: torch.nn.Module, x: torch.Tensor, *, what: str, on: str,
                        course, generic: str) -> None:
    """In training mode, the student's ``module`` gives the ``reference``'s result when both run with keyed dropout
    (``grader.sandbox.dropout``: each entry kept or dropped as a function of its value), and a backward pass through it
    works: dropout acts once, on the attention weights, in whatever layout and order, and out of place. Where it does
    not and the module is wrong in eval mode too, the values checks report the mistake, and this check says so.
    Compared at float32's tolerance: dropout misplaced moves the result by about its size, and precision is the
    float64 rule's to judge."""
    got = attempt(lambda: module.run(args=(x,), dropout="keyed").value, what, on)
    plain = module_reference(reference.eval(), x)
    with torch.no_grad(), KeyedDropout():
        want = reference.train()(x)
    p = reference.dropout.p
    rtol, atol = tolerance(course, torch.float32)
    hints = [Hint("dropout is not applied in training mode: apply self.dropout to the attention weights (nn.Dropout "
                  "is active after .train()).", lambda: plain, "dropout.not_applied"),
             Hint("dropout acts on the output: apply self.dropout to the attention weights, "
                  "not to the result.", lambda: keyed_dropout(plain, p), "dropout.on_output"),
             *(Hint(f"your dropout rate is a fixed {rate}, not the `dropout` argument ({p}): create "
                    "nn.Dropout(dropout).", lambda rate=rate: _at_rate(reference, x, rate), "dropout.fixed_rate")
               for rate in FIXED_RATES if rate != p)]
    try:
        expect_close(got, want, what=f"{what} in training mode", on=on, course=course, rtol=rtol, atol=atol,
                     hints=hints, generic=generic)
    except CheckFailed as caught:
        failure = without_frames(caught)
    else:
        del got
        _backward_in_training(module, x, want.shape, what, on)
        return
    del got  # no reply stays alive while the worker is called again (checks.without_frames)
    evaluated = run_all(module._session, [({**module._target, "path": ["eval"]}, (), None, {"handles": True}),
                                          (module._target, (x,), None, {})], what, on)
    try:
        expect_close(evaluated[1].value, plain, what=what, on=on, course=course, rtol=rtol, atol=atol)
    except CheckFailed:
        raise CheckFailed(f"{what} in training mode: {DEFERRED}.") from None  # its eval-mode result is wrong too
    raise failure


FIXED_RATES = (0.1, 0.2, 0.5)  # the rates a constructor hard-codes instead of its dropout argument (walk-through 13)


def _at_rate(reference: torch.nn.Module, x: torch.Tensor, rate: float) -> torch.Tensor:
    """The reference's result in training mode, under keyed dropout, with its dropout at ``rate``."""
    kept = reference.dropout.p
    reference.dropout.p = rate
    try:
        with torch.no_grad(), KeyedDropout():
            return reference.train()(x)
    finally:
        reference.dropout.p = kept


IN_PLACE = "modified by an inplace operation"  # torch's words for a tensor the backward needs changed in place


def _backward_in_training(module: RemoteObject, x: torch.Tensor, shape: torch.Size, what: str, on: str) -> None:
    """A training step's backward pass goes through the module: an in-place dropout (nn.Dropout(p, inplace=True))
    overwrites the weights the backward pass needs (walk-through 11: full marks, every training step crashing).
    Any other failure of the backward (a result cut from autograd) is the autograd rule's to say, not this one's."""
    try:
        module.run(args=(x,), dropout="keyed", grad_output=torch.ones(shape))
    except SubmissionProblem as problem:
        if problem.kind != "autograd":
            raise
    except StudentError as error:
        if IN_PLACE in str(error.info.get("message", "")):
            raise failed(error, f"the backward pass of {what} in training mode", on) from None


def dropout_off_in_eval(module: RemoteObject, without: RemoteObject, x: torch.Tensor, *,
                        result_shape: tuple[int, ...], what: str, on: str, course) -> None:
    """In eval mode, the student's ``module`` (dropout 0.5) gives the result of ``without`` (the same module and
    parameters, dropout 0) under two random states: dropout does nothing, whatever the result is. A call that raises
    or returns no floating tensor of ``result_shape`` on x's device is the values checks' to report (an unfinished stub is
    said as such)."""
    try:
        results = module._session.run_many([(module._target, (x,), None, {"seed": 1}),
                                            (module._target, (x,), None, {"seed": 2}),
                                            (without._target, (x,), None, {"seed": 1})])
    except StudentError as error:
        if error.info.get("type") == "NotImplementedError":
            raise failed(error, what, on) from None
        raise CheckFailed(f"{what} in eval mode: {DEFERRED}.") from None
    like = x.new_empty(result_shape)
    try:
        got = [checked(result.value, like, what=what, on=on, dtypes=FLOATING) for result in results]
    except CheckFailed:
        raise CheckFailed(f"{what} in eval mode: {DEFERRED}.") from None
    rtol, atol = tolerance(course, x.dtype)
    if not all(torch.allclose(as64(g), as64(got[2]), rtol, atol, equal_nan=True) for g in got[:2]):
        raise CheckFailed(f"{what} in eval mode changes with the dropout rate or the random state ({on}: dropout 0.5 "
                          f"against 0). Hint: {DROPOUT_IN_EVAL}")


def wide(module: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of a reference module (its float32 parameters convert exactly)."""
    import copy
    return copy.deepcopy(module).double()


def module_reference(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The reference module's output on ``x``, computed in float64 and cast back to x's dtype (float32 parameters
    and buffers convert exactly; the module itself is left as it is, and no graph is built)."""
    with torch.no_grad():
        if x.dtype == torch.float64:
            return module(x)
        state = {name: t.double() if t.is_floating_point() else t
                 for name, t in itertools.chain(module.named_parameters(), module.named_buffers())}
        return torch.func.functional_call(module, state, (x.double(),)).to(x.dtype)


def earlier_outputs_unchanged(call, x: torch.Tensor, changed: torch.Tensor, t: int, *, result_shape: tuple[int, ...],
                              what: str, on: str, hint: str) -> None:
    """Changing the tokens from position ``t`` on leaves every output before ``t`` as it was (no peeking); each result
    must be a floating tensor of ``result_shape`` on x's device. ``call`` is the student's function or module (both inputs go
    in one round trip)."""
    both = run_all(call._session, [(call._target, (x,), None, {}), (call._target, (changed,), None, {})], what, on)
    a, b = (checked(result.value, x.new_empty(result_shape), what=what, on=on, dtypes=FLOATING) for result in both)
    if not bool(torch.isfinite(a).all()):
        raise CheckFailed(f"{what}: NaN or inf on {on}. Expected: every row keeps at least its diagonal entry, and "
                          f"masked positions get -inf before the weights are normalized.")
    moved = ~((a[:, :t] - b[:, :t]).abs() <= 1e-9 + 1e-7 * a[:, :t].abs())
    if bool(moved.any()):
        raise CheckFailed(f"changing the tokens from position {t} on changes an output before position {t} ({on}). "
                          f"To look at: {hint}")
