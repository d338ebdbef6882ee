"""Hidden suite, exercise 4: projections, scaled dot-product attention, SelfAttention, SelfAttentionLinear."""

import hints_qkv as known
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites import modules as M
from grader.suites.contract import Contract, HalfInputs, Size, Subject, sequences
from solutions import qkv as ref

pytestmark = pytest.mark.qkv

SDPA = "scaled_dot_product_attention(queries, keys, values)"
PROJECT = "project(x, W_query, W_key, W_value)"
OUTPUTS = ("queries", "keys", "values")


def _mask(case, *shape, device):
    """A random bool mask of ``shape`` (True = may attend) in which every row keeps at least one True."""
    allowed = case.rand(*shape) < 0.6
    allowed[..., 0] |= ~allowed.any(-1)
    return allowed.to(device)


# ---------------------------------------------------------------- project

def _check_project(student, course, x, Wq, Wk, Wv):
    on = C.describe(x=x, W_query=Wq, W_key=Wk, W_value=Wv)
    weights = {"W_query": Wq, "W_key": Wk, "W_value": Wv}
    raising = [hint for name, own in zip(OUTPUTS, weights) for hint in known.project_hints(x, weights, own, name)]
    got = C.attempt(lambda: student.qkv.project(x, Wq, Wk, Wv), PROJECT, on, raising)
    got = C.expect_tensors(got, 3, PROJECT, on, "the tuple (queries, keys, values)")
    want = C.in_float64(ref.project, x, Wq, Wk, Wv)
    for name, g, w, own in zip(OUTPUTS, got, want, weights):
        C.expect_close(g, w, what=f"the {name} of {PROJECT}", on=on, course=course,
                       hints=known.project_hints(x, weights, own, name),
                       generic=f"the {name} are x @ {own}, one row per token.")


@pytest.mark.weight(2)
@S.examples(8)
@given(case=S.projections())
def test_project_values(student, course, device, case):
    """project returns (x @ W_query, x @ W_key, x @ W_value) for (..., T, d_in) inputs with d_k != d_v."""
    x = case.randn(*case.batch, case.T, case.d_in, dtype=torch.float32, device=device)
    Wq, Wk = (case.randn(case.d_in, case.d_k, dtype=torch.float32, device=device) for _ in range(2))
    Wv = case.randn(case.d_in, case.d_v, dtype=torch.float32, device=device)
    _check_project(student, course, x, Wq, Wk, Wv)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_project_errors(student, device):
    """project raises ValueError when a weight's first dim is not d_in or W_query and W_key widths differ."""
    x = torch.ones(2, 3, 4, device=device)
    good, bad_rows, narrow = torch.ones(4, 5, device=device), torch.ones(6, 5, device=device), torch.ones(4, 2, device=device)
    C.expect_raises(ValueError, lambda: student.qkv.project(x, bad_rows, good, good), PROJECT,
                    "W_query's first dim is not d_in", "compare each weight's shape[0] with x.shape[-1] and raise ValueError")
    C.expect_raises(ValueError, lambda: student.qkv.project(x, good, narrow, good), PROJECT,
                    "W_query and W_key have different widths",
                    "queries and keys are compared by dot products, so W_query.shape[1] must equal W_key.shape[1]")


# ---------------------------------------------------------------- scaled_dot_product_attention

def _check_sdpa(student, course, q, k, v, mask=None, rtol=None, atol=None, overflow=False):
    """``overflow``: the mistakes are computed in the inputs' own dtype (large inputs: exp overflows there)."""
    named = dict(queries=q, keys=k, values=v) | ({"mask": mask} if mask is not None else {})
    on = C.describe(**named)
    args = (q, k, v) if mask is None else (q, k, v, mask)
    hints = known.attention_hints(*((q, k, v) if overflow else (q.double(), k.double(), v.double())), mask)
    got = C.attempt(lambda: student.qkv.scaled_dot_product_attention(*args), SDPA, on, hints)
    want = C.in_float64(ref.scaled_dot_product_attention, *args)
    C.expect_close(got, want, what=SDPA + (" with a mask" if mask is not None else ""), on=on, course=course,
                   rtol=rtol, atol=atol,
                   hints=hints, generic="softmax(queries @ keys^T / sqrt(d_k)) over the keys, then @ values.")


