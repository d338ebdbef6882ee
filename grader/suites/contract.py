"""The shared contract of the exercises: what an exercise declares, and the tests that check it on every exercise.

Every function and module of the course keeps the same eight properties: float64 kept, device kept, gradients equal
the reference's, inputs not modified in place, its own implementation (no banned built-in of course.yaml), no Python
loop over the sizes, half precision, and its file imports only what the syllabus allows. The tests below check them
once for all exercises (the course's ``tests/course/hidden_contract.py`` imports them; the plugin runs each once per
exercise, ``parametrize``); an exercise only declares, in its own suite, ``CONTRACT = Contract(...)``: its
``Subject``s (how to build their inputs, how to call them, their reference, how their values are checked) and the
weight of each property.

Each test judges only its property: where the subject's values are wrong on its float32 inputs (or it cannot be
built with the case's arguments), a failure is the values checks' to report, and the property says it is judged once
the values are right (``judged``; the case is built inside the judged check).
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import importlib
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest
import torch

from grader.course import SUITE_PREFIX
from grader.points import DEFERRED
from grader.sandbox.host.problems import STUB_PHRASE, SubmissionProblem
from grader.sandbox.imports import forbidden_through, rule
from grader.suites import checks as C
from grader.suites import modules as M
from grader.suites.checks import CheckFailed

PROPERTIES = ("float64_kept", "device_kept", "autograd", "inputs_not_modified", "own_implementation", "vectorized",
              "half_precision", "imports_allowed")


@dataclass(frozen=True)
class Size:
    """One call of the vectorization check: what the student reads about it, its inputs' shapes and, for a module,
    its constructor's arguments (the subject's own when empty)."""
    label: str
    shapes: tuple[tuple[int, ...], ...]
    ctor: tuple = ()


def sequences(width: int, T: int = 8) -> tuple[Size, ...]:
    """The vectorization check's calls on one (batch, T, width) sequence: longer (``T``), then a larger batch."""
    return (Size("T=3, batch 2", ((2, 3, width),)), Size(f"T={T}, batch 2", ((2, T, width),)),
            Size("T=3, batch 6", ((6, 3, width),)))


@dataclass(frozen=True)
class HalfInputs:
    """The half-precision check's inputs: the subject's own, times ``scale``, with other ``options`` if given."""
    scale: float = 1.0
    options: tuple | None = None


@dataclass(frozen=True)
class Subject:
    """One function or module of an exercise under the contract, as its fixed inputs call it.

    Inputs are tensors of ``shapes`` drawn from a seeded generator (then ``options``, the arguments that are not
    tensors); a module is built with ``ctor`` and, for values, holds the reference's parameters. ``values(student,
    course, case)`` is the exercise's own values check (with its hints), used at float64 and half precision; by
    default the result must be close to the reference's. A subject is checked for built-ins when it says what to do
    ``instead``, for loops when it has ``sizes``, at half precision with each of ``half``.
    """
    name: str  # its name in the student's module
    what: str  # how a message names a call of it
    args: tuple[str, ...]  # the names of its tensor inputs, in order
    shapes: tuple[tuple[int, ...], ...]
    reference: Callable  # the reference function, or the reference module's class
    options: tuple = ()
    ctor: tuple | None = None  # a module's constructor arguments; None for a function
    values: Callable | None = None
    describe: Callable | None = None  # describe(*args) -> the input class in words; default: the tensors' shapes
    autograd: bool = True
    instead: str = ""  # own implementation: the hint saying how to do without the built-in
    sizes: tuple[Size, ...] = ()  # vectorized: the first call is the base the others are compared with
    loop_over: str = "tokens or batch elements"
    half: tuple[HalfInputs, ...] = (HalfInputs(),)
    also_unchanged_with: tuple[tuple, ...] = ()  # other ``options`` the inputs must stay unchanged with
    autograd_with: tuple[str, tuple] | None = None  # (what, options) of a second call of the autograd check, where
    # other options return more to differentiate (every leading tensor of a tuple result gets its own gradient);
    # ``values`` then checks a call with either options

    @property
    def is_module(self) -> bool:
        return self.ctor is not None

    def on(self, args) -> str:
        if self.describe is not None:
            return self.describe(*args)
        return C.describe(**dict(zip(self.args, args)))

    def inputs(self, device, dtype, seed: int, shapes=None, options=None) -> tuple:
        g = torch.Generator().manual_seed(seed)
        tensors = tuple(torch.randn(*shape, generator=g, dtype=torch.float64).to(device, dtype)
                        for shape in (shapes or self.shapes))
        return tensors + (self.options if options is None else options)

    def reference_module(self, device, dtype, seed: int) -> torch.nn.Module:
        """The reference module built right after seeding, in eval mode."""
        C.seed(seed)
        return self.reference(*self.ctor).to(device, dtype).eval()

    def differentiated(self) -> Subject:
        """The subject as the autograd check calls it (``autograd_with``)."""
        if self.autograd_with is None:
            return self
        what, options = self.autograd_with
        return dataclasses.replace(self, what=what, options=options)

    def remote(self, student, exercise: str):
        return getattr(getattr(student, exercise), self.name)

    def unbatched(self) -> Subject | None:
        """The function called on one sequence: every input without its leading batch dim (the vectorization check's
        calls too, one per length); None for a module, or where an input has no batch dim to drop."""
        if self.is_module or not self.shapes or any(len(shape) < 2 or shape[0] != self.shapes[0][0]
                                                     for shape in self.shapes):
            return None
        sizes = {tuple(shape[1:] for shape in size.shapes): size.label.split(", batch")[0] for size in self.sizes}
        return dataclasses.replace(self, shapes=tuple(shape[1:] for shape in self.shapes),
                                   sizes=tuple(Size(label, shapes) for shapes, label in sizes.items()))


