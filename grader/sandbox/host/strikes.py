"""The functions of a submission that are not called again, and why: later calls of one fail at once with the problem
its earlier call met, so that an endless loop costs one ``call_seconds`` and not one per check (nor the other exercises
their share of the time), and a reply the submission's code changed costs one read."""
from __future__ import annotations

from grader.sandbox.host.problems import CHECK, UNREADABLE, StudentError, SubmissionProblem

CRASHES_PER_FUNCTION = 3  # a function that crashed the worker this often is not called again
OUT_OF_MEMORY = ("MemoryError", "OutOfMemoryError")  # a function that raised one of these is not called again


class Abandoned(dict):
    """Function label -> the problem its calls raise from now on (``crashes``: each function's crashes so far)."""

    def __init__(self):
        super().__init__()
        self.crashes: dict[str, int] = {}

    def failed(self, labels: list[str], problem: SubmissionProblem, time_left: bool) -> None:
        """A call of ``labels`` failed in the worker: a time-out (while the submission has time left) abandons them,
        a crash counts against each."""
        earlier = str(problem).replace(f" {CHECK}", "")
        for label in labels:
            if problem.kind == "timeout" and time_left:
                self[label] = SubmissionProblem("timeout", f"{label} is not called again: in an earlier check, {earlier}")
            elif problem.kind == "crash":
                self.crashes[label] = self.crashes.get(label, 0) + 1
                if self.crashes[label] >= CRASHES_PER_FUNCTION:
                    self[label] = SubmissionProblem("crash", f"{label} is not called again: it crashed the worker "
                                                             f"{self.crashes[label]} times (the last time, {earlier})")

    def raised(self, label: str, problem: Exception, memory_mb: int) -> None:
        """``label``'s code raised ``problem``: running out of memory abandons it."""
        if isinstance(problem, StudentError) and problem.info["type"] in OUT_OF_MEMORY:
            self[label] = SubmissionProblem("memory", f"{label} is not called again: in an earlier check it ran out of "
                                                      f"memory ({problem.info['type']}; a worker may use {memory_mb} MB)")

    def forged(self, labels: list[str]) -> SubmissionProblem:
        """A reply to ``labels`` held bytes that none of its values use: the worker's encoder sends none, so the
        submission's code changed it (padding no check would see made every call a large read for the grading process,
        tests/grading/hostile/pinned_padding). Abandons them; returns the problem to raise."""
        problem = SubmissionProblem("reply", f"{UNREADABLE}: it held bytes that none of its values use (code of your "
                                             "submission changed how the worker sends results back)")
        for label in dict.fromkeys(labels):
            self[label] = SubmissionProblem("reply", f"{label} is not called again: in an earlier check, {problem}")
        return problem
