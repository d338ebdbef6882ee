"""Benchmark: `grader ci` on a filled handout (the workflow's grade step) against a cold `python -c "import torch"`.

Releases the handout (`grader release`), fills its exercises with the references and, in each round, after a cold
import of torch, times ``python -m grader ci HANDOUT`` as a new process (wall, the goal: at most 1.6x; and the CPU
of every process it started, its zygote and workers included), with the GitHub variables of a workflow run
(``GITHUB_ACTIONS``, ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``) so that it writes everything it writes there.
``--against DIR`` (another checkout, e.g. ``git clone --shared`` of main at the commit before a change) times that
checkout's `grader ci` on its own handout in the same rounds.

    python benchmarks/ci.py --rounds 5 [--against /tmp/base-main]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from handouts import ROOT, Sitting, filled_handout, machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout whose `grader ci` is timed in the same rounds")
    args = parser.parse_args()
    print(machine())
    roots = {"ours": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    sitting = Sitting()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        commands = {}
        for name, root in roots.items():
            handout = filled_handout(root, scratch / name)
            env = {**os.environ, "PYTHONPATH": str(root), "GITHUB_ACTIONS": "true",
                   "GITHUB_OUTPUT": str(scratch / f"{name}-output"), "GITHUB_STEP_SUMMARY": str(scratch / f"{name}-summary")}
            commands[f"grader ci ({name})"] = ([sys.executable, "-m", "grader", "ci", str(handout),
                                                "--course", str(root / "course.yaml")], root, env)
        sitting.warm_up(commands)
        for n in range(args.rounds):
            sitting.round(n + 1, commands)
    sitting.summary()


if __name__ == "__main__":
    main()
