"""Set-up shared by the hidden suites (the grader's plugin provides student, device and course)."""
import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    """The suites' own tensors are tiny: intra-op threads only spin and steal the CPU from the worker being graded."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def pytest_runtest_makereport(item, call):
    """Hypothesis's pytest plugin turns each failing example into an ``@example`` patch (importing libcst and
    parsing the suite's source, about half a second per grading process): nobody reads it here, so drop the
    failing examples before its report hook looks at them."""
    item.__dict__.pop("_hypothesis_failing_examples", None)
