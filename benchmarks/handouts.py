"""What the benchmarks of the students' loops share: a released handout, filled in, and the side-by-side rounds.

``filled_handout(root, folder)`` releases the course of the checkout ``root`` (its own `grader release`) into
``folder`` and copies the references into its ``exercises/``: a student who has finished, so that every check
runs its whole body. ``Sitting`` times commands as new processes, each round starting with a cold
``python -c "import torch"``, and prints each command's ratio to it (wall and CPU, every process counted), then
the medians.
"""
from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import descendants

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "school/attention-grader"
IMPORT_TORCH = [sys.executable, "-c", "import torch"]


def filled_handout(root: Path, folder: Path) -> Path:
    """The handout that the checkout ``root`` releases, written to ``folder``, with the references as the student's
    exercises."""
    subprocess.run([sys.executable, "-m", "grader", "release", str(folder), "--grader-repository", REPOSITORY,
                    "--force"], cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, check=True,
                   stdout=subprocess.DEVNULL)
    for reference in (root / "solutions").glob("*.py"):
        if (folder / "exercises" / reference.name).is_file():
            shutil.copyfile(reference, folder / "exercises" / reference.name)
    return folder


def machine() -> str:
    return (f"machine: {platform.platform()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.2f}")


@dataclass
class Sitting:
    """Rounds of commands, each timed against the cold import of torch that starts its round."""
    wall: dict[str, list[float]] = field(default_factory=dict)  # name -> wall ratios, one per round
    cpu: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self):
        descendants.adopt_orphans()

    def warm_up(self, commands: dict[str, tuple[list[str], Path, dict | None]]) -> None:
        """Run each command once, untimed: what a first run writes (bytecode, the suites' drawn cases) is there for
        a student's next run too."""
        for command, cwd, env in commands.values():
            subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def round(self, number: int, commands: dict[str, tuple[list[str], Path, dict | None]]) -> None:
        """Time ``import torch``, then each named (command, folder, environment), and print the round's line."""
        _, torch_wall, torch_cpu = descendants.run(IMPORT_TORCH, check=True)
        line = f"round {number}: import torch {torch_wall:5.2f} s (CPU {torch_cpu:4.2f} s)"
        for name, (command, cwd, env) in commands.items():
            _, wall, cpu = descendants.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL)
            self.wall.setdefault(name, []).append(wall / torch_wall)
            self.cpu.setdefault(name, []).append(cpu / torch_cpu)
            line += f"   {name} {wall:5.2f} s = {wall / torch_wall:4.2f}x (CPU {cpu:4.2f} s = {cpu / torch_cpu:4.2f}x)"
        print(line, flush=True)

    def summary(self) -> None:
        for name, ratios in self.wall.items():
            print(f"{name} over cold import torch: wall median {statistics.median(ratios):.2f}x "
                  f"({min(ratios):.2f} to {max(ratios):.2f}x), CPU median {statistics.median(self.cpu[name]):.2f}x "
                  f"({min(self.cpu[name]):.2f} to {max(self.cpu[name]):.2f}x) over {len(ratios)} rounds")
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
