"""The known mistakes (each exercise's tests/course/<module>/hints_<module>.py, the shared tests/course/hints.py) and
their diagnosis (grader/suites/public/diagnosis.py): a hint is named only when its mistake reproduces the result, or
the error, on the same input; where two mistakes fit alike, none is."""
import importlib
import sys
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from grader.course import course
from grader.suites import PUBLIC

sys.path[:0] = [str(PUBLIC), str(course().suites_dir), *(str(course().exercise_dir(m)) for m in course().modules)]
import diagnosis  # noqa: E402
import hints  # noqa: E402

# Every name of the diagnosis, the shared hints and each exercise's hints, as one namespace: M.matching, M.softmax_hints
M = SimpleNamespace(**{name: value for module in (diagnosis, hints, *(importlib.import_module(f"hints_{m}")
                                                                    for m in course().modules))
                       for name, value in vars(module).items() if not name.startswith("_")})


def _error(thunk) -> tuple[str, str]:
    """(type name, message) of the exception ``thunk`` raises: what the worker reports of a student's error."""
    try:
        thunk()
    except Exception as error:
        return type(error).__name__, str(error)
    raise AssertionError("no exception")


def _causal(x, fill=float("-inf"), sliced=True, context_length=9):
    """A causal attention on x (its own queries, keys and values), with the mask buffer sliced or not."""
    mask = torch.ones(context_length, context_length, dtype=torch.bool).tril()
    T = x.shape[-2]
    scores = (x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5).masked_fill(~(mask[:T, :T] if sliced else mask), fill)
    return torch.softmax(scores, -1) @ x


def test_a_softmax_without_max_is_named_in_the_input_dtype():
    """exp overflows in float32: the student's NaN are the no-max softmax's, computed in float32 too."""
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0)) * 100
    got = M.naive_softmax(x)
    assert torch.isnan(got).any()
    found = M.matching(got, M.softmax_hints(x, -1, 1.0), 1e-4, 1e-5, torch.softmax(x.double(), -1))
    assert found is not None and found.id == "softmax.no_max"


def test_mistakes_the_input_cannot_tell_apart_are_not_named():
    """Rows of very different magnitude: no max, a global max and the right row max all fail alike (NaN in the same
    rows), so neither of the two mistakes is named."""
    scale = torch.tensor([1e-3, 1.0, 30.0, 300.0]).view(4, 1)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1)) * scale - scale * 10
    got = M.naive_softmax(x - x.max())
    hints = M.softmax_hints(x, -1, 1.0)
    assert {h.id for h in hints if M.matching(got, [h], 1e-4, 1e-5)} == {"softmax.no_max", "softmax.global_max"}
    assert M.matching(got, hints, 1e-4, 1e-5) is None


def test_a_mistake_that_gives_the_right_result_is_passed_over():
    """At temperature 1, ignoring the temperature changes nothing: it is never the diagnosis of a wrong result."""
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    want = torch.softmax(x, -1)
    ignored = M.Hint("the temperature is ignored", lambda: torch.softmax(x, -1), "softmax.temperature_ignored")
    assert M.matching(want + 1e-3, [ignored], 1e-7, 1e-9, want) is None
    assert M.matching(want, [ignored], 1e-7, 1e-9) is ignored


def test_an_error_is_named_by_the_mistake_that_raises_it():
    """A sequence shorter than context_length: an unsliced mask and a -1e9 fill in float16 both raise a
    RuntimeError, each is named only for its own error, and code that slices but fills -1e9 is not told to slice."""
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(3)).half()
    hints = M.causal_hints(x, x, x, 4, context_length=9)
    overflow, unsliced = _error(lambda: _causal(x, fill=-1e9)), _error(lambda: _causal(x, sliced=False))
    assert overflow[0] == unsliced[0] == "RuntimeError"
    assert M.raising_alike(*overflow, hints).id == "causal.fill_overflows"
    assert M.raising_alike(*unsliced, hints).id == "causal.mask_not_sliced"
    assert M.raising_alike("RuntimeError", "something else went wrong", hints) is None
    assert M.raising_alike("RuntimeError", unsliced[1].replace("9", "8"), hints) is None  # other sizes: another error
    assert M.raising_alike("ValueError", overflow[1], hints) is None


