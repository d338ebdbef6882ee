"""Calls sent ahead (grader/sandbox/host/ahead.py): the first call of each step of a check goes to the worker in one
frame, and the steps, run after, are answered from it as they would have been by their own round trips."""
from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path

import pytest
import torch
from test_grader import submission

from grader.grade import grade_submission
from grader.sandbox import wire
from grader.sandbox.host import ahead
from grader.sandbox.host.client import WorkerSession
from grader.sandbox.host.problems import SubmissionProblem
from grader.sandbox.host.proxy import RemoteObject, Student, released
from grader.suites import checks as C

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"
# softmax that hangs, or ends its worker, on a 3-D input, and is right on any other
ODD_SOFTMAX = """import os
import torch


def softmax(x, dim=-1, temperature=1.0):
    if x.dim() == 3:
        {odd}
    z = x / temperature
    e = (z - z.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""


def inputs() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [torch.randn(3, 4, generator=g), torch.randn(2, 3, 5, generator=g), torch.randn(5, 2, generator=g)]


def softmax_steps(student, xs, results: list):
    return [lambda x=x: results.append(student.softmax.softmax(x)) for x in xs]


def counted(session: WorkerSession) -> list:
    """The frames the session sends from now on, as a list that grows."""
    sent, exchange = [], session._exchange

    def counting(frame, *args, **kwargs):
        if frame is not None:
            sent.append(frame)
        return exchange(frame, *args, **kwargs)
    session._exchange = counting
    return sent


def test_the_first_calls_of_a_checks_steps_take_one_round_trip_after_the_first_steps(zygote, course):
    """Three steps that each call softmax once: the first step's call goes alone, the others' in one frame once it
    has returned, and each step gets the value its own call would have returned."""
    session = WorkerSession(zygote, str(SOLUTIONS), course.grading.limits, modules=("softmax",))
    student, results = Student(session), []
    try:
        session.started()
        session._ensure("softmax")
        sent = counted(session)
        steps = softmax_steps(student, inputs(), results)
        with C.ahead(student, steps):
            for step in steps:
                step()
        assert len(sent) == 2 and b'"parts"' in sent[1]
        alone = [student.softmax.softmax(x) for x in inputs()]
        assert len(sent) == 5
    finally:
        session.close()
    assert len(results) == 3 and all(torch.equal(released(a), released(b)) for a, b in zip(results, alone))


def test_a_dry_run_records_the_first_call_and_leaves_the_random_states_as_they_were(course):
    """A step run up to its first call draws nothing that its run draws again: the random states are put back, and
    the call recorded is the request its run sends."""
    session = WorkerSession(None, str(SOLUTIONS), course.grading.limits, modules=("softmax",))
    student = Student(session)
    torch.manual_seed(7), random.seed(7)
    before = torch.get_rng_state(), random.getstate()

    def step():
        x = torch.randn(3, 4)
        random.random()
        student.softmax.softmax(x)
        raise AssertionError("a dry run stops at the first call")
    recorded = session.ahead.first_call(step)
    assert torch.equal(torch.get_rng_state(), before[0]) and random.getstate() == before[1]
    assert recorded is not None and recorded.labels == {"softmax.softmax"} and recorded.modules == {"softmax"}
    assert session.pid is None  # nothing reached a worker


def test_a_call_on_an_object_made_earlier_is_not_sent_ahead(course):
    """A call on an object a worker made (a handle) cannot be named alike by a later step: it is not recorded."""
    session = WorkerSession(None, str(SOLUTIONS), course.grading.limits, modules=("qkv",))
    module = RemoteObject(session, 3, "SelfAttention", 1)
    assert session.ahead.first_call(lambda: module(torch.ones(2, 3))) is None
    assert session.ahead.first_call(lambda: Student(session).qkv.project(torch.ones(2, 3), module)) is None
    assert session.ahead.first_call(lambda: None) is None  # a step that calls nothing


@pytest.mark.parametrize("odd, kind", [("while True:\n            pass", "timeout"), ("os._exit(3)", "crash")])
def test_a_step_that_hangs_or_crashes_costs_its_own_call_and_sends_nothing_more_ahead(tmp_path, zygote, course, odd,
                                                                                    kind):
    """softmax hangs (or ends its worker) on the last step's input: the frame sent ahead fails within one call's time;
    the first steps are then answered by their own round trips, the last fails as it would alone; no function is marked
    for the failure of the frame, and nothing more is sent ahead."""
    limits = dataclasses.replace(course.grading.limits, call_seconds=1.0)
    folder = submission(tmp_path, softmax=ODD_SOFTMAX.format(odd=odd))
    session = WorkerSession(zygote, str(folder), limits, modules=("softmax",))
    student, results = Student(session), []
    started = time.monotonic()
    try:
        two_d, three_d, other = inputs()
        steps = softmax_steps(student, [two_d, other, three_d], results)
        with C.ahead(student, steps):
            steps[0](), steps[1]()
            with pytest.raises(SubmissionProblem) as failure:
                steps[2]()
        assert failure.value.kind == kind
        assert session.ahead.off and len(results) == 2
        assert session.abandoned.crashes.get("softmax.softmax", 0) == (1 if kind == "crash" else 0)
        sent = counted(session)
        with C.ahead(student, softmax_steps(student, [two_d, other], [])):
            pass
        assert not sent
    finally:
        session.close()
    assert time.monotonic() - started < 2 * limits.call_seconds + 20


def test_the_references_take_every_answer_sent_ahead(zygote, course, monkeypatch):
    """Grading the references, every call sent ahead is answered to its step: each step's first call is the same in
    its dry run and in its run (a step that drew from a generator another step drew from would send its call ahead
    in vain, and change what it draws)."""
    sent, taken, left = [], [], []
    send, answer, forget = ahead.Ahead._send, ahead.Ahead.answer, ahead.Ahead.forget

    def sending(self, calls):
        send(self, calls)
        sent.extend(part for queue in self.answers.values() for part in queue)

    def answering(self, frame):
        found = answer(self, frame)
        taken.extend([found] if found is not None else [])
        return found

    def forgetting(self):
        left.extend(queue for queue in self.answers.values() if queue)
        forget(self)
    monkeypatch.setattr(ahead.Ahead, "_send", sending)
    monkeypatch.setattr(ahead.Ahead, "answer", answering)
    monkeypatch.setattr(ahead.Ahead, "forget", forgetting)
    outcome = grade_submission(str(SOLUTIONS), course, zygote=zygote)
    assert outcome.grade.score == pytest.approx(course.total_points)
    assert sent and len(taken) == len(sent) and not left


def test_answers_past_their_bound_turn_sending_ahead_off_and_leave_the_worker_running(tmp_path, zygote, course):
    """softmax returns 2.4 MB on every call: the answers of two calls sent ahead would pass their 4 MiB bound, so the
    worker says so; nothing more is sent ahead, the worker is the same, and each step's own call answers it."""
    big = "import torch\n\n\ndef softmax(x, dim=-1, temperature=1.0):\n    return torch.zeros(600_000)\n"
    session = WorkerSession(zygote, str(submission(tmp_path, softmax=big)), course.grading.limits, modules=("softmax",))
    student, results = Student(session), []
    try:
        steps = softmax_steps(student, inputs(), results)
        with C.ahead(student, steps):
            for step in steps:
                step()
        assert session.ahead.off and session.generation == 1 and len(results) == 3
    finally:
        session.close()


