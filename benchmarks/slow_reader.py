"""Benchmark: an honest classmate's result alone, and beside a student whose notebooks are slow to read, in
`grader batch --jobs 2`, on a first run and on a rerun with nothing changed.

The attacker hands in a notebook per assignment (eight) in nbgrader's layout (``submitted/<student>/<assignment>/``), each as large as
the intake lets a notebook be and made of cells that intake scans one by one, so that reading each runs into
``grading.intake.seconds``. Each round grades the class {honest} and the class {honest, attacker} into fresh folders,
then grades each again unchanged, and prints, for each: when the honest student's results file was written (seconds
after the batch started) and how long the batch took. The figures compared are "beside / alone": the first run's
honest result, and the rerun's end (a rerun writes no result: the class's reports are its result). Give ``--against``
another checkout (main before the change: `git worktree add /tmp/base main`) to run its batches in the same rounds.

    PYTHONPATH=. python benchmarks/slow_reader.py --rounds 2 --against /tmp/base
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.course import course

REPO = Path(__file__).resolve().parent.parent


def slow_notebook(path: Path, megabytes: float) -> None:
    """A notebook of about ``megabytes`` of code cells that each carry an nbgrader grade_id of softmax but none is its
    solution cell: intake scans every cell for a stripped solution, cell by cell."""
    cell = {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "softmax_note"}}, "source": "def softmax(): pass",
            "outputs": [], "execution_count": None}
    count = int(megabytes * 2**20 / len(json.dumps(cell)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell] * count}))


def make_class(folder: Path, attacker: bool, megabytes: float) -> None:
    shutil.copytree(REPO / "solutions", folder / "honest")
    if attacker:
        for name in course().assignment_modules():
            slow_notebook(folder / "mallory" / name / f"{name}.ipynb", megabytes)


def batch(checkout: Path, source: Path, out: Path) -> tuple[float, float]:
    """Run `grader batch --jobs 2` of ``checkout``; the seconds until the honest student's results file was written,
    and until the batch ended."""
    started = time.time()
    run = subprocess.run([sys.executable, "-m", "grader", "batch", str(source), "--out", str(out), "--jobs", "2"],
                         cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)}, capture_output=True, text=True)
    ended = time.time() - started
    if run.returncode:
        sys.exit(f"grader batch failed ({run.returncode}): {run.stderr[-2000:]}")
    honest = out / "results" / "honest.json"
    if json.loads(honest.read_text())["score"] != 100:
        sys.exit(f"the honest student did not get full marks: {honest.read_text()[:500]}")
    return honest.stat().st_mtime - started, ended


def round_of(checkout: Path, work: Path, megabytes: float) -> dict[str, float]:
    """Alone and beside the attacker: the first run's honest result and the rerun's end, in seconds."""
    figures = {}
    for label, attacker in (("alone", False), ("beside", True)):
        shutil.rmtree(work, ignore_errors=True)
        make_class(work / "class", attacker, megabytes)
        honest, first = batch(checkout, work / "class", work / "out")
        _, rerun = batch(checkout, work / "class", work / "out")
        figures |= {f"{label} first": honest, f"{label} rerun": rerun}
        print(f"  {checkout.name:<14} {label:<6}  first run: honest's result at {honest:6.1f} s (batch {first:6.1f} s)"
              f"   rerun: {rerun:6.1f} s", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--megabytes", type=float, default=19.5, help="size of each slow notebook (at most the "
                        "course's max_total_mb, 20)")
    parser.add_argument("--against", type=Path, help="another checkout, measured in the same rounds")
    args = parser.parse_args()
    checkouts = [REPO] + ([args.against.resolve()] if args.against else [])
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {len(course().assignment_modules())} "
          f"notebooks of {args.megabytes:g} MB")
    ratios: dict[Path, dict[str, list[float]]] = {c: {"first": [], "rerun": []} for c in checkouts}
    with tempfile.TemporaryDirectory(prefix="slow-reader-") as work:
        for n in range(args.rounds):
            print(f"round {n + 1}", flush=True)
            for checkout in checkouts:
                figures = round_of(checkout, Path(work) / checkout.name, args.megabytes)
                for run in ("first", "rerun"):
                    ratios[checkout][run].append(figures[f"beside {run}"] / figures[f"alone {run}"])
    for checkout, runs in ratios.items():
        print(f"{checkout}: beside / alone, " + "; ".join(
            f"{run}: median {statistics.median(r):.2f}x ({min(r):.2f}x to {max(r):.2f}x)" for run, r in runs.items()))


if __name__ == "__main__":
    main()
