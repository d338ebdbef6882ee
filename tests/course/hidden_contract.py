"""The shared contract (grader/suites/contract.py), checked on every exercise whose hidden suite declares a
``CONTRACT``: the grader runs each test below once per such exercise, reported under that exercise."""
from grader.suites.contract import (  # noqa: F401 (collected by pytest)
    test_autograd,
    test_device_kept,
    test_float64_kept,
    test_half_precision,
    test_imports_allowed,
    test_inputs_not_modified,
    test_own_implementation,
    test_vectorized,
)
