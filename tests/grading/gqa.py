"""A ninth exercise as a course author writes it: grouped-query attention (gqa), its reference and every file of its
folder, as tests/grading/test_new_exercise.py writes them over what `grader new-exercise gqa` made.

The contract: ``GroupedQueryAttention(d_in, d_out, num_heads, num_kv_heads, context_length, dropout,
qkv_bias=False)``, causal; the keys and values have ``num_kv_heads`` heads, each shared by a group of
``num_heads // num_kv_heads`` query heads; ``ValueError`` when ``num_heads % num_kv_heads`` or ``d_out % num_heads``
is not 0.
"""

REFERENCE = '''\
"""Exercise 9: grouped-query attention."""
import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    """Causal multi-head attention whose keys and values have fewer heads than its queries.

    ``num_heads`` query heads of size ``head_dim = d_out // num_heads``; ``num_kv_heads`` key and value heads of the
    same size, each shared by a group of ``num_heads // num_kv_heads`` consecutive query heads (query head h reads
    key and value head h // group). Layers, in this order: W_query = nn.Linear(d_in, d_out), W_key and W_value =
    nn.Linear(d_in, num_kv_heads * head_dim), out_proj = nn.Linear(d_out, d_out); dropout on the weights.

    >>> torch.manual_seed(0) and None
    >>> gqa = GroupedQueryAttention(4, 8, num_heads=4, num_kv_heads=2, context_length=6, dropout=0.0)
    >>> gqa(torch.randn(2, 5, 4)).shape
    torch.Size([2, 5, 8])
    """

    def __init__(self, d_in, d_out, num_heads, num_kv_heads, context_length, dropout, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        if d_out % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads}), and num_heads by "
                             f"num_kv_heads ({num_kv_heads})")
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_heads * self.head_dim, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril())
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        B, T, _ = x.shape
        if T > self.mask.shape[0]:
            raise ValueError(f"sequence of {T} tokens, longer than context_length {self.mask.shape[0]}")
        group = self.num_heads // self.num_kv_heads
        queries = self.W_query(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, heads, T, head_dim)
        keys = self.W_key(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, kv_heads, T, head_dim)
        values = self.W_value(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, kv_heads, T, hd)
        keys = keys.repeat_interleave(group, dim=1)  # (B, heads, T, head_dim)
        values = values.repeat_interleave(group, dim=1)  # (B, heads, T, head_dim)
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, heads, T, T)
        scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, heads, T, T)
        context = (weights @ values).transpose(1, 2).reshape(B, T, -1)  # (B, T, d_out)
        return self.out_proj(context)  # (B, T, d_out)
        ### END SOLUTION
'''

HINTS = '''\
"""Known mistakes of exercise gqa, as functions of what the module computes with its own layers (W_query, W_key,
W_value, out_proj: the contract's names) and the configuration the contract gives (num_heads, num_kv_heads)."""
import math

from diagnosis import Hint
from hints import attend, attention_mistakes, lower_triangle


def gqa_hints(module, x, num_heads: int, num_kv_heads: int) -> list[Hint]:
    """Mistakes of ``module(x)`` for x (B, T, d_in), computed in x's dtype."""
    B, T, _ = x.shape
    d_out = module.out_proj.in_features
    head_dim = d_out // num_heads
    group = num_heads // num_kv_heads

    def heads(t, count):
        return t.view(B, T, count, head_dim).transpose(1, 2)

    def merge(context):
        return module.out_proj(context.transpose(1, 2).reshape(B, T, d_out))

    q = heads(module.W_query(x), num_heads)
    k, v = heads(module.W_key(x), num_kv_heads), heads(module.W_value(x), num_kv_heads)
    tril = lower_triangle(T, x.device)
    tiled = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    return attention_mistakes(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), group="gqa",
                              scale_name="sqrt(head_dim)", mask=tril, causal=True, finish=merge) + [
        Hint("the key and value heads are tiled (repeat): query head h reads key head h % num_kv_heads; each key "
             "and value head serves a group of consecutive query heads: repeat_interleave(group, dim=1).",
             lambda: merge(attend(q, *tiled, math.sqrt(head_dim), tril)), "gqa.kv_heads_tiled")]
'''

