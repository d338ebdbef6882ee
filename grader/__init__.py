"""Sandboxed auto-grader for the self-attention course.

A submission travels: intake (stage the files) -> worker (a sandboxed process
that runs the student's code) -> suites (hidden pytest suites that call it
through a proxy) -> points (from the pytest-json-report) -> reports.
"""
from pathlib import Path

__version__ = "0.1.0"

ROOT = Path(__file__).resolve().parent.parent
