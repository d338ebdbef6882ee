"""A small class for the reports' tests and the docs' screenshots: correct, buggy, missing and ungradable submissions.

``build_class(target)`` writes one entry per student under ``target`` (a folder, or a .zip):
the three examples/submissions (ada: correct; ben: classic bugs and missing files; cy: a syntax error, an endless
loop, a hard-coded answer), three students sharing one softmax misconception (it normalizes the last dim whatever
``dim`` says) and two other buggy ones, a correct one whose id is HTML, an empty folder and a corrupt zip.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from variants import VARIANTS

ROOT = Path(__file__).resolve().parents[3]
HOSTILE_ID = "<img src=x onerror=alert(1)>&amp;"  # a student id a page must show as text
BUGS = {"dee": "buggy/softmax/last_dim_only", "eli": "buggy/softmax/last_dim_only",
        "fay": "buggy/softmax/last_dim_only", "gus": "buggy/softmax/temperature_multiplied",
        "hal": "buggy/scores/attention_scores_swapped"}
UNGRADABLE = {"ivy": "an empty folder", "jon.zip": "a corrupt zip"}


def build_class(target: Path) -> Path:
    """The class's submissions under ``target`` (created); returns ``target``."""
    target.mkdir(parents=True)
    for example in sorted((ROOT / "examples" / "submissions").iterdir()):
        shutil.copytree(example, target / example.name, ignore=shutil.ignore_patterns("__pycache__"))
    by_id = {variant.id: variant for variant in VARIANTS}
    for student, variant_id in BUGS.items():
        variant = by_id[variant_id]
        folder = _references(target / student)
        (folder / f"{variant.module}.py").write_text(variant.source(), encoding="utf-8")
    _references(target / HOSTILE_ID)
    (target / "ivy").mkdir()
    (target / "jon.zip").write_bytes(b"PK\x03\x04 this is not a zip archive")
    return target


def _references(folder: Path) -> Path:
    folder.mkdir()
    for path in sorted((ROOT / "solutions").glob("*.py")):
        shutil.copy(path, folder / path.name)
    return folder