@dataclass
class Prepared:
    """A subject ready to check: the student's function (or module, holding the reference's parameters), the
    reference (function or module) and the inputs."""
    call: Callable
    reference: Callable
    args: tuple


@dataclass(frozen=True)
class Contract:
    """An exercise's part of the shared contract: its subjects and each property's weight (1 unless given)."""
    subjects: tuple[Subject, ...]
    weights: dict[str, float] = field(default_factory=dict)

    def applies(self, prop: str) -> bool:
        """Whether any subject has ``prop`` (a property none has is no test of the exercise)."""
        has = {"autograd": lambda s: s.autograd, "own_implementation": lambda s: bool(s.instead),
               "vectorized": lambda s: bool(s.sizes), "half_precision": lambda s: bool(s.half)}
        return any(has.get(prop, lambda s: True)(s) for s in self.subjects)

    def weight(self, prop: str) -> float:
        return self.weights.get(prop, 1)


def checks(prop: str):
    """Mark a test as the check of the contract's property ``prop``: the plugin runs it once per exercise that has it
    (``parametrize``)."""
    def mark(test):
        test.contract_property = prop
        return test
    return mark


class ContractError(ValueError):
    """An exercise's CONTRACT cannot be checked as declared (a course error, never the student's)."""


def contract_of(module: str) -> Contract | None:
    """The ``CONTRACT`` of an exercise's hidden suite (imported by its name, ``hidden_<module>``), if it declares one."""
    return getattr(importlib.import_module(f"{SUITE_PREFIX}{module}"), "CONTRACT", None)


def parametrize(metafunc, prop: str, course) -> None:
    """Run a test of the contract's property ``prop`` once per exercise of ``course`` that has it (and per half dtype
    for half precision), under the exercise's marker and weight; every property is a rule (paid as far as the
    exercise's values are right)."""
    params = []
    for exercise in course.modules:
        declared = contract_of(exercise)
        if prop == "own_implementation":
            _banned_entries_checked(exercise, declared, course)
        if declared is None or not declared.applies(prop):
            continue
        marks = [getattr(pytest.mark, exercise), pytest.mark.weight(declared.weight(prop)), pytest.mark.rule]
        for dtype in (C.HALF_DTYPES if prop == "half_precision" else (None,)):
            values = (exercise, declared) if dtype is None else (exercise, declared, dtype)
            label = exercise if dtype is None else f"{exercise}-{C.dtype_name(dtype)}"
            params.append(pytest.param(*values, marks=marks, id=label))
    names = ["exercise", "contract"] + (["dtype"] if prop == "half_precision" else [])
    metafunc.parametrize(names, params)


