"""The submission as the suites see it: proxies whose calls run in the worker and come back as plain values.

``student.<module>.<function>(x)`` calls the student's function in the worker and returns its result, a tensor coming
back as a ``StudentTensor``; ``student.<module>.<Class>.build(4, 3)`` returns a ``RemoteObject`` (the module, kept in
the worker) whose methods, parameters and backward the test drives. Every call goes through the ``WorkerSession``
(grader.sandbox.host.client).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from grader.sandbox import wire
from grader.sandbox.host.problems import SubmissionProblem
from grader.text import MAX_NAME, clean

if TYPE_CHECKING:  # the session drives the proxies; the proxies only call it
    from grader.sandbox.host.client import WorkerSession


class UncheckedValue(RuntimeError):
    """Trusted code computed with a student's tensor before ``checks.checked`` verified it: a bug of the suites, so a
    grader fault (the grade is not recorded), never the student's failure."""


# What a check may read of a student's tensor before verifying it: its metadata, never its values.
READABLE = frozenset({torch.Tensor.shape.__get__, torch.Tensor.dtype.__get__, torch.Tensor.device.__get__,
                      torch.Tensor.ndim.__get__, torch.Tensor.layout.__get__, torch.Tensor.is_nested.__get__,
                      torch.Tensor.dim, torch.Tensor.size, torch.Tensor.numel, torch.Tensor.is_floating_point,
                      torch.Tensor.is_complex, torch.Tensor.__len__})


class StudentTensor(torch.Tensor):
    """A tensor the student's code sent (a result, a gradient, a parameter, an input after the call), as the suites
    receive it: its metadata (``READABLE``: shape, dtype, device, dims) can be read, but any computation with it raises
    ``UncheckedValue`` until ``checks.checked`` has verified it against the tensor it must be like (its shape, dtype
    and device, so its size) and handed back a plain tensor. A (K, 1, 1, 1, 1) result subtracted from a (1, K, 1, 1, 1)
    one made the grading process allocate K * K values; a check that forgets to verify raises instead."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in READABLE:
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))
        raise UncheckedValue(f"{getattr(func, '__name__', func)} of a student's tensor before checks.checked verified it")

    def __repr__(self):
        return f"<student tensor {tuple(self.shape)} {self.dtype} on {self.device}>"


def guarded(tensor: torch.Tensor) -> StudentTensor:
    """``tensor`` (decoded from a reply) as the suites receive it."""
    return tensor.as_subclass(StudentTensor)


def released(tensor: StudentTensor) -> torch.Tensor:
    """The plain tensor behind a verified ``StudentTensor``: for ``checks.checked`` alone, once it has verified it."""
    with torch._C.DisableTorchFunctionSubclass():
        return tensor.as_subclass(torch.Tensor)


@dataclass
class CallResult:
    """What one call returned: its value, and what its options asked for (gradients, banned names called, the
    operator count, the arguments after the call)."""

    value: object
    arg_grads: list | None = None
    param_grads: dict | None = None
    called: list[str] = field(default_factory=list)
    ops: int | None = None
    args_after: list | None = None


def load_params_step(target: dict, params: dict) -> tuple[dict, tuple, None, dict]:
    """A call for ``WorkerSession.run_many`` that copies ``params`` (tensors by name) into the module ``target`` names."""
    return target, (), None, {"op": "load_params", "params": params}


def target_label(target: dict) -> str:
    """A call target in words: ``<module>.<function>``, ``<Class>.forward``, ``<Class>(...)``."""
    head = str(target.get("module") or clean(target.get("type", "object"), MAX_NAME))
    path = [str(p) for p in target.get("path", [])]
    return ".".join([head, *path]) if path or "module" in target else f"{head}(...)"


class Remote:
    """A name in the worker: a module, a handle, or an attribute path below one. Calling it runs the call there."""

    def __init__(self, session: WorkerSession, target: dict):
        self._session, self._target = session, target

    def __getattr__(self, name: str) -> Remote:
        if _probe(name):
            raise AttributeError(name)
        return Remote(self._session, {**self._target, "path": [*self._target.get("path", []), name]})

    def __call__(self, *args, **kwargs):
        return self.run(args, kwargs).value

    def run(self, args=(), kwargs=None, **options) -> CallResult:
        """Call with options (see ``WorkerSession.run``)."""
        return self._session.run(self._target, args, kwargs, **options)

    def build(self, *args, **kwargs) -> RemoteObject:
        """Call something that returns an object kept in the worker (a constructor, ``module.to(...)``); a result
        that is not such an object fails the check."""
        return self.build_with({}, *args, **kwargs)

    def build_with(self, options: dict, *args, **kwargs) -> RemoteObject:
        """``build`` with call ``options`` (see ``WorkerSession.run``)."""
        value = self.run(args, kwargs, handles=True, **options).value
        if not isinstance(value, RemoteObject):
            raise SubmissionProblem("result", f"{target_label(self._target)} returned a plain value, not an object")
        return value

    def __repr__(self):
        return f"<remote {self._target}>"


class RemoteObject(Remote, wire.Handle):
    """An object living in the worker, e.g. the student's nn.Module."""

    def __init__(self, session: WorkerSession, id: int, type_name: str, generation: int):
        Remote.__init__(self, session, {"handle": id, "type": type_name, "generation": generation})
        wire.Handle.__init__(self, id, type_name)

    def params(self) -> dict:
        """The module's named parameters, as plain tensors by name (anything else fails the check)."""
        value = self._session.simple("params", self._target)
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in value.items()):
            raise SubmissionProblem("result", f"the parameters of the {self.type_name} are not tensors by name")
        return value

    def load_params(self, params: dict) -> None:
        """Copy tensors into the module's parameters of the same names."""
        self._session.simple("load_params", self._target, params=params)


class Student:
    """The submission as the suites see it: ``student.<module>.<name>``."""

    def __init__(self, session: WorkerSession):
        self.session = session

    def __getattr__(self, module: str) -> Remote:
        if module not in self.session.modules:
            raise AttributeError(f"the submission has no exercise {module!r}")
        return Remote(self.session, {"module": module})

    def __repr__(self):
        return "<the student's submission>"


def _probe(name: str) -> bool:
    """Names that tools probe objects for (``__len__``, IPython's and hypothesis's ``_repr_pretty_``), never the
    student's: looking them up must not become a call into the worker."""
    return name.startswith("__") or (name.startswith("_") and name.endswith("_"))
