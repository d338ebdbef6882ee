"""The shared contract of the exercises: what an exercise declares, and how test_contract.py builds its checks from it.

Every function and module of the course keeps the same eight properties: float64 kept, device kept, gradients equal
the reference's, inputs not modified in place, its own implementation (no banned built-in of course.yaml), no Python
loop over the sizes, half precision, and its file imports only what the syllabus allows. test_contract.py checks them once for all exercises; an exercise only
declares, in its own test file, ``CONTRACT = Contract(...)``: its ``Subject``s (how to build their inputs, how to
call them, their reference, how their values are checked) and the weight of each property.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import checks as C
import torch

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

    def remote(self, student, exercise: str):
        return getattr(getattr(student, exercise), self.name)


@dataclass
class Case:
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


def contracts(folder: Path) -> dict[str, Contract]:
    """Each exercise's CONTRACT, by module: the ``CONTRACT`` of every test_<module>.py in ``folder`` that has one."""
    found = {}
    for path in sorted(folder.glob("test_*.py")):
        if path.stem != "test_contract":
            module = importlib.import_module(path.stem)
            if hasattr(module, "CONTRACT"):
                found[path.stem.removeprefix("test_")] = module.CONTRACT
    return found


def case(student, exercise: str, subject: Subject, device, dtype, seed: int) -> Case:
    """``subject`` with inputs of ``dtype`` on ``device``; a module is the student's, holding the reference's
    parameters, in eval mode."""
    remote, args = subject.remote(student, exercise), subject.inputs(device, dtype, seed)
    if not subject.is_module:
        return Case(remote, subject.reference, args)
    reference = subject.reference_module(device, dtype, seed)
    module = C.twin(remote, reference, *subject.ctor, what=subject.name, dtype=dtype, device=device, mode="eval")
    return Case(module, reference, args)


def expected(subject: Subject, case: Case):
    """The reference's result on the case's inputs, computed in float64 and cast back."""
    if subject.is_module:
        return C.module_reference(case.reference, *case.args)
    return C.in_float64(case.reference, *case.args)


def check_values(student, course, subject: Subject, case: Case) -> None:
    """The subject's values check: its exercise's own, or the result close to the reference's."""
    if subject.values is not None:
        subject.values(student, course, case)
        return
    on = subject.on(case.args)
    got = C.attempt(lambda: case.call(*case.args), subject.what, on)
    C.close(got, expected(subject, case), what=subject.what, on=on, course=course)