HIDDEN = '''\
"""Hidden suite of exercise 9: grouped-query attention (gqa)."""
import hints_gqa as known
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.suites import cases as S
from grader.suites import checks as C
from grader.suites import modules as M
from grader.suites.contract import Contract, Size, Subject
from solutions import gqa as ref

pytestmark = pytest.mark.gqa

WHAT = "GroupedQueryAttention(x)"


@st.composite
def gqa_cases(draw):
    """x (B, T, d_in), num_kv_heads of 1-3, groups of 2-3 query heads, head_dim 2-3."""
    kv_heads, group, head_dim = draw(st.integers(1, 3)), draw(st.integers(2, 3)), draw(st.integers(2, 3))
    return S.Case(dict(B=draw(st.integers(1, 3)), T=draw(st.integers(2, 6)), d_in=draw(st.integers(2, 5)),
                       heads=kv_heads * group, kv_heads=kv_heads, d_out=kv_heads * group * head_dim),
                  (), draw(S.SEEDS), 1.0, qkv_bias=draw(st.booleans()))


def _reference(case, device):
    C.seed(case.seed)
    return ref.GroupedQueryAttention(case.d_in, case.d_out, case.heads, case.kv_heads, case.T + 1, 0.0,
                                     case.qkv_bias).to(device)


@pytest.mark.weight(4)
@S.examples(6)
@given(case=gqa_cases())
def test_values(student, course, device, case):
    """GroupedQueryAttention(x) equals the reference with the same weights, for groups of 2-3 query heads."""
    reference = _reference(case, device)
    module = M.twin(student.gqa.GroupedQueryAttention, reference, case.d_in, case.d_out, case.heads, case.kv_heads,
                    case.T + 1, 0.0, case.qkv_bias, what="GroupedQueryAttention", device=device, mode="eval")
    x = case.randn(case.B, case.T, case.d_in, dtype=torch.float32, device=device)
    on = f"{C.describe(x=x)}, num_heads={case.heads}, num_kv_heads={case.kv_heads}"
    got = C.attempt(lambda: module(x), WHAT, on, lambda: known.gqa_hints(reference.eval(), x, case.heads, case.kv_heads))
    C.expect_close(got, M.module_reference(reference.eval(), x), what=WHAT, on=on, course=course,
                   hints=lambda: known.gqa_hints(M.wide(reference).eval(), x.double(), case.heads, case.kv_heads),
                   generic="query head h attends with key and value head h // (num_heads // num_kv_heads), causally, "
                           "scores / sqrt(head_dim), then out_proj.")


@pytest.mark.rule
@pytest.mark.weight(1)
def test_errors(student):
    """num_heads not divisible by num_kv_heads, or d_out not divisible by num_heads, raises ValueError."""
    for d_out, heads, kv_heads in ((8, 4, 3), (9, 4, 2)):
        C.expect_raises(ValueError, lambda: student.gqa.GroupedQueryAttention.build(3, d_out, heads, kv_heads, 5, 0.0),
                        f"GroupedQueryAttention(3, {d_out}, {heads}, {kv_heads}, 5, 0.0)",
                        "the heads do not divide evenly", "check both divisions in __init__ and raise ValueError(...)")


CONTRACT = Contract(subjects=(
    Subject("GroupedQueryAttention", WHAT, ("x",), ((2, 5, 3),), ref.GroupedQueryAttention, ctor=(3, 8, 4, 2, 6, 0.0),
            sizes=(Size("T=3, batch 2", ((2, 3, 3),)), Size("T=6, batch 2", ((2, 6, 3),)),
                   Size("T=3, batch 5", ((5, 3, 3),)), Size("8 heads", ((2, 3, 3),), (3, 16, 8, 2, 6, 0.0))),
            loop_over="tokens, batch elements or heads"),
))
'''

PUBLIC = '''\
"""Exercise 9: grouped-query attention (``exercises/gqa.py``)."""
import hints_gqa as known
import pytest
import torch
from checking import attempt, test_imports_allowed  # noqa: F401 (the grader's import rule, checked here too)

pytestmark = pytest.mark.gqa


def make(impl, num_heads=4, num_kv_heads=2):
    torch.manual_seed(0)
    return impl.gqa.GroupedQueryAttention(3, 8, num_heads, num_kv_heads, context_length=6, dropout=0.0).eval()


def test_shapes(impl):
    """W_key and W_value project to num_kv_heads * head_dim; the result is (B, T, d_out)."""
    module = make(impl)
    assert module.W_key.weight.shape == (4, 3) and module.W_value.weight.shape == (4, 3)
    assert module(torch.randn(2, 5, 3)).shape == (2, 5, 8)


def test_one_kv_head_per_query_head_is_multi_head_attention(impl, expect_close, journey):
    """With num_kv_heads = num_heads, each head attends with its own keys: the first token sees only itself."""
    module = make(impl, num_heads=2, num_kv_heads=2)
    x = journey.unsqueeze(0)
    out = attempt(lambda: module(x), known.gqa_hints(module, x, 2, 2))
    first = module.out_proj(module.W_value(x)[:, :1])
    expect_close(out[:, :1], first, hints=known.gqa_hints(module, x, 2, 2))


def test_groups_share_their_keys(impl, expect_close, journey):
    """Query heads 0 and 1 share key and value head 0; heads 2 and 3 share head 1 (no peeking at later tokens)."""
    module = make(impl)
    x = journey.unsqueeze(0)
    B, T, _ = x.shape
    q = module.W_query(x).view(B, T, 4, 2).transpose(1, 2)
    k, v = (layer(x).view(B, T, 2, 2).transpose(1, 2).repeat_interleave(2, 1) for layer in (module.W_key, module.W_value))
    scores = (q @ k.transpose(-2, -1) / 2 ** 0.5).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    expected = module.out_proj((torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, T, 8))
    expect_close(attempt(lambda: module(x), known.gqa_hints(module, x, 4, 2)), expected,
                 hints=known.gqa_hints(module, x, 4, 2))


def test_uneven_heads_raise(impl):
    """num_heads not divisible by num_kv_heads raises ValueError."""
    with pytest.raises(ValueError):
        impl.gqa.GroupedQueryAttention(3, 8, 4, 3, context_length=6, dropout=0.0)
'''

