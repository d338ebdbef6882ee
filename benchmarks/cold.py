"""Benchmark: a cold `grader grade` of a correct submission against a cold `python -c "import torch"`, alternating.

Each round starts both commands as new processes, one after the other, and prints their wall times and the ratio
(the grade over the import: the target is at most 1.5); the summary is the median of the rounds' ratios. The CPU
time of each command's processes (the grade's: it, its zygote and its worker) is printed too: on a shared machine
it drifts less than the wall time, and where other users keep the CPUs busy, the wall time of a grade whose two
processes import torch at once is no shorter than their CPU time. With
``--against DIR`` (another checkout, e.g. ``git worktree add /tmp/base main``) each round also grades with that
checkout's grader, and the summary gives its ratio beside ours.

    python benchmarks/cold.py --rounds 7 [--against /tmp/base]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import descendants

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], root: Path) -> tuple[float, float]:
    """Wall and CPU seconds (of the process and every process it started, its zygote and workers included) of a new
    process running ``command`` in ``root``, importing that checkout's grader."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    _, wall, cpu = descendants.run(command, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another checkout whose grader is timed in the same rounds")
    args = parser.parse_args()
    descendants.adopt_orphans()
    print(f"machine: {platform.platform()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    roots = {"ours": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    ratios: dict[str, list[float]] = {name: [] for name in roots}
    cpu_ratios: dict[str, list[float]] = {name: [] for name in roots}
    with tempfile.TemporaryDirectory() as scratch:
        grade = [sys.executable, "-m", "grader", "grade", "solutions", "--out", str(Path(scratch) / "results.json")]
        for warmup in roots.values():  # the suites' drawn cases are kept in a file: the first grade writes it
            timed(grade, warmup)
        for n in range(args.rounds):
            torch, torch_cpu = timed([sys.executable, "-c", "import torch"], ROOT)
            line = f"round {n + 1}: import torch {torch:5.2f} s (CPU {torch_cpu:4.2f} s)"
            for name, root in roots.items():
                wall, cpu = timed(grade, root)
                ratios[name].append(wall / torch)
                cpu_ratios[name].append(cpu / torch_cpu)
                line += f"   grade ({name}) {wall:5.2f} s = {wall / torch:4.2f}x (CPU {cpu:4.2f} s = {cpu / torch_cpu:4.2f}x)"
            print(line, flush=True)
    for name, values in ratios.items():
        print(f"cold grade over cold import torch ({name}, {roots[name]}): median {statistics.median(values):.2f}x "
              f"(from {min(values):.2f} to {max(values):.2f}x over {len(values)} rounds); CPU time: median "
              f"{statistics.median(cpu_ratios[name]):.2f}x")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
