"""Calls sent ahead: the first call of each step of a check (its cases, its subjects) goes to the worker in one frame.

A call into the worker costs about 0.35 ms of CPU on the two sides when it is alone in its frame, most of it for the
frame (the worker wakes for it, cold), and less than half of that when it rides with others
(``benchmarks/round_trips.py``): a check that runs 14 cases one after the other paid it 14 times. Before the steps
run, each is run up to its first call into the student's code (a *dry run*: the call is recorded, not made, and the
step stopped there by ``Planned``; once per grading process, ``PLANS``). The first step's call is made by its own
step; once it has returned (code that hangs on every input costs one call's time, as without), the others' go to the
worker in one frame, each answered apart; a step that then makes a call whose request is, byte for byte, one
recorded is answered from that frame.

What the student's code sees is that these calls were made earlier, in the order of the steps: a fixed order, the
same on every run. Nothing else changes: a call that raised, ran out of memory or returned a wrong value is said as
when it was made alone, and a call no step reaches (a check stops at a first named mistake) is never judged. The
frame waits for at most one call's time (``call_seconds``): an endless loop costs one call's time more than without
it. Its time is charged to the exercise as any call's; where it fails (a time-out, a crash, a reply that cannot be
read), the worker is restarted as after any such call, no function is marked for it (the step that makes the call
says what it does), and no more calls are sent ahead for this submission: its steps run as if none had been.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

import torch

from grader.sandbox import wire
from grader.sandbox.host.problems import SubmissionProblem

REPLY_BYTES = 4 << 20  # an answer to calls sent ahead: hundreds of times a correct submission's (12 KiB a case)


class Planned(BaseException):
    """Stops a dry run at its first call into the student's code (no check catches it: it is no failure)."""


@dataclass(frozen=True)
class Recorded:
    """A step's first call into the student's code, as ``WorkerSession.run_many`` sends it."""
    frame: bytes  # the request's whole frame
    labels: frozenset[str]  # the functions it calls (``target_label``)
    modules: frozenset[str]  # the exercise modules it names


# (check, block, steps) -> the steps' first calls: dry runs are made once per grading process, for its first submission
PLANS: dict[tuple, list[Recorded | None]] = {}


class Ahead:
    """A session's calls sent ahead: the dry runs (``plan``), the frame (``prepare``, ``made``) and its answers
    (``answer``). It is a part of its ``WorkerSession`` (in a module of its own), whose own methods it calls."""

    def __init__(self, session):
        self.session = session
        self.recording = False
        self.recorded: Recorded | None = None
        self.off = False  # a frame sent ahead failed: none more for this submission
        self.answers: dict[bytes, deque] = {}
        self.decode = None  # the answers' decoder: one for the frame, so the byte ranges of all its parts are checked together
        self.lead: bytes | None = None  # the request of the steps' first call, made by its own step
        self.pending: list[Recorded] = []  # the other steps' first calls, sent once the lead has returned
        self.blocks: tuple = (None, 0)  # the check whose blocks of steps are being counted, and how many it ran

    def plan(self, steps: list) -> list[Recorded | None]:
        """The first call of each of ``steps`` (``first_call``), kept for the next submission where the session names
        its check (``WorkerSession.check``): the same steps of the same check make the same calls, whatever the
        submission, since nothing of it is known before its first call."""
        check = self.session.check
        self.blocks = (check, self.blocks[1] + 1 if self.blocks[0] == check else 0)
        if check is None:
            return [self.first_call(step) for step in steps]
        key = (check, self.blocks[1], len(steps))
        if key not in PLANS:
            PLANS[key] = [self.first_call(step) for step in steps]
        return PLANS[key]

    def first_call(self, step) -> Recorded | None:
        """Run ``step`` up to its first call into the student's code, and return that call (None: it calls nothing
        that can be sent ahead). The random states it may draw from are put back: the step, run again, draws the
        same."""
        states = torch.get_rng_state(), random.getstate()
        self.recording, self.recorded = True, None
        try:
            step()
        except (Planned, Exception):  # stopped at its call, or it failed before any: its run says why
            pass
        finally:
            self.recording = False
            torch.set_rng_state(states[0])
            random.setstate(states[1])
        return self.recorded

    def record(self, frame: bytes, targets: list[dict], labels: list[str]) -> None:
        """In a dry run, keep a call ``run_many`` was asked to make (where it names no object made by an earlier
        call, which a later step could not name alike) and stop the step."""
        body = frame[wire.HEADER.size:wire.HEADER.size + wire.HEADER.unpack_from(frame)[0]]
        if all("handle" not in target for target in targets) and b'"$h":' not in body:
            self.recorded = Recorded(frame, frozenset(labels), frozenset(t["module"] for t in targets if "module" in t))
        raise Planned

    def prepare(self, plan: list[Recorded | None]) -> None:
        """Send the calls of ``plan`` ahead once the first of them, made by its own step, has returned (``made``)."""
        self.forget()
        recorded = [r for r in plan if r is not None]
        if recorded:
            self.lead, self.pending = recorded[0].frame, recorded[1:]

    def made(self, frame: bytes) -> None:
        """A call made alone (``frame``, its request) returned: where it leads the steps, send the others' calls."""
        if frame == self.lead:
            calls, self.lead, self.pending = self.pending, None, []
            self._send(calls)

    def _send(self, calls: list[Recorded]) -> None:
        """Send the ``calls`` that the submission can be called for (no module of theirs is broken, no function of
        theirs abandoned) in one frame, and keep the answers; at least two, or none."""
        session = self.session
        calls = [r for r in calls if not r.modules & session.broken.keys() and not r.labels & session.abandoned.keys()]
        if self.off or len(calls) < 2:
            return
        session.started()
        if session._early_error is not None:  # the early start's failure is for the first call to say
            return
        try:
            for module in sorted(set().union(*(r.modules for r in calls))):
                session._ensure(module)
            # one call's time for all (an endless loop costs one more call's, not one per step), charged as any call's
            reply = session.request(wire.joined({"op": "parts", "max_bytes": REPLY_BYTES}, [r.frame for r in calls]),
                                    None, max_bytes=REPLY_BYTES)
        except SubmissionProblem:
            self.off = True
            return  # the steps' own calls say what went wrong
        parts, self.off = reply.get("parts"), not reply.get("ok")  # too large a reply: the worker said so
        if self.off:
            return
        if type(parts) is not list or len(parts) != len(calls) or not all(type(part) is dict for part in parts):
            self.off = True  # no answer to what was sent: the worker is out of step
            session.stop()
            return
        for r, part in zip(calls, parts):
            self.answers.setdefault(r.frame, deque()).append(part)
        self.decode = session._decoder()  # answers live until the worker stops (``WorkerSession.stop`` forgets them)

    def answer(self, frame: bytes):
        """The answer kept for the request ``frame`` (taken: a second identical request is made anew), with its
        decoder; None where there is none."""
        queue = self.answers.get(frame)
        return (queue.popleft(), self.decode) if queue else None

    def forget(self) -> None:
        """Drop the answers not taken (the worker stopped, or the steps are done), and the frame they came in."""
        self.answers, self.decode, self.lead, self.pending = {}, None, None, []
