"""Benchmark: the CPU one warm submission costs, alternating two checkouts.

Each round runs, in a new process importing the grader of the checkout measured, one zygote, one grade of
``solutions/`` to warm up, then ``--grades`` more, and reports per submission the CPU time of the grading process and
of the sandboxed workers that ran the submission's code, with the zygote's work for them (forking, reaping): what the
zygote reaped is read from its /proc entry, and a worker's inner process, orphaned when its supervisor is killed, is
adopted and reaped by the measuring process (``descendants``). A checkout from before ``grader.sandbox.host`` (9757a51,
where issue 31 started) is measured too. Unlike a batch, it leaves out the jobs' start and the
class reports, and it counts only the grading's own processes, so other users of a shared machine change it less.

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
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
import descendants
from grader.course import COURSE_FILE, load_course
from grader.grade import grade_submission
try:
    from grader.sandbox.host.client import Zygote
except ImportError:  # a checkout from before grader.sandbox.host (9757a51, the issue's start)
    from grader.sandbox.zygote import Zygote

def workers_cpu(zygote):
    # the zygote's CPU and its reaped children's (/proc: utime, stime, cutime, cstime), and the orphans we reaped
    ticks = descendants.stat(zygote.process.pid)[11:15]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(map(int, ticks)) / os.sysconf("SC_CLK_TCK") + usage.ru_utime + usage.ru_stime

descendants.adopt_orphans()
course, grades = load_course(COURSE_FILE), int(sys.argv[1])
zygote = Zygote(hide=(course.root,))
grade_submission("solutions", course, zygote=zygote)
keep = descendants.children()
descendants.reap(keep)
own, workers = time.process_time(), workers_cpu(zygote)
for _ in range(grades):
    grade_submission("solutions", course, zygote=zygote)
descendants.reap(keep)
print(json.dumps({"grading": (time.process_time() - own) / grades, "workers": (workers_cpu(zygote) - workers) / grades}))
zygote.close()
"""


def measure(root: Path, grades: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(grades), str(ROOT / "benchmarks")], cwd=root, env=env,
                          check=True, capture_output=True, text=True)
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
            print(f"round {n + 1} {name:<8} CPU per submission: grading process {figures['grading']:.3f} s, its workers "
                  f"{figures['workers']:.3f} s, together {totals[name][-1]:.3f} s", flush=True)
    ratios = [ours / theirs for ours, theirs in zip(totals["ours"], totals["against"])]
    print(f"CPU per warm submission (grading process and workers), ours over against: median "
          f"{statistics.median(ratios):.2f} (from {min(ratios):.2f} to {max(ratios):.2f} over {len(ratios)} rounds); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
