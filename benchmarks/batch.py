"""Benchmark: grade a synthetic class with `grader batch` at --jobs 1 and 2, and the same course with nbgrader autograde.

Prints submissions/second, median and p95 latency per submission, peak memory, and the CPU time the whole
machine spent per submission (every process: batch, jobs, zygotes, workers, the kernel); then grades the same
notebook submissions with `nbgrader autograde` and with our grader side by side, and prints the ratio.

    python benchmarks/batch.py --submissions 200 --nbgrader-students 4
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from grader import ROOT
from grader.authoring.stubs import BEGIN, END
from grader.batch import run_batch
from grader.course import COURSE_FILE, MODULES, course

sys.path.insert(0, str(ROOT / "tests" / "grader" / "corpus"))
from variants import VARIANTS  # noqa: E402


def synthetic_class(target: Path, count: int, seed: int = 0) -> None:
    """``count`` submissions: 35% the references, 35% one correct variant, 25% one bug, 5% one hostile module."""
    rng = random.Random(seed)
    variants = {kind: [v for v in VARIANTS if v.kind == kind] for kind in ("correct", "buggy")}
    hostile = sorted(p for p in (ROOT / "tests" / "grader" / "hostile").glob("*/*.py") if p.stem in MODULES)
    for n in range(count):
        folder = target / f"student{n:04d}"
        folder.mkdir(parents=True)
        for module in MODULES:
            shutil.copy(ROOT / "solutions" / f"{module}.py", folder / f"{module}.py")
        draw = rng.random()
        if draw >= 0.95 and hostile:
            trick = rng.choice(hostile)
            shutil.copy(trick, folder / trick.name)
        elif draw >= 0.35:
            variant = rng.choice(variants["correct" if draw < 0.7 else "buggy"])
            (folder / f"{variant.module}.py").write_text(variant.source(), encoding="utf-8")


def machine_cpu() -> tuple[float, float] | None:
    """CPU seconds the whole machine has spent (user, system) since boot, from /proc/stat; None elsewhere."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return (fields[0] + fields[1]) / ticks, (fields[2] + fields[5] + fields[6]) / ticks  # user+nice; system+irq+softirq


def measure(label: str, source: Path, out: Path, jobs: int) -> float:
    started, cpu_before = time.monotonic(), machine_cpu()
    rows = run_batch(source, out, course_file=COURSE_FILE, jobs=jobs, force=True)
    wall, cpu_after = time.monotonic() - started, machine_cpu()
    latencies = sorted(r["execution_time"] for r in rows if r.get("status") == "graded")
    if len(latencies) < len(rows):
        print(f"{label}: {len(rows) - len(latencies)} of {len(rows)} submissions could not be graded", flush=True)
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))] if latencies else float("nan")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{label:<28} jobs={jobs}  {len(rows):4d} submissions in {wall:7.1f} s  = {len(rows) / wall:6.2f} subs/s   "
          f"median {statistics.median(latencies) if latencies else float('nan'):.2f} s  p95 {p95:.2f} s   "
          f"peak RSS of a process {peak:.0f} MiB", flush=True)
    if cpu_before and cpu_after:
        user, system = (after - before for before, after in zip(cpu_before, cpu_after))
        cores = os.cpu_count()  # /proc/stat's totals are over every CPU of the machine
        print(f"{'':<28} machine CPU per submission {(user + system) / len(rows):.2f} s (user {user / len(rows):.2f}, "
              f"system {system / len(rows):.2f}); all {cores} CPUs busy {100 * (user + system) / (cores * wall):.0f}% "
              f"of the time", flush=True)
    return len(rows) / wall


def nbgrader_class(root: Path, students: int) -> None:
    """A copy of the nbgrader course, released, with ``students`` students handing in every notebook."""
    shutil.copytree(course().nbgrader_dir, root, ignore=shutil.ignore_patterns("gradebook.db", "release", "submitted", "autograded", "feedback"))
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "*", "--force"], cwd=root, check=True, capture_output=True)
    for n in range(students):
        for module in course().modules:
            assignment = course().notebook_name(module)
            notebook = nbformat.read(root / "release" / assignment / f"{assignment}.ipynb", as_version=4)
            code = "".join(line for line in (ROOT / "solutions" / f"{module}.py").read_text().splitlines(keepends=True)
                           if line.strip() not in (BEGIN, END))
            for cell in notebook.cells:
                if cell.metadata.get("nbgrader", {}).get("grade_id") == f"{module}_solution":
                    cell.source = code
            path = root / "submitted" / f"student{n:02d}" / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(notebook, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--nbgrader-students", type=int, default=4, help="0 skips the nbgrader comparison")
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        synthetic_class(scratch / "class", args.submissions)
        for jobs in (1, 2):
            measure("grader batch (synthetic)", scratch / "class", scratch / f"out{jobs}", jobs)
        if args.nbgrader_students:
            nbgrader = scratch / "nbgrader"
            nbgrader_class(nbgrader, args.nbgrader_students)
            # each notebook is a submission of its own (its assignment) for both graders
            ours = measure("grader batch (notebooks)", nbgrader / "submitted", scratch / "outnb", 2)
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "nbgrader", "autograde", "*"], cwd=nbgrader, check=True, capture_output=True)
            wall = time.monotonic() - started
            notebooks = args.nbgrader_students * len(course().modules)
            theirs = notebooks / wall
            print(f"{'nbgrader autograde':<28} {notebooks:4d} submissions in {wall:7.1f} s  = {theirs:6.2f} subs/s")
            print(f"ratio (ours, jobs=2, over nbgrader autograde, same notebooks): {ours / theirs:.1f}x")


if __name__ == "__main__":
    main()
