"""The grading process's own memory, bounded as a whole: a hole in the checks costs one grade, never the host.

What a student's code sends is bounded where it arrives (``sandbox.wire``) and checked before the grading process
computes with it (``suites.checks.checked``). Should a computation still grow with what a student sent (a hole not
found yet), the grading process's address space is bounded too: ``bound_grading_memory`` lowers its soft
``RLIMIT_AS`` to what it maps once torch and the grader are imported, plus ``HEADROOM_MB``. Running out of it raises
(``out_of_memory`` tells which exceptions say so); the suites' plugin stops that grading as a grader fault
(``GradingOutOfMemory``), never a score, and a batch's job process then exits, so that the batch grades the
submission again alone and records it as could not be graded where it runs out alone too (``grader.batch``).
"""
from __future__ import annotations

import gc
import os

try:
    import resource
except ImportError:  # pragma: no cover - not a Unix
    resource = None  # type: ignore[assignment]

from grader.sandbox.host.zygote import GraderFault

# Above what the grading process maps with torch and the grader imported (about 650 MiB): grading the references
# adds about 10 MiB; the largest reply the wire takes (MAX_REPLY_BYTES, 64 MiB) costs at most twice its size while it
# is decoded, and a check holds a few at once (SECURITY.md, "What the suites compute with").
HEADROOM_MB = 1024
ALLOCATION_FAILED = "can't allocate memory"  # what torch's CPU allocator raises (a RuntimeError) when refused memory


class GradingOutOfMemory(GraderFault):
    """The grading process ran out of its memory bound while grading a submission: the grader's fault (a check grew
    with what the student sent), never the student's score."""


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error``, raised in this process, says that it ran out of memory: Python's ``MemoryError``, torch's
    allocator refused (a RuntimeError on the CPU, ``OutOfMemoryError`` on a GPU), or ``GradingOutOfMemory``. The
    caller tells these apart from a student's own exception re-created by the grading process (``StudentError``)."""
    return (isinstance(error, (MemoryError, GradingOutOfMemory)) or type(error).__name__ == "OutOfMemoryError"
            or isinstance(error, RuntimeError) and ALLOCATION_FAILED in str(error))


_bounded_pid = 0  # the process whose bound is set (a forked job process sets its own)


def bound_grading_memory(device: str) -> None:
    """Bound this grading process's address space to what it maps now plus ``HEADROOM_MB`` (the soft RLIMIT_AS; once
    per process): call it once torch and the grader are imported. The hard limit is left as it is, so that the
    processes it starts, which inherit the soft one, set their own (a worker's ``memory_mb``, the intake's
    ``memory_mb``). Not on a GPU, where CUDA reserves address ranges far larger than the memory it uses (the workers'
    RLIMIT_AS is not applied there either)."""
    global _bounded_pid
    if resource is None or device != "cpu" or _bounded_pid == os.getpid():
        return
    with open("/proc/self/statm", encoding="ascii") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = mapped + HEADROOM_MB * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    _bounded_pid = os.getpid()


_collector_paused = False


def pause_collector() -> None:
    """Turn Python's cyclic garbage collector off while a one-shot grade imports torch, pytest and the suites, which
    live until the process exits anyway: the collections their import starts cost 10 to 15% of torch's import
    (``resume_collector`` turns it back on)."""
    global _collector_paused
    if gc.isenabled():
        gc.disable()
        _collector_paused = True


def resume_collector() -> None:
    """After ``pause_collector``, once the suites are collected: freeze what is imported, so that no collection
    walks it again, and turn the collector back on (a check's exception holds its frames, and they a reply's bytes,
    in a cycle only the collector frees). Nothing where the collector was not paused (a batch's grades)."""
    global _collector_paused
    if _collector_paused:
        gc.freeze()
        gc.enable()
        _collector_paused = False
