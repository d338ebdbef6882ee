"""Print, one per line, pyproject.toml's pins of the packages that grading and the GPU run import (not torch: a lent
GPU machine brings its own CUDA build). benchmarks/gpu/prepare.sh downloads them as wheels."""
import re
from pathlib import Path

import tomllib

# What `grader grade`, `grader batch` and the hostile suite import; the authoring tools' packages stay behind.
GRADING = ("pytest", "pytest-json-report", "hypothesis", "pydantic", "PyYAML", "rich", "jsonschema", "nbformat")

project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
requirements = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
pins = {match[1].lower(): match[0] for match in (re.fullmatch(r"([A-Za-z0-9_.-]+)==\S+", r) for r in requirements) if match}
missing = [name for name in GRADING if name.lower() not in pins]
if missing:
    raise SystemExit(f"pyproject.toml pins none of {missing}: update benchmarks/gpu/requirements.py")
print("\n".join(pins[name.lower()] for name in GRADING))
