"""An adversary in place of a student's worker, for tests/grading/test_student_values.py: every call the hidden suites
make is answered with values hypothesis draws (results, gradients, parameters, inputs after the call, handles), and
the answers are encoded and decoded by the real wire and client, so the suites see exactly what a reply can hold.

Tensors are drawn as a student's code could send them: of the shapes the call's inputs, its ``grad_output`` or the
module's parameters have (so that checks go on past the first), broadcastable ((K, 1, ...) on one call, (1, K, ...) on
the next), long, empty, 0-d or of 64 dims, of every dtype the wire carries (bool, integers, complex included), on the
CPU or on the meta device (with no data, up to 2^40 elements), holding zeros, ones, NaN or extremes; the rest is the
other kinds of values (tuples, lists, dicts, numbers, strings, None, objects kept in the worker) and exceptions of the
student's own (a MemoryError of theirs included). A subclass arrives as its plain data and a sparse or nested tensor
has no wire form (the worker cannot send one), so none of those reaches the suites.

Run as ``python -c 'import adversary; adversary.main()' MODE``: ``references`` grades the references (``solutions/``)
in this process; ``adversary ROUNDS`` runs every hidden suite of every exercise ROUNDS times against the adversary.
Either prints one JSON line: this process's peak resident memory (MiB), and for the adversary the grader faults and
the checks that crashed (feedback "... while checking your result") instead of failing.
"""
from __future__ import annotations

import itertools
import json
import math
import random
import resource
import sys

import torch
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from grader import ROOT
from grader.course import load_course
from grader.sandbox import wire
from grader.sandbox.host.client import WorkerSession
from grader.sandbox.host.problems import UNREADABLE, GraderFault, SubmissionProblem

DTYPES = list(wire.DTYPES.values())
TENSOR_BYTES = 4 << 20  # the largest tensor the adversary sends (its own memory counts in the peak)
SAFETY_NET = 6 << 30  # this process's address space: a check that still blew up fails the test, not the machine
CRASHED = "while checking your result"  # the feedback of a check that raised instead of failing (plugin.feedback)