def _banned_entries_checked(exercise: str, declared: Contract | None, course) -> None:
    """course.yaml's banned: entries of ``exercise`` are those its own-implementation rule checks, its subjects that
    say what to do instead of a built-in: one without its entry has no list to check; an entry no rule reads (a typo
    of a function's name, a function without that rule) bans nothing, though the handout tells students it does."""
    checked = {f"{exercise}.{subject.name}" for subject in declared.subjects if subject.instead} \
        if declared is not None and declared.applies("own_implementation") else set()
    unlisted = sorted(checked - set(course.banned))
    unread = sorted(t for t in course.banned if t.split(".", 1)[0] == exercise and t not in checked)
    typo = difflib.get_close_matches(unlisted[0], unread, n=1) if unlisted else []
    if typo:  # a misspelled entry (a letter left out of the function's name): one mistake, said once
        raise ContractError(f"banned: {typo[0]}: no check of {exercise} reads this entry; did you mean "
                            f"{unlisted[0]}?")
    if unlisted:
        raise ContractError(f"{exercise}: {unlisted[0].split('.', 1)[1]} says what to do instead of a built-in, but "
                            f"course.yaml's banned: has no entry {unlisted[0]} (list the torch calls that would do its "
                            f"whole job)")
    if unread:
        raise ContractError(f"banned: {unread[0]}: no check of {exercise} reads this entry, so it bans nothing (the "
                            f"handout would tell students it does): its own-implementation rule checks "
                            f"{', '.join(sorted(checked)) or 'none of its functions'}; remove the entry, or give "
                            f"that subject of its CONTRACT an instead=")


def prepare(student, exercise: str, subject: Subject, device, dtype, seed: int) -> Prepared:
    """``subject`` with inputs of ``dtype`` on ``device``; a module is the student's, holding the reference's
    parameters, in eval mode."""
    remote, args = subject.remote(student, exercise), subject.inputs(device, dtype, seed)
    if not subject.is_module:
        return Prepared(remote, subject.reference, args)
    reference = subject.reference_module(device, dtype, seed)
    module = M.twin(remote, reference, *subject.ctor, what=subject.name, dtype=dtype, device=device, mode="eval")
    return Prepared(module, reference, args)


def expected(subject: Subject, case: Prepared):
    """The reference's result on the case's inputs, computed in float64 and cast back."""
    if subject.is_module:
        return M.module_reference(case.reference, *case.args)
    return C.in_float64(case.reference, *case.args)


def check_values(student, course, subject: Subject, case: Prepared) -> None:
    """The subject's values check: its exercise's own, or the result close to the reference's."""
    if subject.values is not None:
        subject.values(student, course, case)
        return
    on = subject.on(case.args)
    got = C.attempt(lambda: case.call(*case.args), subject.what, on)
    C.expect_close(got, expected(subject, case), what=subject.what, on=on, course=course)


# ---------------------------------------------------------------- the tests (tests/course/hidden_contract.py)

def values_right(student, course, exercise, subject, device, scale: float = 1.0) -> bool:
    """Whether the subject's values check passes on its float32 inputs (times ``scale``). A subject that cannot run at
    all (not called again after running out of memory, a crash, a time-out) raises that problem: it is said the same
    way in every check, rules included."""
    try:
        checked = prepare(student, exercise, subject, device, torch.float32, course.seed)
        tensors = checked.args[:len(subject.args)]
        check_values(student, course, subject, Prepared(checked.call, checked.reference,
                                                     tuple(t * scale for t in tensors) + checked.args[len(subject.args):]))
    except CheckFailed:
        return False
    except SubmissionProblem as problem:
        if problem.kind != "parameters":
            raise
        return False
    return True


