"""How a public check compares a result and fails: the grader's diagnosis on public inputs.

``expect_close(got, want, hints=...)`` fails with what the grader would say about the same mistake: the kind or
shape of a wrong result, NaN or inf where the result is finite, the size of the error in the grader's buckets
(``diagnosis.error_scale``), and the hint of a known mistake only when that mistake, computed on the same
input, reproduces the result (``diagnosis.matching``); ``attempt(call, hints)`` names the mistake that raises
the error the student's code raised. ``test_imports_allowed`` checks the grader's import
rule (``import_rule``: the grader's own module) on each exercise file. ``run_in_notebook`` runs them on a notebook's
code (the notebooks' "public checks" cell). The conftest prints a failure as its
property (the test's docstring), its error size and its hint, and a table per exercise at the end.
"""
from __future__ import annotations

import ast
import linecache
import types
from pathlib import Path

import diagnosis as D
import import_rule
import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

NOTEBOOK: dict[str, types.ModuleType] = {}  # module -> the names a notebook's solution cell defined (run_in_notebook)


class Failure(AssertionError):
    """A check's failure as the grader words it: ``problem`` (with the size of the error, if any) and the ``hint``."""

    def __init__(self, problem: str, hint: D.Hint | None = None):
        super().__init__(problem + D.phrase(hint))
        self.problem, self.hint = problem, hint


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ("," if t.dim() == 1 else "") + ")"


def expect_close(got, want, atol: float = 1e-5, rtol: float = 1e-4, hints: D.Hints = (),
                 dtype_from: str = "the input's dtype") -> None:
    """``got`` must be a tensor of ``want``'s shape (and dtype, where ``want`` is a tensor: ``dtype_from`` says where
    that dtype comes from) whose values are within ``atol + rtol * |want|`` and hold no NaN; ``hints``: the known
    mistakes on the same input (an exercise's ``hints_<module>.*_hints``)."""
    __tracebackhide__ = True
    if got is None:
        raise Failure(f"returned None, not a tensor: {D.RETURNS_NONE}")
    if not isinstance(got, torch.Tensor):
        raise Failure(f"returned {type(got).__name__}, not a tensor (no .item(), .tolist() or Python numbers)")
    want = want.detach() if isinstance(want, torch.Tensor) else torch.as_tensor(want, dtype=got.dtype)
    got = got.detach().cpu()
    want = want.cpu()
    if tuple(got.shape) != tuple(want.shape):
        raise Failure(f"the result's shape has {D.shape_fact(got.shape, want.shape)}: {shape(got)}, expected "
                      f"{shape(want)}", hint=D.matching(got, hints, rtol, atol, want))
    if got.dtype != want.dtype:
        raise Failure(f"{dtype_name(got.dtype)} result; expected {dtype_name(want.dtype)}, {dtype_from}")
    a, b = D.as64(got), D.as64(want)
    if bool((torch.isfinite(b) & ~torch.isfinite(a)).any()):
        raise Failure("NaN or inf where the result is finite", hint=D.matching(got, hints, rtol, atol, want))
    if bool(torch.isnan(a).any()):  # want too is NaN there: computed by the student's own code (a property check)
        raise Failure("NaN in the result: a row whose every score is masked, or an overflow, gives NaN",
                      hint=D.matching(got, hints, rtol, atol, want))
    ok = torch.isclose(a, b, rtol=rtol, atol=atol) | (a == b)
    if not bool(ok.all()):
        error = D.error_scale(float((a - b).abs().where(torch.isfinite(b), torch.zeros((), dtype=torch.float64)).max()))
        raise Failure(f"wrong values: off by {error} at worst", D.matching(got, hints, rtol, atol, want))


def shaped(got, want: tuple[int, ...], what: str, dtype: torch.dtype | None = None) -> None:
    """``got`` (``what``, as the student names it: "keys") must be a tensor of shape ``want`` (and ``dtype``, if given):
    a failure shows both shapes (an ``and`` of asserts said only that the whole was False)."""
    __tracebackhide__ = True
    if not isinstance(got, torch.Tensor):
        raise Failure(f"{what} is {type(got).__name__}, not a tensor")
    if tuple(got.shape) != tuple(want):
        raise Failure(f"{what} is {shape(got)}; expected {shape(torch.empty(want, device='meta'))}")
    if dtype is not None and got.dtype != dtype:
        raise Failure(f"{what} is {dtype_name(got.dtype)}; expected {dtype_name(dtype)}")


