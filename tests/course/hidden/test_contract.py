"""Hidden suite, every exercise: the shared contract of its functions and modules (see contract.py).

Each test runs once per exercise, reported under that exercise (its marker) with the weight the exercise gives the
property; the exercise's ``CONTRACT``, in its own test file, says what is checked and on which inputs. Each test
judges only its property: where the subject's values are wrong on its float32 inputs (or it cannot be built with the
case's arguments), a failure is the values checks' to report, and the property says it is judged once the values are
right (``judged``; the case is built inside the judged check).
"""
import copy
import math
from pathlib import Path

import checks as C
import pytest
import torch
from contract import Case, case, check_values, contracts, expected

from grader.sandbox.imports import forbidden, rule
from grader.sandbox.problems import STUB_PHRASE, SubmissionProblem
from grader.suites.plugin import CheckFailed

CONTRACTS = contracts(Path(__file__).parent)


def exercises(prop: str, *variants) -> list:
    """One case per exercise that has ``prop`` (and per variant, e.g. dtype), under the exercise's marker and weight;
    every property is a rule (paid as far as the exercise's values are right)."""
    return [pytest.param(exercise, contract, *([variant] if variants else []),
                         marks=[getattr(pytest.mark, exercise), pytest.mark.weight(contract.weight(prop)),
                                pytest.mark.rule],
                         id="-".join([exercise, *([C.dtype_name(variant)] if variants else [])]))
            for exercise, contract in CONTRACTS.items() if contract.applies(prop)
            for variant in (variants or [None])]


def values_right(student, course, exercise, subject, device, scale: float = 1.0) -> bool:
    """Whether the subject's values check passes on its float32 inputs (times ``scale``). A subject that cannot run at
    all (not called again after running out of memory, a crash, a time-out) raises that problem: it is said the same
    way in every check, rules included."""
    try:
        checked = case(student, exercise, subject, device, torch.float32, course.seed)
        tensors = checked.args[:len(subject.args)]
        check_values(student, course, subject, Case(checked.call, checked.reference,
                                                     tuple(t * scale for t in tensors) + checked.args[len(subject.args):]))
    except CheckFailed:
        return False
    except SubmissionProblem as problem:
        if problem.kind != "parameters":
            raise
        return False
    return True


def judged(student, course, exercise, subject, device, check, scale: float = 1.0) -> None:
    """Run a property's ``check``; its failure stands only where the subject's values are right (on float32 inputs):
    otherwise the values checks report the mistake, and the property is judged once they pass. A module whose
    parameters are not the exercise's (a bias left out) is such a mistake; a missing file or name is not judged here."""
    try:
        check()
    except (CheckFailed, SubmissionProblem) as failure:
        if isinstance(failure, SubmissionProblem) and failure.kind != "parameters":
            raise  # a missing file or name costs what it should have held, said the same way in every check
        if STUB_PHRASE in str(failure) or values_right(student, course, exercise, subject, device, scale):
            raise  # an unfilled stub is said as such, like in every other check
        raise CheckFailed(f"{subject.what}: {C.DEFERRED}") from None


@pytest.mark.parametrize("exercise, contract", exercises("float64_kept"))
def test_float64_kept(student, course, device, exercise, contract):
    """float64 inputs (and modules) give float64 results at float64 precision."""
    for subject in contract.subjects:
        def check():
            checked = case(student, exercise, subject, device, torch.float64, course.seed)
            on = subject.on(checked.args)
            got = C.attempt(lambda: checked.call(*checked.args), subject.what, on)
            for item in got if isinstance(got, (tuple, list)) else (got,):
                if isinstance(item, torch.Tensor) and item.is_floating_point() and item.dtype != torch.float64:
                    raise CheckFailed(f"{subject.what}: {C.dtype_name(item.dtype)} result on {on}; expected float64, "
                                      f"the input's dtype. {C.DTYPE_HINT}")
            try:
                check_values(student, course, subject, checked)
            except CheckFailed:
                if values_right(student, course, exercise, subject, device):
                    raise CheckFailed(f"{subject.what}: {C.LESS_PRECISE} ({on}).",
                                      misconception="float64.less_precise") from None
                raise
        judged(student, course, exercise, subject, device, check)