class Adversary(WorkerSession):
    """A session whose "worker" answers every request with values picked by ``pick(choice)`` from ``CHOICES``."""

    def __init__(self, course, pick):
        super().__init__(None, "/nonexistent", course.grading.limits, modules=course.modules,
                         exercises=course.exercises_dir)
        self.pid, self.isolation, self.pick = 0, "namespaces", pick  # "started": no zygote, no worker
        self.handles = itertools.count(1)
        self.calls = itertools.count()
        self.likes: list[tuple[tuple[int, ...], torch.dtype]] = []  # (shape, dtype) seen: inputs, grad_output, parameters

    def stop(self, grace: float = 0.0):
        return None

    def _exchange(self, frame, timeout, doing, max_bytes=wire.MAX_REPLY_BYTES, exercise=None) -> dict:
        request = _body(frame)
        if request.get("op") == "parts":  # calls sent ahead (host.ahead): each frame of the blob answered apart,
            answers, size = [], 0  # within the reply's bound, as the grading process reads it
            for part, blob in wire.frames_in(_blob(frame)):
                answers.append(self.answer(wire.Decoder(blob)(part)))
                size += len(wire.encode(answers[-1]))
                if size > max_bytes:
                    raise SubmissionProblem("reply", UNREADABLE)
            reply = wire.encode({"ok": True, "parts": answers})
        else:
            reply = wire.encode(self.answer(wire.Decoder(_blob(frame))(request)))
        self._blob = _blob(reply)
        return _body(reply)

    def answer(self, request: dict) -> dict:
        op = request.get("op")
        if op == "batch":
            return {"ok": True, "replies": [self.call(item) for item in request["requests"]]}
        if op == "params":
            return {"ok": True, "value": self.parameters()}
        return {"ok": True, "value": None}

    def remember(self, tensors) -> None:
        self.likes = [*self.likes, *((tuple(t.shape), t.dtype) for t in tensors if isinstance(t, torch.Tensor))][-12:]

    def call(self, item: dict) -> dict:
        if item.get("op") == "load_params":
            self.remember(item.get("params", {}).values())
            return {"ok": True, "value": None}
        args = [a for a in item.get("args", []) if isinstance(a, torch.Tensor)]
        self.remember([*args, item.get("grad_output")])
        raised = self.pick("raises")
        if raised:  # the student's own exception (their MemoryError too)
            return {"ok": False, "error": {"type": raised, "message": "can't allocate memory", "frames": []}}
        path = item.get("target", {}).get("path", [])
        builds = bool(path) and (str(path[-1])[:1].isupper() or path[-1] in ("to", "eval", "train"))
        value = wire.Handle(next(self.handles), "Module") if builds and self.pick("builds") else self.value()
        reply = {"ok": True, "value": value, "ops": self.pick("ops"), "called": self.pick("called")}
        if "grad_output" in item:
            reply["arg_grads"] = self.listing(len(args))
            reply["param_grads"] = self.parameters()
        if item.get("return_args"):
            reply["args_after"] = self.listing(len(item.get("args", [])))
        return reply

    def parameters(self):
        """What a dict by name of a module's parameters (or their gradients) holds: tensors by the names of a course
        module's parameters, or another value."""
        names = self.pick("parameters")
        return self.value() if names is None else {name: self.tensor() for name in names}

    def listing(self, count: int):
        """What a list by position of the inputs holds: tensors (or None) for each, or another length, or no list."""
        extra = self.pick("listing")
        if extra is None:
            return self.value()
        return [self.pick("tensor or none") and self.tensor() for _ in range(max(count + extra, 0))]

    def value(self):
        kind = self.pick("value")
        if kind == "tensor":
            return self.tensor()
        if kind in ("tuple", "list"):
            items = [self.tensor() for _ in range(self.pick("items"))]
            return tuple(items) if kind == "tuple" else items
        return {"dict": {"value": self.tensor()}, "none": None, "string": "nan", "number": self.pick("number"),
                "handle": wire.Handle(next(self.handles), "Module")}[kind]

    def tensor(self) -> torch.Tensor:
        dtype, family = self.pick("dtype"), self.pick("shape")
        most = TENSOR_BYTES // dtype.itemsize
        if family == "huge meta":
            return torch.empty(1 << 20, 1 << 20, dtype=dtype, device="meta")
        like, its_dtype = self.likes[-1 - self.pick("like") % len(self.likes)] if self.likes else ((3,), torch.float32)
        like = list(like)
        if family == "like":  # the form of a right answer: a check goes on to what follows
            dtype = its_dtype
        if family == "broadcast":  # (K, 1, ...) on one call, (1, K, ...) on the next: K * K once combined
            shape = [1] * self.pick("rank")
            shape[next(self.calls) % 2] = min(self.pick("K"), most)
        elif family == "grown":
            shape = [min(self.pick("K"), max(1, most // max(1, math.prod(like)))), *like]
        else:
            shape = {"like": like, "like, other dtype": like, "long": [min(self.pick("K"), most)], "0-d": [],
                     "empty": [0, *like], "64 dims": [1] * 63 + [2]}[family]
        return _filled(shape, dtype, self.pick("fill")).to("cpu" if family == "like" else self.pick("device"))


# What the adversary picks from. Hypothesis draws, for each round, a non-empty part of each list (a policy: all-bool
# broadcast rounds, NaN gradients of the right shape, ...) and a seed; within the round each answer picks from it.
CHOICES = {
    "raises": [None] * 19 + ["MemoryError", "ValueError", "RuntimeError", "Weird"],
    "builds": [True, True, True, False],
    "ops": [0, 7, 60],
    "called": [[], ["softmax"], ["matmul", "einsum"]],
    "parameters": [["W_query", "W_key", "W_value"], ["W_query.weight", "W_key.weight", "W_value.weight",
                                                     "out_proj.weight", "out_proj.bias"], ["x"], [], None],
    "listing": [0, 0, -1, 2, None],
    "tensor or none": [True] * 9 + [None],
    "value": ["tensor"] * 8 + ["tuple", "list", "dict", "none", "number", "string", "handle"],
    "items": [0, 1, 2, 3],
    "number": [0, 1, -1, 2**62, 0.5, float("nan"), float("inf")],
    "dtype": list(wire.DTYPES.values()),
    "shape": ["like", "like", "like, other dtype", "broadcast", "broadcast", "grown", "long", "0-d", "empty",
              "64 dims", "huge meta"],
    "like": list(range(12)),  # the n-th tensor seen lately (counted from the latest)
    "rank": [2, 3, 5, 8],
    "K": [2, 2048, 1 << 16, TENSOR_BYTES],
    "fill": ["zeros", "ones", "nan", "extreme"],
    "device": ["cpu"] * 5 + ["meta"],
}


# A round as issue 28's attack: every tensor an all-False bool (4 Mi, 1, 1, 1, 1) or (1, 4 Mi, 1, 1, 1), gradients
# included (a hook in the student's code swaps them for anything): 2 GB where one is multiplied by a direction.
SWAPPED_GRADIENTS = {**{name: options[:1] for name, options in CHOICES.items()},
                     "shape": ["broadcast"], "dtype": [torch.bool], "K": [TENSOR_BYTES], "rank": [5]}


@st.composite
def policies(draw) -> dict[str, list]:
    """For each of ``CHOICES``, the part of it one round picks from."""
    return {name: draw(st.lists(st.sampled_from(range(len(options))), min_size=1, max_size=len(options), unique=True)
                       .map(lambda picked, options=options: [options[i] for i in picked]))
            for name, options in CHOICES.items()}


def _body(frame: bytes) -> dict:
    size, _ = wire.HEADER.unpack_from(frame)
    return json.loads(frame[wire.HEADER.size:wire.HEADER.size + size])


def _blob(frame: bytes) -> bytearray:
    size, _ = wire.HEADER.unpack_from(frame)
    return bytearray(frame[wire.HEADER.size + size:])


def _filled(shape, dtype: torch.dtype, fill: str) -> torch.Tensor:
    if fill == "zeros" or dtype == torch.bool and fill != "ones":
        return torch.zeros(shape, dtype=dtype)
    if fill == "ones":
        return torch.ones(shape, dtype=dtype)
    if dtype.is_floating_point or dtype.is_complex:
        value = float("nan") if fill == "nan" else torch.finfo(dtype).max
    else:
        value = torch.iinfo(dtype).max
    return torch.full(shape, value, dtype=dtype)


def _peak_mib() -> float:
    """This process's peak resident memory: its VmHWM (ru_maxrss starts at the parent's, inherited through exec)."""
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def _draw_the_suites_cases(course) -> None:
    """Draw every hidden suite's cases now (hypothesis draws them, once per course version): the adversary's rounds
    then replay them, and hypothesis runs only the adversary."""
    import importlib

    from grader.suites.plugin import importable
    importable(course)
    for module in course.modules:
        suite = importlib.import_module(f"hidden_{module}")
        for test in vars(suite).values():
            if callable(getattr(test, "cases", None)):
                test.cases(course.seed)


def main() -> None:
    mode = sys.argv[1]
    resource.setrlimit(resource.RLIMIT_AS, (SAFETY_NET, resource.getrlimit(resource.RLIMIT_AS)[1]))
    course = load_course()
    if mode == "references":
        from grader.grade import grade_submission
        results = grade_submission(ROOT / "solutions", course).results
        print(json.dumps({"peak_mib": _peak_mib(), "score": results["score"], "max_score": results["max_score"]}))
        return
    from grader.suites.plugin import run_suites
    _draw_the_suites_cases(course)
    faults, crashed, counted = [], set(), {"rounds": 0, "checks": 0}

    @settings(max_examples=int(sys.argv[2]), database=None, deadline=None, derandomize=True,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
    @given(policies(), st.integers(0, 2**32 - 1))
    @example(SWAPPED_GRADIENTS, 0)
    def rounds(policy, seed):
        rng = random.Random(seed)
        try:
            report = run_suites(Adversary(course, lambda name: rng.choice(policy[name])), course, "cpu")
        except GraderFault as fault:
            faults.append(str(fault))
            return
        counted["rounds"] += 1
        for test in report.get("tests", []):
            counted["checks"] += 1
            said = " ".join(str(v) for k, v in test.get("metadata", {}).items() if k.startswith("feedback"))
            if CRASHED in said:
                crashed.add(f"{test['nodeid']}: {said}")

    rounds()
    print(json.dumps({"peak_mib": _peak_mib(), "faults": faults, "crashed": sorted(crashed), **counted}))
