"""Benchmark: a student's check loops in a handout, against a cold `python -c "import torch"` in the same sitting.

Releases the handout (`grader release`), fills its exercises with the references (every check runs its whole body)
and, in each round, after a cold import of torch, times as new processes:

* ``python -m pytest tests/public -m softmax``: one exercise, after every edit (goal: at most 1.3x, CPU);
* ``python -m pytest tests/public``: all eight, before a push (goal: at most 1.6x, CPU);

then the notebook's check cell (``checking.run_in_notebook``, what the cell calls) in a kernel that has already
imported torch: a new interpreter imports torch, defines the exercise's code as its solution cell would, then runs
the cell twice, each timed on the wall clock (goal: under 1 s, the first run included). ``--against DIR`` (another
checkout, e.g. ``git clone --shared`` of main at the commit before a change) releases that checkout's handout too
and times it in the same rounds.

    python benchmarks/public.py --rounds 5 [--against /tmp/base-main]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from handouts import ROOT, Sitting, filled_handout, machine

EXERCISE = "softmax"
# A kernel that has imported torch (the notebook's set-up cell), with the exercise's code defined in its namespace
# (the solution cell), then the public checks' cell twice: the wall seconds of each, as JSON.
KERNEL = """
import contextlib, io, json, linecache, sys, time
import torch
text = open(sys.argv[2], encoding="utf-8").read()  # run as a kernel runs a cell: its text kept for tracebacks
linecache.cache["<cell 1>"] = (len(text), None, text.splitlines(True), "<cell 1>")
namespace = {"__name__": "__main__"}
exec(compile(text, "<cell 1>", "exec"), namespace)
sys.path.insert(0, sys.argv[1])
seconds = []
for _ in range(2):
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        import checking
        status = checking.run_in_notebook(sys.argv[3], namespace)
    seconds.append(time.perf_counter() - started)
    assert status == 0, status
print(json.dumps(seconds))
"""


def notebook_cell(handout: Path) -> list[float]:
    """Wall seconds of the check cell's first and second run in a kernel that has imported torch."""
    done = subprocess.run([sys.executable, "-c", KERNEL, str(handout / "tests" / "public"),
                           str(handout / "exercises" / f"{EXERCISE}.py"), EXERCISE],
                          cwd=handout, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout whose handout is timed in the same rounds")
    args = parser.parse_args()
    print(machine())
    roots = {"ours": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    sitting = Sitting()
    cells: dict[str, list[list[float]]] = {name: [] for name in roots}
    with tempfile.TemporaryDirectory() as scratch:
        handouts = {name: filled_handout(root, Path(scratch) / name) for name, root in roots.items()}
        commands = {}
        for name, handout in handouts.items():
            commands[f"-m {EXERCISE} ({name})"] = ([sys.executable, "-m", "pytest", "tests/public", "-m", EXERCISE],
                                                  handout, None)
            commands[f"all ({name})"] = ([sys.executable, "-m", "pytest", "tests/public"], handout, None)
        sitting.warm_up(commands)
        for n in range(args.rounds):
            sitting.round(n + 1, commands)
            for name, handout in handouts.items():
                cells[name].append(notebook_cell(handout))
                print(f"         notebook check cell ({name}): first run {cells[name][-1][0]:.2f} s, "
                      f"then {cells[name][-1][1]:.2f} s (wall)", flush=True)
    sitting.summary()
    for name, runs in cells.items():
        firsts, seconds = [run[0] for run in runs], [run[1] for run in runs]
        print(f"notebook check cell ({name}): first run median {statistics.median(firsts):.2f} s "
              f"({min(firsts):.2f} to {max(firsts):.2f} s), again median {statistics.median(seconds):.2f} s (wall)")


if __name__ == "__main__":
    main()