def judged(student, course, exercise, subject, device, check, scale: float = 1.0) -> None:
    """Run a property's ``check(subject)``; its failure stands only where the subject's values are right (on float32
    inputs): otherwise the values checks report the mistake, and the property is judged once they pass. A function
    that raised on the batched inputs and whose values are right on one sequence (``.T`` of a batched input) has the
    property judged there (``Subject.unbatched``): one mistake costs its values checks, not every rule besides. A
    module whose parameters are not the exercise's (a bias left out) is such a mistake; a missing file or name is not
    judged here."""
    try:
        check(subject)
        return
    except (CheckFailed, SubmissionProblem) as caught:
        if isinstance(caught, SubmissionProblem) and caught.kind != "parameters":
            raise  # a missing file or name costs what it should have held, said the same way in every check
        failure = C.without_frames(caught)
    if STUB_PHRASE in str(failure) or values_right(student, course, exercise, subject, device, scale):
        raise failure  # an unfilled stub is said as such, like in every other check
    one = subject.unbatched()
    if getattr(failure, "raised", False) and one is not None and values_right(student, course, exercise, one, device,
                                                                              scale):
        check(one)  # its verdict stands, as on the batched inputs where the values are right
        return
    raise CheckFailed(f"{subject.what}: {DEFERRED}") from None


def judged_each(student, course, exercise, subjects, device, check, scale: float = 1.0) -> None:
    """``judged`` for each of ``subjects`` in turn, the first calls of all of their checks sent ahead in one frame
    (``C.ahead``). ``check`` draws nothing that another subject's check draws after it (each seeds its own)."""
    subjects = list(subjects)
    with C.ahead(student, [functools.partial(check, subject) for subject in subjects]):
        for subject in subjects:
            judged(student, course, exercise, subject, device, check, scale)


@checks("float64_kept")
def test_float64_kept(student, course, device, exercise, contract):
    """float64 inputs (and modules) give float64 results at float64 precision."""
    def check(subject):
        checked = prepare(student, exercise, subject, device, torch.float64, course.seed)
        on = subject.on(checked.args)
        got = C.attempt(lambda: checked.call(*checked.args), subject.what, on)
        dtypes = [item.dtype for item in (got if isinstance(got, (tuple, list)) else (got,))
                  if isinstance(item, torch.Tensor) and item.is_floating_point()]
        del got  # no reply stays alive while the checks below call the worker again (C.without_frames)
        for dtype in dtypes:
            if dtype != torch.float64:
                raise CheckFailed(f"{subject.what}: {C.dtype_name(dtype)} result on {on}; expected float64, "
                                  f"the input's dtype. {C.DTYPE_HINT}")
        try:
            check_values(student, course, subject, checked)
            return
        except CheckFailed as caught:
            failure = C.without_frames(caught)
        if values_right(student, course, exercise, subject, device):
            raise CheckFailed(f"{subject.what}: {C.LESS_PRECISE} ({on}).", misconception="float64.less_precise")
        raise failure
    judged_each(student, course, exercise, contract.subjects, device, check)


@checks("device_kept")
def test_device_kept(student, course, device, exercise, contract):
    """Results stay on the inputs' device (checked with meta tensors and modules, which have shapes but no data)."""
    def check(subject):
        meta, hint = C.on_meta(subject.inputs("cpu", torch.float32, course.seed)), C.META_HINT
        on = subject.on(meta)
        if subject.is_module:
            call = C.attempt(lambda: subject.remote(student, exercise).build_with({"as_on_cpu": True}, *subject.ctor),
                             f"{subject.name}(...)", "construction")  # built as on the CPU: one verdict everywhere
            C.attempt(lambda: call.to.build(torch.device("meta")), f"{subject.name}.to('meta')", "construction")
            where = hint + "; keep fixed tensors (a mask) as buffers (register_buffer): they follow the module"
        else:
            call, where = subject.remote(student, exercise), hint
        got = C.attempt(lambda: call(*meta), subject.what, on, note=where)
        C.kept_on(got, "meta", what=subject.what, on=on)
    judged_each(student, course, exercise, contract.subjects, device, check)