def test_torchs_errors_of_real_students_bugs_are_said_in_their_words():
    """Found by our sixth student walk-through, where "your code raised RuntimeError" was all the feedback: the
    softmax's output masked in place (its backward fails), ~ of a float mask, a parameter copied into outside
    torch.no_grad()."""
    def masked_in_place():
        x = torch.randn(2, 3, 3, requires_grad=True)
        weights = torch.softmax(x, -1)
        weights.masked_fill_(~torch.ones(3, 3, dtype=torch.bool).tril(), 0.0)
        weights.sum().backward()

    def mask_as_index():  # walk-through 13: explained as "count dims from the end", IndexError's meaning
        scores = torch.randn(6, 8, 2)
        scores[~torch.ones(8, 2, dtype=torch.bool)] = float("-inf")

    said = {thunk: M.meaning_of(_error(thunk)[1]) or "" for thunk in (
        masked_in_place, lambda: ~torch.ones(3, 3).tril(), lambda: nn.Linear(2, 2).weight.copy_(torch.ones(2, 2)),
        mask_as_index)}
    assert [meaning.split(":")[0] for meaning in said.values()] == [
        "a tensor autograd keeps for the backward pass (the attention weights, an intermediate) was changed in place "
        "afterwards (masked_fill_, +=, x[...] = ..., nn.Dropout(p, inplace=True))", "~ (invert) of a float tensor",
        "a tensor that requires grad (an input, or a module's parameter) was changed in place",
        "a bool mask used as an index (x[~mask] = ...) must have the tensor's whole shape"]


def test_batched_T_is_named_for_the_error_it_raises():
    """keys.T (every dim reversed) on batched keys raises; the transpose mistake raises the same error on the same
    input."""
    q, k, v = (torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(n)) for n in (4, 5, 6))
    kind, message = _error(lambda: torch.softmax(q @ M.reversed_dims(k) / 5 ** 0.5, -1) @ v)
    assert M.raising_alike(kind, message, M.attention_hints(q, k, v)).id == "attention.batched_T"


def test_every_mistake_has_an_id_of_its_exercise():
    """Each hint of every exercise carries a stable id '<exercise or topic>.<mistake>'."""
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    hints = [*M.softmax_hints(x, 1, 2.0), *M.pairwise_hints(x), *M.score_hints(x, x), *M.context_weight_hints(x),
             *M.context_vector_hints(x), *M.attention_hints(x, x, x, torch.ones(3, 3, dtype=torch.bool)),
             *M.self_attention_hints(x, x, x, 4), *M.decoder_hints(x[:, 0], x), *M.dictionary_hints(x, x, x, 0.5),
             *M.causal_hints(x, x, x, 4, context_length=5), *M.causal_mask_hints(3),
             *M.multihead_hints(ContractOnly(4, 6, 2).double(), x, 2, context_length=5)]
    assert all(h.id.count(".") == 1 and h.id == h.id.strip() and h.message for h in hints)
    topics = {*course().modules, "attention"}
    assert {h.id.split(".")[0] for h in hints} <= topics


