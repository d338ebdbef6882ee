"""Benchmark: what the handout's workflow installs to grade (the grader, without extras), against torch and pytest.

In a fresh virtual environment (no system packages), installs torch and pytest at the project's pins first, as the
workflow does before it fetches the grader, then the grader from the checkout, not editable and without extras, as
the workflow's "Install the grader" step does. For each step it prints the seconds and the growth of the
environment's site-packages (bytes of its files). The goal: the grader's step adds at most 50 MB. ``--against DIR``
(another checkout, e.g. ``git clone --shared`` of main at the commit before a change) does the same in a second
environment, in the same sitting.

    python benchmarks/install.py [--against /tmp/base-main]

pip reads this machine's configuration (its package index, its find-links where the CPU build of torch lies, its
cache): the seconds depend on what is cached, the bytes do not.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from handouts import ROOT, machine

sys.path.insert(0, str(ROOT))
from grader.authoring.release import pinned  # noqa: E402

MB = 1e6


def size(folder: Path) -> int:
    """Bytes of the files under ``folder``."""
    return sum(os.lstat(Path(top) / name).st_size for top, _, names in os.walk(folder) for name in names)


def timed_install(python: Path, *requirements: str) -> float:
    """Seconds of ``pip install REQUIREMENTS`` (its output is shown only if it fails)."""
    started = time.monotonic()
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *requirements], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pip install {' '.join(requirements)} failed:\n{(done.stdout + done.stderr)[-4000:]}")
    return time.monotonic() - started


def measure(root: Path, scratch: Path) -> dict[str, float]:
    """Seconds and bytes of installing torch and pytest into a fresh environment, then the grader from ``root``."""
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    empty = size(purelib)
    base_seconds = timed_install(python, f"torch=={pinned('torch')}", f"pytest=={pinned('pytest')}")
    base = size(purelib)
    grader_seconds = timed_install(python, str(root))
    return {"base_mb": (base - empty) / MB, "base_s": base_seconds, "grader_mb": (size(purelib) - base) / MB,
            "grader_s": grader_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, help="another checkout whose install is measured in the same sitting")
    args = parser.parse_args()
    print(machine(), f"(site-packages: {sysconfig.get_path('purelib')})")
    roots = {"ours": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    for name, root in roots.items():
        with tempfile.TemporaryDirectory() as scratch:
            f = measure(root, Path(scratch))
        print(f"{name} ({root}): torch and pytest {f['base_mb']:.0f} MB in {f['base_s']:.0f} s; then the grader without "
              f"extras adds {f['grader_mb']:.1f} MB ({f['grader_mb'] / f['base_mb']:.2f}x theirs) in {f['grader_s']:.0f} s "
              f"({f['grader_s'] / f['base_s']:.2f}x theirs)", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