@pytest.mark.weight(3)
@S.examples(8)
@given(case=S.qkv_triples())
def test_sdpa_values(student, course, device, case):
    """scaled_dot_product_attention is softmax(Q K^T / sqrt(d_k)) V, with Tq != Tk and d_k != d_v."""
    q = case.randn(*case.batch, case.Tq, case.d_k, dtype=torch.float32, device=device)
    k = case.randn(*case.batch, case.Tk, case.d_k, dtype=torch.float32, device=device)
    v = case.randn(*case.batch, case.Tk, case.d_v, dtype=torch.float32, device=device)
    _check_sdpa(student, course, q, k, v)


@pytest.mark.weight(2)
@S.examples(8)
@given(case=S.qkv_triples(), full=st.booleans())
def test_sdpa_mask(student, course, device, case, full):
    """A bool mask (True = may attend), of shape (Tq, Tk) or the full (..., Tq, Tk), gives masked keys weight 0."""
    q = case.randn(*case.batch, case.Tq, case.d_k, dtype=torch.float32, device=device)
    k = case.randn(*case.batch, case.Tk, case.d_k, dtype=torch.float32, device=device)
    v = case.randn(*case.batch, case.Tk, case.d_v, dtype=torch.float32, device=device)
    mask = _mask(case, *(case.batch if full else ()), case.Tq, case.Tk, device=device)
    _check_sdpa(student, course, q, k, v, mask)


@pytest.mark.weight(1)
def test_sdpa_large_scores(student, course, device):
    """Large scores (inputs times 10) give finite weights that match the reference."""
    g = torch.Generator().manual_seed(course.seed)
    q, k = (torch.randn(2, 4, 6, generator=g) * 10 for _ in range(2))
    v = torch.randn(2, 4, 3, generator=g)
    rtol, atol = C.tolerance(course, torch.float32, float((q @ k.mT).abs().max()))
    _check_sdpa(student, course, q.to(device), k.to(device), v.to(device), rtol=rtol, atol=atol, overflow=True)


@pytest.mark.rule
@pytest.mark.weight(1)
def test_sdpa_errors(student, device):
    """scaled_dot_product_attention raises ValueError on mismatched d_k or mismatched Tk."""
    q, k = torch.ones(2, 3, 4, device=device), torch.ones(2, 5, 4, device=device)
    C.expect_raises(ValueError, lambda: student.qkv.scaled_dot_product_attention(q, torch.ones(2, 5, 6, device=device),
                                                                                torch.ones(2, 5, 2, device=device)),
                    SDPA, "queries and keys have different d_k", "compare queries.shape[-1] with keys.shape[-1]")
    C.expect_raises(ValueError, lambda: student.qkv.scaled_dot_product_attention(q, k, torch.ones(2, 6, 2, device=device)),
                    SDPA, "keys and values have different Tk", "compare keys.shape[-2] with values.shape[-2]")


# ---------------------------------------------------------------- SelfAttention and SelfAttentionLinear

@pytest.mark.rule
@pytest.mark.weight(1)
@S.examples(2)
@given(case=S.modules(batch=(0, 0)))
def test_self_attention_seeded_init(student, course, device, case):
    """SelfAttention creates W_query, W_key, W_value = nn.Parameter(torch.rand(d_in, d_out)) in that order."""
    on = f"d_in={case.d_in}, d_out={case.d_out}"
    M.expect_seeded_init(student.qkv.SelfAttention, (case.d_in, case.d_out), {}, case.seed,
                         lambda: ref.SelfAttention(case.d_in, case.d_out), "SelfAttention", on,
                         "create W_query, W_key, W_value in that order, each nn.Parameter(torch.rand(d_in, d_out)).")


