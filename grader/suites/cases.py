"""Drawing and replaying the hidden suites' cases: shapes, seeds and the inputs made from them.

Hypothesis draws the *structure* of an input (how many batch dims, every size,
a seed, a scale); the values themselves come from a seeded ``torch.Generator``,
which is fast and spreads values well. Every size in one drawn case differs
from every other (B, Tq, Tk, d_in, d_k, d_v, heads, ...): square or repeated
sizes hide transposition and broadcasting bugs. Sizes start at 2 for the same
reason (a dimension of size 1 broadcasts and transposes silently). The shape
families several exercises share are here (``sequences``, ``query_key_pairs``,
...); an exercise's own strategies live in its suite.

``examples(n)`` turns an ``@given`` test into one that runs ``n`` cases drawn
once per grading process and replayed, in the same order, for every
submission: hypothesis draws them (seeded from course.yaml's seed and the
test's key, ``test_<exercise>.<test name>``, so they never depend on which
submissions were graded before, nor on the submission, nor on the file that
holds the test). A failing test reports the failing case that names the
mistake most failing cases name (``checks.each``), without shrinking (failures
are reported by shape class, never by value, so a minimal example would buy
nothing but time; the smallest case is often one where several mistakes give
the same result, so none can be named: ``tril(-1)`` and ``triu(1)`` at T=1).
Replaying skips hypothesis' engine for each submission, its costliest part here. Cases are drawn up front,
never inside the test (no ``st.data()``), so a replay is exact.

The drawn cases are also kept in a file per suite, ``__pycache__/cases-<key>.json``
beside it (like Python's own bytecode cache), so that a new grading process
(a cold ``grader grade``, each job of a batch) reads them instead of running
hypothesis: the key hashes the suite's file, this module, hypothesis' version
and the course's seed, so a change to any of them draws that suite afresh (and
no other). The file is JSON with a tag for each type a case holds, decoded
strictly (anything else in it and it is ignored, then rewritten); it holds
nothing but what hypothesis drew.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import os
import tempfile
import zlib
from pathlib import Path

import hypothesis
import torch
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st

from grader.course import SUITE_PREFIX
from grader.suites.checks import ahead, each

LO, HI = 2, 9  # sizes are drawn from LO..HI
SEEDS = st.integers(min_value=0, max_value=2**31 - 1)


_drawn: dict[tuple[str, str, int, int], list[dict]] = {}  # (suite file, test, n, seed) -> its cases


def case_key(test) -> str:
    """The key a test's cases are drawn under: ``test_<exercise>.<test name>``, the exercise being its suite's
    (``hidden_<exercise>.py``)."""
    return f"test_{test.__module__.removeprefix(SUITE_PREFIX)}.{test.__qualname__}"


def examples(n: int):
    """Run the decorated ``@given`` test on ``n`` drawn cases, the same for every submission (see above)."""
    def decorate(test):
        @functools.wraps(test, updated=())
        def replay(**kwargs):
            cases = replay.cases(kwargs["course"].seed)

            def run(case):
                test.hypothesis.inner_test(**kwargs, **copy.deepcopy(case))
            with ahead(kwargs["student"], [functools.partial(run, case) for case in cases]):
                each(cases, run)

        del replay.__wrapped__  # pytest must see the test's own arguments (fixtures), not hypothesis' wrapper
        replay.__signature__ = inspect.signature(test)  # hypothesis hides the drawn arguments there
        replay.cases = functools.partial(drawn, test, n)  # course seed -> the cases
        return replay
    return decorate


def drawn(test, n: int, course_seed: int) -> list[dict]:
    """The ``n`` cases (keyword arguments) hypothesis draws for ``test`` under ``course_seed``; drawn once per course
    version: kept in this process, and in the cases file (see above) for the next one."""
    name, suite = case_key(test), Path(inspect.getfile(test)).resolve()
    key = (str(suite), name, n, course_seed)
    if key not in _drawn:
        stored = _stored(suite, course_seed)
        cases = stored.get(f"{name}/{n}")
        if cases is None:
            cases = _draw(test, name, n, course_seed)
            _store(suite, course_seed, f"{name}/{n}", cases)
        _drawn[key] = cases
    return _drawn[key]


def _draw(test, name: str, n: int, course_seed: int) -> list[dict]:
    cases, inner = [], test.hypothesis.inner_test
    fixtures = list(inspect.signature(test).parameters)
    test.hypothesis.inner_test = lambda **kwargs: cases.append({k: v for k, v in kwargs.items() if k not in fixtures})
    try:
        run = settings(max_examples=n, phases=[Phase.explicit, Phase.generate], deadline=None, database=None,
                       derandomize=False, print_blob=False, suppress_health_check=list(HealthCheck))(test)
        seed(zlib.crc32(name.encode()) ^ course_seed)(run)(**dict.fromkeys(fixtures))
    finally:
        test.hypothesis.inner_test = inner
    if any(isinstance(v, st.DataObject) for case in cases for v in case.values()):
        raise TypeError(f"{name} draws inside the test (st.data()): draw in its strategy, so cases can be replayed")
    return cases


# -- the cases file

# (suite file, course seed) -> the cases read from (and written to) its cases file
_files: dict[tuple[Path, int], dict[str, list[dict]]] = {}


def cases_file(suite: Path, course_seed: int) -> Path:
    """Where the cases of ``suite`` drawn under ``course_seed`` are kept: beside it, named after a hash of its file,
    this module, hypothesis' version and the seed."""
    digest = hashlib.sha256(f"{hypothesis.__version__}\0{course_seed}".encode())
    for path in (suite, Path(__file__).resolve()):
        digest.update(f"\0{path.name}\0".encode() + path.read_bytes())
    return suite.parent / "__pycache__" / f"cases-{suite.stem}-{digest.hexdigest()[:24]}.json"


