"""Benchmark: the CPU one warm submission costs, in the grading process and in its workers, alternating checkouts.

Each round runs, in a new process importing the grader of the checkout measured, one zygote, one grade of
``solutions/`` to warm up, then ``--grades`` more; it reports per submission the grading process's CPU time and its
workers' (the zygote's reaped children, from /proc). Unlike a batch, it leaves out the jobs' start and the class
reports, and it counts only this grading's processes, so other users of a shared machine change it less.

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
import json, os, sys, time
from grader.course import COURSE_FILE, load_course
from grader.grade import grade_submission
from grader.sandbox.client import Zygote

def children_cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime + cstime

course, grades = load_course(COURSE_FILE), int(sys.argv[1])
zygote = Zygote(hide=(course.root,))
grade_submission("solutions", course, zygote=zygote)
own, workers = time.process_time(), children_cpu(zygote.process.pid)
for _ in range(grades):
    grade_submission("solutions", course, zygote=zygote)
print(json.dumps({"grading": (time.process_time() - own) / grades,
                  "workers": (children_cpu(zygote.process.pid) - workers) / grades}))
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
            totals[name].append(figures["grading"] + figures["workers"])
            print(f"round {n + 1} {name:<8} CPU per submission: grading process {figures['grading']:.3f} s, "
                  f"workers {figures['workers']:.3f} s, both {totals[name][-1]:.3f} s", flush=True)
    ratios = [ours / theirs for ours, theirs in zip(totals["ours"], totals["against"])]
    print(f"CPU per warm submission, ours over against: median {statistics.median(ratios):.2f} "
          f"(from {min(ratios):.2f} to {max(ratios):.2f} over {len(ratios)} rounds); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