def linear_layers(module, names, d_in: int, d_out: int, bias: bool = False, after: tuple[str, ...] = ()) -> None:
    """``module`` holds the children ``names``, made in that order (then those named ``after``: the order fixes the
    random draws of their weights; a submodule without parameters, as dropout, may come anywhere), each an
    nn.Linear(d_in, d_out) with a bias only where ``bias``: a failure says which part is wrong (an ``and`` of asserts
    said only that the whole was False)."""
    __tracebackhide__ = True
    wanted = [*names, *after]
    made = [name for name, _ in module.named_children() if name in wanted]
    if made != wanted:
        raise Failure(f"the layers are made in the order {', '.join(made) or 'none'}; expected {', '.join(wanted)} "
                      f"(the order of their random initial weights)")
    for name in names:
        layer = getattr(module, name)
        if not isinstance(layer, torch.nn.Linear):
            raise Failure(f"{name} is {type(layer).__name__}, not nn.Linear")
        if tuple(layer.weight.shape) != (d_out, d_in):
            raise Failure(f"{name}.weight is {shape(layer.weight)}: nn.Linear({d_in}, {d_out}) keeps it as "
                          f"(out_features, in_features) = ({d_out}, {d_in})")
        if (layer.bias is not None) != bias:
            raise Failure(f"{name} has {'no' if bias else 'a'} bias with qkv_bias={bias}: pass bias=qkv_bias to "
                          f"nn.Linear")


