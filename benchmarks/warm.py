"""Benchmark: the CPU one warm submission costs the grading process, alternating two checkouts.

Each round runs, in a new process importing the grader of the checkout measured, one zygote, one grade of
``solutions/`` to warm up, then ``--grades`` more, and reports the grading process's CPU time per submission.
Unlike a batch, it leaves out the jobs' start and the class reports, and it counts one process, so other users of a
shared machine change it less. (The workers' CPU is left out: the zygote's reaped children, in /proc, showed 0.01 to
0.09 s per submission, far below the 0.3 s the third round measured inside the worker, so the sandbox's processes
are not all charged there.)

    python benchmarks/warm.py --rounds 4 --grades 6 --against /tmp/base
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = """
import json, sys, time
from grader.course import COURSE_FILE, load_course
from grader.grade import grade_submission
from grader.sandbox.client import Zygote

course, grades = load_course(COURSE_FILE), int(sys.argv[1])
zygote = Zygote(hide=(course.root,))
grade_submission("solutions", course, zygote=zygote)
own = time.process_time()
for _ in range(grades):
    grade_submission("solutions", course, zygote=zygote)
print(json.dumps({"grading": (time.process_time() - own) / grades}))
zygote.close()
"""


def measure(root: Path, grades: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(grades)], cwd=root, env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--grades", type=int, default=6, help="submissions measured per round, after one to warm up")
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (e.g. main's worktree)")
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    totals: dict[str, list[float]] = {"ours": [], "against": []}
    for n in range(args.rounds):
        for name, root in (("against", args.against.resolve()), ("ours", ROOT)):
            figures = measure(root, args.grades)
            totals[name].append(figures["grading"])
            print(f"round {n + 1} {name:<8} CPU per submission of the grading process {figures['grading']:.3f} s",
                  flush=True)
    ratios = [ours / theirs for ours, theirs in zip(totals["ours"], totals["against"])]
    print(f"grading process's CPU per warm submission, ours over against: median {statistics.median(ratios):.2f} "
          f"(from {min(ratios):.2f} to {max(ratios):.2f} over {len(ratios)} rounds); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