@checks("autograd")
def test_autograd(student, course, device, exercise, contract):
    """Gradients reach every input (and parameter) and equal the derivative of your own result.

    Checked against the change of the result along a random direction, in float32 (precision is float64_kept's)."""
    def check(subject):
        g = torch.Generator().manual_seed(course.seed + 1)  # each subject's own: none draws what another would
        checked = prepare(student, exercise, subject, device, torch.float32, course.seed)
        out = expected(subject, checked)
        outs = itertools.takewhile(lambda o: isinstance(o, torch.Tensor) and o.is_floating_point(),
                                   out if isinstance(out, tuple) else (out,))
        grad_output = [torch.randn(o.shape, generator=g).to(device) for o in outs]
        _own_gradients(student, exercise, subject, checked, grad_output, g, device)
    subjects = [s for s in contract.subjects if s.autograd]
    judged_each(student, course, exercise, subjects + [s.differentiated() for s in subjects if s.autograd_with],
                device, check)  # both calls (review 12)


def _own_gradients(student, exercise, subject, checked, grad_output, g, device, step: float = 1e-3):
    """The student's gradients (inputs and parameters) against a central difference of their own result (its leading
    entries, one per tensor of ``grad_output``). Each gradient must be like what it is the gradient of, and each result
    like its ``grad_output``, before any is used (``C.checked``): the student's code chooses its gradients too (a hook
    may swap one for a tensor of any shape)."""
    on, n = subject.on(checked.args), len(subject.args)
    result = C.attempt(lambda: checked.call.run(args=checked.args, grad_output=grad_output),
                       f"{subject.what} or the backward pass through its result", on)
    grads = []
    for name, arg, grad in zip(subject.args, checked.args[:n], C.reported(result.arg_grads, n)):
        if grad is None:
            raise CheckFailed(f"no gradient reaches the input {name} of {subject.what} ({on}). {C.CUT_HINT}")
        grads.append(C.checked(grad, arg, what=f"the gradient of the input {name} of {subject.what}", on=on))
    directions = [torch.randn(a.shape, generator=g).to(device) for a in checked.args[:n]]
    slope = sum(float((grad.double() * d.double()).sum()) for grad, d in zip(grads, directions))
    size = sum(float((grad.double() * d.double()).abs().sum()) for grad, d in zip(grads, directions))
    targets = [checked.call._target] * 2
    if subject.is_module:
        params = M.detached(checked.reference)
        found = result.param_grads if isinstance(result.param_grads, dict) else {}
        missing = sorted(k for k in params if found.get(k) is None)
        if missing:
            raise CheckFailed(f"no gradient reaches the parameter {missing[0]} of {subject.what} ({on}). {C.CUT_HINT}")
        param_grads = {k: C.checked(found[k], p, what=f"the gradient of the parameter {k} of {subject.what}", on=on)
                       for k, p in params.items()}
        moves = {k: torch.randn(v.shape, generator=g).to(v) for k, v in params.items()}
        slope += sum(float((param_grads[k].double() * m.double()).sum()) for k, m in moves.items())
        size += sum(float((param_grads[k].double() * m.double()).abs().sum()) for k, m in moves.items())
        targets = []
        for sign in (1, -1):
            moved = copy.deepcopy(checked.reference)
            with torch.no_grad():
                for name, p in moved.named_parameters():
                    p.add_(sign * step * moves[name])
            targets.append(M.twin(subject.remote(student, exercise), moved, *subject.ctor, what=subject.name,
                                  dtype=torch.float32, device=device, mode="eval")._target)
    rest = checked.args[n:]
    calls = [(target, tuple(a + sign * step * d for a, d in zip(checked.args[:n], directions)) + rest, None, {})
             for target, sign in zip(targets, (1, -1))]
    results = C.run_all(checked.call._session, calls, subject.what, on)
    ends = [[C.checked(end, want, what=subject.what, on=on) for end, want in zip(C.leading(r.value, len(grad_output)),
                                                                                   grad_output)] for r in results]
    change = sum(float(((plus.double() - minus.double()) * want.double()).sum())
                 for plus, minus, want in zip(*ends, grad_output)) / (2 * step)
    # Finite first: with an infinite gradient both sides of the comparison are infinite, and inf <= inf holds.
    if not (math.isfinite(size) and abs(change - slope) <= 1e-3 * (size + abs(change)) + 1e-9):
        raise CheckFailed(f"the gradients of {subject.what} do not match how its own result changes ({on}). "
                          f"{C.CUT_HINT}")


