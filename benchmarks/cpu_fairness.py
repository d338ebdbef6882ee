"""Benchmark: a correct classmate's grading alone, and beside a CPU hog (tests/grading/hostile/cpu_hog), in `grader batch --jobs 2`.

Each round grades the class {ada} and then the class {ada, hog} with the grader that `python -m grader` finds (set
PYTHONPATH to choose the checkout), and prints ada's grading time (results.json's execution_time) in both; at the end,
the median of "beside / alone" over the rounds. SECURITY.md promises this ratio stays within 2x.

    PYTHONPATH=. python benchmarks/cpu_fairness.py --rounds 3
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

REPO = Path(__file__).resolve().parent.parent
HOG = REPO / "tests" / "grading" / "hostile" / "cpu_hog" / "scores.py"
RELENTLESS = True  # the hog's processes spin without pausing: the most CPU it can take from the machine


def make_class(folder: Path, with_hog: bool) -> None:
    shutil.copytree(REPO / "solutions", folder / "ada")
    if with_hog:
        shutil.copytree(REPO / "solutions", folder / "hog")
        hog = HOG.read_text(encoding="utf-8").replace("PARAMS = {}\n", f"PARAMS = {{'relentless': {RELENTLESS}}}\n", 1)
        (folder / "hog" / "scores.py").write_text(hog, encoding="utf-8")


def grade_class(work: Path, label: str, with_hog: bool) -> dict[str, dict]:
    source, out = work / f"{label}-class", work / f"{label}-out"
    make_class(source, with_hog)
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "grader", "batch", str(source), "--out", str(out), "--jobs", "2"],
                         capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"grader batch failed ({run.returncode}): {run.stderr[-2000:]}")
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    print(f"  {label:<7} batch {time.monotonic() - started:6.1f} s   "
          + "   ".join(f"{name}: {r['execution_time']:6.1f} s, score {r['score']:g}" for name, r in sorted(results.items())),
          flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import grader  # noqa: PLC0415 - only to say which checkout is measured

    print(f"grader at {Path(grader.__file__).parent.parent}, {os.cpu_count()} CPUs")
    ratios = []
    with tempfile.TemporaryDirectory(prefix="cpu-fairness-") as work:
        os.chmod(work, 0o755)
        for n in range(args.rounds):
            print(f"round {n + 1}", flush=True)
            alone = grade_class(Path(work), f"alone{n}", with_hog=False)["ada"]["execution_time"]
            beside = grade_class(Path(work), f"beside{n}", with_hog=True)["ada"]["execution_time"]
            ratios.append(beside / alone)
            print(f"  ada beside the hog / alone: {beside / alone:.2f}x", flush=True)
    print(f"median over {len(ratios)} rounds: {statistics.median(ratios):.2f}x (promise: within 2x)")


if __name__ == "__main__":
    main()