@pytest.mark.rule
@pytest.mark.weight(1)
@S.examples(2)
@given(case=S.modules(batch=(0, 0)), bias=st.booleans())
def test_self_attention_linear_seeded_init(student, course, device, case, bias):
    """SelfAttentionLinear creates W_query, W_key, W_value = nn.Linear(d_in, d_out, bias=qkv_bias) in that order."""
    on = f"d_in={case.d_in}, d_out={case.d_out}, qkv_bias={bias}"
    M.expect_seeded_init(student.qkv.SelfAttentionLinear, (case.d_in, case.d_out), {"qkv_bias": bias}, case.seed,
                         lambda: ref.SelfAttentionLinear(case.d_in, case.d_out, qkv_bias=bias),
                         "SelfAttentionLinear", on,
                         "create W_query, W_key, W_value in that order, each nn.Linear(d_in, d_out, bias=qkv_bias) (a "
                         "bias only when qkv_bias is True), and no other parameter.")


def _module_hints(reference, x, linear: bool):
    """Mistakes of a SelfAttention(Linear) forward, with the reference's own weights."""
    if linear:
        q, k, v = reference.W_query(x), reference.W_key(x), reference.W_value(x)
    else:
        q, k, v = x @ reference.W_query, x @ reference.W_key, x @ reference.W_value
    weights = tuple(layer.weight for layer in (reference.W_query, reference.W_key, reference.W_value)) if linear else None
    return known.self_attention_hints(q, k, v, x.shape[-1], x, weights)


def _check_module(course, module, reference, x):
    """The student's ``module`` (holding the ``reference``'s parameters) gives the reference's result on ``x``."""
    what, on = f"{type(reference).__name__}(x)", C.describe(x=x)

    def hints():
        return _module_hints(M.wide(reference), x.double(), isinstance(reference, ref.SelfAttentionLinear))

    got = C.attempt(lambda: module(x), what, on, hints)
    C.expect_close(got, M.module_reference(reference, x), what=what, on=on, course=course, hints=hints,
                   generic="project x to queries, keys and values, then softmax(Q K^T / sqrt(d_out)) V.")


def _check_twin(student, course, cls, reference, x, ctor, device):
    """The student's ``cls``, built with ``ctor`` and holding the reference's parameters, gives its result on ``x``."""
    module = M.twin(getattr(student.qkv, cls), reference, *ctor, what=cls, dtype=x.dtype, device=device)
    _check_module(course, module, reference, x)


@pytest.mark.weight(3)
@S.examples(5)
@given(case=S.modules())
def test_self_attention_values(student, course, device, case):
    """SelfAttention(d_in, d_out)(x) with the same weights as the reference, for (..., T, d_in) with 0-2 batch dims."""
    C.seed(case.seed)
    reference = ref.SelfAttention(case.d_in, case.d_out).to(device)
    x = case.randn(*case.batch, case.T, case.d_in, dtype=torch.float32, device=device)
    _check_twin(student, course, "SelfAttention", reference, x, (case.d_in, case.d_out), device)


@pytest.mark.weight(2)
@S.examples(5)
@given(case=S.modules(), bias=st.booleans())
def test_self_attention_linear_values(student, course, device, case, bias):
    """SelfAttentionLinear(d_in, d_out, qkv_bias)(x) with the reference's weights, for (..., T, d_in)."""
    C.seed(case.seed)
    reference = ref.SelfAttentionLinear(case.d_in, case.d_out, qkv_bias=bias).to(device)
    x = case.randn(*case.batch, case.T, case.d_in, dtype=torch.float32, device=device)
    _check_twin(student, course, "SelfAttentionLinear", reference, x, (case.d_in, case.d_out, bias), device)