@checks("inputs_not_modified")
def test_inputs_not_modified(student, course, device, exercise, contract):
    """No function or module changes its input tensors in place."""
    def check(subject):  # float64 too: x.double() (or .to(x.dtype)) is x itself there, and so are its in-place ops
        passes = itertools.product((torch.float32, torch.float64), (subject.options, *subject.also_unchanged_with))
        for n, (dtype, options) in enumerate(passes):
            checked = prepare(student, exercise, replace(subject, options=options), device, dtype, course.seed)
            before = [a.clone() if isinstance(a, torch.Tensor) else a for a in checked.args]
            on = subject.on(checked.args)
            try:
                result = C.attempt(lambda: checked.call.run(args=checked.args, return_args=True), subject.what, on)
            except CheckFailed:
                if n == 0:
                    raise
                continue  # raising at float64 or another option is the float64 rule's, or the values checks', to say
            C.unchanged(before, result, subject.args, what=subject.what, on=on)
    judged_each(student, course, exercise, contract.subjects, device, check)


@checks("own_implementation")
def test_own_implementation(student, course, device, exercise, contract):
    """Your own implementation: no built-in of torch that does the whole job (the feedback names the one called)."""
    def check(subject):
        checked = prepare(student, exercise, subject, device, torch.float32, course.seed)
        result = C.attempt(lambda: checked.call.run(args=checked.args, watch=course.banned[f"{exercise}.{subject.name}"]),
                           subject.what, subject.on(checked.args))
        C.own_implementation(result, subject.name, subject.instead)
    judged_each(student, course, exercise, [s for s in contract.subjects if s.instead], device, check)


@checks("vectorized")
def test_vectorized(student, course, device, exercise, contract):
    """No Python loop over the sequence, the batch (or the heads): the number of tensor operations stays the same."""
    judged_each(student, course, exercise, [s for s in contract.subjects if s.sizes], device,
                lambda subject: _op_counts(student, course, device, exercise, subject))


def _op_counts(student, course, device, exercise, subject):
    remote, modules, calls = subject.remote(student, exercise), {}, []
    for number, size in enumerate(subject.sizes):
        target = remote._target
        if subject.is_module:
            ctor = size.ctor or subject.ctor
            if ctor not in modules:
                modules[ctor] = C.attempt(lambda: remote.build(*ctor), f"{subject.name}(...)", "construction")
                modules[ctor].to.build(device=device)
            target = modules[ctor]._target
        calls.append((target, subject.inputs(device, torch.float32, course.seed + number, size.shapes), None, {}))
    results = C.run_all(student.session, calls, subject.what, "a batched input")
    C.vectorized([(size.label, result) for size, result in zip(subject.sizes, results)], subject.what,
                 subject.loop_over)


@checks("half_precision")
def test_half_precision(student, course, device, exercise, contract, dtype):
    """float16 and bfloat16 inputs and modules give results of the same dtype within its tolerance."""
    for subject in (s for s in contract.subjects if s.half):
        for half in subject.half:
            def check(subject):
                checked = prepare(student, exercise, subject, device, dtype, course.seed)
                options = subject.options if half.options is None else half.options
                scaled = Prepared(checked.call, checked.reference,
                              tuple(t * half.scale for t in checked.args[:len(subject.args)]) + options)
                check_values(student, course, subject, scaled)
            judged(student, course, exercise, subject, device, check, half.scale)


@checks("imports_allowed")
def test_imports_allowed(student, course, exercise, contract):
    """The file imports only torch and math, and earlier exercises with a relative import (read, not run)."""
    imports = student.session.imports(exercise)
    if imports is None:
        raise CheckFailed(f"the imports of {exercise}.py could not be read: Python cannot parse the file.")

    def read(module: str):  # an earlier exercise's imports; one that cannot be read is its own check's to say
        try:
            return imports if module == exercise else student.session.imports(module)
        except SubmissionProblem:
            return None

    bad = forbidden_through(read, exercise, course.course_modules)
    if bad:
        shown = ", ".join(f"{name} (line {line})" for name, line in bad[:3])
        raise CheckFailed(f"{exercise}.py imports {shown}: {rule()}.")
