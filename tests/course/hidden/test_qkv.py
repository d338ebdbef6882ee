"""Hidden suite, exercise 4: projections, scaled dot-product attention, SelfAttention, SelfAttentionLinear."""
import math

import checks as C
import pytest
import strategies as S
import torch
from hypothesis import given
from hypothesis import strategies as st

from solutions import qkv as ref

pytestmark = pytest.mark.qkv

SDPA = "scaled_dot_product_attention(queries, keys, values)"
TRANSPOSE_HINT = "with batch dims, .T reverses every dim: transpose only the last two, keys.transpose(-2, -1)"
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
    got = C.attempt(lambda: student.qkv.project(x, Wq, Wk, Wv), PROJECT, on)
    got = C.expect_tensors(got, 3, PROJECT, on, "the tuple (queries, keys, values)")
    want = C.in_float64(ref.project, x, Wq, Wk, Wv)
    weights = {"W_query": Wq, "W_key": Wk, "W_value": Wv}
    for name, g, w, own in zip(OUTPUTS, got, want, weights):
        hints = [C.Hint(f"your {name} are computed with {other}; use {own}.", lambda W=W: x @ W)
                 for other, W in weights.items() if other != own]
        hints.append(C.Hint(f"x @ {own} is (..., T, d_in) @ (d_in, width): no transpose of {own} here.",
                            lambda W=weights[own]: x @ W.transpose(-2, -1)))
        C.close(g, w, what=f"the {name} of {PROJECT}", on=on, course=course, hints=hints,
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

def _check_sdpa(student, course, q, k, v, mask=None, rtol=None, atol=None):
    named = dict(queries=q, keys=k, values=v) | ({"mask": mask} if mask is not None else {})
    on = C.describe(**named)
    args = (q, k, v) if mask is None else (q, k, v, mask)
    got = C.attempt(lambda: student.qkv.scaled_dot_product_attention(*args), SDPA, on,
                    TRANSPOSE_HINT if q.dim() > 2 else None)
    want = C.in_float64(ref.scaled_dot_product_attention, *args)
    C.close(got, want, what=SDPA + (" with a mask" if mask is not None else ""), on=on, course=course, rtol=rtol, atol=atol,
            hints=C.attention_hints(q.double(), k.double(), v.double(), mask),
            nonfinite="a row of scores became NaN: mask with masked_fill(~mask, float('-inf')) before a stable softmax.",
            generic="softmax(queries @ keys^T / sqrt(d_k)) over the keys, then @ values.")


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
    _check_sdpa(student, course, q.to(device), k.to(device), v.to(device), rtol=rtol, atol=atol)


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

@pytest.mark.weight(1)
@S.examples(2)
@given(case=S.modules(batch=(0, 0)))
def test_self_attention_seeded_init(student, course, device, case):
    """SelfAttention creates W_query, W_key, W_value = nn.Parameter(torch.rand(d_in, d_out)) in that order."""
    on = f"d_in={case.d_in}, d_out={case.d_out}"
    module = C.build_seeded(student.qkv.SelfAttention, (case.d_in, case.d_out), {}, case.seed,
                            "SelfAttention(d_in, d_out)", on)
    C.seed(case.seed)
    want = C.detached(ref.SelfAttention(case.d_in, case.d_out))
    C.same_params(module.params(), want, "SelfAttention", on,
                    "create W_query, W_key, W_value in that order, each nn.Parameter(torch.rand(d_in, d_out)).")


@pytest.mark.weight(1)
@S.examples(2)
@given(case=S.modules(batch=(0, 0)), bias=st.booleans())
def test_self_attention_linear_seeded_init(student, course, device, case, bias):
    """SelfAttentionLinear creates W_query, W_key, W_value = nn.Linear(d_in, d_out, bias=qkv_bias) in that order."""
    on = f"d_in={case.d_in}, d_out={case.d_out}, qkv_bias={bias}"
    module = C.build_seeded(student.qkv.SelfAttentionLinear, (case.d_in, case.d_out), {"qkv_bias": bias}, case.seed,
                            "SelfAttentionLinear(d_in, d_out, qkv_bias)", on)
    C.seed(case.seed)
    want = C.detached(ref.SelfAttentionLinear(case.d_in, case.d_out, qkv_bias=bias))
    C.same_params(module.params(), want, "SelfAttentionLinear", on,
                    "create W_query, W_key, W_value in that order, each nn.Linear(d_in, d_out, bias=qkv_bias) (a bias only "
                    "when qkv_bias is True), and no other parameter.")


def _module_hints(reference, x, linear: bool):
    """Mistakes of a SelfAttention(Linear) forward, with the reference's own weights."""
    if linear:
        q, k, v = reference.W_query(x), reference.W_key(x), reference.W_value(x)
    else:
        q, k, v = x @ reference.W_query, x @ reference.W_key, x @ reference.W_value
    d_in = x.shape[-1]
    hints = C.attention_hints(q, k, v, scale_name="sqrt(d_out)")
    hints.append(C.Hint("you scale by sqrt(d_in), the input width; scale by sqrt(d_out), the key width.",
                        lambda: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_in), -1) @ v))
    return hints