VARIANTS = '''\
"""Variants of exercise gqa's reference (grader/suites/variants.py): real bugs, which its suite must catch and its
hints name; another correct style, which earns full marks. `grader check-exercise gqa` grades each one."""
from grader.suites.variants import Variants

variants = Variants(__file__)
bug, ok, part = variants.bug, variants.ok, variants.part

KEYS = "keys = keys.repeat_interleave(group, dim=1)  # (B, heads, T, head_dim)"
VALUES = "values = values.repeat_interleave(group, dim=1)  # (B, heads, T, head_dim)"

bug("gqa", "kv_tiled", "the key and value heads are tiled with repeat, not repeat_interleave",
    (KEYS, "keys = keys.repeat(1, group, 1, 1)"), (VALUES, "values = values.repeat(1, group, 1, 1)"),
    shows=("gqa.kv_heads_tiled",))
bug("gqa", "no_scaling", "the scores are not divided by sqrt(head_dim)",
    ("queries @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)", "queries @ keys.transpose(-2, -1)"),
    shows=("gqa.no_scaling",))
ok("gqa", "expand", "the shared heads with expand and reshape",
   (KEYS, "keys = keys[:, :, None].expand(B, self.num_kv_heads, group, T, self.head_dim).reshape(B, -1, T, self.head_dim)"),
   (VALUES, "values = values[:, :, None].expand(B, self.num_kv_heads, group, T, self.head_dim).reshape(B, -1, T, "
            "self.head_dim)"))
part("gqa", "head_loop", "the shared key heads are gathered in a Python loop over the query heads",
     (KEYS, "keys = torch.cat([keys[:, h // group:h // group + 1] for h in range(self.num_heads)], dim=1)"))
'''

LESSON = '''\
<!-- lesson -->

Grouped-query attention keeps many query heads but fewer key and value heads: each key and value head is shared by a
group of consecutive query heads, which shrinks the keys and values a decoder keeps for every token.

<!-- task -->

Write `GroupedQueryAttention(d_in, d_out, num_heads, num_kv_heads, context_length, dropout, qkv_bias=False)`.

<!-- checks -->

```python
torch.manual_seed(0)
gqa = GroupedQueryAttention(3, 8, 4, 2, context_length=6, dropout=0.0)
assert gqa(journey.unsqueeze(0)).shape == (1, 6, 8)
print("gqa: all checks passed")
```

<!-- picture text -->

The attention weights of "journey" under a causal mask, as every head of a group sees them.

<!-- picture -->

```python
weights = torch.softmax((journey @ journey.T).masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf")), -1)
show_attention(weights, TOKENS, title="causal weights")
```

<!-- test shape: 10 points -->

```python
torch.manual_seed(0)
assert GroupedQueryAttention(3, 8, 4, 2, context_length=6, dropout=0.0)(journey.unsqueeze(0)).shape == (1, 6, 8)
### BEGIN HIDDEN TESTS
assert GroupedQueryAttention(3, 12, 6, 3, context_length=6, dropout=0.0)(journey.unsqueeze(0)).shape == (1, 6, 12)
### END HIDDEN TESTS
```
'''

FILES = {"solutions/gqa.py": REFERENCE, "tests/course/gqa/hints_gqa.py": HINTS,
         "tests/course/gqa/hidden_gqa.py": HIDDEN, "tests/course/gqa/test_gqa.py": PUBLIC,
         "tests/course/gqa/variants_gqa.py": VARIANTS, "tests/course/gqa/lesson.md": LESSON}
