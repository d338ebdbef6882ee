"""The GPU run (benchmarks/gpu/) and its preparation, dry-run on the CPU: a lent GPU's minutes go to the GPU."""
import json
import os
import subprocess
import sys
import zipfile

import pytest
from courses import TOTAL

from grader import ROOT

GPU = ROOT / "benchmarks" / "gpu"
STAGES = ["environment", "grade", "batch", "corpus", "hostile"]

pytestmark = pytest.mark.slow


def test_dry_run_on_the_cpu_finds_nothing(tmp_path):
    """run.sh --device cpu --quick runs every stage, compares two batches test by test and writes its summary."""
    env = {**os.environ, "GPU_WHEELS": ""}
    done = subprocess.run(["bash", str(GPU / "run.sh"), str(tmp_path), "--device", "cpu", "--quick", "--jobs", "2"],
                          env=env, capture_output=True, text=True, timeout=900)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert done.returncode == 0 and summary["ok"], (done.stdout[-3000:], json.dumps(summary)[:3000])
    assert list(summary["stages"]) == STAGES
    assert summary["stages"]["environment"]["found"]["workers_of_a_warm_zygote_grade"] == "yes"
    assert "== corpus" in (tmp_path / "log").read_text()
    grades = summary["stages"]["grade"]["runs"]
    assert [(run["what"], run["score"]) for run in grades] == [("references", float(TOTAL))] * 2 + [("stubs", 0.0)] * 2
    assert summary["stages"]["corpus"]["figures"]["submissions"] > 2
    assert "passed" in summary["stages"]["hostile"]["summary"]


def test_a_difference_between_devices_is_a_finding(tmp_path):
    """compare_batches names a test whose points differ and a test that one device ran and the other did not."""
    sys.path.insert(0, str(GPU))
    from check import compare_batches

    for folder, tests in (("a", [("t1", 1.0), ("t2", 0.5)]), ("b", [("t1", 1.0), ("t2", 0.0), ("t3", 1.0)])):
        (tmp_path / folder / "results").mkdir(parents=True)
        data = {"score": 1, "tests": [{"name": name, "score": score} for name, score in tests]}
        (tmp_path / folder / "results" / "ada.json").write_text(json.dumps(data))
    findings = compare_batches(["ada", "ben"], tmp_path / "a", tmp_path / "b")
    assert any("t3" in f for f in findings) and any("t2: 0.5 on cpu, 0.0" in f for f in findings)
    assert any(f.startswith("ben: results missing") for f in findings)


def test_preparation_downloads_every_grading_package_for_the_gpu_python(tmp_path):
    """prepare.sh downloads a wheel of each pinned package grading imports, built for CPython 3.12, and no torch."""
    done = subprocess.run(["bash", str(GPU / "prepare.sh"), str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    wheels = sorted(tmp_path.glob("*.whl"))
    names = {w.name.split("-")[0].lower().replace("_", "-") for w in wheels}
    pins = subprocess.run([sys.executable, str(GPU / "requirements.py")], capture_output=True, text=True, check=True)
    for pin in pins.stdout.split():
        name, version = pin.split("==")
        assert name.lower().replace("_", "-") in names, f"no wheel of {pin}"
        assert any(w.name.lower().startswith(f"{name.lower().replace('-', '_')}-{version}-") for w in wheels), pin
    assert "torch" not in names
    compiled = [w for w in wheels if "-cp3" in w.name]
    assert compiled and all("-cp312-" in w.name for w in compiled), [w.name for w in compiled]
    for wheel in wheels:
        assert zipfile.is_zipfile(wheel), wheel.name