def test_a_first_step_that_hangs_sends_nothing_ahead(tmp_path, zygote, course):
    """softmax hangs on the first step's input: it is stopped after one call's time, nothing is sent ahead, and the
    other steps fail at once (a function that timed out is not called again)."""
    limits = dataclasses.replace(course.grading.limits, call_seconds=1.0)
    folder = submission(tmp_path, softmax=ODD_SOFTMAX.format(odd="while True:\n            pass"))
    session = WorkerSession(zygote, str(folder), limits, modules=("softmax",))
    student, (two_d, three_d, other) = Student(session), inputs()
    started = time.monotonic()
    try:
        sent = counted(session)
        steps = softmax_steps(student, [three_d, two_d, other], [])
        with C.ahead(student, steps):
            for step in steps:
                with pytest.raises(SubmissionProblem, match="ran for more than|not called again"):
                    step()
        assert [b'"batch"' in frame for frame in sent if b'"sync"' not in frame and b'"import"' not in frame] == [True]
    finally:
        session.close()
    assert time.monotonic() - started < limits.call_seconds + 20


STATEFUL_SOFTMAX = """import torch

CALLS = []


def softmax(x, dim=-1, temperature=1.0):
    CALLS.append(x.shape)
    z = x / temperature
    if len(CALLS) % 7 == 3:  # wrong on every seventh call: which check it hits depends on the order of the calls
        z = z * 2
    e = (z - z.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""


def test_a_submission_that_counts_its_calls_gets_the_same_grade_with_or_without_dry_runs(tmp_path, zygote, course):
    """Dry runs are made by a process's first grading and kept: whether a grading made them or not, the calls reach
    the worker in the same order, so a submission whose results depend on that order gets the same feedback."""
    folder = submission(tmp_path, softmax=STATEFUL_SOFTMAX)
    ahead.PLANS.clear()
    first = grade_submission(str(folder), course, zygote=zygote).results
    assert ahead.PLANS
    again = grade_submission(str(folder), course, zygote=zygote).results
    assert first["exercises"]["softmax"]["score"] < 10
    assert [(t["name"], t["status"], t["output"]) for t in first["tests"]] == \
           [(t["name"], t["status"], t["output"]) for t in again["tests"]]


def test_joined_frames_come_apart_as_they_went_in():
    """A frame of frames (requests sent together) gives back each frame's message and tensors."""
    frames = [wire.encode({"op": "batch", "n": n, "x": torch.arange(n + 1.0)}) for n in range(3)]
    joined = wire.joined({"op": "parts"}, frames)
    body_len, _ = wire.HEADER.unpack_from(joined)
    assert joined[wire.HEADER.size:wire.HEADER.size + body_len] == b'{"op": "parts"}'
    parts = list(wire.frames_in(joined[wire.HEADER.size + body_len:]))
    assert [part["n"] for part, _ in parts] == [0, 1, 2]
    for (part, part_blob), n in zip(parts, range(3)):
        assert torch.equal(wire.Decoder(part_blob)(part["x"]), torch.arange(n + 1.0))
