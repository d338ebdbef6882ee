"""Options and shared fixtures of the project's own tests."""
import os
import resource
from pathlib import Path

import pytest

# The uid the grader's sandboxes run as in a test process that is no pytest-xdist worker; the workers' own go above it.
BASE_SANDBOX_UID = int(os.environ.get("GRADER_SANDBOX_UID", "64055"))
UIDS_PER_TEST_PROCESS = 2000  # a batch leases its jobs' uids from its own uid + 1 up to + 1000


def sandbox_uid_of_test_process(xdist_worker: str | None) -> int:
    """The uid the sandboxes of one pytest-xdist worker ("gw0", "gw1", ...) run as: each worker its own, above the
    base. As root, ``RLIMIT_NPROC`` counts every process of a uid on the machine: with one uid for all, the hostile
    suite's fork bomb in one worker made another worker's forks inside its sandboxes fail with EAGAIN."""
    if not xdist_worker:
        return BASE_SANDBOX_UID
    return BASE_SANDBOX_UID + UIDS_PER_TEST_PROCESS * (int(xdist_worker.removeprefix("gw")) + 1)


# Set before any grader module is imported: grader.sandbox.jail.uids reads it once, at import.
os.environ["GRADER_SANDBOX_UID"] = str(sandbox_uid_of_test_process(os.environ.get("PYTEST_XDIST_WORKER")))


def pytest_addoption(parser):
    parser.addoption("--device", choices=("cpu", "cuda"), default="cpu",
                     help="the device the hostile suite grades on (benchmarks/gpu/run.sh passes cuda); default: cpu")


@pytest.fixture(scope="module")
def zygote():
    """A zygote for a test module that grades (a module that needs another kind defines its own ``zygote``)."""
    from grader.sandbox.host.client import Zygote

    started = Zygote()
    yield started
    started.close()


@pytest.fixture(scope="module")
def course():
    """The project's course (course.yaml), loaded once per test module."""
    from grader.course import COURSE_FILE, load_course

    return load_course(COURSE_FILE)


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