@pytest.mark.parametrize("exercise, contract", exercises("device_kept"))
def test_device_kept(student, course, device, exercise, contract):
    """Results stay on the inputs' device (checked with meta tensors and modules, which have shapes but no data)."""
    for subject in contract.subjects:
        args = subject.inputs("cpu", torch.float32, course.seed)
        meta, on, hint = C.on_meta(args), subject.on(C.on_meta(args)), C.META_HINT

        def check():
            if subject.is_module:
                call = C.attempt(lambda: subject.remote(student, exercise).build(*subject.ctor),
                                 f"{subject.name}(...)", "construction")
                C.attempt(lambda: call.to.build(torch.device("meta")), f"{subject.name}.to('meta')", "construction")
                where = hint + ("; register fixed tensors (a mask) with register_buffer so that they follow the "
                                "module to its device")
            else:
                call, where = subject.remote(student, exercise), hint
            got = C.attempt(lambda: call(*meta), subject.what, on, note=where)
            C.kept_on(got, "meta", what=subject.what, on=on)
        judged(student, course, exercise, subject, device, check)


@pytest.mark.parametrize("exercise, contract", exercises("autograd"))
def test_autograd(student, course, device, exercise, contract):
    """Gradients reach every input (and parameter) and equal the derivative of your own result.

    Checked against the change of the result along a random direction, in float32 (precision is float64_kept's)."""
    g = torch.Generator().manual_seed(course.seed + 1)
    for subject in (s for s in contract.subjects if s.autograd):
        def check():
            checked = case(student, exercise, subject, device, torch.float32, course.seed)
            out = expected(subject, checked)
            out = out[0] if isinstance(out, tuple) else out
            grad_output = torch.randn(out.shape, generator=g).to(device)
            _own_gradients(student, exercise, subject, checked, grad_output, g, device)
        judged(student, course, exercise, subject, device, check)


def _own_gradients(student, exercise, subject, checked, grad_output, g, device, step: float = 1e-3):
    """The student's gradients (inputs and parameters) against a central difference of their own result."""
    on, n = subject.on(checked.args), len(subject.args)
    result = C.attempt(lambda: checked.call.run(args=checked.args, grad_output=grad_output), subject.what, on)
    grads = list(result.arg_grads or []) + [None] * n
    for name, grad in zip(subject.args, grads[:n]):
        if grad is None:
            raise CheckFailed(f"no gradient reaches the input {name} of {subject.what} ({on}). {C.CUT_HINT}")
    directions = [torch.randn(a.shape, generator=g).to(device) for a in checked.args[:n]]
    slope = sum(float((grad.double() * d.double()).sum()) for grad, d in zip(grads[:n], directions))
    size = sum(float((grad.double() * d.double()).abs().sum()) for grad, d in zip(grads[:n], directions))
    targets = [checked.call._target] * 2
    if subject.is_module:
        params = C.detached(checked.reference)
        missing = sorted(set(params) - set(result.param_grads or {}) | {k for k, v in (result.param_grads or {}).items()
                                                                         if v is None and k in params})
        if missing:
            raise CheckFailed(f"no gradient reaches the parameter {missing[0]} of {subject.what} ({on}). {C.CUT_HINT}")
        moves = {k: torch.randn(v.shape, generator=g).to(v) for k, v in params.items()}
        slope += sum(float((result.param_grads[k].double() * m.double()).sum()) for k, m in moves.items())
        size += sum(float((result.param_grads[k].double() * m.double()).abs().sum()) for k, m in moves.items())
        targets = []
        for sign in (1, -1):
            moved = copy.deepcopy(checked.reference)
            with torch.no_grad():
                for name, p in moved.named_parameters():
                    p.add_(sign * step * moves[name])
            targets.append(C.twin(subject.remote(student, exercise), moved, *subject.ctor, what=subject.name,
                                  dtype=torch.float32, device=device, mode="eval")._target)
    rest = checked.args[n:]
    calls = [(target, tuple(a + sign * step * d for a, d in zip(checked.args[:n], directions)) + rest, None, {})
             for target, sign in zip(targets, (1, -1))]
    ends = [r.value[0] if isinstance(r.value, (tuple, list)) else r.value
            for r in C.run_all(checked.call._session, calls, subject.what, on)]
    ends = [C.expect_tensor(end, subject.what, on) for end in ends]
    change = float(((ends[0].double() - ends[1].double()) * grad_output.double()).sum()) / (2 * step)
    # Finite first: with an infinite gradient both sides of the comparison are infinite, and inf <= inf holds.
    if not (math.isfinite(size) and abs(change - slope) <= 1e-3 * (size + abs(change)) + 1e-9):
        raise CheckFailed(f"the gradients of {subject.what} do not match how its own result changes ({on}). "
                          f"{C.CUT_HINT}")