@pytest.mark.weight(2)
@S.examples(3)
@given(case=S.modules(batch=(1, 1)))
def test_copy_linear_weights(student, course, device, case):
    """copy_linear_weights(src, dst) returns dst holding src's weights transposed, src untouched: dst(x) = src(x)."""
    C.seed(case.seed)
    src_ref = ref.SelfAttentionLinear(case.d_in, case.d_out).to(device)
    src = M.twin(student.qkv.SelfAttentionLinear, src_ref, case.d_in, case.d_out, qkv_bias=False,  # whatever its default
                 what="SelfAttentionLinear", device=device)
    dst = C.attempt(lambda: student.qkv.SelfAttention.build(case.d_in, case.d_out), "SelfAttention", "construction")
    dst.to.build(device=device)
    on = f"d_in={case.d_in}, d_out={case.d_out}"
    returned = C.attempt(lambda: student.qkv.copy_linear_weights.run((src, dst), handles=True).value,
                         "copy_linear_weights(src, dst)", on, known.copy_hints(case.d_in, case.d_out))
    if getattr(returned, "id", None) != dst.id:
        raise C.CheckFailed(f"copy_linear_weights(src, dst) should return dst itself ({on}); it returned "
                            f"{'None' if returned is None else 'something else'}.")
    kept = src.params()
    for name, want in src_ref.named_parameters():
        g = kept.get(name)
        if g is None or tuple(g.shape) != tuple(want.shape) or not torch.equal(
                C.checked(g, want, what=f"src.{name}", on=on, dtypes=C.FLOATING).to(want), want.detach()):
            raise C.CheckFailed(f"copy_linear_weights(src, dst) changed src.{name} ({on}): read src's weights without "
                                "changing them (an in-place method such as .t_() or .transpose_() on src's weight "
                                "transposes src itself).")
    got = dst.params()
    for name in ("W_query", "W_key", "W_value"):
        want = getattr(src_ref, name).weight.detach().T
        g = got.get(name)
        if g is None or tuple(g.shape) != tuple(want.shape) or not torch.allclose(
                C.checked(g, want, what=f"dst.{name}", on=on, dtypes=C.FLOATING).to(want), want):
            hint = ("nn.Linear keeps its weight as (d_out, d_in); SelfAttention multiplies by (d_in, d_out): copy "
                    "linear.weight.T, a transpose, not a reshape or view.")
            raise C.CheckFailed(f"after copy_linear_weights, dst.{name} does not hold src.{name}.weight transposed ({on}). "
                                f"Hint: {hint}")
    x = case.randn(*case.batch, case.T, case.d_in, dtype=torch.float32, device=device)

    def hints():  # dst holds src's weights transposed (checked above): a mistake here is SelfAttention's forward's
        wide, x64 = M.wide(src_ref), x.double()
        return known.self_attention_hints(wide.W_query(x64), wide.W_key(x64), wide.W_value(x64), x.shape[-1])

    C.expect_close(C.attempt(lambda: dst(x), "dst(x)", C.describe(x=x), hints), M.module_reference(src_ref, x),
                   what="dst(x) after copy_linear_weights", on=C.describe(x=x), course=course, hints=hints)


# ---------------------------------------------------------------- dtype, device, autograd, in-place, loops, built-ins


def _sdpa_size(B: int, T: int) -> Size:
    return Size(f"T={T}, batch {B}", ((B, T, 3), (B, T + 1, 3), (B, T + 1, 5)))


def _module(name: str, ctor: tuple, half=()) -> Subject:
    return Subject(name, f"{name}(x)", ("x",), ((2, 3, 7),), getattr(ref, name), ctor=ctor,
                   values=lambda student, course, case: _check_module(course, case.call, case.reference, *case.args),
                   instead="project, then your scaled_dot_product_attention.", sizes=sequences(7), half=half)


CONTRACT = Contract(subjects=(
    Subject("scaled_dot_product_attention", SDPA, OUTPUTS, ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
            ref.scaled_dot_product_attention, values=lambda student, course, case: _check_sdpa(student, course, *case.args),
            instead="queries @ keys.transpose(-2, -1) / sqrt(d_k), masked_fill, torch.softmax, @ values.",
            sizes=(_sdpa_size(2, 3), _sdpa_size(2, 8), _sdpa_size(6, 3)), half=(HalfInputs(0.5),)),
    Subject("project", PROJECT, ("x", "W_query", "W_key", "W_value"), ((2, 3, 7), (7, 4), (7, 4), (7, 5)), ref.project,
            values=lambda student, course, case: _check_project(student, course, *case.args), autograd=False,
            sizes=tuple(Size(size.label, (size.shapes[0], (4, 3), (4, 3), (4, 3))) for size in sequences(4)), half=()),
    _module("SelfAttention", (7, 3)),
    _module("SelfAttentionLinear", (7, 3, True), half=(HalfInputs(),)),
))