def _check_module(student, course, cls, reference, x, ctor, what, device):
    module = C.twin(getattr(student.qkv, cls), reference, *ctor, what=what, dtype=x.dtype, device=device)
    on = C.describe(x=x)
    got = C.attempt(lambda: module(x), f"{what}(x)", on)
    C.close(got, C.module_reference(reference, x), what=f"{what}(x)", on=on, course=course,
            hints=lambda: _module_hints(C.wide(reference), x.double(), cls == "SelfAttentionLinear"),
            generic="project x to queries, keys and values, then softmax(Q K^T / sqrt(d_out)) V.")


@pytest.mark.weight(3)
@S.examples(5)
@given(case=S.modules())
def test_self_attention_values(student, course, device, case):
    """SelfAttention(d_in, d_out)(x) with the same weights as the reference, for (..., T, d_in) with 0-2 batch dims."""
    C.seed(case.seed)
    reference = ref.SelfAttention(case.d_in, case.d_out).to(device)
    x = case.randn(*case.batch, case.T, case.d_in, dtype=torch.float32, device=device)
    _check_module(student, course, "SelfAttention", reference, x, (case.d_in, case.d_out), "SelfAttention", device)


@pytest.mark.weight(2)
@S.examples(5)
@given(case=S.modules(), bias=st.booleans())
def test_self_attention_linear_values(student, course, device, case, bias):
    """SelfAttentionLinear(d_in, d_out, qkv_bias)(x) with the reference's weights, for (..., T, d_in)."""
    C.seed(case.seed)
    reference = ref.SelfAttentionLinear(case.d_in, case.d_out, qkv_bias=bias).to(device)
    x = case.randn(*case.batch, case.T, case.d_in, dtype=torch.float32, device=device)
    _check_module(student, course, "SelfAttentionLinear", reference, x, (case.d_in, case.d_out, bias),
                  "SelfAttentionLinear", device)


@pytest.mark.weight(2)
@S.examples(3)
@given(case=S.modules(batch=(1, 1)))
def test_copy_linear_weights(student, course, device, case):
    """copy_linear_weights(src, dst) returns dst holding src's weights transposed, so dst(x) equals src(x)."""
    C.seed(case.seed)
    src_ref = ref.SelfAttentionLinear(case.d_in, case.d_out).to(device)
    src = C.twin(student.qkv.SelfAttentionLinear, src_ref, case.d_in, case.d_out, what="SelfAttentionLinear", device=device)
    dst = C.attempt(lambda: student.qkv.SelfAttention.build(case.d_in, case.d_out), "SelfAttention", "construction")
    dst.to.build(device=device)
    on = f"d_in={case.d_in}, d_out={case.d_out}"
    returned = C.attempt(lambda: student.qkv.copy_linear_weights.run((src, dst), handles=True).value,
                         "copy_linear_weights(src, dst)", on,
                         "copy into the parameters under torch.no_grad() (or replace them with new nn.Parameter objects)")
    if getattr(returned, "id", None) != dst.id:
        raise C.CheckFailed(f"copy_linear_weights(src, dst) should return dst itself ({on}); it returned "
                            f"{'None' if returned is None else 'something else'}.")
    got = dst.params()
    for name in ("W_query", "W_key", "W_value"):
        want = getattr(src_ref, name).weight.detach().T
        g = got.get(name)
        if g is None or tuple(g.shape) != tuple(want.shape) or not torch.allclose(g.to(want), want):
            hint = ("nn.Linear keeps its weight as (d_out, d_in); SelfAttention multiplies by (d_in, d_out): copy "
                    "linear.weight.T, a transpose, not a reshape or view.")
            raise C.CheckFailed(f"after copy_linear_weights, dst.{name} does not hold src.{name}.weight transposed ({on}). "
                                f"Hint: {hint}")
    x = case.randn(*case.batch, case.T, case.d_in, dtype=torch.float32, device=device)
    C.close(C.attempt(lambda: dst(x), "dst(x)", C.describe(x=x)), C.module_reference(src_ref, x),
            what="dst(x) after copy_linear_weights", on=C.describe(x=x), course=course)


