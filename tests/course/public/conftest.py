"""Shared set-up of the public tests: which implementation to test, markers, and short failure messages.

Run them with ``python -m pytest tests/public`` (your code in ``exercises/``),
``python -m pytest tests/public -m <module>`` (one exercise), or
``python -m pytest tests/public --impl solutions`` (the references, where present).
"""
from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest
import torch

# The folder holding exercises/: the handout's root, or the course repository's.
ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "exercises").is_dir())
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))



def _exercises(folder: Path) -> dict[str, str]:
    """Module -> title of each exercise that has public checks here: ``test_<module>.py``, titled by its docstring's
    first line (the course is course.yaml's business; these checks know only the files beside them)."""
    exercises = {}
    for path in sorted(folder.glob("test_*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or path.stem
        exercises[path.stem.removeprefix("test_")] = docstring.strip().splitlines()[0]
    return exercises


MODULES = _exercises(Path(__file__).resolve().parent)
IMPLS = ("exercises", "solutions")
# The generator writes: raise NotImplementedError("<module>.<function>: fill in this stub (see its docstring)")
STUB_MESSAGE = re.compile(r"^(?P<module>\w+)\.(?P<name>[\w.]+): fill in this stub")


def pytest_addoption(parser):
    parser.addoption("--impl", choices=IMPLS, default="exercises",
                     help="package under test: exercises (your code, the default) or solutions (the references)")


def pytest_configure(config):
    for module, title in MODULES.items():
        config.addinivalue_line("markers", f"{module}: {title}")


def pytest_report_header(config):
    package = config.getoption("--impl")
    return f"implementation under test: {package} ({ROOT / package})"


class Implementation:
    """The package under test; ``impl.<module>`` imports ``<package>.<module>`` on first use.

    Importing lazily means a broken file fails only the tests of its own exercise.
    """

    def __init__(self, package: str):
        self.package = package
        self.path = ROOT / package

    def __getattr__(self, module: str):
        if module not in MODULES:
            raise AttributeError(module)
        return importlib.import_module(f"{self.package}.{module}")

    def __repr__(self) -> str:
        return f"<package {self.package}/>"


@pytest.fixture(scope="session")
def impl(request) -> Implementation:
    """The package under test (``--impl``): ``impl.<module>.<name>``."""
    return Implementation(request.config.getoption("--impl"))


# ---------------------------------------------------------------------------
# One-line failures for unfinished stubs and files that do not import
# ---------------------------------------------------------------------------

class OneLineFailure:
    """A failure report that prints one line instead of a traceback."""

    def __init__(self, message: str, path: str, lineno: int):
        self.message = message
        # read by pytest's short test summary (and by junitxml / json reports)
        self.reprcrash = _Crash(path, lineno, message)

    def toterminal(self, tw) -> None:
        tw.line(self.message, red=True, bold=True)

    def __str__(self) -> str:
        return self.message


class _Crash:
    def __init__(self, path: str, lineno: int, message: str):
        self.path, self.lineno, self.message = path, lineno, message


def _display(path) -> str:
    """``path`` relative to the repository root where possible, with forward slashes."""
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError, TypeError):
        return str(path)


def _inside(path, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder)
        return True
    except (ValueError, OSError, TypeError):
        return False


def _frames_in(tb, folder: Path):
    """(filename, line number) of the traceback's frames that lie in ``folder``."""
    frames = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if _inside(filename, folder):
            frames.append((filename, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _one_line(error: BaseException, package: Path) -> OneLineFailure | None:
    """The one-line report for ``error``, or None when pytest's own report is more useful."""
    if isinstance(error, NotImplementedError):
        match = STUB_MESSAGE.match(str(error))
        frames = _frames_in(error.__traceback__, package)
        if match and frames:
            filename, lineno = frames[-1]
            where = _display(filename)
            target = f"{match['module']}.{match['name']}"
            return OneLineFailure(f"{target} is not implemented yet: fill in the stub in {where}", where, lineno)
        return None
    if isinstance(error, SyntaxError) and error.filename and _inside(error.filename, package):
        where = _display(error.filename)
        kind = type(error).__name__
        return OneLineFailure(f"{where} line {error.lineno} does not compile ({kind}: {error.msg}): fix it so that the file imports",
                              where, error.lineno or 0)
    if isinstance(error, ImportError):
        frames = _frames_in(error.__traceback__, package)
        if frames:
            filename, lineno = frames[-1]
            where = _display(filename)
            return OneLineFailure(f"{where} line {lineno} does not import ({type(error).__name__}: {error}): "
                                  "an exercise file may import only torch, math and earlier exercises", where, lineno)
        missing = getattr(error, "name", None) or ""
        if missing.startswith(package.name + "."):
            where = _display(package / (missing.split(".")[1] + ".py"))
            return OneLineFailure(f"{where} is missing: the file {missing} cannot be found", where, 0)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None:
        return
    package = ROOT / item.config.getoption("--impl")
    short = _one_line(call.excinfo.value, package)
    if short is not None:
        report.longrepr = short


# ---------------------------------------------------------------------------
# The lectures' worked examples
# ---------------------------------------------------------------------------

EMBEDDINGS = {  # 4-dim embeddings of the "bank" example
    "stream": [1.2, 0.0, 0.0, 0.3],
    "mud": [0.9, 0.0, 0.0, 0.9],
    "money": [0.0, 1.4, 0.0, 0.1],
    "loan": [0.0, 1.1, 0.0, 0.6],
    "bank": [0.8, 0.8, 0.2, 0.0],
}


@pytest.fixture
def river() -> torch.Tensor:
    """"stream bank mud": (3, 4) float32."""
    return torch.tensor([EMBEDDINGS[w] for w in ("stream", "bank", "mud")])


@pytest.fixture
def finance() -> torch.Tensor:
    """"money bank loan": (3, 4) float32."""
    return torch.tensor([EMBEDDINGS[w] for w in ("money", "bank", "loan")])


@pytest.fixture
def journey() -> torch.Tensor:
    """"Your journey starts with one step": (6, 3) float32."""
    return torch.tensor([[0.43, 0.15, 0.89],   # Your
                         [0.55, 0.87, 0.66],   # journey
                         [0.57, 0.85, 0.64],   # starts
                         [0.22, 0.58, 0.33],   # with
                         [0.77, 0.25, 0.10],   # one
                         [0.05, 0.80, 0.55]])  # step


@pytest.fixture
def decoder_states() -> tuple[torch.Tensor, torch.Tensor]:
    """The decoder-attention example: decoder state s (2,) and encoder states H = [h1, h2, h3] (3, 2)."""
    s = torch.tensor([0.4685, 0.9785])
    H = torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]])
    return s, H


def _close(actual, expected, atol):
    """Assert that ``actual`` matches the lecture's printed numbers within ``atol`` (their precision)."""
    __tracebackhide__ = True  # failures point at the test's line, not at this helper
    assert isinstance(actual, torch.Tensor), f"expected a tensor, got {type(actual).__name__}"
    expected = torch.as_tensor(expected, dtype=actual.dtype)
    torch.testing.assert_close(actual.detach().cpu(), expected, atol=atol, rtol=0)


@pytest.fixture
def close():
    """``close(actual, expected, atol)``: compare with printed numbers (atol 1e-4 for 4 decimals, 1e-3 for 3)."""
    return _close
