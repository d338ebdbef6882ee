"""Hidden suite, every exercise: the shared contract of its functions and modules (see contract.py).

Each test runs once per exercise, reported under that exercise (its marker) with the weight the exercise gives the
property; the exercise's ``CONTRACT``, in its own test file, says what is checked and on which inputs.
"""
from pathlib import Path

import checks as C
import pytest
import torch
from contract import Case, case, check_values, contracts, expected

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


@pytest.mark.parametrize("exercise, contract", exercises("float64_kept"))
def test_float64_kept(student, course, device, exercise, contract):
    """float64 inputs (and modules) give float64 results at float64 precision."""
    for subject in contract.subjects:
        check_values(student, course, subject, case(student, exercise, subject, device, torch.float64, course.seed))


@pytest.mark.parametrize("exercise, contract", exercises("device_kept"))
def test_device_kept(student, course, exercise, contract):
    """Results stay on the inputs' device (checked with meta tensors and modules, which have shapes but no data)."""
    for subject in contract.subjects:
        args = subject.inputs("cpu", torch.float32, course.seed)
        meta, on, hint = C.on_meta(args), subject.on(C.on_meta(args)), C.META_HINT
        if subject.is_module:
            call = C.attempt(lambda: subject.remote(student, exercise).build(*subject.ctor), f"{subject.name}(...)",
                             "construction")
            C.attempt(lambda: call.to.build(torch.device("meta")), f"{subject.name}.to('meta')", "construction")
            reference = subject.reference_module("cpu", torch.float32, course.seed)
            hint += "; register fixed tensors (a mask) with register_buffer so that they follow the module to its device"
        else:
            call, reference = subject.remote(student, exercise), subject.reference
        got = C.attempt(lambda: call(*meta), subject.what, on, hint)
        with torch.no_grad():
            want = C.on_meta(reference(*args))
        if isinstance(want, tuple):
            got = C.expect_tensors(got, len(want), subject.what, on, f"a tuple of {len(want)} tensors")
        for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
            C.close(g, w, what=subject.what, on=on, course=course)


@pytest.mark.parametrize("exercise, contract", exercises("autograd"))
def test_autograd(student, course, device, exercise, contract):
    """Gradients flow back to every input (and parameter), equal to the reference's (float64)."""
    g = torch.Generator().manual_seed(course.seed + 1)
    for subject in (s for s in contract.subjects if s.autograd):
        checked = case(student, exercise, subject, device, torch.float64, course.seed)
        out = expected(subject, checked)
        out = out[0] if isinstance(out, tuple) else out
        grad_output = torch.randn(out.shape, generator=g, dtype=torch.float64).to(device)
        module = checked.reference if subject.is_module else None
        want, want_params = C.reference_grads(checked.reference, checked.args, grad_output, module=module)
        on = subject.on(checked.args)
        result = C.attempt(lambda: checked.call.run(args=checked.args, grad_output=grad_output), subject.what, on)
        C.grads_close(result, want, subject.args, what=subject.what, on=on, course=course, want_params=want_params)


@pytest.mark.parametrize("exercise, contract", exercises("inputs_not_modified"))
def test_inputs_not_modified(student, course, device, exercise, contract):
    """No function or module changes its input tensors in place."""
    for subject in contract.subjects:
        checked = case(student, exercise, subject, device, torch.float32, course.seed)
        before = [a.clone() if isinstance(a, torch.Tensor) else a for a in checked.args]
        on = subject.on(checked.args)
        result = C.attempt(lambda: checked.call.run(args=checked.args, return_args=True), subject.what, on)
        C.unchanged(before, result, subject.args, what=subject.what, on=on)


@pytest.mark.parametrize("exercise, contract", exercises("own_implementation"))
def test_own_implementation(student, course, device, exercise, contract):
    """Your own implementation: no built-in of torch that does the whole job (the feedback names the one called)."""
    for subject in (s for s in contract.subjects if s.instead):
        checked = case(student, exercise, subject, device, torch.float32, course.seed)
        banned = course.banned[f"{exercise}.{subject.name}"]
        result = C.attempt(lambda: checked.call.run(args=checked.args, watch=banned), subject.what,
                           subject.on(checked.args))
        C.own_implementation(result, subject.name, subject.instead)


@pytest.mark.parametrize("exercise, contract", exercises("vectorized"))
def test_vectorized(student, course, device, exercise, contract):
    """No Python loop over the sequence, the batch (or the heads): the number of tensor operations stays the same."""
    for subject in (s for s in contract.subjects if s.sizes):
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
        checked = case(student, exercise, subject, device, dtype, course.seed)
        tensors = checked.args[:len(subject.args)]
        for half in subject.half:
            options = subject.options if half.options is None else half.options
            scaled = Case(checked.call, checked.reference, tuple(t * half.scale for t in tensors) + options)
            check_values(student, course, subject, scaled)
