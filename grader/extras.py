"""The instructor's tools that grading does not need, installed as extras of the project (pyproject.toml).

Grading (``grade``, ``ci``, a Gradescope image, the handout's workflow) needs the core install only. The packages of
an extra are imported only inside the functions that use them, each after ``need`` has checked that they are
installed: without them, the command that needs them stops with one line naming the extra to install.
"""
from __future__ import annotations

import importlib.util

# extra -> the packages the grader imports from it (the extra may install more: nbgrader's own commands)
EXTRAS = {
    "notebooks": ("nbformat",),  # the nbgrader course: grader notebooks, new-exercise, check-exercise
    "plots": ("matplotlib",),  # the class summary's plots: grader batch, collect, gradebook
    "dask": ("distributed",),  # grader batch --dask
}


class MissingExtra(ImportError):
    """An extra a command needs is not installed; the message is one line saying which and how to install it."""


def need(extra: str, what: str) -> None:
    """Raise MissingExtra unless every package the grader imports from ``extra`` is installed (``what``: what needs
    it, as the message names it)."""
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(f"{what} needs the grader's {extra} extra ({', '.join(missing)} is not installed): "
                           f"python -m pip install '.[{extra}]' in the grader's folder")
