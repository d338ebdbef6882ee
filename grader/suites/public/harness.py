"""Shared set-up of the public checks: which implementation to test, markers, and the report a student reads.

Run them with ``python -m pytest tests/public`` (your code in ``exercises/``),
``python -m pytest tests/public -m <module>`` (one exercise), or
``python -m pytest tests/public --impl solutions`` (the references, where present).

(This file is the handout's ``tests/public/conftest.py``; in the course repository it is
``grader/suites/public/harness.py``, which ``tests/course/conftest.py`` uses.)

The report is the grader's: each failure is its property (the check's docstring), what is wrong with the result (the
size of the error in the grader's buckets) and the hint of a known mistake that reproduces it (``checking.py``,
``diagnosis.py``, each exercise's ``hints_<module>.py``); an unfinished exercise is one line; a table per exercise ends the run. Tracebacks are off
unless asked for (``--tb=short``).
"""
from __future__ import annotations

import importlib
import json
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import diagnosis as D
import pytest
import stub_message
import torch
from checking import NOTEBOOK, Failure
from checking import expect_close as _expect_close
from wording import same_reason

# The folder holding exercises/: the handout's root, or the course repository's.
ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "exercises").is_dir())
HERE = Path(__file__).resolve().parent  # the checks' machinery (beside the public checks, in the handout)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# Module -> title of each exercise, in the course's order: exercises.json beside this file in the handout (written
# by `grader release` from course.yaml); the course repository's conftest gives them from course.yaml itself.
EXERCISES_FILE = Path(__file__).resolve().with_name("exercises.json")
MODULES: dict[str, str] = json.loads(EXERCISES_FILE.read_text(encoding="utf-8")) if EXERCISES_FILE.is_file() else {}
RESULTS = pytest.StashKey[dict]()  # module -> [Result] of the run
IMPLS = ("exercises", "solutions")
STUB_MESSAGE = stub_message.PATTERN  # what a generated stub raises
DID_NOT_RAISE = re.compile(r"DID NOT RAISE <class '(?:[\w.]*\.)?(?P<name>\w+)'>")  # pytest.raises, nothing raised


def pytest_addoption(parser):
    parser.addoption("--impl", choices=IMPLS, default="exercises",
                     help="package under test: exercises (your code, the default) or solutions (the references)")


def pytest_configure(config):
    for module, title in MODULES.items():
        config.addinivalue_line("markers", f"{module}: {title}")
    if getattr(config.option, "tbstyle", None) == "auto":  # the table says it all; --tb=short brings the tracebacks back
        config.option.tbstyle = "no"
        config.option.reportchars = ""
    config.stash[RESULTS] = {}


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
        self.titles = MODULES

    def __getattr__(self, module: str):
        if module not in MODULES:
            raise AttributeError(module)
        if module in NOTEBOOK:  # run from a notebook: the code of its solution cell
            return NOTEBOOK[module]
        return importlib.import_module(f"{self.package}.{module}")

    def __repr__(self) -> str:
        return f"<package {self.package}/>"


def pytest_ignore_collect(collection_path, config):
    """``-m <module>`` (or ``-m "<module> or <module>"``): the other exercises' check files are not even imported."""
    chosen = set(re.split(r"\s+or\s+", config.option.markexpr.strip())) if config.option.markexpr else set()
    if not chosen or not chosen <= set(MODULES):
        return None  # no -m, or an expression that is not a plain choice of exercises: pytest decides
    name = collection_path.name
    if name.startswith("test_") and name.endswith(".py") and name[5:-3] in MODULES and name[5:-3] not in chosen:
        return True
    return None


