"""Benchmark: grade a synthetic class with `grader batch` at --jobs 1 and 2, and the same course with nbgrader autograde.

Prints submissions/second, median and p95 latency per submission, peak memory, and the CPU time the whole
machine spent per submission (every process: batch, jobs, zygotes, workers, the kernel); then grades the same
notebook submissions with `nbgrader autograde` and with our grader side by side, and prints the ratio.

    python benchmarks/batch.py --submissions 200 --nbgrader-students 4
    python benchmarks/batch.py --submissions 100 --jobs 2 --against /tmp/base --rounds 3 --nbgrader-students 0
    python benchmarks/batch.py --submissions 100 --jobs 2 --cluster --nbgrader-students 0

Every batch runs in a new process that imports the grader of the checkout measured (this one, or ``--against``),
and reports the CPU its own process tree used: unlike the whole machine's, that figure does not count what other
users of a shared machine run at the same time.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import descendants
import nbformat

from grader import ROOT
from grader.authoring.stubs import BEGIN, END
from grader.course import course

sys.path[:0] = [str(ROOT / "tests" / "grading" / "corpus"), str(ROOT / "tests" / "grading")]
from variants import VARIANTS  # noqa: E402


def synthetic_class(target: Path, count: int, seed: int = 0, hostile: bool = True) -> None:
    """``count`` submissions: 35% the references, 35% one correct variant, 25% one bug, 5% one hostile module (the
    references instead without ``hostile``: some take a minute each, up to their time limit)."""
    rng = random.Random(seed)
    variants = {kind: [v for v in VARIANTS if v.kind == kind] for kind in ("correct", "buggy")}
    tricks = sorted(p for p in (ROOT / "tests" / "grading" / "hostile").glob("*/*.py") if p.stem in course().modules)
    for n in range(count):
        folder = target / f"student{n:04d}"
        folder.mkdir(parents=True)
        for module in course().modules:
            shutil.copy(ROOT / "solutions" / f"{module}.py", folder / f"{module}.py")
        draw = rng.random()
        if draw >= 0.95:
            trick = rng.choice(tricks)
            if hostile:
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


MEASURE = """
import json, resource, sys, time
from grader.batch import run_batch
from grader.course import COURSE_FILE
source, out, jobs, dask = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] or None
started = time.monotonic()
rows = run_batch(source, out, course_file=COURSE_FILE, jobs=jobs, force=True, dask=dask)
wall = time.monotonic() - started
print(json.dumps({"wall": wall, "latencies": [r["execution_time"] for r in rows if r.get("status") == "graded"],
                  "rows": len(rows), "peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def measure(label: str, source: Path, out: Path, jobs: int, root: Path = ROOT, dask: str | None = None) -> dict:
    """Grade ``source`` with ``root``'s grader in a new process; print and return wall time, latencies, and CPU
    per submission: of the batch's own process tree (the batch, its jobs, their zygotes and workers: ``descendants``)
    and of the whole machine (/proc/stat, which counts every other user too)."""
    cpu_before = machine_cpu()
    env = {**os.environ, "PYTHONPATH": str(root)}
    done, _, tree_cpu = descendants.run([sys.executable, "-c", MEASURE, str(source), str(out), str(jobs), dask or ""],
                                        cwd=root, env=env, check=True, capture_output=True, text=True)
    cpu_after = machine_cpu()
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    wall, rows, latencies = figures["wall"], figures["rows"], sorted(figures["latencies"])
    if len(latencies) < rows:
        print(f"{label}: {rows - len(latencies)} of {rows} submissions could not be graded", flush=True)
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))] if latencies else float("nan")
    print(f"{label:<34} jobs={jobs}  {rows:4d} submissions in {wall:7.1f} s  = {rows / wall:6.2f} subs/s   "
          f"median {statistics.median(latencies) if latencies else float('nan'):.2f} s  p95 {p95:.2f} s   "
          f"peak RSS of a process {figures['peak_mib']:.0f} MiB", flush=True)
    figures["tree_cpu"] = tree_cpu / rows
    line = f"{'':<34} CPU per submission: the batch's processes {figures['tree_cpu']:.3f} s"
    if cpu_before and cpu_after:
        machine = sum(after - before for before, after in zip(cpu_before, cpu_after))
        line += (f"; the whole machine {machine / rows:.3f} s (CPUs busy {100 * machine / (os.cpu_count() * wall):.0f}%, "
                 f"load average {os.getloadavg()[0]:.1f})")
    print(line, flush=True)
    return figures


