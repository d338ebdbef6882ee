"""Benchmark: a cold `grader grade` of a correct submission against a cold `python -c "import torch"`, alternating.

Each round starts both commands as new processes, one after the other, and prints their wall times and the ratio
(the grade over the import: the target is at most 1.5); the summary is the median of the rounds' ratios. With
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wall(command: list[str], root: Path) -> float:
    """Seconds a new process running ``command`` (in ``root``, importing that checkout's grader) takes to finish."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    started = time.monotonic()
    subprocess.run(command, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another checkout whose grader is timed in the same rounds")
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    roots = {"ours": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    ratios: dict[str, list[float]] = {name: [] for name in roots}
    with tempfile.TemporaryDirectory() as scratch:
        out = str(Path(scratch) / "results.json")
        for warmup in roots.values():  # the suites' drawn cases are kept in a file: the first grade writes it
            wall([sys.executable, "-m", "grader", "grade", "solutions", "--out", out], warmup)
        for n in range(args.rounds):
            torch = wall([sys.executable, "-c", "import torch"], ROOT)
            line = f"round {n + 1}: import torch {torch:5.2f} s"
            for name, root in roots.items():
                grade = wall([sys.executable, "-m", "grader", "grade", "solutions", "--out", out], root)
                ratios[name].append(grade / torch)
                line += f"   grade ({name}) {grade:5.2f} s = {grade / torch:4.2f}x"
            print(line, flush=True)
    for name, values in ratios.items():
        print(f"cold grade over cold import torch ({name}, {roots[name]}): median {statistics.median(values):.2f}x "
              f"(from {min(values):.2f} to {max(values):.2f}x over {len(values)} rounds)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
