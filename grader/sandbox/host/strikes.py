"""What a submission's checks are no longer given, and why: each exercise's share of the submission's time and of
the bytes its checks read (``Shares``), and the functions not called again (``Abandoned``), whose later calls fail at
once with the problem their earlier call met, so that an endless loop costs one ``call_seconds`` and not one per
check, and a reply the submission's code changed costs one read."""
from __future__ import annotations

from grader.sandbox.host.problems import CHECK, UNREADABLE, StudentError, SubmissionProblem
from grader.sandbox.limits import Limits

CRASHES_PER_FUNCTION = 3  # a function that crashed the worker this often is not called again
OUT_OF_MEMORY = ("MemoryError", "OutOfMemoryError")  # a function that raised one of these is not called again


class Shares:
    """Each exercise's share of the submission: of its time, spent in the calls of the exercise's checks and the
    restarts of the worker they caused (one share more than the exercises is left for the start and the grading
    process's own work, so that the shares, spent, never cut another exercise's checks: red teams 17 and 18, review
    11), and of the bytes of replies its checks read (what the grading process reads and parses for them, whether a
    check looks at it or not: red team 15). One spent, that exercise's remaining checks are not run."""

    def __init__(self, limits: Limits, exercises: int):
        self.seconds = limits.submission_seconds / (exercises + 1)
        self.bytes = limits.replies_mb << 20  # course.yaml's replies_mb: a correct submission's are about 0.1 MB
        self.spent: dict[str, float] = {}
        self.read: dict[str, int] = {}

    def charge(self, exercise: str | None, seconds: float = 0.0, nbytes: int = 0) -> None:
        if exercise:
            self.spent[exercise] = self.spent.get(exercise, 0.0) + seconds
            self.read[exercise] = self.read.get(exercise, 0) + nbytes

    def seconds_left(self, exercise: str | None) -> float:
        return self.seconds - self.spent.get(exercise, 0.0) if exercise else float("inf")

    def bytes_left(self, exercise: str | None) -> float:
        return self.bytes - self.read.get(exercise, 0) if exercise else float("inf")

    def out_of_time(self, exercise: str) -> SubmissionProblem:
        return SubmissionProblem("timeout", f"the checks of {exercise} took more than its {self.seconds:.0f} s of your "
                                            "code's time in all; its remaining checks were not run")

    def out_of_bytes(self, exercise: str) -> SubmissionProblem:
        """The bytes of ``exercise`` are spent (set so where a reply over them was refused unread)."""
        self.read[exercise] = max(self.read.get(exercise, 0), self.bytes)
        return SubmissionProblem("replies", f"the replies of your code to the checks of {exercise} came to more than "
                                            f"{self.bytes >> 20} MiB in all, where a few KiB each is what "
                                            "they need (does a result hold far more than it should?); its remaining "
                                            "checks were not run")

    def spent_problem(self, exercise: str | None) -> SubmissionProblem | None:
        """Why ``exercise``'s checks may call no more, if they may not."""
        if self.seconds_left(exercise) <= 0:
            return self.out_of_time(exercise)
        return self.out_of_bytes(exercise) if self.bytes_left(exercise) <= 0 else None


class Abandoned(dict):
    """Function label -> the problem its calls raise from now on (``crashes``: each function's crashes so far)."""

    def __init__(self):
        super().__init__()
        self.crashes: dict[str, int] = {}

    def refuse(self, labels: list[str]) -> None:
        """Raise, afresh, the problem of the first of ``labels`` not called again (``SubmissionProblem.again``)."""
        for label in labels:
            if label in self:
                raise self[label].again()

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