def side_by_side(source: Path, scratch: Path, jobs: int, against: Path, rounds: int) -> None:
    """Alternate ``rounds`` batches of ours and of the ``against`` checkout; print the ratio of their CPU per
    submission (the batch's process tree) and of their wall times, round by round, and the medians."""
    ratios, walls = [], []
    for n in range(rounds):
        theirs = measure(f"against ({against.name}), round {n + 1}", source, scratch / f"a{n}", jobs, against)
        ours = measure(f"ours, round {n + 1}", source, scratch / f"o{n}", jobs)
        ratios.append(ours["tree_cpu"] / theirs["tree_cpu"])
        walls.append(ours["wall"] / theirs["wall"])
        print(f"round {n + 1}: CPU per submission, ours over against: {ratios[-1]:.2f}; wall: {walls[-1]:.2f}", flush=True)
    print(f"CPU per submission at --jobs {jobs}, ours over against: median {statistics.median(ratios):.2f} "
          f"(from {min(ratios):.2f} to {max(ratios):.2f}); wall time: median {statistics.median(walls):.2f}")


def cluster_against_pool(source: Path, scratch: Path, rounds: int) -> None:
    """Alternate the local pool at --jobs 2 and a Dask cluster of separate processes (a scheduler, two `dask worker`
    of one single-threaded process each) on this machine; print the throughput ratio."""
    from cluster import dask_cluster

    ratios = []
    with dask_cluster(hosts=2, processes=1) as address:
        for n in range(rounds):
            pool = measure(f"local pool, round {n + 1}", source, scratch / f"p{n}", 2)
            dask = measure(f"dask cluster, round {n + 1}", source, scratch / f"d{n}", 2, dask=address)
            ratios.append(pool["wall"] / dask["wall"])
    print(f"throughput, dask cluster over local pool: median {statistics.median(ratios):.2f} "
          f"(from {min(ratios):.2f} to {max(ratios):.2f})")


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
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="the --jobs to measure (default: 1 2)")
    parser.add_argument("--against", type=Path, help="another checkout (e.g. `git worktree add /tmp/base main`): "
                        "alternate its batches with ours at the last --jobs and print the CPU ratio")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of --against and --cluster (default: 2)")
    parser.add_argument("--cluster", action="store_true", help="also alternate the local pool with a Dask cluster "
                        "of separate processes on this machine")
    parser.add_argument("--nbgrader-students", type=int, default=4, help="0 skips the nbgrader comparison")
    args = parser.parse_args()
    descendants.adopt_orphans()
    print(f"machine: {platform.platform()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        synthetic_class(scratch / "class", args.submissions)
        if args.against:
            side_by_side(scratch / "class", scratch, args.jobs[-1], args.against.resolve(), args.rounds)
        else:
            for jobs in args.jobs:
                measure("grader batch (synthetic)", scratch / "class", scratch / f"out{jobs}", jobs)
        if args.cluster:
            cluster_against_pool(scratch / "class", scratch, args.rounds)
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
            print(f"{'nbgrader autograde':<34} {notebooks:4d} submissions in {wall:7.1f} s  = {theirs:6.2f} subs/s")
            print(f"ratio (ours, jobs=2, over nbgrader autograde, same notebooks): {ours['rows'] / ours['wall'] / theirs:.1f}x")


if __name__ == "__main__":
    main()