@pytest.mark.parametrize("exercise, contract", exercises("inputs_not_modified"))
def test_inputs_not_modified(student, course, device, exercise, contract):
    """No function or module changes its input tensors in place."""
    for subject in contract.subjects:
        def check():
            checked = case(student, exercise, subject, device, torch.float32, course.seed)
            before = [a.clone() if isinstance(a, torch.Tensor) else a for a in checked.args]
            on = subject.on(checked.args)
            result = C.attempt(lambda: checked.call.run(args=checked.args, return_args=True), subject.what, on)
            C.unchanged(before, result, subject.args, what=subject.what, on=on)
        judged(student, course, exercise, subject, device, check)


@pytest.mark.parametrize("exercise, contract", exercises("own_implementation"))
def test_own_implementation(student, course, device, exercise, contract):
    """Your own implementation: no built-in of torch that does the whole job (the feedback names the one called)."""
    for subject in (s for s in contract.subjects if s.instead):
        banned = course.banned[f"{exercise}.{subject.name}"]

        def check():
            checked = case(student, exercise, subject, device, torch.float32, course.seed)
            result = C.attempt(lambda: checked.call.run(args=checked.args, watch=banned), subject.what,
                               subject.on(checked.args))
            C.own_implementation(result, subject.name, subject.instead)
        judged(student, course, exercise, subject, device, check)


@pytest.mark.parametrize("exercise, contract", exercises("vectorized"))
def test_vectorized(student, course, device, exercise, contract):
    """No Python loop over the sequence, the batch (or the heads): the number of tensor operations stays the same."""
    for subject in (s for s in contract.subjects if s.sizes):
        judged(student, course, exercise, subject, device, lambda: _op_counts(student, course, device, exercise, subject))


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


@pytest.mark.parametrize("exercise, contract, dtype", exercises("half_precision", *C.HALF_DTYPES))
def test_half_precision(student, course, device, exercise, contract, dtype):
    """float16 and bfloat16 inputs and modules give results of the same dtype within its tolerance."""
    for subject in (s for s in contract.subjects if s.half):
        for half in subject.half:
            def check():
                checked = case(student, exercise, subject, device, dtype, course.seed)
                options = subject.options if half.options is None else half.options
                scaled = Case(checked.call, checked.reference,
                              tuple(t * half.scale for t in checked.args[:len(subject.args)]) + options)
                check_values(student, course, subject, scaled)
            judged(student, course, exercise, subject, device, check, half.scale)


@pytest.mark.parametrize("exercise, contract", exercises("imports_allowed"))
def test_imports_allowed(student, course, exercise, contract):
    """The file imports only torch and math, and earlier exercises with a relative import (read, not run)."""
    imports = student.session.simple("imports", {"module": exercise})
    if not isinstance(imports, list) or not all(isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                                                and isinstance(item[1], int) for item in imports):
        raise CheckFailed(f"the imports of {exercise}.py could not be read back from the worker.")
    bad = forbidden(imports, exercise, course.course_modules)
    if bad:
        shown = ", ".join(f"{name} (line {line})" for name, line in bad[:3])
        raise CheckFailed(f"{exercise}.py imports {shown}: {rule()}.")
