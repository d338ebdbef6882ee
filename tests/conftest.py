"""Options and shared fixtures of the project's own tests."""
import resource
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--device", choices=("cpu", "cuda"), default="cpu",
                     help="the device the hostile suite grades on (benchmarks/gpu/run.sh passes cuda); default: cpu")


@pytest.fixture(scope="session")
def device(request) -> str:
    """The device a test that grades on a device passes to the grader: ``--device``."""
    return request.config.getoption("device")


@pytest.fixture
def grader_faults(monkeypatch, tmp_path_factory):
    """A function that makes grading fail by the grader's own fault (a file of the course it cannot find) for the
    submissions whose folder it names (every one when None), every time or only the first time (``once``); a batch's
    job processes, forked from this one, inherit it."""
    import grader.grade

    real = grader.grade.grade_submission
    failed = tmp_path_factory.mktemp("faulted")  # a file per submission that failed (job processes share no memory)

    def make(victims: set[str] | None = None, once: bool = False) -> None:
        def faulty(path, *args, **kwargs):
            if victims is None or Path(path).name in victims:
                mark = failed / Path(path).name
                if not (once and mark.exists()):
                    mark.touch()
                    raise FileNotFoundError(2, "No such file or directory", "/course/grader/suites/pytest.ini")
            return real(path, *args, **kwargs)

        monkeypatch.setattr(grader.grade, "grade_submission", faulty)

    return make


@pytest.fixture(autouse=True)
def fresh_address_space_limit():
    """Each test starts with this process's address-space limit as it found it: an in-process grade bounds it
    (``memory.bound_grading_memory``, once per process), and what a later test started inherited the bound (Chromium,
    which reserves large ranges, died with SIGTRAP wherever the browser tests ran after an in-process grade)."""
    import grader.memory

    before = resource.getrlimit(resource.RLIMIT_AS)
    yield
    resource.setrlimit(resource.RLIMIT_AS, before)
    grader.memory._bounded_pid = 0