def pytest_collection_finish(session):
    """``-m`` naming a marker nobody registered (``-m softmx``) is an error listing the exercises: it deselected every
    check, and the run said only "0 selected"."""
    expression = session.config.option.markexpr
    registered = {line.split(":")[0].split("(")[0].strip() for line in session.config.getini("markers")}
    unknown = sorted(set(re.findall(r"[A-Za-z_]\w*", expression or "")) - {"and", "or", "not"} - registered)
    if unknown:
        raise pytest.UsageError(f"-m {expression!r}: no exercise {', '.join(map(repr, unknown))}; the exercises are "
                                f"{', '.join(MODULES)} (-m NAME runs the checks of one)")


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """The checks' tensors are tiny: torch's intra-op threads would only spin (a small reduction took 7 ms of CPU on a
    busy two-core machine, 4 us with one thread). The thread count is given back afterwards (a notebook's kernel)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
    module = item.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    results = item.config.stash[RESULTS].setdefault(module, [])
    if report.when == "call" or report.failed:
        doc = (item.function.__doc__ or item.name).strip().splitlines()[0]
        if hasattr(item, "callspec"):
            doc += f" [{item.callspec.id}]"
        results[:] = [r for r in results if r.test != item.nodeid]
        results.append(Result(item.nodeid, doc, None if report.passed or report.skipped else
                              _explain(call.excinfo, ROOT / item.config.getoption("--impl"), item.path.parent)))
    if not report.failed or call.excinfo is None:
        return
    short = _one_line(call.excinfo.value, ROOT / item.config.getoption("--impl"))
    if isinstance(call.excinfo.value, Failure):  # already in the grader's words
        short = OneLineFailure(str(call.excinfo.value), *item.location[:2])
    if short is not None:
        report.longrepr = short


@dataclass
class Result:
    """One check's outcome: its test id, its property (docstring) and, if it failed, what to say (``_explain``)."""
    test: str
    doc: str
    failure: dict | None


def _explain(excinfo, package: Path, checks: Path) -> dict:
    """What a failure says: ``stub`` (the unfilled stub's name), ``line`` (a one-line problem with the file),
    or ``problem`` (with the size of the error) and ``hint``. ``checks``: the folder of the failing check's file (an
    error raised there, or in this folder, is the check's, not the student's code's)."""
    error = excinfo.value if excinfo is not None else None
    if error is None:
        return {"problem": "failed in its set-up"}
    if isinstance(error, NotImplementedError) and STUB_MESSAGE.match(str(error)):
        match = STUB_MESSAGE.match(str(error))
        return {"stub": f"{match['module']}.{match['name']}"}
    short = _one_line(error, package)
    if short is not None:
        return {"line": short.message}
    if isinstance(error, Failure):
        return {"problem": error.problem, "hint": error.hint.message if error.hint else ""}
    frames = _frames_in(error.__traceback__, package)
    where = f" ({_display(frames[-1][0])}, line {frames[-1][1]})" if frames else ""
    first = (str(error).strip().splitlines() or [""])[0][:300]
    missing = DID_NOT_RAISE.match(first)
    if missing:  # pytest.raises' own words, said as the check means them
        return {"problem": f"returned instead of raising {missing['name']}: check the arguments first and raise "
                           f"{missing['name']}(...) with a message saying what is wrong"}
    if isinstance(error, AssertionError) and _raised_in(error, (checks, HERE)):  # the check's own assert
        return {"problem": f"failed: {first or 'an assertion of the check'}"}
    owner = getattr(error, "obj", None)
    if isinstance(error, AttributeError) and any(owner is cell for cell in NOTEBOOK.values()) and error.name:
        return {"problem": f"the solution cell of this notebook defines no {error.name}: run the cell (an error stops "
                           "it before it defines the rest; a relative import of an earlier exercise works in a file "
                           "only) and keep the name the handout gives it"}
    if isinstance(error, AttributeError) and isinstance(owner, types.ModuleType) and error.name:
        where = _display(getattr(owner, "__file__", None) or owner.__name__)
        return {"problem": f"{where} defines no {error.name}: keep the name the handout gives it"}
    if _raised_in(error, (checks, HERE)):  # torch.stack of a float, .dtype of a tuple: what was returned is not usable
        return {"problem": f"could not use what your code returned ({type(error).__name__}: {first}): see the "
                           "contract in its docstring (a tensor, its shape)"}
    meaning = D.meaning_of(str(error), type(error).__name__)
    problem = f"raised {type(error).__name__}: {first}{where}"
    return {"problem": problem.rstrip(".") + f". This error means: {meaning}" if meaning else problem}


