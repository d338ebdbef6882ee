"""Options of the project's own tests."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--device", choices=("cpu", "cuda"), default="cpu",
                     help="the device the hostile suite grades on (benchmarks/gpu/run.sh passes cuda); default: cpu")


@pytest.fixture(scope="session")
def device(request) -> str:
    """The device a test that grades on a device passes to the grader: ``--device``."""
    return request.config.getoption("device")