# ---------------------------------------------------------------- dtype, device, autograd, in-place, loops, built-ins

def _qkv_inputs(device, dtype, seed):
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64).to(device, dtype)
    return r(2, 3, 4), r(2, 5, 4), r(2, 5, 6), r(2, 3, 7)


@pytest.mark.weight(1)
def test_float64_kept(student, course, device):
    """float64 inputs and modules give float64 results at float64 precision."""
    q, k, v, x = _qkv_inputs(device, torch.float64, course.seed)
    _check_sdpa(student, course, q, k, v)
    W = _w(device, torch.float64, 7)
    _check_project(student, course, x, W, W.flip(0) * 0.5, _w(device, torch.float64, 7, 5))
    C.seed(course.seed)
    _check_module(student, course, "SelfAttention", ref.SelfAttention(7, 3).to(device).double(), x, (7, 3),
                  "SelfAttention", device)
    _check_module(student, course, "SelfAttentionLinear", ref.SelfAttentionLinear(7, 3, True).to(device).double(), x,
                  (7, 3, True), "SelfAttentionLinear", device)


def _w(device, dtype, d_in, width=4):
    return torch.linspace(-1, 1, d_in * width, dtype=torch.float64).view(d_in, width).to(device, dtype)


@pytest.mark.weight(1)
def test_device_kept(student, course, device):
    """Results stay on the inputs' device (checked with meta tensors and modules moved to meta)."""
    q, k, v, x = _qkv_inputs("cpu", torch.float32, course.seed)
    meta = C.on_meta((q, k, v))
    on = C.describe(queries=meta[0], keys=meta[1], values=meta[2])
    got = C.attempt(lambda: student.qkv.scaled_dot_product_attention(*meta), SDPA, on, C.META_HINT)
    C.close(got, C.on_meta(ref.scaled_dot_product_attention(q, k, v)), what=SDPA, on=on, course=course)
    W = _w("cpu", torch.float32, 7)
    mx, mW = C.on_meta(x), C.on_meta(W)
    got = C.attempt(lambda: student.qkv.project(mx, mW, mW, mW), PROJECT, C.describe(x=mx, W=mW), C.META_HINT)
    got = got[0] if isinstance(got, (tuple, list)) and got else got
    C.close(got, C.on_meta(x @ W), what=PROJECT, on=C.describe(x=mx, W=mW), course=course)
    for cls, ctor in (("SelfAttention", (7, 3)), ("SelfAttentionLinear", (7, 3, True))):
        module = C.attempt(lambda: getattr(student.qkv, cls).build(*ctor), cls, "construction")
        C.attempt(lambda: module.to.build(torch.device("meta")), f"{cls}.to('meta')", "construction")
        got = C.attempt(lambda: module(mx), f"{cls}(x)", C.describe(x=mx), C.META_HINT)
        C.close(got, C.on_meta(torch.empty(2, 3, 3)), what=f"{cls}(x)", on=C.describe(x=mx), course=course)


@pytest.mark.weight(1)
def test_autograd(student, course, device):
    """Gradients flow to queries, keys, values and to every parameter, equal to the reference's (float64)."""
    q, k, v, x = _qkv_inputs(device, torch.float64, course.seed)
    g = torch.Generator().manual_seed(course.seed + 1)
    grad_output = torch.randn(2, 3, 6, generator=g, dtype=torch.float64).to(device)
    want, _ = C.reference_grads(ref.scaled_dot_product_attention, (q, k, v), grad_output)
    on = C.describe(queries=q, keys=k, values=v)
    result = C.attempt(lambda: student.qkv.scaled_dot_product_attention.run(args=(q, k, v), grad_output=grad_output),
                       SDPA, on)
    C.grads_close(result, want, OUTPUTS, what=SDPA, on=on, course=course)
    for cls, ctor in (("SelfAttention", (7, 3)), ("SelfAttentionLinear", (7, 3, True))):
        C.seed(course.seed)
        reference = getattr(ref, cls)(*ctor).to(device).double()
        module = C.twin(getattr(student.qkv, cls), reference, *ctor, what=cls, dtype=torch.float64, device=device)
        grad_output = torch.randn(2, 3, 3, generator=g, dtype=torch.float64).to(device)
        want, want_params = C.reference_grads(reference, (x,), grad_output, module=reference)
        result = C.attempt(lambda: module.run(args=(x,), grad_output=grad_output), f"{cls}(x)", C.describe(x=x))
        C.grads_close(result, want, ("x",), what=f"{cls}(x)", on=C.describe(x=x), course=course, want_params=want_params)


