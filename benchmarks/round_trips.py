"""Benchmark: the CPU a call into the worker costs, by how many calls share its frame.

Each round starts a worker on the references (``solutions/``), sends ``--calls`` calls of softmax on a small tensor in
frames of 1, 2, 5, 10 and 20 calls, in turn, each size in a worker of its own, and reports per call the CPU of the
grading process and of the worker (read from the zygote, which reaps it: its children's CPU). A frame's first call
costs the most (the worker wakes for it, cold); the others ride along: what sending a check's calls ahead in one frame
saves (``grader/sandbox/host/ahead.py``).

    python benchmarks/round_trips.py --rounds 3 --calls 600
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time
from pathlib import Path

import descendants
import torch

from grader.course import COURSE_FILE, load_course
from grader.sandbox.host.client import WorkerSession, Zygote

ROOT = Path(__file__).resolve().parent.parent

SIZES = (1, 2, 5, 10, 20)
SOFTMAX = {"module": "softmax", "path": ["softmax"]}


def workers_cpu(zygote: Zygote) -> float:
    """The zygote's CPU and that of the children it reaped (the workers), and of the orphans this process reaped."""
    ticks = descendants.stat(zygote.process.pid)[11:15]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(map(int, ticks)) / os.sysconf("SC_CLK_TCK") + usage.ru_utime + usage.ru_stime


def measure(zygote: Zygote, course, size: int, calls: int) -> tuple[float, float]:
    """CPU per call of the grading process and of the worker, ``calls`` calls in frames of ``size``."""
    session = WorkerSession(zygote, str(ROOT / "solutions"), course.grading.limits, modules=("softmax",))
    x = torch.randn(3, 4)
    session.run_many([(SOFTMAX, (x,), None, {})] * size)  # started, imported, warm
    own, workers = time.process_time(), workers_cpu(zygote)
    for _ in range(calls // size):
        session.run_many([(SOFTMAX, (x,), None, {})] * size)
    own = time.process_time() - own
    session.close()
    time.sleep(0.2)  # the zygote reaps the worker
    return own / calls, (workers_cpu(zygote) - workers) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=600)
    args = parser.parse_args()
    descendants.adopt_orphans()
    course = load_course(COURSE_FILE)
    zygote = Zygote(hide=(course.root,))
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    figures: dict[int, list[tuple[float, float]]] = {size: [] for size in SIZES}
    try:
        for _ in range(args.rounds):
            for size in SIZES:
                figures[size].append(measure(zygote, course, size, args.calls))
    finally:
        zygote.close()
    for size in SIZES:
        own = statistics.median(f[0] for f in figures[size]) * 1e6
        worker = statistics.median(f[1] for f in figures[size]) * 1e6
        print(f"{size:2d} calls a frame: {own:4.0f} us of the grading process and {worker:4.0f} us of the worker per "
              f"call, {own + worker:4.0f} us in all (medians of {args.rounds} rounds)")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