def _raised_in(error: BaseException, folders) -> bool:
    """Whether the innermost Python frame of ``error``'s traceback lies in one of ``folders``."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and any(_inside(tb.tb_frame.f_code.co_filename, folder) for folder in folders)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The table per exercise (``summary_lines``), at the end of the run."""
    lines = summary_lines(config)
    if lines:
        terminalreporter.section("public checks per exercise")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session, exitstatus):
    """In a notebook's check cell (``checking.run_in_notebook``: no terminal reporter, so no progress dots), the table
    is all the cell prints."""
    if NOTEBOOK and session.config.pluginmanager.get_plugin("terminalreporter") is None:
        print("\n".join(summary_lines(session.config)))


def summary_lines(config) -> list[str]:
    """The table per exercise: checks passed, then each failure's property, error size and hint (an unfinished
    exercise in one line; failures with one cause said once, above the properties they failed)."""
    results, lines = config.stash[RESULTS], []
    width = max((len(m) for m in results), default=0)
    for module in (m for m in MODULES if m in results):
        checks = results[module]
        failed = [r for r in checks if r.failure]
        where = "the solution cell of this notebook" if module in NOTEBOOK else f"exercises/{module}.py"
        stubs = sorted({r.failure["stub"] for r in failed if "stub" in r.failure})
        if stubs and all("stub" in r.failure for r in failed):
            stubs = sorted(set(stubs) | set(_stubs_left(config, module)))  # those no check reached too
            lines.append(f"{module:<{width}}  not implemented yet: fill in the stub in {where} ({', '.join(stubs)})")
            continue
        lines.append(f"{module:<{width}}  {len(checks) - len(failed):>3}/{len(checks):<3} passed")
        plain = [r for r in failed if not ("line" in r.failure or "stub" in r.failure)]
        one_cause = len(plain) > 1 and len({(r.failure["problem"], r.failure.get("hint")) for r in plain}) == 1
        if one_cause:  # the same error on every check: said once, then the checks it failed
            lines += [f"    {_said(plain[0].failure)}", f"    {same_reason(len(plain))}:"]
            lines += [f"  - {r.doc}" for r in plain]
        shown = []
        for result in failed:
            if "line" in result.failure:
                if result.failure["line"] not in shown:
                    shown.append(result.failure["line"])
                    lines.append(f"    {result.failure['line']}")
            elif "stub" in result.failure:
                if result.failure["stub"] not in shown:
                    shown.append(result.failure["stub"])
                    lines.append(f"    {result.failure['stub']} is not implemented yet: fill in the stub in {where}")
            elif not one_cause:
                lines += [f"  - {result.doc}", f"      {_said(result.failure)}"]
    return lines


def _stubs_left(config, module: str) -> list[str]:
    """The stubs still in the module's file (none read from a notebook's cell, whose checks say what they reach)."""
    path = ROOT / config.getoption("--impl") / f"{module}.py"
    if module in NOTEBOOK or not path.is_file():
        return []
    return list(stub_message.stubs_in(path.read_text(encoding="utf-8", errors="replace")))


def _said(failure: dict) -> str:
    """A failed check's problem and its hint, if any, in one line."""
    return f"{failure['problem'].rstrip('.')}." + (f" Hint: {failure['hint']}" if failure.get("hint") else "")


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


@pytest.fixture
def expect_close():
    """``expect_close(actual, expected, atol, rtol, hints)`` (checking.expect_close): compare with printed numbers
    (atol 1e-4 for 4 decimals, 1e-3 for 3, rtol 0) or with a result computed here, naming the known mistake that
    reproduces a wrong result."""
    return _expect_close