class ContractOnly(nn.Module):
    """A multi-head module as a student may write it: the contract's layers, nothing else the hints could read (no
    num_heads, head_dim or mask attribute), heads split with view and no transpose."""

    def __init__(self, d_in, d_out, num_heads):
        super().__init__()
        torch.manual_seed(0)
        self.W_query, self.W_key, self.W_value = (nn.Linear(d_in, d_out, bias=False) for _ in range(3))
        self.out_proj = nn.Linear(d_out, d_out)
        self._heads = num_heads

    def forward(self, x):
        B, T, d_out = x.shape[0], x.shape[1], self.out_proj.in_features
        q, k, v = (layer(x).view(B, self._heads, T, d_out // self._heads) for layer in (self.W_query, self.W_key,
                                                                                    self.W_value))
        scores = (q @ k.transpose(-2, -1) / (d_out // self._heads) ** 0.5).masked_fill(
            ~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        return self.out_proj((torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, T, d_out))


@pytest.mark.parametrize("exercise", ["multihead", "causal"])
def test_hints_run_on_a_students_module_with_the_contracts_names_only(exercise):
    """The multi-head and causal hints take the module's own layers and the contract's configuration (num_heads,
    context_length), never a reference's private attributes: on a student's module with nothing but the contract's
    layers they name its mistake."""
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    module = ContractOnly(3, 6, 2).double()
    got = module(x)
    if exercise == "multihead":
        found = M.matching(got, M.multihead_hints(module, x, 2, context_length=5), 1e-7, 1e-9)
        assert found is not None and found.id == "multihead.split_no_transpose"
    else:
        q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
        unscaled = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(),
                                                                    float("-inf")), -1) @ v
        found = M.matching(unscaled, M.module_hints(module, x, context_length=7), 1e-7, 1e-9)
        assert found is not None and found.id == "causal.no_scaling"


def test_zeros_are_no_known_mistake_of_one_hot():
    """one_hot(0, n) off by one puts the 1 last (v[-1]); a vector of zeros is no such mistake."""
    def one_hot(index, n):
        return torch.zeros(n).index_fill(0, torch.tensor(index), 1.0)

    hints = M.one_hot_hints(0, 4, one_hot)
    assert M.matching(torch.zeros(4), hints, 0.0, 0.0) is None
    assert M.matching(one_hot(3, 4), hints, 0.0, 0.0).id == "dictionary.one_hot_off_by_one"


@pytest.mark.parametrize("named, reported", [
    (["", "a", "a", "a"], "a"),  # the first case names none (several mistakes fit at T=1): the mistake the others name
    (["", "b", "", "", "", ""], ""),  # one case of six names one: a coincidence of sizes, the first failure stands
    (["c", "a", "a"], "c"),  # the first failure names its mistake: it is the one raised, and the others never run
    (["", ""], ""),
    (["", "", "", "a", "a", "a", "a"], ""),  # four failing cases seen, one names a mistake; the later ones never run
])
def test_a_failing_test_reports_the_mistake_most_of_its_failing_cases_name(named, reported):
    """checks.each runs a check on the cases up to WITNESSES failing ones: the failure raised is the first when it
    names a mistake, else the first naming a mistake that at least half the failing cases seen name, else the first."""
    from grader.suites.checks import WITNESSES, CheckFailed, each

    ran = []

    def check(n):
        ran.append(n)
        raise CheckFailed(f"case {n}", misconception=named[n])

    with pytest.raises(CheckFailed) as failure:
        each(range(len(named)), check)
    assert failure.value.misconception == reported
    assert str(failure.value) == f"case {named.index(reported) if reported else 0}"
    assert ran == ([0] if named[0] else list(range(min(len(named), WITNESSES))))


def test_the_failures_a_test_keeps_hold_none_of_their_results():
    """checks.each keeps a failing case's failure without its traceback, whose frames hold the case's results (found
    by our ninth red team: a softmax returning one 96 MB tensor to each of 14 cases held them all, a grader fault)."""
    import gc
    import weakref

    from grader.suites.checks import CheckFailed, each

    class Result:
        pass

    results = []

    def check(n):
        result = Result()  # what a case's frames hold: the student's result, a view of the reply's bytes
        results.append(weakref.ref(result))
        raise CheckFailed(f"case {n}")

    gc.disable()  # only reference counting frees them: no collector ran before the next reply was read
    try:
        with pytest.raises(CheckFailed):
            each(range(5), check)
        assert len(results) > 1 and [ref() for ref in results] == [None] * len(results)
    finally:
        gc.enable()


