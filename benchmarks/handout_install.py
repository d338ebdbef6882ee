"""Benchmark: a student's install from the handout alone, in a fresh virtual environment, and what it downloads.

Builds the handout (`grader release`), makes a fresh venv (`python3 -m venv`, no system packages), downloads what
the handout's `requirements.txt` asks for (the download size a student pays: the figure the handout's README
states), installs it from those files, then, with that venv only: runs the public checks on the stubs (every
exercise is one "not implemented yet" line) and on the references (all pass), and executes one generated notebook
with its solution cell filled in (every cell, the public checks' cell and the heatmap among them). Each step is
checked; the script exits non-zero on the first that fails, and prints the figures:

    PYTHONPATH=. python benchmarks/handout_install.py [--notebook 02_softmax] [--keep DIR]

pip reads this machine's configuration as a student's pip would read theirs (here: find-links /opt/wheels, where
the CPU build of torch lies, and PyPI); an index that cannot be reached (PyTorch's, on a machine without access to
it) costs one short time-out (``--index-timeout``), never the install. tests/grading/test_handout_install.py runs
the same steps.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "course-org/attention-grader"


def run(*args, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def must(process: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if process.returncode != 0:
        raise SystemExit(f"{what} failed (exit {process.returncode}):\n{(process.stdout + process.stderr)[-4000:]}")
    return process


def fill_solution_cell(notebook: Path, module: str) -> None:
    """The notebook's solution cell holds the reference (what a student who finished would have written)."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in data["cells"]:
        if cell["cell_type"] == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            cell["source"] = (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
    notebook.write_text(json.dumps(data), encoding="utf-8")


def install(work: Path, notebook_name: str = "02_softmax", index_timeout: float = 5) -> dict:
    """Every step in ``work``; returns the figures (seconds per step, download size)."""
    figures: dict = {}
    handout, venv, wheels = work / "handout", work / "venv", work / "wheels"
    clock = time.perf_counter()
    must(run(sys.executable, "-m", "grader", "release", handout, "--grader-repository", REPOSITORY, cwd=ROOT), "release")
    must(run(sys.executable, "-m", "venv", venv), "python3 -m venv")
    python = venv / "bin" / "python"
    figures["venv_s"] = time.perf_counter() - clock

    clock = time.perf_counter()
    pip = [python, "-m", "pip", "--timeout", str(index_timeout), "--retries", "0", "--disable-pip-version-check"]
    must(run(*pip, "download", "-r", handout / "requirements.txt", "-d", wheels), "pip download -r requirements.txt")
    files = sorted(wheels.iterdir())
    figures["download_mb"] = sum(f.stat().st_size for f in files) / 1e6
    figures["torch_mb"] = sum(f.stat().st_size for f in files if f.name.startswith("torch-")) / 1e6
    figures["files"] = len(files)
    figures["download_s"] = time.perf_counter() - clock
    torch = [f.name for f in files if f.name.startswith("torch-")]
    if not torch or "+cpu" not in torch[0] and "linux" in sys.platform:
        raise SystemExit(f"the handout's requirements did not take the CPU build of torch on Linux: {torch}")
    if any(re.match(r"nvidia_", f.name) for f in files):
        raise SystemExit("the handout's requirements pulled CUDA libraries")

    clock = time.perf_counter()
    must(run(*pip, "install", "--no-index", "--find-links", wheels, "-r", handout / "requirements.txt"), "pip install")
    figures["install_s"] = time.perf_counter() - clock

    clock = time.perf_counter()
    stubs = run(python, "-m", "pytest", "tests/public", cwd=handout)
    table = stubs.stdout.split("public checks per exercise", 1)[-1]
    if stubs.returncode != 1 or table.count("not implemented yet") != len(list((handout / "exercises").glob("[!_]*.py"))):
        raise SystemExit(f"the public checks on the stubs:\n{stubs.stdout[-3000:]}{stubs.stderr[-2000:]}")
    for path in (ROOT / "solutions").glob("*.py"):
        shutil.copy(path, handout / "exercises" / path.name)
    must(run(python, "-m", "pytest", "tests/public", "-q", cwd=handout), "the public checks on the references")
    figures["public_checks_s"] = time.perf_counter() - clock

    clock = time.perf_counter()
    [notebook] = (handout / "notebooks" / notebook_name).glob("*.ipynb")
    fill_solution_cell(notebook, notebook_name.split("_", 1)[1])
    must(run(venv / "bin" / "jupyter", "nbconvert", "--to", "notebook", "--execute", "--output", "executed.ipynb",
             notebook, cwd=notebook.parent), f"executing {notebook.name}")
    executed = json.loads((notebook.parent / "executed.ipynb").read_text(encoding="utf-8"))
    outputs = "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
                      for cell in executed["cells"] if cell["cell_type"] == "code" for o in cell.get("outputs", []))
    if "public checks per exercise" not in outputs or not any(
            "image/png" in o.get("data", {}) for cell in executed["cells"] for o in cell.get("outputs", [])):
        raise SystemExit("the notebook ran, but its public checks' table or its heatmap is missing")
    figures["notebook_s"] = time.perf_counter() - clock
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", default="02_softmax", help="the notebook to execute (default: %(default)s)")
    parser.add_argument("--index-timeout", type=float, default=5, help="pip's time-out per index request, s")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temporary folder")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="handout-install-"))
    try:
        figures = install(work, args.notebook, args.index_timeout)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"download: {figures['download_mb']:.1f} MB in {figures['files']} files (torch {figures['torch_mb']:.1f} MB)")
    for step in ("venv_s", "download_s", "install_s", "public_checks_s", "notebook_s"):
        print(f"{step.removesuffix('_s'):>14}: {figures[step]:6.1f} s")


if __name__ == "__main__":
    main()