def _stored(suite: Path, course_seed: int) -> dict[str, list[dict]]:
    """The cases file's tests (name/n -> cases), read once per process; empty when it is missing or invalid."""
    if (suite, course_seed) not in _files:
        try:
            data = json.loads(cases_file(suite, course_seed).read_text(encoding="utf-8"))
            _files[suite, course_seed] = {str(name): [_decode_kwargs(case) for case in cases]
                                          for name, cases in data.items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            _files[suite, course_seed] = {}
    return _files[suite, course_seed]


def _store(suite: Path, course_seed: int, name: str, cases: list[dict]) -> None:
    """Add a test's cases to the file (written whole, atomically); left out if they do not survive the round trip
    exactly, or the folder is read-only (they are drawn again next time)."""
    try:
        encoded = [{k: _encode(v) for k, v in case.items()} for case in cases]
        if repr([_decode_kwargs(case) for case in encoded]) != repr(cases):
            return
    except (TypeError, ValueError):
        return
    stored = _stored(suite, course_seed)
    stored[name] = cases
    path = cases_file(suite, course_seed)
    text = json.dumps({test: [{k: _encode(v) for k, v in case.items()} for case in kept] for test, kept in stored.items()})
    try:
        path.parent.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as out:
            out.write(text)
        os.chmod(out.name, 0o644)
        os.replace(out.name, path)
    except OSError:
        return


def _encode(value):
    """A drawn value as JSON: plain scalars as they are, everything else under a tag naming its type."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [_encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, Case):
        return {"case": [_encode(value.sizes), _encode(value.batch), value.seed, value.scale, _encode(value.extra)]}
    raise TypeError(f"cannot keep a drawn {type(value).__name__} in the cases file")


def _decode(data):
    """The inverse of ``_encode``; ValueError for anything ``_encode`` does not write."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not (isinstance(data, dict) and len(data) == 1):
        raise ValueError("not a drawn value")
    (tag, body), = data.items()
    if tag in ("list", "tuple") and isinstance(body, list):
        return (list if tag == "list" else tuple)(_decode(v) for v in body)
    if tag == "dict" and isinstance(body, list) and all(isinstance(pair, list) and len(pair) == 2 for pair in body):
        return {_decode(k): _decode(v) for k, v in body}
    if tag == "case" and isinstance(body, list) and len(body) == 5:
        sizes, batch, case_seed, scale, extra = _decode(body[0]), _decode(body[1]), body[2], body[3], _decode(body[4])
        if not (isinstance(sizes, dict) and isinstance(batch, tuple) and isinstance(extra, dict)
                and type(case_seed) is int and type(scale) is float and all(isinstance(k, str) for k in (*sizes, *extra))):
            raise ValueError("not a drawn case")
        return Case(sizes, batch, case_seed, scale, **extra)
    raise ValueError("not a drawn value")


def _decode_kwargs(case) -> dict:
    if not isinstance(case, dict):
        raise ValueError("not a drawn case")
    return {str(k): _decode(v) for k, v in case.items()}


class Case:
    """One drawn case: named sizes, leading batch dims, a seed and a scale; makes its tensors.

    ``case.T``, ``case.d`` ... are the named sizes; ``case.batch`` the tuple of
    leading dims (possibly empty). ``case.randn(*shape)`` draws a float64
    normal tensor (times ``case.scale``) from the case's own generator, so a
    replayed case gives the same tensors.
    """

    def __init__(self, sizes: dict[str, int], batch: tuple[int, ...] = (), seed: int = 0, scale: float = 1.0, **extra):
        self.sizes, self.batch, self.seed, self.scale = dict(sizes), tuple(batch), seed, scale
        self.extra = extra
        self.generator = torch.Generator().manual_seed(seed)

    def __getattr__(self, name):
        sizes = self.__dict__.get("sizes", {})
        if name in sizes:
            return sizes[name]
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(name)

    def randn(self, *shape, dtype=torch.float64, device="cpu", scale: float | None = None) -> torch.Tensor:
        t = torch.randn(tuple(shape), generator=self.generator, dtype=torch.float64)
        return (t * (self.scale if scale is None else scale)).to(dtype=dtype, device=device)

    def rand(self, *shape, dtype=torch.float64, device="cpu") -> torch.Tensor:
        return torch.rand(tuple(shape), generator=self.generator, dtype=torch.float64).to(dtype=dtype, device=device)

    def __deepcopy__(self, memo) -> Case:
        """A fresh copy: its generator starts again from the seed, so a replayed case makes the same tensors."""
        return Case(self.sizes, self.batch, self.seed, self.scale, **copy.deepcopy(self.extra, memo))

    def __repr__(self):  # what hypothesis would print; it never reaches a student
        return f"Case({self.sizes}, batch={self.batch}, seed={self.seed}, scale={self.scale}, {self.extra})"


@st.composite
def cases(draw, names: tuple[str, ...], batch: tuple[int, int] = (0, 2), lo: int = LO, hi: int = HI,
          scales=(1.0,), **extra_strategies) -> Case:
    """Distinct sizes for ``names`` plus 0..2 (``batch``) leading dims, all different from each other."""
    n_batch = draw(st.integers(*batch))
    count = len(names) + n_batch
    values = draw(st.lists(st.integers(lo, max(hi, lo + count - 1)), min_size=count, max_size=count, unique=True))
    extra = {key: draw(strategy) for key, strategy in extra_strategies.items()}
    return Case(dict(zip(names, values[n_batch:])), tuple(values[:n_batch]), draw(SEEDS), draw(st.sampled_from(scales)),
                **extra)


# -- shape families several exercises share

def vectors() -> st.SearchStrategy[Case]:
    """1-D length d (dot)."""
    return cases(("d",), batch=(0, 0), lo=1, hi=12)


def sequences(batch=(0, 2), scales=(1.0, 0.5, 2.0)) -> st.SearchStrategy[Case]:
    """(..., T, d) with T != d."""
    return cases(("T", "d"), batch=batch, scales=scales)


def query_key_pairs(batch=(0, 2)) -> st.SearchStrategy[Case]:
    """(..., Tq, d) and (..., Tk, d)."""
    return cases(("Tq", "Tk", "d"), batch=batch, scales=(1.0, 0.5, 2.0))


def qkv_triples(batch=(0, 2)) -> st.SearchStrategy[Case]:
    """(..., Tq, d_k), (..., Tk, d_k), (..., Tk, d_v)."""
    return cases(("Tq", "Tk", "d_k", "d_v"), batch=batch, scales=(1.0, 0.5, 2.0))


def projections(batch=(0, 2)) -> st.SearchStrategy[Case]:
    """x (..., T, d_in), W_query/W_key (d_in, d_k), W_value (d_in, d_v)."""
    return cases(("T", "d_in", "d_k", "d_v"), batch=batch)


def modules(batch=(0, 2)) -> st.SearchStrategy[Case]:
    """x (..., T, d_in) for a module d_in -> d_out."""
    return cases(("T", "d_in", "d_out"), batch=batch, scales=(1.0, 2.0))


def with_split(strategy: st.SearchStrategy[Case]) -> st.SearchStrategy[tuple[Case, int]]:
    """A case of ``strategy`` and a position 1..T-1 where its sequence is split (tokens before it, tokens from it on)."""
    return strategy.flatmap(lambda case: st.tuples(st.just(case), st.integers(1, case.T - 1)))