def test_a_student_exception_claiming_a_builtin_python_has_not_is_still_a_student_error():
    """An exception class of the submission that names itself after a built-in Python has not is a StudentError with
    the real built-ins it names (red team 15: the grading process raised AttributeError inside the checks, failing
    rules that should have been judged)."""
    from grader.sandbox.host.problems import StudentError, student_error

    error = student_error({"type": "NoSuchBuiltin", "builtins": ["NoSuchBuiltin", "ValueError", "print", 7],
                           "message": "x"})
    assert isinstance(error, StudentError) and isinstance(error, ValueError)
    assert error.info["builtins"] == ["ValueError"] and error.builtin == ""


def test_an_error_no_message_explains_is_said_by_its_built_in_type():
    """Where torch's message is none the diagnosis knows, the hidden feedback says what an exception of that
    built-in type usually means, and how to read its own message: call the code on such an input (found by our seventh
    student walk-through: "your code raised TypeError" was all a student learned; the eighth: the public checks, which
    the pointer named, pass where only hidden inputs raise); a known message keeps its own meaning; a note particular
    to the check comes before the meaning, so that the feedback's cap cuts the general words first."""
    from grader.sandbox.host.problems import student_error
    from grader.suites.checks import failed

    def said(kind: str, message: str) -> str:
        return str(failed(student_error({"type": kind, "builtins": [kind], "message": message}), "softmax(x)", "x (3, 4)"))

    typed = said("TypeError", "view(): argument 'size' must be tuple of ints, but found element of type float")
    assert typed.startswith("softmax(x) failed on x (3, 4): your code raised TypeError. This error means: an operation "
                            "got a value of the wrong type"), typed
    assert typed.endswith("(to read the error's own message, call your code on an input like this one)."), typed
    assert "view()" not in typed  # the message itself is never shown
    known = said("RuntimeError", "view size is not compatible with input tensor's size and stride")
    assert "use reshape(...)" in known and "the error's own message" not in known
    noted = str(failed(student_error({"type": "TypeError", "builtins": ["TypeError"], "message": "no"}), "f(x)", "x (3,)",
                       note="meta tensors have no values"))
    assert noted.index("Note: meta tensors") < noted.index("This error means"), noted
    assert "This error means" not in said("MemoryError", "")  # no meaning of its own: nothing said
    meta = said("NotImplementedError", "Cannot copy out of meta tensor; no data!")  # torch's, not a stub left
    assert meta.startswith("softmax(x) failed on x (3, 4): your code raised NotImplementedError. This error means: "
                           "the values of a meta tensor were copied out"), meta
    indexed = said("NotImplementedError", "aten::nonzero: attempted to run this operator with Meta tensors")
    assert "your code raised NotImplementedError. This error means: an operation torch has not got" in indexed
    assert "fill in the stub" in said("NotImplementedError", "")  # a stub of the student's own, without a message


def test_what_came_back_instead_of_a_tensor_is_said_with_its_own_remedy():
    """A tuple of tensors (a (context, weights) pair, the habit of other implementations) is told to return the
    tensor alone; a list of numbers, to build a tensor; a number, to keep the tensor (walk-throughs 7 and 8)."""
    from grader.suites.checks import CheckFailed, expect_tensor

    def said(value) -> str:
        with pytest.raises(CheckFailed) as failure:
            expect_tensor(value, "attention(q, k, v)", "q (2, 5)", like=torch.zeros(2, 5))
        return str(failure.value)

    assert "return the result tensor alone, not a tuple" in said((torch.zeros(2, 5), torch.zeros(2, 2)))
    assert "torch.stack, torch.cat" in said([0.5, 0.5])
    assert "return the tensor itself" in said(0.5)