@pytest.mark.weight(1)
def test_inputs_not_modified(student, course, device):
    """No function or module changes its input tensors in place."""
    q, k, v, x = _qkv_inputs(device, torch.float32, course.seed)
    mask = torch.ones(3, 5, dtype=torch.bool, device=device).tril()
    mask[:, 0] = True
    for args, names, remote, what in (((q, k, v, mask), OUTPUTS + ("mask",), student.qkv.scaled_dot_product_attention, SDPA),
                                      ((x, _w(device, torch.float32, 7), _w(device, torch.float32, 7),
                                        _w(device, torch.float32, 7, 5)), ("x", "W_query", "W_key", "W_value"),
                                       student.qkv.project, PROJECT)):
        before = [a.clone() for a in args]
        on = C.describe(**dict(zip(names, args)))
        result = C.attempt(lambda: remote.run(args=args, return_args=True), what, on)
        C.unchanged(before, result, names, what=what, on=on)
    for cls, ctor in (("SelfAttention", (7, 3)), ("SelfAttentionLinear", (7, 3))):
        module = C.attempt(lambda: getattr(student.qkv, cls).build(*ctor), cls, "construction")
        module.to.build(device=device)
        result = C.attempt(lambda: module.run(args=(x,), return_args=True), f"{cls}(x)", C.describe(x=x))
        C.unchanged([x], result, ("x",), what=f"{cls}(x)", on=C.describe(x=x))


@pytest.mark.weight(1)
def test_vectorized(student, device):
    """No Python loop over the sequence or the batch in project, scaled_dot_product_attention or the modules."""
    g = torch.Generator().manual_seed(13)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(device)
    W = r(4, 3)
    sizes = [("T=3, batch 2", 2, 3), ("T=8, batch 2", 2, 8), ("T=3, batch 6", 6, 3)]
    plans = {
        "project": (student.qkv.project._target, lambda B, T: (r(B, T, 4), W, W, W)),
        "scaled_dot_product_attention": (student.qkv.scaled_dot_product_attention._target,
                                         lambda B, T: (r(B, T, 3), r(B, T + 1, 3), r(B, T + 1, 5))),
    }
    for cls in ("SelfAttention", "SelfAttentionLinear"):
        module = C.attempt(lambda: getattr(student.qkv, cls).build(4, 3), cls, "construction")
        module.to.build(device=device)
        plans[cls] = (module._target, lambda B, T: (r(B, T, 4),))
    for name, (target, make) in plans.items():
        try:
            results = student.session.run_many([(target, make(B, T), None, {}) for _, B, T in sizes])
        except C.StudentError as error:
            raise C.CheckFailed(f"{name} failed on a batched input: {error}") from None
        C.vectorized([(label, r_) for (label, _, _), r_ in zip(sizes, results)], name, "tokens or batch elements")


@pytest.mark.weight(1)
def test_own_implementation(student, course, device):
    """No built-in attention (scaled_dot_product_attention of torch, nn.MultiheadAttention) in the attention code."""
    q, k, v, x = _qkv_inputs(device, torch.float32, course.seed)
    result = C.attempt(lambda: student.qkv.scaled_dot_product_attention.run(
        args=(q, k, v), watch=course.banned["qkv.scaled_dot_product_attention"]), SDPA,
        C.describe(queries=q, keys=k, values=v))
    C.own_implementation(result, "scaled_dot_product_attention", "queries @ keys.transpose(-2, -1) / sqrt(d_k), "
                                                                  "masked_fill, torch.softmax, @ values.")
    for cls in ("SelfAttention", "SelfAttentionLinear"):
        module = C.attempt(lambda: getattr(student.qkv, cls).build(7, 3), cls, "construction")
        module.to.build(device=device)
        result = C.attempt(lambda: module.run(args=(x,), watch=course.banned[f"qkv.{cls}"]),
                           f"{cls}(x)", C.describe(x=x))
        C.own_implementation(result, cls, "project, then your scaled_dot_product_attention.")


@pytest.mark.weight(1)
@pytest.mark.parametrize("dtype", C.HALF_DTYPES, ids=C.dtype_name)
def test_half_precision(student, course, device, dtype):
    """float16 and bfloat16 inputs (CUDA) give results of the same dtype within its tolerance."""
    C.skip_unless_cuda(device, dtype)
    q, k, v, x = _qkv_inputs(device, torch.float32, course.seed)
    _check_sdpa(student, course, *(t.mul(0.5).to(dtype) for t in (q, k, v)))
    C.seed(course.seed)
    reference = ref.SelfAttentionLinear(7, 3).to(device, dtype)
    _check_module(student, course, "SelfAttentionLinear", reference, x.to(dtype), (7, 3), "SelfAttentionLinear", device)