class _Counting(TorchFunctionMode):
    """Counts the torch functions, methods and operators called, as the grader's worker does."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def operations(thunk) -> int:
    """How many torch operations ``thunk()`` makes (what it calls inside torch's own functions is not counted)."""
    with torch.no_grad(), _Counting() as counting:
        attempt(thunk)
    return counting.count


class _HalvingDropout(TorchFunctionMode):
    """Every dropout call in training mode (the nn.Dropout module, ``F.dropout``, ``torch.dropout``) records its input
    and returns it halved: a dropout without chance, whatever the layout of the tensor it acts on."""

    CALLS = {F.dropout: 2, torch.dropout: 2, torch.dropout_: 2}  # -> the position of the training flag

    def __init__(self):
        super().__init__()
        self.inputs: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in self.CALLS:
            return func(*args, **kwargs)
        x = args[0] if args else kwargs["input"]
        position = self.CALLS[func]
        training = args[position] if len(args) > position else kwargs.get("training", kwargs.get("train", True))
        if not training:
            return x
        self.inputs.append(x.detach().clone())
        return x * 0.5


def dropout_on_weights(module, x, weights: int, rows: int, halved) -> None:
    """In training mode ``module(x)`` calls dropout once, on the attention weights (``weights`` entries, each >= 0,
    ``rows`` rows summing to 1: their total), once normalized; with a dropout that halves what it is given, the
    result is ``halved(eval-mode result)``."""
    __tracebackhide__ = True
    with torch.no_grad():
        want = halved(module.eval()(x))
        with _HalvingDropout() as dropout:
            got = module.train()(x)
    module.eval()
    if len(dropout.inputs) != 1:
        raise Failure(f"dropout is called {len(dropout.inputs)} times in training mode, where once is expected: "
                      f"self.dropout on the attention weights, all at once (a Python loop over the heads or the "
                      f"batch calls it once per step)")
    given = dropout.inputs[0]
    if bool(torch.isneginf(given).any()) and not bool(torch.isnan(given).any()):
        raise Failure("dropout acts before the attention weights are normalized (the masked entries are -inf "
                      "there): apply self.dropout to the weights once they are normalized")
    if not bool(torch.isfinite(given).all()):
        raise Failure("the attention weights hold NaN or inf (a row whose every score is masked, or an overflow): "
                      "see the values checks")
    if given.numel() != weights:
        raise Failure(f"dropout acts on a tensor of {given.numel()} entries; the attention weights here have "
                      f"{weights}: apply dropout to the weights, not to the projections or the output")
    total = float(given.double().sum())
    if bool((given < 0).any()) or abs(total - rows) > 1e-4 * rows:
        raise Failure("dropout's input is not the attention weights (each row of weights is >= 0 and sums to 1): "
                      "apply dropout to the weights once they are normalized")
    expect_close(got, want)


def dropout_off_in_eval(module, without, x) -> None:
    """In eval mode ``module(x)`` (dropout 0.5) equals ``without(x)`` (the same weights, dropout 0)."""
    __tracebackhide__ = True
    with torch.no_grad():
        got, want = module.eval()(x), without.eval()(x)
    if (isinstance(got, torch.Tensor) and got.shape == want.shape and bool(torch.isfinite(got).all())
            and not torch.allclose(D.as64(got), D.as64(want), rtol=1e-4, atol=1e-5)):
        raise Failure("in eval mode the output changes with the dropout rate (0.5 against 0)",
                      D.Hint(D.DROPOUT_IN_EVAL, lambda: got))
    expect_close(got, want)


def attempt(thunk, hints: D.Hints = ()):
    """``thunk()`` (a call of the student's code); an error it raises that a known mistake raises too on the same
    input (``diagnosis.raising_alike``) fails the check with that mistake's hint."""
    __tracebackhide__ = True
    try:
        return thunk()
    except (RuntimeError, ValueError, TypeError, IndexError) as error:
        hint = D.raising_alike(type(error).__name__, str(error), hints)
        if hint is None:
            raise
        first = (str(error).strip().splitlines() or [""])[0][:200]
        raise Failure(f"raised {type(error).__name__}: {first}", hint=hint) from None


def test_imports_allowed(impl, request):
    """The file imports only torch and math, and earlier exercises with a relative import (the grader's rule)."""
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    if module in NOTEBOOK:  # the solution cell's own text, which the grader grades as the file
        where, source = "the solution cell", cell_source(NOTEBOOK[module], defined_in(impl.path / f"{module}.py"))
        if source is None:  # never passed unread: the grader reads the cell's text
            raise Failure("the import rule cannot be checked here: this kernel kept no text of the solution cell (run "
                          "the notebook in Jupyter, or the public checks on the file)")
    else:
        where = f"{module}.py"
        try:
            source = (impl.path / where).read_bytes()  # bytes: a BOM or coding line read as Python does
        except OSError:
            source = None
    imports = None if source is None else import_rule.imports_of(source)
    if imports is None:
        getattr(impl, module)  # a missing file or one that does not compile: its one-line report
        raise Failure(f"{where} cannot be read as Python")
    def read(other: str):  # an earlier exercise's file, as the grader judges it with this one
        if other == module:
            return imports
        try:
            return import_rule.imports_of((impl.path / f"{other}.py").read_bytes())
        except OSError:
            return None

    bad = import_rule.forbidden_through(read, module, list(impl.titles))
    if bad:
        shown = ", ".join(f"{name} (line {line})" for name, line in bad[:3])
        raise Failure(f"{where} imports {shown}: {import_rule.rule()}; the grader's rule check fails too")


def defined_in(stub: Path) -> set[str]:
    """The functions and classes an exercise's file defines (its stub's: the names the notebook's solution cell
    defines too)."""
    try:
        tree = ast.parse(stub.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return set()
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def cell_source(cell: types.ModuleType, names: set[str]) -> str | None:
    """The text of the notebook cells that defined ``names`` of ``cell`` (the kernel keeps each cell's text for its
    tracebacks, ``linecache``; what was imported from a file is not a cell's), or None where it kept none."""
    files = []
    for value in (vars(cell)[name] for name in sorted(names) if name in vars(cell)):
        functions = [value, *vars(value).values()] if isinstance(value, type) else [value]
        for function in functions:
            code = getattr(function, "__code__", None)
            in_a_cell = code is not None and getattr(function, "__module__", None) == "__main__"
            if in_a_cell and code.co_filename not in files and linecache.getlines(code.co_filename):
                files.append(code.co_filename)
    return "".join(line for name in files for line in linecache.getlines(name)) if files else None


def run_in_notebook(module: str, namespace: dict) -> int:
    """Run the public checks of ``module`` on the code a notebook defined (``namespace``: its ``globals()``), with the
    table of ``python -m pytest tests/public -m <module>`` and nothing else (the import rule on the cell's text). Only
    the exercise's own file is collected, with the handout's pytest configuration (its pyproject.toml: no plugin
    autoloaded)."""
    NOTEBOOK[module] = types.ModuleType(module)
    NOTEBOOK[module].__dict__.update(namespace)
    try:
        folder = Path(__file__).resolve().parent
        status = pytest.main([str(folder / f"test_{module}.py"), "-m", module, "--rootdir", str(folder),
                              "-W", "ignore::pytest.PytestAssertRewriteWarning",
                              "-p", "no:terminal"])  # no progress dots: the harness prints its table alone
        if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            print(f"the checks of {module} could not run (pytest's exit status {int(status)}): run "
                  f"`python -m pytest tests/public -m {module}` in a terminal to see why")
        return status
    finally:
        NOTEBOOK.pop(module, None)
