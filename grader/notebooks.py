"""The course as Jupyter notebooks: an nbgrader course generated from solutions/, and reading notebooks back.

``generate_course(target)`` writes an nbgrader course folder (``nbgrader_config.py``
and ``source/<assignment>/<assignment>.ipynb``), one notebook per exercise in the
syllabus' order. Each notebook holds a short lesson, the exercise module's code
as an nbgrader solution cell (the reference from ``solutions/`` with its
``### BEGIN SOLUTION`` markers, which ``nbgrader generate_assignment`` turns into
stubs), import-free cells that run the public checks, a heatmap of the lesson's
attention weights, and autograded test cells whose hidden parts nbgrader strips
on release. The notebooks are written without outputs; ``stale_notebooks``
lists the files that differ from what the generator would write.

``read_notebook`` is the other direction, used by the grader's intake: it finds
each exercise's solution cell by its nbgrader ``grade_id`` (``<module>_solution``)
and returns the code of those cells only, never anything else of the notebook.
``modules_from_nbgrader_submission`` does the same for nbgrader's
``submitted/<student>/<assignment>/<assignment>.ipynb`` layout.

Regenerate with ``python -m grader.notebooks`` (``--check`` only reports).
"""
from __future__ import annotations

import ast
import json
import os
import re
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import ROOT
from .course import MODULES, course
from .intake import IntakeError
from .text import MAX_NAME, clean

COURSE_DIR = ROOT / "nbgrader"
SOLUTIONS = ROOT / "solutions"
COURSE_ID = "self-attention"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
SCHEMA_VERSION = 3
# What nbgrader puts in place of each solution block when it releases a notebook.
CODE_STUB = '# YOUR CODE HERE\nraise NotImplementedError("fill in this stub (see its docstring)")'
# Defaults of read_notebook's caps (a notebook with cleared outputs is a few tens of KiB).
MAX_NOTEBOOK_MB = 8
MAX_CELL_MB = 1


def assignment_name(module: str) -> str:
    """The nbgrader assignment (and notebook) name of an exercise: ``01_scores`` ... ``08_multihead``."""
    return f"{MODULES.index(module) + 1:02d}_{module}"


ASSIGNMENTS = {assignment_name(module): module for module in MODULES}


def solution_grade_id(module: str) -> str:
    """The nbgrader grade_id of the cell that holds the exercise's code: how the grader finds it."""
    return f"{module}_solution"


# ---------------------------------------------------------------------------
# The lessons
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Test:
    name: str  # grade_id suffix: <module>_test_<name>
    points: int
    source: str  # visible checks, then a ### BEGIN HIDDEN TESTS block


@dataclass(frozen=True)
class Lesson:
    lesson: str  # markdown, after the title
    task: str  # markdown: what to write
    checks: tuple[str, ...]  # code cells that run the public checks
    picture_text: str  # markdown above the heatmap
    picture: str  # code: draws the attention weights
    tests: tuple[Test, ...]
    demo: str = ""  # optional code cell after the lesson (plain torch, no student code)


SETUP = r'''# Set-up for the lesson: the course's example sentences and three small helpers. Run this cell first.
import math

import torch

torch.set_printoptions(precision=4, sci_mode=False)

# "Your journey starts with one step": one 3-d embedding per token
TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
journey = torch.tensor([[0.43, 0.15, 0.89],   # Your
                        [0.55, 0.87, 0.66],   # journey
                        [0.57, 0.85, 0.64],   # starts
                        [0.22, 0.58, 0.33],   # with
                        [0.77, 0.25, 0.10],   # one
                        [0.05, 0.80, 0.55]])  # step

# Two sentences with the word "bank" (4-d embeddings): "bank" has the same vector in both
EMBEDDINGS = {"stream": [1.2, 0.0, 0.0, 0.3], "mud": [0.9, 0.0, 0.0, 0.9],
              "money": [0.0, 1.4, 0.0, 0.1], "loan": [0.0, 1.1, 0.0, 0.6],
              "bank": [0.8, 0.8, 0.2, 0.0]}
RIVER, FINANCE = ["stream", "bank", "mud"], ["money", "bank", "loan"]
river = torch.tensor([EMBEDDINGS[word] for word in RIVER])
finance = torch.tensor([EMBEDDINGS[word] for word in FINANCE])

# The decoder-attention quiz: decoder state s and encoder states h1, h2, h3 (the rows of H)
s_quiz = torch.tensor([0.4685, 0.9785])
H_quiz = torch.tensor([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]])


def close(actual, expected, atol=1e-4):
    """Whether a tensor has the shape of ``expected`` and matches its numbers to within ``atol``."""
    expected = torch.as_tensor(expected, dtype=torch.float64)
    return (isinstance(actual, torch.Tensor) and actual.shape == expected.shape
            and torch.allclose(actual.detach().cpu().double(), expected, atol=atol, rtol=0))


def expect_error(kind, function, *args, **kwargs):
    """Check that ``function(*args, **kwargs)`` raises ``kind`` (ValueError, KeyError, ...)."""
    try:
        function(*args, **kwargs)
    except kind as error:
        print(f"  {kind.__name__}, as it should: {error}")
    else:
        raise AssertionError(f"{getattr(function, '__name__', type(function).__name__)} should have raised {kind.__name__}")


def show_attention(weights, rows, columns=None, title="attention weights"):
    """Draw a matrix of attention weights as a heatmap: one row per query, one column per key."""
    import matplotlib.pyplot as plt

    weights = weights.detach().cpu().double()
    columns = rows if columns is None else columns
    top = max(float(weights.max()), 1e-9)
    figure, axes = plt.subplots(figsize=(2.0 + 0.8 * len(columns), 1.4 + 0.55 * len(rows)))
    image = axes.imshow(weights.numpy(), cmap="Blues", vmin=0.0, vmax=top)
    axes.set_xticks(range(len(columns)), columns, rotation=45, ha="right")
    axes.set_yticks(range(len(rows)), rows)
    axes.set_xlabel("attends to (key)")
    axes.set_ylabel("query")
    for i in range(len(rows)):
        for j in range(len(columns)):
            value = float(weights[i, j])
            axes.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                      color="white" if value > 0.6 * top else "black")
    axes.set_title(title)
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    plt.show()
'''

HOW_TO = """**How to work in this notebook.** Run the cells from the top. Write your code in the cell under
*Your code*, in place of each `raise NotImplementedError(...)` line, then run the checks below it until they
pass. That one cell is the course file `{module}.py`: the grader takes this cell from your notebook, and
nothing else, so keep every import and helper your code needs inside it. Experiment in new cells as much as
you like; they are never graded. Do not delete the code cell or paste it into a new one: its metadata is how
the grader finds it."""

CHECKS_INTRO = """## Check your work

These cells run the public checks on the code above; each prints a line when all its checks pass.
An `AssertionError` says which property does not hold yet; a `NotImplementedError` means a stub is
still waiting for your code."""

TESTS_INTRO = """## Graded tests

nbgrader runs the cells below when it grades the notebook and gives each cell its points when it finishes
without an error. Parts of them are hidden: they are added back at grading time, so passing the visible
part is a good sign, not a guarantee. (Your course may grade with its own sandboxed grader instead, which
runs a larger hidden suite on the code of your solution cell alone.)"""


def _dedent(text: str) -> str:
    return text.strip("\n")


LESSONS: dict[str, Lesson] = {}

LESSONS["scores"] = Lesson(
    lesson=r"""
**Why attention?** An embedding gives every token a fixed vector: "bank" is `[0.8, 0.8, 0.2, 0.0]` whether it
sits between "stream" and "mud" or between "money" and "loan". A linear layer applied to each token on its
own cannot fix that, since equal inputs give equal outputs. For "bank" to mean different things in
different sentences, its new vector has to be built from the tokens around it. Attention does this in
three steps:

1. compare the token with every token of the sequence (this exercise);
2. turn the comparisons into weights that sum to 1 (exercise 2);
3. replace the token by the weighted average of the sequence (exercise 3).

**Comparing two vectors.** The simplest comparison is the dot product, the sum of the products of
matching entries: `a · b = a₁b₁ + a₂b₂ + … + a_d b_d`. It is large when two vectors point the same way,
near zero when they have nothing in common, and negative when they point in opposite directions. In the
sentence "Your journey starts with one step", with 3-d embeddings, the score of "journey"
`[0.55, 0.87, 0.66]` against "Your" `[0.43, 0.15, 0.89]` is `0.55·0.43 + 0.87·0.15 + 0.66·0.89 = 0.9544`.

**Every pair at once.** Two nested loops would fill the `T × T` table of all scores, one pair at a time,
and get slower with every token. Stack the tokens as the rows of a matrix `X` of shape `(T, d)` instead:
entry `[i, j]` of `X Xᵀ` is exactly `x_i · x_j`, so one matrix product computes the whole table. The
row of "journey" is `[0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]`. The table is symmetric, and its
diagonal holds each token's squared length.

**Queries against keys.** From exercise 4 on, the two sides of a comparison come from different
places: *queries*, what a token is looking for, and *keys*, what a token offers. The table is then
`Q Kᵀ`, of shape `(Tq, Tk)`, and need not be square. For a batch of sequences, shape `(..., T, d)`,
transpose only the last two dims, `keys.transpose(-2, -1)` (or `keys.mT`): `keys.T` would reverse the
batch dims as well.""",
    task=r"""
Complete the three functions in the next cell; their docstrings give the exact contract.

- `dot(a, b)`: the dot product of two 1-D tensors, as a 0-d tensor, written with an element-wise product
  and a sum. `torch.dot`, `@`, `matmul`, `einsum`, `inner`, `vdot` and `tensordot` would do the whole job
  and earn no credit here (from the next function on they are fine).
- `pairwise_scores(x)`: the `(..., T, T)` table of every token against every token, without Python loops.
- `attention_scores(queries, keys)`: `queries @ keysᵀ` for any leading dims.""",
    checks=(
        r'''# dot: "journey" against "Your", and the quiz's three scores
score = dot(journey[1], journey[0])
print('dot("journey", "Your") =', score)
assert isinstance(score, torch.Tensor) and score.shape == (), "dot must return a 0-d tensor (not a float: no .item())"
assert close(score, 0.9544), "expected 0.9544"
assert close(torch.stack([dot(s_quiz, h) for h in H_quiz]), [0.9678, 0.5721, 0.2350]), "the quiz's scores are [0.9678, 0.5721, 0.2350]"
expect_error(ValueError, dot, torch.ones(3), torch.ones(4))
print("dot: all checks passed")''',
        r'''# pairwise_scores: the "bank" sentences and the journey sentence
table = pairwise_scores(river)
print(table)
assert close(table, [[1.530, 0.960, 1.350], [0.960, 1.320, 0.720], [1.350, 0.720, 1.620]], atol=1e-3)
assert close(pairwise_scores(journey)[1], [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
batch = pairwise_scores(torch.stack([river, finance]))
assert batch.shape == (2, 3, 3), f"a batch (2, 3, 4) should give (2, 3, 3), not {tuple(batch.shape)}"
assert close(batch[1], [[1.970, 1.120, 1.600], [1.120, 1.320, 0.880], [1.600, 0.880, 1.570]], atol=1e-3)
print("pairwise_scores: all checks passed")''',
        r'''# attention_scores: the lecture's projected query of "journey" against the six keys
torch.manual_seed(123)
W_query, W_key = torch.rand(3, 2), torch.rand(3, 2)
queries, keys = journey @ W_query, journey @ W_key
scores = attention_scores(queries[1:2], keys)
print(scores)
assert scores.shape == (1, 6), f"1 query against 6 keys should give (1, 6), not {tuple(scores.shape)}"
assert close(scores, [[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]])
assert attention_scores(torch.ones(1, 5, 4), torch.ones(3, 7, 4)).shape == (3, 5, 7), "leading dims should broadcast"
expect_error(ValueError, attention_scores, torch.ones(2, 3), torch.ones(2, 4))
print("attention_scores: all checks passed")''',
    ),
    picture_text=r"""
The softmax of the next exercise turns each row of scores into weights. As a preview, the heatmap applies
`torch.softmax` to your `pairwise_scores` of the journey sentence: row *i* shows how much token *i* would
attend to each token. "journey" and "starts" have similar embeddings, so they attend to each other most.""",
    picture=r'''weights = torch.softmax(pairwise_scores(journey), dim=-1)
show_attention(weights, TOKENS, title="softmax of your pairwise scores")''',
    tests=(
        Test("dot", 3, r'''# dot: the lecture's example as a 0-d tensor
result = dot(torch.tensor([0.55, 0.87, 0.66]), torch.tensor([0.43, 0.15, 0.89]))
assert isinstance(result, torch.Tensor) and result.shape == (), "dot returns a 0-d tensor"
torch.testing.assert_close(result, torch.tensor(0.9544), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
generator = torch.Generator().manual_seed(1)
a = torch.randn(50, generator=generator, dtype=torch.float64).requires_grad_(True)
b = torch.randn(50, generator=generator, dtype=torch.float64)
result = dot(a, b)
assert result.dtype == torch.float64 and result.shape == ()
torch.testing.assert_close(result, (a * b).sum())
result.backward()
torch.testing.assert_close(a.grad, b)
expect_error(ValueError, dot, torch.ones(3), torch.ones(4))
### END HIDDEN TESTS'''),
        Test("pairwise_scores", 4, r'''# pairwise_scores: the journey sentence's row of "journey"
table = pairwise_scores(journey)
assert table.shape == (6, 6)
torch.testing.assert_close(table[1], torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
torch.testing.assert_close(pairwise_scores(river), torch.tensor([[1.53, 0.96, 1.35], [0.96, 1.32, 0.72], [1.35, 0.72, 1.62]]), atol=1e-3, rtol=0)
generator = torch.Generator().manual_seed(2)
x = torch.randn(2, 3, 5, 4, generator=generator, dtype=torch.float64)
result = pairwise_scores(x)
assert result.shape == (2, 3, 5, 5) and result.dtype == torch.float64
torch.testing.assert_close(result, x @ x.transpose(-2, -1))
### END HIDDEN TESTS'''),
        Test("attention_scores", 3, r'''# attention_scores: Tq queries against Tk keys
generator = torch.Generator().manual_seed(3)
queries, keys = torch.randn(5, 4, generator=generator), torch.randn(7, 4, generator=generator)
assert attention_scores(queries, keys).shape == (5, 7), "Tq queries against Tk keys give (Tq, Tk)"
### BEGIN HIDDEN TESTS
torch.testing.assert_close(attention_scores(queries, keys), queries @ keys.T)
queries, keys = torch.randn(1, 5, 4, generator=generator), torch.randn(3, 7, 4, generator=generator)
torch.testing.assert_close(attention_scores(queries, keys), queries @ keys.transpose(-2, -1))
expect_error(ValueError, attention_scores, torch.ones(2, 3), torch.ones(2, 4))
### END HIDDEN TESTS'''),
    ),
)

LESSONS["softmax"] = Lesson(
    lesson=r"""
Dot-product scores are arbitrary numbers: large, small or negative, with no particular total. To average
tokens we need *weights* instead: numbers that are never negative and sum to 1 along a row, so that the
weighted sum of vectors stays on the scale of the vectors themselves.

**Why not divide by the sum?** Dividing the scores of "journey" by their sum gives
`[0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]`, which does sum to 1. But the trick fails as soon as a
score is negative (a negative "weight") or a row adds up to zero (a division by zero).

**Softmax** first makes every score positive with the exponential, then normalizes:
`softmax(x)_i = exp(x_i) / Σ_j exp(x_j)`. It keeps the order of the scores, stretches the gaps between
them, and is differentiable, so gradients flow through it in training. For "journey" it gives
`[0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]`.

**Overflow.** The exponential grows fast: in float32 `exp(89)` is already `inf`, and `inf / inf` is NaN.
Such scores are ordinary (multiply the journey scores by 100 and the largest is 149.5). The cure is one
identity: adding the same constant `c` to every score of a row leaves its softmax unchanged, because
`exp(x_i − c) = exp(x_i) / exp(c)` and the `exp(c)` cancels. Subtract the row's maximum: the largest
exponential becomes `exp(0) = 1`, and nothing can overflow. The same step makes masking work: a score of
`-inf` becomes `exp(-inf) = 0`, a weight of exactly zero, as long as the row keeps one finite score.

**Temperature.** Dividing the scores by a temperature `t` before the exponential sets how sharp the
weights are. Below 1 the gaps grow and the weights approach a one-hot vector: at `t = 0.01` the scores
`[0, 1, 0]` give nearly `[0, 1, 0]`, where plain softmax gives `[0.2119, 0.5761, 0.2119]`. Above 1 the
weights flatten towards uniform. Exercise 6 uses a low temperature to turn attention into an exact
dictionary lookup. Large scores act like a low temperature: a softmax pushed that far is *saturated*,
its output hardly moves when the scores move, and its gradients all but vanish. That is why exercise 4
divides the scores by `√d_k`.""",
    demo=r'''# Without the maximum trick, exp overflows: scores times 100 are too large for float32
big_scores = journey @ journey.T * 100
naive = torch.exp(big_scores) / torch.exp(big_scores).sum(dim=-1, keepdim=True)
print("largest score:", big_scores.max().item())
print("naive softmax of the first row:", naive[0])''',
    task=r"""
Write `softmax(x, dim=-1, temperature=1.0)`: `exp(x / t) / Σ exp(x / t)` along `dim`, for any shape.

- Subtract the maximum along `dim` first, and reduce with `keepdim=True` so that the maximum and the sum
  broadcast back over their own row.
- A temperature of 0 or below raises `ValueError`.
- Do not use any softmax or log-softmax of torch here (function, method or module): that would be the whole
  exercise. From exercise 3 on, `torch.softmax` is fine.""",
    checks=(
        r'''# softmax: the scores of "journey", and the whole journey matrix row by row
weights = softmax(torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]))
print(weights)
assert close(weights, [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
scores = journey @ journey.T
matrix = softmax(scores)
assert close(matrix[0], [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452])
assert close(matrix.sum(dim=-1), [1.0] * 6), "every row should sum to 1"
assert close(softmax(scores.T, dim=0).T, matrix), "dim=0 should normalize the columns"
print("softmax: all checks passed")''',
        r'''# numerical stability and masked (-inf) scores
large = softmax(journey @ journey.T * 100)
assert torch.isfinite(large).all(), "exp overflowed: subtract the row maximum first"
assert close(softmax(torch.tensor([1e4, 0.0, -1e4])), [1.0, 0.0, 0.0])
masked = softmax(torch.tensor([1.0, float("-inf"), 2.0]))
print(masked)
assert torch.isfinite(masked).all() and masked[1] == 0, "a -inf score should get weight exactly 0"
print("stability: all checks passed")''',
        r'''# temperature
print("temperature 1:   ", softmax(torch.tensor([0.0, 1.0, 0.0])))
print("temperature 0.01:", softmax(torch.tensor([0.0, 1.0, 0.0]), temperature=0.01))
assert close(softmax(torch.tensor([0.0, 1.0, 0.0])), [0.2119, 0.5761, 0.2119])
assert close(softmax(torch.tensor([0.0, 1.0, 0.0]), temperature=0.01), [0.0, 1.0, 0.0])
expect_error(ValueError, softmax, torch.tensor([1.0, 2.0]), temperature=0.0)
print("temperature: all checks passed")''',
    ),
    picture_text=r"""
The attention weights of the journey sentence, computed with your `softmax`, at temperature 1 and at
temperature 0.1: the lower temperature concentrates each row on its largest scores.""",
    picture=r'''scores = journey @ journey.T
show_attention(softmax(scores), TOKENS, title="softmax of the journey scores, temperature 1")
show_attention(softmax(scores, temperature=0.1), TOKENS, title="temperature 0.1")''',
    tests=(
        Test("values", 4, r'''# softmax: the lecture's weights of "journey"
weights = softmax(torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]))
torch.testing.assert_close(weights, torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
generator = torch.Generator().manual_seed(4)
x = torch.randn(3, 4, 5, generator=generator, dtype=torch.float64)
for dim in (0, 1, 2, -1):
    result = softmax(x, dim=dim)
    assert result.dtype == torch.float64 and result.shape == x.shape
    torch.testing.assert_close(result, torch.softmax(x, dim=dim))
before = x.clone()
softmax(x, temperature=0.5)
assert torch.equal(x, before), "softmax must not change its input"
mine, theirs = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
softmax(mine)[..., 0].sum().backward()
torch.softmax(theirs, dim=-1)[..., 0].sum().backward()
torch.testing.assert_close(mine.grad, theirs.grad)
### END HIDDEN TESTS'''),
        Test("stable", 3, r'''# softmax: no overflow on large scores
assert torch.isfinite(softmax(torch.tensor([1e4, 0.0, -1e4]))).all(), "exp overflowed"
### BEGIN HIDDEN TESTS
torch.testing.assert_close(softmax(torch.tensor([1e4, 0.0, -1e4])), torch.tensor([1.0, 0.0, 0.0]))
large = journey @ journey.T * 100
torch.testing.assert_close(softmax(large), torch.softmax(large, dim=-1))
x = torch.tensor([[1.0, float("-inf"), 2.0], [0.5, 0.5, float("-inf")]])
masked = softmax(x)
assert torch.isfinite(masked).all() and masked[0, 1] == 0 and masked[1, 2] == 0
torch.testing.assert_close(masked, torch.softmax(x, dim=-1))
half = softmax(torch.tensor([300.0, 0.0, -300.0], dtype=torch.float16))
assert half.dtype == torch.float16 and torch.isfinite(half).all()
### END HIDDEN TESTS'''),
        Test("temperature", 3, r'''# softmax: a low temperature gives (almost) one-hot weights
torch.testing.assert_close(softmax(torch.tensor([0.0, 1.0, 0.0]), temperature=0.01), torch.tensor([0.0, 1.0, 0.0]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
row = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
for t in (0.5, 2.0, 10.0):
    torch.testing.assert_close(softmax(row, temperature=t), torch.softmax(row / t, dim=-1))
expect_error(ValueError, softmax, row, temperature=0.0)
expect_error(ValueError, softmax, row, temperature=-1.0)
### END HIDDEN TESTS'''),
    ),
)

LESSONS["context"] = Lesson(
    lesson=r"""
Now the three steps come together. For a sequence `X` of shape `(T, d)`:

1. scores `S = X Xᵀ`, shape `(T, T)` (exercise 1);
2. weights `A = softmax(S)` over the last dim, so that row `i`, the weights of token `i`, sums to 1 (exercise 2);
3. context vectors `Z = A X`: row `i` is `z_i = Σ_j A_ij x_j`, the average of all tokens, each weighted by
   its similarity to token `i`.

`z_i` is the *context vector* of token `i`: its embedding enriched with what the rest of the sequence says.
For "journey" the weights are `[0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]` and the context vector is
`0.1385·x_Your + 0.2379·x_journey + … + 0.1581·x_step = [0.4419, 0.6515, 0.5683]`.

**"bank" finds its meaning.** Apply the same recipe to the two "bank" sentences. In "stream bank mud" the
context vector of "bank" comes out as `[0.949, 0.356, 0.089, 0.313]`, drawn towards the first feature that
"stream" and "mud" share; in "money bank loan" it comes out as `[0.325, 1.078, 0.081, 0.190]`, drawn towards
the second. The input vector of "bank" was the same in both sentences; its output is not. A trained dense
layer applies the same weights to every input; attention computes its mixing weights from the data in
front of it, so the same token is treated differently in a different sentence.

**Rows, not columns.** Row `i` of `A` belongs to token `i` as the one asking, so the softmax runs over the
last dim. For one unbatched sequence `X Xᵀ` is symmetric, and a softmax over dim 0 returns the transposed
weights, which can look right at a glance; it fails on batches and, later, whenever queries and keys
differ. The order of the last product matters too: `A @ X` mixes tokens, `X @ A` does not.

Nothing here is trained: the output is fixed by the embeddings. Exercise 4 adds learned projections.""",
    task=r"""
Write `attention_weights(x)`, `softmax(x xᵀ)` over the last dim for `x` of shape `(..., T, d)`, and
`context_vectors(x)`, the weights times `x`. `torch.softmax` is allowed from here on; the built-in
`torch.nn.functional.scaled_dot_product_attention` is not (it would do the whole exercise). An input
with fewer than 2 dims raises `ValueError`.""",
    checks=(
        r'''# attention_weights: the journey sentence
weights = attention_weights(journey)
print(weights)
assert weights.shape == (6, 6), f"6 tokens give a (6, 6) matrix, not {tuple(weights.shape)}"
assert close(weights[1], [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
assert close(weights.sum(dim=-1), [1.0] * 6), "every row should sum to 1"
assert attention_weights(torch.stack([river, finance])).shape == (2, 3, 3), "a batch (2, 3, 4) gives (2, 3, 3)"
print("attention_weights: all checks passed")''',
        r'''# context_vectors: "journey", and "bank" by the river and at the bank
context = context_vectors(journey)
assert close(context[1], [0.4419, 0.6515, 0.5683])
bank_by_the_river, bank_at_the_bank = context_vectors(river)[1], context_vectors(finance)[1]
print('"bank" in "stream bank mud":', bank_by_the_river)
print('"bank" in "money bank loan":', bank_at_the_bank)
assert close(bank_by_the_river, [0.949, 0.356, 0.089, 0.313], atol=1e-3)
assert close(bank_at_the_bank, [0.325, 1.078, 0.081, 0.190], atol=1e-3)
assert context_vectors(torch.stack([river, finance])).shape == (2, 3, 4), "a batch (2, 3, 4) gives (2, 3, 4)"
print("context_vectors: all checks passed")''',
    ),
    picture_text=r"""
Your attention weights of "Your journey starts with one step", and of the two "bank" sentences: each row
is one token's distribution over the sentence. Compare the rows of "bank".""",
    picture=r'''show_attention(attention_weights(journey), TOKENS, title="Your journey starts with one step")
show_attention(attention_weights(river), RIVER, title="stream bank mud")
show_attention(attention_weights(finance), FINANCE, title="money bank loan")''',
    tests=(
        Test("attention_weights", 5, r'''# attention_weights: the row of "journey"
weights = attention_weights(journey)
assert weights.shape == (6, 6)
torch.testing.assert_close(weights[1], torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
torch.testing.assert_close(weights[4], torch.tensor([0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295]), atol=1e-4, rtol=0)
generator = torch.Generator().manual_seed(5)
x = torch.randn(2, 3, 5, 4, generator=generator, dtype=torch.float64)
result = attention_weights(x)
assert result.shape == (2, 3, 5, 5) and result.dtype == torch.float64
torch.testing.assert_close(result, torch.softmax(x @ x.transpose(-2, -1), dim=-1))
expect_error(ValueError, attention_weights, torch.ones(3))
### END HIDDEN TESTS'''),
        Test("context_vectors", 5, r'''# context_vectors: the context vector of "journey"
context = context_vectors(journey)
assert context.shape == (6, 3)
torch.testing.assert_close(context[1], torch.tensor([0.4419, 0.6515, 0.5683]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
torch.testing.assert_close(context_vectors(finance), torch.tensor([[0.161, 1.181, 0.040, 0.243], [0.325, 1.078, 0.081, 0.190], [0.158, 1.163, 0.040, 0.278]]), atol=1e-3, rtol=0)
generator = torch.Generator().manual_seed(6)
x = torch.randn(3, 6, 4, generator=generator, dtype=torch.float64).requires_grad_(True)
y = x.detach().clone().requires_grad_(True)
result = context_vectors(x)
expected = torch.softmax(y @ y.transpose(-2, -1), dim=-1) @ y
torch.testing.assert_close(result, expected)
result.sum().backward()
expected.sum().backward()
torch.testing.assert_close(x.grad, y.grad)
### END HIDDEN TESTS'''),
    ),
)

LESSONS["qkv"] = Lesson(
    lesson=r"""
In exercise 3 every token played three parts with one and the same vector: the one asking, the one being
compared, and the content being averaged. A trained model does better when each part gets its own view
of the token, through three learned matrices:

- the **query** `q = x W_query`: what this token is looking for;
- the **key** `k = x W_key`: what this token offers to be matched on;
- the **value** `v = x W_value`: what this token hands over when another token attends to it.

For a whole sequence this is three matrix products: `Q = X W_query`, `K = X W_key`, `V = X W_value`.
`W_query` and `W_key` map `d_in` features to one shared width `d_k`, since queries and keys are compared
with dot products; `W_value` may map to another width `d_v`. A projection can weigh some features more
than others: the lecture's `W_query` for the "bank" sentences keeps the first two features and adds `0.2`
of the third, so the query of "bank" `[0.8, 0.8, 0.2, 0.0]` is `[0.84, 0.84]`.

**Scaled dot-product attention** reads `softmax(Q Kᵀ / √d_k) V`. Why divide by `√d_k`? The dot product of
two vectors with `d_k` random entries spreads out like `√d_k`: with wide keys the scores grow, the softmax
saturates towards one-hot weights, and its gradients nearly vanish, so learning stalls. Dividing by
`√d_k` keeps the scores on one scale whatever the width. With the lecture's seeded weights (`d_k = 2`) the
query of "journey" scores `[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]` against the six keys; divided
by `√2` and passed through the softmax these become `[0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]`, and
the weighted sum of the values is `[0.3061, 0.8210]`.

**Masks.** Sometimes a query must not see some keys. A boolean mask, `True` where attending is allowed
(PyTorch's convention), says which. Masked scores are set to `-inf` *before* the softmax, so they get weight
exactly 0 and the other weights still sum to 1. Exercise 7 builds causal attention on this.

**As modules.** `SelfAttention(d_in, d_out)` keeps the three matrices as trainable
`nn.Parameter(torch.rand(d_in, d_out))`, created in the order query, key, value; its `forward(x)` is the
recipe above. The order makes runs reproducible: after `torch.manual_seed(123)`, `SelfAttention(3, 2)`
maps "journey" to the same `[0.3061, 0.8210]` as the computation by hand. `SelfAttentionLinear` holds
three `nn.Linear(d_in, d_out, bias=qkv_bias)` layers instead, which start from a better-scaled random
initialization and may carry a bias. Mind one detail: `nn.Linear` stores its weight as `(d_out, d_in)` and
computes `x @ weight.T`. The two modules compute the same function when the `SelfAttention` matrices are
the *transposed* `nn.Linear` weights, which is how `copy_linear_weights` moves one into the other.""",
    demo=r'''# The lecture's hand-made projections for the "bank" sentences (d_in = 4, d_k = 2, d_v = 3)
W_QUERY = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2], [0.0, 0.0]])
W_KEY = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.1, 0.1]])
W_VALUE = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.5]])''',
    task=r"""
Write the five parts of `qkv.py`; their docstrings give the exact contract.

- `project(x, W_query, W_key, W_value)`: the tuple `(x @ W_query, x @ W_key, x @ W_value)`.
- `scaled_dot_product_attention(queries, keys, values, mask=None)`: `softmax(Q Kᵀ / √d_k) V`, with an
  optional bool mask (`True` = may attend).
- `SelfAttention(d_in, d_out)`: the three `nn.Parameter(torch.rand(d_in, d_out))` in the order query, key,
  value, and a `forward` that projects and attends.
- `SelfAttentionLinear(d_in, d_out, qkv_bias=False)`: the same with three `nn.Linear` layers.
- `copy_linear_weights(src, dst)`: make a `SelfAttention` compute what a bias-free `SelfAttentionLinear`
  computes; return `dst`.

Use `transpose(-2, -1)` so that leading batch dims work. `F.scaled_dot_product_attention` and
`nn.MultiheadAttention` would do the whole exercise and earn no credit.""",
    checks=(
        r'''# project: the "bank" sentences with the lecture's projections
queries, keys, values = project(river, W_QUERY, W_KEY, W_VALUE)
print('query of "bank":', queries[1])
assert queries.shape == (3, 2) and keys.shape == (3, 2) and values.shape == (3, 3)
assert close(queries[1], [0.84, 0.84])
expect_error(ValueError, project, river, torch.ones(3, 2), W_KEY, W_VALUE)
print("project: all checks passed")''',
        r'''# scaled_dot_product_attention: the river sentence, and "journey" with the seeded weights
out = scaled_dot_product_attention(*project(river, W_QUERY, W_KEY, W_VALUE))
print(out)
assert close(out, [[0.992, 0.221, 0.261], [0.957, 0.314, 0.256], [0.986, 0.232, 0.263]], atol=1e-3)
torch.manual_seed(123)
W_query, W_key, W_value = torch.rand(3, 2), torch.rand(3, 2), torch.rand(3, 2)
queries, keys, values = journey @ W_query, journey @ W_key, journey @ W_value
assert close(scaled_dot_product_attention(queries[1:2], keys, values), [[0.3061, 0.8210]])
causal = torch.ones(6, 6, dtype=torch.bool).tril()
masked = scaled_dot_product_attention(queries, keys, values, mask=causal)
assert close(masked[0], values[0].tolist()), "under a causal mask the first query sees only the first key"
expect_error(ValueError, scaled_dot_product_attention, torch.ones(3, 2), torch.ones(3, 4), torch.ones(3, 2))
print("scaled_dot_product_attention: all checks passed")''',
        r'''# SelfAttention: the lecture's seeded outputs
torch.manual_seed(123)
module = SelfAttention(d_in=3, d_out=2)
out = module(journey)
print(out)
assert [name for name, _ in module.named_parameters()] == ["W_query", "W_key", "W_value"]
assert close(out, [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]])
torch.manual_seed(0)
module = SelfAttention(d_in=4, d_out=3)
assert close(module(river), [[0.540, 0.705, 1.030], [0.538, 0.706, 1.030], [0.541, 0.703, 1.025]], atol=1e-3)
assert module(torch.stack([river, finance])).shape == (2, 3, 3), "a batch (2, 3, 4) gives (2, 3, 3)"
print("SelfAttention: all checks passed")''',
        r'''# SelfAttentionLinear and copy_linear_weights
torch.manual_seed(789)
linear = SelfAttentionLinear(d_in=3, d_out=2)
print(linear(journey))
assert [name for name, _ in linear.named_children()] == ["W_query", "W_key", "W_value"]
assert close(linear(journey), [[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702], [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]])
torch.manual_seed(123)
plain = SelfAttention(d_in=3, d_out=2)
assert copy_linear_weights(linear, plain) is plain, "copy_linear_weights returns dst"
assert close(plain(journey), linear(journey).tolist()), "after the copy both modules compute the same"
print("SelfAttentionLinear and copy_linear_weights: all checks passed")''',
    ),
    picture_text=r"""
The weights inside `SelfAttention(3, 2)` after `torch.manual_seed(123)`: your `project`, then
`softmax(Q Kᵀ / √2)`. The random projections are untrained, so the weights are flatter than those of
exercise 3; training would shape them.""",
    picture=r'''torch.manual_seed(123)
module = SelfAttention(d_in=3, d_out=2)
queries, keys, _ = project(journey, module.W_query, module.W_key, module.W_value)
weights = torch.softmax(queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1]), dim=-1)
show_attention(weights, TOKENS, title="SelfAttention(3, 2), seed 123")''',
    tests=(
        Test("project", 3, r'''# project: the query of "bank"
W_q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2], [0.0, 0.0]])
queries, keys, values = project(river, W_q, W_q, torch.eye(4))
torch.testing.assert_close(queries[1], torch.tensor([0.84, 0.84]))
### BEGIN HIDDEN TESTS
generator = torch.Generator().manual_seed(7)
x = torch.randn(2, 5, 4, generator=generator, dtype=torch.float64)
Wq, Wk, Wv = (torch.randn(4, width, generator=generator, dtype=torch.float64) for width in (3, 3, 2))
q, k, v = project(x, Wq, Wk, Wv)
torch.testing.assert_close(q, x @ Wq)
torch.testing.assert_close(k, x @ Wk)
torch.testing.assert_close(v, x @ Wv)
expect_error(ValueError, project, x, torch.ones(3, 3, dtype=torch.float64), Wk, Wv)
### END HIDDEN TESTS'''),
        Test("scaled_dot_product_attention", 6, r'''# scaled_dot_product_attention: the context vector of "journey"
torch.manual_seed(123)
W_query, W_key, W_value = torch.rand(3, 2), torch.rand(3, 2), torch.rand(3, 2)
out = scaled_dot_product_attention(journey[1:2] @ W_query, journey @ W_key, journey @ W_value)
torch.testing.assert_close(out, torch.tensor([[0.3061, 0.8210]]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
generator = torch.Generator().manual_seed(8)
q = torch.randn(2, 4, 8, generator=generator, dtype=torch.float64)
k = torch.randn(2, 5, 8, generator=generator, dtype=torch.float64)
v = torch.randn(2, 5, 3, generator=generator, dtype=torch.float64)
scores = q @ k.transpose(-2, -1) / 8 ** 0.5
torch.testing.assert_close(scaled_dot_product_attention(q, k, v), torch.softmax(scores, dim=-1) @ v)
mask = torch.rand(4, 5, generator=generator) > 0.4
mask[:, 0] = True
expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
torch.testing.assert_close(scaled_dot_product_attention(q, k, v, mask=mask), expected)
expect_error(ValueError, scaled_dot_product_attention, q, k[..., :4], v)
### END HIDDEN TESTS'''),
        Test("SelfAttention", 4, r'''# SelfAttention: the lecture's seeded output for "journey"
torch.manual_seed(123)
module = SelfAttention(d_in=3, d_out=2)
torch.testing.assert_close(module(journey)[1], torch.tensor([0.3061, 0.8210]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
assert [name for name, _ in module.named_parameters()] == ["W_query", "W_key", "W_value"]
torch.manual_seed(0)
module = SelfAttention(d_in=4, d_out=3)
torch.testing.assert_close(module(finance), torch.tensor([[0.220, 0.418, 0.642], [0.213, 0.404, 0.624], [0.216, 0.409, 0.630]]), atol=1e-3, rtol=0)
batch = module(torch.stack([river, finance]))
torch.testing.assert_close(batch[0], module(river))
batch.sum().backward()
assert all(parameter.grad is not None for parameter in module.parameters()), "gradients reach every weight"
### END HIDDEN TESTS'''),
        Test("SelfAttentionLinear", 4, r'''# SelfAttentionLinear: the lecture's seeded output for "Your"
torch.manual_seed(789)
linear = SelfAttentionLinear(d_in=3, d_out=2)
torch.testing.assert_close(linear(journey)[0], torch.tensor([-0.0739, 0.0713]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
assert [name for name, _ in linear.named_children()] == ["W_query", "W_key", "W_value"]
assert all(isinstance(layer, torch.nn.Linear) and layer.bias is None for layer in linear.children())
assert SelfAttentionLinear(d_in=3, d_out=2, qkv_bias=True).W_key.bias is not None
torch.testing.assert_close(linear(journey)[5], torch.tensor([-0.0754, 0.0693]), atol=1e-4, rtol=0)
x = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(9))
q, k, v = linear.W_query(x), linear.W_key(x), linear.W_value(x)
torch.testing.assert_close(linear(x), torch.softmax(q @ k.transpose(-2, -1) / 2 ** 0.5, dim=-1) @ v)
### END HIDDEN TESTS'''),
        Test("copy_linear_weights", 3, r'''# copy_linear_weights: a SelfAttention computes what the SelfAttentionLinear computes
torch.manual_seed(789)
source = SelfAttentionLinear(d_in=3, d_out=2)
torch.manual_seed(123)
target = SelfAttention(d_in=3, d_out=2)
assert copy_linear_weights(source, target) is target
torch.testing.assert_close(target(journey), source(journey))
### BEGIN HIDDEN TESTS
source, target = SelfAttentionLinear(d_in=5, d_out=4), SelfAttention(d_in=5, d_out=4)
copy_linear_weights(source, target)
x = torch.randn(3, 7, 5, generator=torch.Generator().manual_seed(10))
torch.testing.assert_close(target(x), source(x))
torch.testing.assert_close(target.W_key.detach(), source.W_key.weight.detach().T)
expect_error(ValueError, copy_linear_weights, SelfAttentionLinear(3, 2, qkv_bias=True), SelfAttention(3, 2))
### END HIDDEN TESTS'''),
    ),
)

LESSONS["quiz"] = Lesson(
    lesson=r"""
Attention first appeared in translation models built from an encoder and a decoder. The encoder reads the
source sentence and leaves one hidden state per source word, `h_1, …, h_n`. The decoder writes the
translation one word at a time; before each word it is in some state `s` and needs to know which source
words matter right now. Attention answers with the familiar three steps, `s` as the query and the encoder
states as both keys and values:

1. score each encoder state with a dot product: `e_i = s · h_i`;
2. turn the scores into weights: `α = softmax(e)`, one weight per encoder state;
3. return the weighted sum `v = Σ_i α_i h_i`, the context for the decoder's next word.

**The quiz.** Take `s = [0.4685, 0.9785]`, `h_1 = [0.5539, 0.7239]`, `h_2 = [0.4111, 0.3878]` and
`h_3 = [0.2376, 0.1264]`; with dot-product scores, what is `v`? Step by step: the scores are
`[0.9678, 0.5721, 0.2350]`, the weights `[0.4643, 0.3126, 0.2231]`, and
`v = 0.4643·h_1 + 0.3126·h_2 + 0.2231·h_3 = [0.4387, 0.4855]`. `h_1`, the state most aligned with `s`, gets
the largest weight, yet every state contributes something.

**Batches.** `decoder_attention` takes whole stacks of such problems: `s` of shape `(..., d)` and `H` of shape
`(..., n, d)`, with the encoder states as rows. The softmax runs over the `n` states, the last dim of the
scores: never over the `d` features, and never over the batch. On a single example a softmax over dim 0
happens to land on the right axis; on a batch it mixes different problems. Broadcasting does the pairing:
`H * s.unsqueeze(-2)` multiplies every encoder state by its own decoder state.""",
    task=r"""
Write `decoder_attention(s, H, return_weights=False)`: scores `H s`, weights `softmax` over the `n` states,
result `Σ_i α_i h_i` of shape `(..., d)`; with `return_weights=True` return `(v, alphas)`. States of
different widths raise `ValueError`. Then write `quiz_answer()`, the quiz's `v` computed with your
`decoder_attention` (a float32 tensor).""",
    checks=(
        r'''# decoder_attention: the quiz, and a batch of two problems
v, alphas = decoder_attention(s_quiz, H_quiz, return_weights=True)
print("alphas =", alphas)
print("v =", v)
assert close(alphas, [0.4643, 0.3126, 0.2231]), "the quiz's weights are [0.4643, 0.3126, 0.2231]"
assert close(v, [0.4387, 0.4855]), "the quiz's v is [0.4387, 0.4855]"
assert isinstance(decoder_attention(s_quiz, H_quiz), torch.Tensor), "without return_weights, return v alone"
batch_v, batch_alphas = decoder_attention(torch.stack([s_quiz, s_quiz.flip(0)]), torch.stack([H_quiz, H_quiz]), return_weights=True)
assert batch_v.shape == (2, 2) and batch_alphas.shape == (2, 3), "a batch of 2 gives v (2, d) and alphas (2, n)"
assert close(batch_v[0], [0.4387, 0.4855]), "item 0 of the batch should give the quiz's v, as on its own"
expect_error(ValueError, decoder_attention, torch.ones(2), torch.ones(3, 4))
print("decoder_attention: all checks passed")''',
        r'''# quiz_answer
answer = quiz_answer()
print(answer)
assert isinstance(answer, torch.Tensor) and answer.dtype == torch.float32, "a float32 tensor"
assert close(answer, [0.4387, 0.4855])
print("quiz_answer: all checks passed")''',
    ),
    picture_text=r"""
The quiz's weights: one query, the decoder state `s`, against the three encoder states.""",
    picture=r'''v, alphas = decoder_attention(s_quiz, H_quiz, return_weights=True)
show_attention(alphas.unsqueeze(0), ["s"], ["h1", "h2", "h3"], title="the quiz: weights of the encoder states")''',
    tests=(
        Test("decoder_attention", 6, r'''# decoder_attention: the quiz's weights and v
v, alphas = decoder_attention(s_quiz, H_quiz, return_weights=True)
torch.testing.assert_close(alphas, torch.tensor([0.4643, 0.3126, 0.2231]), atol=1e-4, rtol=0)
torch.testing.assert_close(v, torch.tensor([0.4387, 0.4855]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
generator = torch.Generator().manual_seed(11)
s = torch.randn(4, 5, generator=generator, dtype=torch.float64)
H = torch.randn(4, 3, 5, generator=generator, dtype=torch.float64)
v, alphas = decoder_attention(s, H, return_weights=True)
expected = torch.softmax((H @ s.unsqueeze(-1)).squeeze(-1), dim=-1)
torch.testing.assert_close(alphas, expected)
torch.testing.assert_close(v, (expected.unsqueeze(-1) * H).sum(-2))
assert v.dtype == torch.float64 and v.shape == (4, 5)
expect_error(ValueError, decoder_attention, torch.ones(2), torch.ones(3, 4))
### END HIDDEN TESTS'''),
        Test("quiz_answer", 4, r'''# quiz_answer: the quiz's v as a float32 tensor
answer = quiz_answer()
assert isinstance(answer, torch.Tensor) and answer.dtype == torch.float32 and answer.shape == (2,)
torch.testing.assert_close(answer, torch.tensor([0.4387, 0.4855]), atol=1e-4, rtol=0)'''),
    ),
)

LESSONS["dictionary"] = Lesson(
    lesson=r"""
Attention borrows its vocabulary from lookup tables: queries, keys, values. This exercise takes the
comparison at its word and builds a Python dictionary out of attention.

Take `{0: [2, 3], 1: [5, 7], 2: [3, 2]}`; looking up key `1` returns `[5, 7]`. With tensors:

- encode each key as a **one-hot vector**: key 0 is `[1, 0, 0]`, key 1 is `[0, 1, 0]`, key 2 is `[0, 0, 1]`;
- stack the values into a matrix, one row per key: `[[2, 3], [5, 7], [3, 2]]`;
- encode the query, key 1, as its one-hot vector `[0, 1, 0]`.

One-hot vectors are orthonormal: the dot product of two of them is 1 when they are equal and 0 otherwise.
So the scores of the query against the keys are `[0, 1, 0]`, and used directly as weights they pick out
exactly the stored value: `0·[2, 3] + 1·[5, 7] + 0·[3, 2] = [5, 7]`.

**The softmax gets in the way.** Real attention sends the scores through a softmax, and
`softmax([0, 1, 0]) = [0.2119, 0.5761, 0.2119]`, far from one-hot: the lookup returns a blend of all three
values, `[3.9403, 5.0925]`. The temperature of exercise 2 repairs it. Divided by `t = 0.01`, the gap of 1
between the matching score and the others becomes a gap of 100, the weights are one-hot to many decimals,
and the lookup returns `[5, 7]` again.

**What this says about attention.** A dictionary is attention restricted to one-hot queries and keys,
where every score is either 0 or 1. In general attention, queries and keys are arbitrary (learned)
vectors, the normalized scores fall anywhere between 0 and 1, and what comes back is a mixture of all the
values, each weighted by how well its key matches. One function, `attention(Q, K, V, temperature)`,
covers both cases: with the quiz's `s` as the only query and `h_1, h_2, h_3` as keys and values, at
temperature 0.01 it returns `h_1`, the best match, as a hard lookup would.

Unlike exercise 4, `attention` here does not divide by `√d_k`: the temperature alone sets the sharpness.""",
    demo=r'''TABLE = {0: [2, 3], 1: [5, 7], 2: [3, 2]}  # the lecture's dictionary
print("a plain lookup:", TABLE[1])''',
    task=r"""
Write the three functions of `dictionary.py`:

- `one_hot(index, n)`: a float32 vector of length `n` with a 1 at `index`; an index outside `0 … n-1` raises
  `ValueError`.
- `attention(Q, K, V, temperature=1.0)`: `softmax(Q Kᵀ / temperature) V` for shapes `(..., nq, dk)`,
  `(..., nk, dk)`, `(..., nk, dv)`; a temperature of 0 or below raises `ValueError`.
- `lookup(table, key, temperature)`: the dictionary lookup above for any dict whose values are equal-length
  lists of numbers (keys become one-hot vectors in the dict's order); a missing key raises `KeyError`.""",
    checks=(
        r'''# one_hot
print(one_hot(1, 3))
assert one_hot(1, 3).dtype == torch.float32, "one_hot returns float32"
assert torch.equal(one_hot(1, 3), torch.tensor([0.0, 1.0, 0.0]))
assert torch.equal(torch.stack([one_hot(i, 4) for i in range(4)]), torch.eye(4)), "one-hot vectors stack to the identity"
expect_error(ValueError, one_hot, 3, 3)
print("one_hot: all checks passed")''',
        r'''# attention: the dictionary as one query (1, 1, 3), keys (1, 3, 3) and values (1, 3, 2)
Q = torch.tensor([[[0.0, 1.0, 0.0]]])
K = torch.eye(3).unsqueeze(0)
V = torch.tensor([[[2.0, 3.0], [5.0, 7.0], [3.0, 2.0]]])
print("temperature 1:   ", attention(Q, K, V))
print("temperature 0.01:", attention(Q, K, V, temperature=0.01))
assert close(attention(Q, K, V), [[[3.9403, 5.0925]]])
assert close(attention(Q, K, V, temperature=0.01), [[[5.0, 7.0]]])
assert close(attention(s_quiz[None, None], H_quiz[None], H_quiz[None], temperature=0.01), [[[0.5539, 0.7239]]]), "the quiz at temperature 0.01 returns h1"
expect_error(ValueError, attention, Q, K, V, temperature=0.0)
print("attention: all checks passed")''',
        r'''# lookup
print(lookup(TABLE, 1, temperature=0.01), lookup(TABLE, 1, temperature=1.0))
for key, stored in TABLE.items():
    assert close(lookup(TABLE, key, temperature=0.01), stored), f"key {key} should return {stored}"
assert close(lookup(TABLE, 1, temperature=1.0), [3.9403, 5.0925])
assert close(lookup({"apple": [1.0, 0.0, 2.0], "pear": [4.0, 4.0, 4.0]}, "pear", temperature=0.01), [4.0, 4.0, 4.0])
expect_error(KeyError, lookup, TABLE, 7, temperature=0.01)
print("lookup: all checks passed")''',
    ),
    picture_text=r"""
Every key of the dictionary used as a query, at temperature 1 and at temperature 0.01. With the identity
as values, `attention` returns its own weights, so the heatmaps show them directly: a blend at
temperature 1, an exact lookup at 0.01.""",
    picture=r'''keys = torch.stack([one_hot(i, 3) for i in range(3)])
labels = [f"key {key}" for key in TABLE]
for temperature in (1.0, 0.01):
    weights = attention(keys, keys, torch.eye(3), temperature=temperature)
    show_attention(weights, [f"query {key}" for key in TABLE], labels, title=f"dictionary lookup, temperature {temperature}")''',
    tests=(
        Test("one_hot", 2, r'''# one_hot
assert torch.equal(one_hot(1, 3), torch.tensor([0.0, 1.0, 0.0]))
### BEGIN HIDDEN TESTS
assert one_hot(0, 1).dtype == torch.float32
assert torch.equal(torch.stack([one_hot(i, 7) for i in range(7)]), torch.eye(7))
expect_error(ValueError, one_hot, 3, 3)
expect_error(ValueError, one_hot, -1, 3)
### END HIDDEN TESTS'''),
        Test("attention", 4, r'''# attention: the dictionary at temperature 0.01
Q = torch.tensor([[[0.0, 1.0, 0.0]]])
K = torch.eye(3).unsqueeze(0)
V = torch.tensor([[[2.0, 3.0], [5.0, 7.0], [3.0, 2.0]]])
torch.testing.assert_close(attention(Q, K, V, temperature=0.01), torch.tensor([[[5.0, 7.0]]]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
torch.testing.assert_close(attention(Q, K, V), torch.tensor([[[3.9403, 5.0925]]]), atol=1e-4, rtol=0)
generator = torch.Generator().manual_seed(12)
Q = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
K = torch.randn(2, 5, 4, generator=generator, dtype=torch.float64)
V = torch.randn(2, 5, 6, generator=generator, dtype=torch.float64)
torch.testing.assert_close(attention(Q, K, V, temperature=0.5), torch.softmax(Q @ K.transpose(-2, -1) / 0.5, dim=-1) @ V)
expect_error(ValueError, attention, Q, K, V, temperature=0.0)
expect_error(ValueError, attention, Q, K, V, temperature=-0.5)
### END HIDDEN TESTS'''),
        Test("lookup", 4, r'''# lookup: a low temperature returns the stored value
table = {0: [2, 3], 1: [5, 7], 2: [3, 2]}
result = lookup(table, 1, temperature=0.01)
assert isinstance(result, torch.Tensor) and result.dtype == torch.float32 and result.shape == (2,)
torch.testing.assert_close(result, torch.tensor([5.0, 7.0]), atol=1e-4, rtol=0)
### BEGIN HIDDEN TESTS
torch.testing.assert_close(lookup(table, 1, temperature=1.0), torch.tensor([3.9403, 5.0925]), atol=1e-4, rtol=0)
colours = {"red": [1.0, 0.0], "green": [0.0, 1.0], "blue": [0.5, 0.5], "black": [0.0, 0.0]}
for key, stored in colours.items():
    torch.testing.assert_close(lookup(colours, key, temperature=0.01), torch.tensor(stored), atol=1e-4, rtol=0)
expect_error(KeyError, lookup, table, 7, temperature=0.01)
### END HIDDEN TESTS'''),
    ),
)

LESSONS["causal"] = Lesson(
    lesson=r"""
A language model such as GPT writes text one token at a time, predicting token `t + 1` from tokens `1 … t`.
In training it sees whole sentences at once, and plain self-attention would let it peek at the very token
it is asked to predict: a shortcut that does not exist when it generates. Causal attention closes it:
position `i` may attend to positions `j ≤ i` only, never to the future.

**The mask.** For `T` tokens, the allowed pairs are the lower triangle of a `T × T` matrix, diagonal included:
row `i` (the query) may look at columns `0 … i` (the keys). `torch.tril` keeps the lower triangle of a matrix
of ones; as a bool tensor with `True` = may attend it follows PyTorch's convention. (`torch.triu` keeps the
upper triangle: exactly the future.)

**Where to apply it.** Masked scores are set to `-inf` *before* the softmax. Two tempting shortcuts go
wrong: writing 0 instead of `-inf` still gives the future a weight, since `exp(0) = 1`; zeroing weights
after the softmax leaves rows that no longer sum to 1. With `-inf` the softmax gives the future a weight of
exactly 0 and spreads each row over the past alone. The first token sees only itself (its weights are
`[1, 0, 0, 0, 0, 0]`), the second splits its attention between the first two, and so on.

**The module.** `CausalAttention` is a single attention head as in GPT: three `nn.Linear` projections
(created in the order query, key, value), scores `Q Kᵀ / √d_out`, the mask, a softmax, and a weighted sum of
the values. Two practical details:

- the mask is built once, for the longest allowed sequence `context_length`, and stored with
  `register_buffer`. A buffer is not a trained parameter, but it moves with the module in `.to(device)`
  and `.cuda()`. For a sequence of length `T`, use the mask's top-left `T × T` corner; a sequence longer
  than `context_length` has no mask to use and raises `ValueError`.
- **dropout** on the attention weights zeroes random weights during training, which keeps the model from
  leaning on a few connections. `nn.Dropout` acts only in training mode (`module.train()`); after
  `module.eval()` it passes everything through.

Inputs are batched, `(B, T, d_in)`: transpose the keys with `transpose(-2, -1)`.""",
    task=r"""
Write `causal_mask(T, device=None)`, the bool `(T, T)` mask with `True` on and below the diagonal, and
`CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False)`: `W_query`, `W_key`, `W_value` as
`nn.Linear(d_in, d_out, bias=qkv_bias)` in that order, `dropout = nn.Dropout(dropout)`, a causal mask
buffer, and a `forward(x)` mapping `(B, T, d_in)` to `(B, T, d_out)` in which no position sees a later one.""",
    checks=(
        r'''# causal_mask
mask = causal_mask(4)
print(mask)
assert mask.dtype == torch.bool and mask.shape == (4, 4), "a bool (T, T) tensor"
assert torch.equal(mask, torch.tensor([[True, False, False, False], [True, True, False, False],
                                       [True, True, True, False], [True, True, True, True]])), "True on and below the diagonal"
print("causal_mask: all checks passed")''',
        r'''# CausalAttention: the journey sentence as a batch of one, (1, 6, 3)
torch.manual_seed(123)
module = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0).eval()
x = journey.unsqueeze(0)
out = module(x)
print(out)
assert out.shape == (1, 6, 2), f"(1, 6, 3) should give (1, 6, 2), not {tuple(out.shape)}"
assert [name for name, _ in module.named_children()][:3] == ["W_query", "W_key", "W_value"]
assert torch.allclose(out[0, 0], module.W_value(x)[0, 0], atol=1e-6), "the first token should see only itself"
changed = x.clone()
changed[0, -1] = torch.tensor([5.0, -3.0, 2.0])
assert torch.allclose(module(changed)[0, :-1], out[0, :-1], atol=1e-6), "changing the last token must not change earlier outputs"
assert module(journey[:4].unsqueeze(0)).shape == (1, 4, 2), "a sequence shorter than context_length should work"
expect_error(ValueError, CausalAttention(d_in=3, d_out=2, context_length=4, dropout=0.0), x)
print("CausalAttention: all checks passed")''',
        r'''# dropout acts in training mode only
torch.manual_seed(123)
with_dropout = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.5).eval()
torch.manual_seed(123)
without = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0).eval()
assert torch.allclose(with_dropout(x), without(x)), "in eval mode dropout must be off"
with_dropout.train()
torch.manual_seed(0)
assert not torch.allclose(with_dropout(x), without(x)), "in training mode dropout should change the output"
print("dropout: all checks passed")''',
    ),
    picture_text=r"""
The attention weights inside `CausalAttention(3, 2, context_length=6, dropout=0.0)` after
`torch.manual_seed(123)`, masked with your `causal_mask`: everything above the diagonal is 0, and each row
still sums to 1.""",
    picture=r'''torch.manual_seed(123)
module = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0).eval()
queries, keys = module.W_query(journey), module.W_key(journey)
scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
weights = torch.softmax(scores.masked_fill(~causal_mask(6), float("-inf")), dim=-1)
show_attention(weights, TOKENS, title="causal attention: no token sees the future")''',
    tests=(
        Test("causal_mask", 3, r'''# causal_mask: the lower triangle
assert torch.equal(causal_mask(3), torch.tensor([[True, False, False], [True, True, False], [True, True, True]]))
### BEGIN HIDDEN TESTS
for T in (1, 5, 9):
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    assert causal_mask(T).dtype == torch.bool and torch.equal(causal_mask(T), j <= i)
### END HIDDEN TESTS'''),
        Test("CausalAttention", 8, r'''# CausalAttention: shapes, and masked scaled dot-product attention
torch.manual_seed(1)
module = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0).eval()
x = torch.stack([journey, journey.flip(0)])
out = module(x)
assert out.shape == (2, 6, 2)
### BEGIN HIDDEN TESTS
q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
allowed = torch.ones(6, 6, dtype=torch.bool).tril()
expected = torch.softmax((q @ k.transpose(-2, -1) / 2 ** 0.5).masked_fill(~allowed, float("-inf")), dim=-1) @ v
torch.testing.assert_close(out, expected)
assert [name for name, _ in module.named_children()][:3] == ["W_query", "W_key", "W_value"]
assert module.W_query.bias is None and CausalAttention(3, 2, 6, 0.0, qkv_bias=True).W_query.bias is not None
torch.manual_seed(2)
wide = CausalAttention(d_in=3, d_out=8, context_length=10, dropout=0.0).eval().double()
y = torch.randn(3, 7, 3, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
q, k, v = wide.W_query(y), wide.W_key(y), wide.W_value(y)
allowed = torch.ones(7, 7, dtype=torch.bool).tril()
expected = torch.softmax((q @ k.transpose(-2, -1) / 8 ** 0.5).masked_fill(~allowed, float("-inf")), dim=-1) @ v
torch.testing.assert_close(wide(y), expected)
### END HIDDEN TESTS'''),
        Test("behaviour", 4, r'''# CausalAttention: a shorter sequence works
torch.manual_seed(0)
module = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.0).eval()
assert module(journey[:4].unsqueeze(0)).shape == (1, 4, 2)
### BEGIN HIDDEN TESTS
x = journey.unsqueeze(0)
expect_error(ValueError, CausalAttention(d_in=3, d_out=2, context_length=4, dropout=0.0), x)
torch.manual_seed(0)
noisy = CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.5).eval()
torch.testing.assert_close(noisy(x), module(x))
noisy.train()
torch.manual_seed(3)
assert not torch.allclose(noisy(x), module(x)), "dropout acts in training mode"
assert len(list(module.buffers())) >= 1, "the mask is a buffer"
### END HIDDEN TESTS'''),
    ),
)

LESSONS["multihead"] = Lesson(
    lesson=r"""
One attention head computes one set of weights per token: a single notion of which tokens matter. Language
has many at once. A verb may need its subject, a pronoun the noun it stands for, an adjective the noun it
describes. Multi-head attention runs several heads side by side, each with its own queries, keys and
values, so that each can learn to look for something different; like an ensemble, the combination tends to
beat any single head. The heads' outputs are concatenated and mixed by one more linear layer, `out_proj`.

**Heads without a loop.** A Python loop over `num_heads` separate `CausalAttention` modules works, but it is
slow. Compute all heads as one tensor instead:

1. project once with `nn.Linear(d_in, d_out)` for each of Q, K and V: shapes `(B, T, d_out)`;
2. split the last dim into heads: `view(B, T, num_heads, head_dim)` with `head_dim = d_out // num_heads`,
   then `transpose(1, 2)` to `(B, num_heads, T, head_dim)`, so the heads act like one more batch dim;
3. attend in every head at once: scores `(B, num_heads, T, T)` scaled by `√head_dim` (the width of each
   head's keys), the causal mask, softmax, dropout, then the weighted sum `(B, num_heads, T, head_dim)`;
4. merge the heads: `transpose(1, 2)` back to `(B, T, num_heads, head_dim)` and `reshape` to `(B, T, d_out)`;
5. apply `out_proj`.

The order of the reshapes matters. `view(B, num_heads, T, head_dim)` straight from `(B, T, d_out)` gives the
same shape, but it cuts the numbers in the wrong places and mixes tokens across heads; nothing fails, the
results are just wrong. That is why the checks below compare your module with the heads computed one by
one. `d_out` must be divisible by `num_heads`; otherwise raise `ValueError`.""",
    task=r"""
Write `MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)`: `W_query`,
`W_key`, `W_value` as `nn.Linear(d_in, d_out, bias=qkv_bias)`, then `out_proj = nn.Linear(d_out, d_out)`, in
that order, plus `dropout = nn.Dropout(dropout)` and a causal mask buffer. `forward(x)` maps `(B, T, d_in)`
to `(B, T, d_out)` with all heads computed together (no loop over heads).""",
    checks=(
        r'''# MultiHeadAttention: shapes and layers
torch.manual_seed(0)
module = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2).eval()
x = torch.stack([journey, journey.flip(0)])
out = module(x)
print(out.shape)
assert out.shape == (2, 6, 4), f"(2, 6, 3) should give (2, 6, 4), not {tuple(out.shape)}"
assert [name for name, _ in module.named_children()][:4] == ["W_query", "W_key", "W_value", "out_proj"]
expect_error(ValueError, MultiHeadAttention, d_in=3, d_out=5, context_length=6, dropout=0.0, num_heads=2)
print("MultiHeadAttention: shapes and layers as expected")''',
        r'''# MultiHeadAttention against the heads computed one by one
def heads_one_by_one(module, x, num_heads):
    """The same computation, head after head, with a loop (fine for a check)."""
    T = x.shape[1]
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    size = q.shape[-1] // num_heads
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    heads = []
    for head in range(num_heads):
        part = slice(head * size, (head + 1) * size)
        scores = q[..., part] @ k[..., part].transpose(-2, -1) / math.sqrt(size)
        heads.append(torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ v[..., part])
    return module.out_proj(torch.cat(heads, dim=-1))


for num_heads in (1, 2, 4):
    torch.manual_seed(num_heads)
    module = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=num_heads).eval()
    assert torch.allclose(module(x), heads_one_by_one(module, x, num_heads), atol=1e-6), f"{num_heads} heads differ from the heads one by one"
    print(f"{num_heads} head(s): the same as the heads computed one by one")''',
    ),
    picture_text=r"""
The two heads of `MultiHeadAttention(3, 4, context_length=6, dropout=0.0, num_heads=2)` after
`torch.manual_seed(0)`, split the way your module splits them. The module is untrained, so the heads
differ only by chance; training is what makes them specialize.""",
    picture=r'''torch.manual_seed(0)
module = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2).eval()
queries = module.W_query(journey).view(6, 2, 2).transpose(0, 1)  # (heads, T, head_dim)
keys = module.W_key(journey).view(6, 2, 2).transpose(0, 1)
scores = queries @ keys.transpose(-2, -1) / math.sqrt(2)
future = ~torch.ones(6, 6, dtype=torch.bool).tril()
for head, weights in enumerate(torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)):
    show_attention(weights, TOKENS, title=f"head {head + 1} of 2")''',
    tests=(
        Test("layers", 4, r'''# MultiHeadAttention: output shape
torch.manual_seed(0)
module = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2).eval()
assert module(journey.unsqueeze(0)).shape == (1, 6, 4)
### BEGIN HIDDEN TESTS
assert [name for name, _ in module.named_children()][:4] == ["W_query", "W_key", "W_value", "out_proj"]
assert module.W_query.weight.shape == (4, 3) and module.W_query.bias is None
assert module.out_proj.weight.shape == (4, 4)
assert isinstance(module.dropout, torch.nn.Dropout)
expect_error(ValueError, MultiHeadAttention, d_in=3, d_out=5, context_length=6, dropout=0.0, num_heads=2)
### END HIDDEN TESTS'''),
        Test("values", 8, r'''# MultiHeadAttention: the first token sees only itself
torch.manual_seed(2)
module = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2).eval()
x = torch.stack([journey, journey.flip(0)])
torch.testing.assert_close(module(x)[:, 0], module.out_proj(module.W_value(x))[:, 0])
### BEGIN HIDDEN TESTS
def _heads_one_by_one(module, x, num_heads):
    T = x.shape[1]
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)
    size = q.shape[-1] // num_heads
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    heads = []
    for head in range(num_heads):
        part = slice(head * size, (head + 1) * size)
        scores = q[..., part] @ k[..., part].transpose(-2, -1) / size ** 0.5
        heads.append(torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ v[..., part])
    return module.out_proj(torch.cat(heads, dim=-1))


generator = torch.Generator().manual_seed(14)
for num_heads in (1, 2, 3, 6):
    torch.manual_seed(num_heads)
    module = MultiHeadAttention(d_in=3, d_out=6, context_length=8, dropout=0.0, num_heads=num_heads).eval()
    y = torch.randn(3, 7, 3, generator=generator)
    torch.testing.assert_close(module(y), _heads_one_by_one(module, y, num_heads))
### END HIDDEN TESTS'''),
        Test("behaviour", 3, r'''# MultiHeadAttention: no token sees the future
torch.manual_seed(0)
module = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2).eval()
x = journey.unsqueeze(0)
changed = x.clone()
changed[0, -1] = torch.tensor([5.0, -3.0, 2.0])
torch.testing.assert_close(module(changed)[:, :-1], module(x)[:, :-1])
### BEGIN HIDDEN TESTS
assert module(journey[:4].unsqueeze(0)).shape == (1, 4, 4)
expect_error(ValueError, MultiHeadAttention(d_in=3, d_out=4, context_length=4, dropout=0.0, num_heads=2), x)
torch.manual_seed(0)
noisy = MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.5, num_heads=2).eval()
torch.testing.assert_close(noisy(x), module(x))
### END HIDDEN TESTS'''),
    ),
)


# ---------------------------------------------------------------------------
# Generating the course
# ---------------------------------------------------------------------------

def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
              points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def render_notebook(module: str):
    """The source notebook of one exercise (an nbformat v4 NotebookNode without outputs)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    lesson = LESSONS[module]
    exercise = course().exercise(module)
    number = MODULES.index(module) + 1
    points = sum(test.points for test in lesson.tests)
    if points != exercise.points:
        raise ValueError(f"the graded tests of {module} add up to {points} points, course.yaml gives {exercise.points}")
    solution = (SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")
    cells = []

    def add(kind, source, grade_id, **flags):
        cell = (new_markdown_cell if kind == "markdown" else new_code_cell)(source.strip("\n"))
        cell.id = grade_id.replace("_", "-")
        cell.metadata["nbgrader"] = _nbgrader(grade_id, **flags)
        cells.append(cell)

    title = f"# Exercise {number}: {exercise.title}\n\n*{exercise.points} points.* {_dedent(lesson.lesson)}"
    add("markdown", title, f"{module}_lesson", locked=True)
    add("code", SETUP, f"{module}_setup", locked=True)
    if lesson.demo:
        add("code", lesson.demo, f"{module}_demo", locked=True)
    add("markdown", "## Your code\n\n" + _dedent(lesson.task) + "\n\n" + HOW_TO.format(module=module),
        f"{module}_task", locked=True)
    add("code", solution, solution_grade_id(module), solution=True)
    add("markdown", CHECKS_INTRO, f"{module}_checks", locked=True)
    for index, check in enumerate(lesson.checks, 1):
        add("code", check, f"{module}_check_{index}", locked=True)
    add("markdown", "## The attention weights\n\n" + _dedent(lesson.picture_text), f"{module}_picture_text", locked=True)
    add("code", lesson.picture, f"{module}_picture", locked=True)
    add("markdown", TESTS_INTRO, f"{module}_tests", locked=True)
    for test in lesson.tests:
        add("code", test.source, f"{module}_test_{test.name}", grade=True, locked=True, points=test.points)

    notebook = new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    nbformat.validate(notebook)
    return notebook


def _config_text() -> str:
    listed = "\n".join(f"#   {name}: {course().exercise(module).title}" for name, module in ASSIGNMENTS.items())
    return f'''# nbgrader configuration of the self-attention course.
# Generated by `python -m grader.notebooks` from solutions/ and course.yaml: edit those, then regenerate.
#
# Assignments (one notebook each, source/<assignment>/<assignment>.ipynb):
{listed}
c = get_config()  # noqa: F821 - nbgrader provides get_config when it loads this file

c.CourseDirectory.course_id = {COURSE_ID!r}
# What a released notebook shows in place of each solution block.
c.ClearSolutions.code_stub = {{"python": {CODE_STUB!r}}}
# Seconds per cell when nbgrader runs a notebook (autograde, validate); importing torch takes a few.
c.Execute.timeout = 120
'''


GITIGNORE = """# What nbgrader writes when the course is used; only nbgrader_config.py and source/ are generated and committed.
gradebook.db
release/
submitted/
autograded/
feedback/
exchange/
grades.csv
.ipynb_checkpoints/
"""


def render_course() -> dict[str, str]:
    """Path (relative to the course folder) -> text of every generated file."""
    import nbformat

    files = {".gitignore": GITIGNORE, "nbgrader_config.py": _config_text()}
    for name, module in ASSIGNMENTS.items():
        text = nbformat.writes(render_notebook(module), version=4)
        files[f"source/{name}/{name}.ipynb"] = text if text.endswith("\n") else text + "\n"
    return files


def stale_notebooks(target: Path = COURSE_DIR) -> list[str]:
    """Generated files of ``target`` that differ from what the generator would write, and stray source notebooks."""
    target = Path(target)
    files = render_course()
    stale = [name for name, text in files.items()
             if not (target / name).is_file() or (target / name).read_text(encoding="utf-8") != text]
    source = target / "source"
    if source.is_dir():
        for path in sorted(source.rglob("*.ipynb")):
            name = path.relative_to(target).as_posix()
            if name not in files and ".ipynb_checkpoints" not in path.parts:
                stale.append(name)
    return stale


def generate_course(target: Path = COURSE_DIR) -> list[str]:
    """Write the nbgrader course into ``target``; return the files that changed (stray source notebooks are removed)."""
    target = Path(target)
    changed = stale_notebooks(target)
    files = render_course()
    for name in changed:
        path = target / name
        if name in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[name], encoding="utf-8")
        else:
            path.unlink()
            if path.parent != target / "source" and not any(path.parent.iterdir()):
                path.parent.rmdir()
    return changed


# ---------------------------------------------------------------------------
# Reading notebooks back
# ---------------------------------------------------------------------------

SOLUTION_ID = re.compile(r"(?P<module>[a-z]+)_solution")
IPYTHON_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<command>[!%].*)$")


@cache
def _public_names(module: str) -> frozenset[str]:
    """Top-level functions and classes of an exercise module (from its reference), to recognize a stripped cell."""
    try:
        tree = ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return frozenset()
    return frozenset(node.name for node in tree.body
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def _read_capped(path: Path, cap: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise IntakeError(f"{path.name} cannot be read ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise IntakeError(f"{path.name} is not a regular file")
        if info.st_size > cap:
            raise IntakeError(f"{path.name} is {info.st_size / 2**20:.1f} MiB, over the {cap / 2**20:g} MiB limit for a "
                              "notebook: clear its outputs (Edit > Clear Outputs of All Cells), save it and hand it in again")
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise IntakeError(f"{path.name} is over the {cap / 2**20:g} MiB limit for a notebook")
    return data


def _parse(path: Path, data: bytes) -> list:
    """The notebook's list of cells; IntakeError when it is not a readable nbformat 4 notebook."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise IntakeError(f"{path.name} is not a notebook: it is not UTF-8 text (byte {data[error.start]:#04x} at "
                          f"offset {error.start})") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise IntakeError(f"{path.name} is not valid notebook JSON (line {error.lineno}, column {error.colno}: "
                          f"{error.msg}): open it in Jupyter, save it and hand it in again") from None
    except (ValueError, RecursionError) as error:
        raise IntakeError(f"{path.name} is not valid notebook JSON ({type(error).__name__})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        if isinstance(notebook, dict) and "worksheets" in notebook:
            raise IntakeError(f"{path.name} is an old-format notebook (nbformat 3): open and save it with a current "
                              "Jupyter, which writes format 4")
        raise IntakeError(f"{path.name} is not a Jupyter notebook: it has no list of cells")
    version = notebook.get("nbformat")
    if version != 4:
        raise IntakeError(f"{path.name} is in notebook format {clean(repr(version), MAX_NAME)}; only format 4 "
                          "(current Jupyter) is read")
    return notebook["cells"]


def _grade_id(cell) -> str | None:
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
    return grade_id if isinstance(grade_id, str) else None


def _source(cell) -> str | None:
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


def _lookalikes(cells: list, module: str) -> list[str]:
    """Cells without the module's metadata whose code defines the module's functions or classes."""
    names = _public_names(module)
    found = []
    for index, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or _grade_id(cell) == solution_grade_id(module):
            continue
        source = _source(cell) or ""
        defined = {m.group(2) for m in re.finditer(r"^(def|class)\s+(\w+)", source, re.MULTILINE)} & names
        if defined:
            found.append(f"cell {index} (defines {', '.join(sorted(defined))})")
    return found


def _without_ipython(source: str) -> tuple[str, list[int]]:
    """Turn IPython-only lines (``!pip ...``, ``%time ...``) into ``pass`` with a comment, when that makes the code parse.

    The module is graded as plain Python, where such lines are syntax errors. They are replaced only when
    the cell does not parse as it is and does parse without them; line numbers stay the same.
    """
    lines = source.splitlines(keepends=True)
    touched = [i for i, line in enumerate(lines) if IPYTHON_LINE.match(line.rstrip("\r\n"))]
    if not touched:
        return source, []
    try:
        ast.parse(source)
        return source, []
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    for i in touched:
        match = IPYTHON_LINE.match(lines[i].rstrip("\r\n"))
        ending = lines[i][len(lines[i].rstrip("\r\n")):]
        lines[i] = f"{match['indent']}pass  # IPython line left out by the grader: {match['command']}{ending}"
    changed = "".join(lines)
    try:
        ast.parse(changed)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source, []
    return changed, [i + 1 for i in touched]


def read_notebook(path, problems: dict[str, str], notes: list[str], limits=None) -> dict[str, bytes]:
    """The exercise code of a notebook: module -> source bytes of its solution cell (grade_id ``<module>_solution``).

    Only solution cells are read; every other cell (scratch work, shell commands, outputs) is ignored.
    A notebook may hold one exercise's cell (one assignment) or several. Problems with one exercise's cell
    (missing, duplicated, metadata changed, not text) go to ``problems[module]``; a file that is not a
    readable notebook raises ``IntakeError``. ``limits`` (course.yaml's intake section) sets the caps:
    ``max_total_mb`` for the notebook and ``max_file_mb`` for one cell; without it, 8 MiB and 1 MiB.
    """
    path = Path(path)
    notebook_cap = int((limits.max_total_mb if limits else MAX_NOTEBOOK_MB) * 2**20)
    cell_cap = int((limits.max_file_mb if limits else MAX_CELL_MB) * 2**20)
    cells = _parse(path, _read_capped(path, notebook_cap))

    found: dict[str, list[int]] = {}
    mentioned: set[str] = set()
    for index, cell in enumerate(cells, 1):
        grade_id = _grade_id(cell)
        if grade_id is None:
            continue
        match = SOLUTION_ID.fullmatch(grade_id)
        if match and match["module"] in MODULES:
            found.setdefault(match["module"], []).append(index)
        mentioned.update(m for m in MODULES if grade_id.startswith(m + "_"))

    files: dict[str, bytes] = {}
    for module in MODULES:
        grade_id = solution_grade_id(module)
        indices = found.get(module, [])
        if not indices:
            # A cell defining the module's names counts as a stripped solution cell only where the notebook
            # belongs to this exercise (other cells of it are there) or has lost all its solution cells.
            lookalikes = _lookalikes(cells, module) if module in mentioned or not found else []
            if lookalikes:
                problems[module] = (f"{', '.join(lookalikes)} of {path.name} holds code of {module}.py but is not the "
                                    f"notebook's solution cell (nbgrader grade_id {grade_id!r}): its metadata was "
                                    "removed or changed. Put your code back into the solution cell of the course notebook")
            elif module in mentioned:
                problems[module] = (f"{path.name} holds cells of {module} but not its solution cell (nbgrader grade_id "
                                    f"{grade_id!r}): it was deleted or its metadata changed. Copy your code into the "
                                    "solution cell of a fresh copy of the course notebook")
            continue
        if len(indices) > 1:
            where = ", ".join(str(i) for i in indices)
            problems[module] = (f"{path.name} holds {len(indices)} solution cells of {module} (cells {where} all have "
                                f"grade_id {grade_id!r}): keep only one, the grader cannot tell which to grade")
            continue
        index = indices[0]
        cell = cells[index - 1]
        meta = cell["metadata"]["nbgrader"]
        if cell.get("cell_type") != "code":
            kind = clean(str(cell.get("cell_type", "typeless")), MAX_NAME)
            problems[module] = (f"the solution cell of {module} (cell {index} of {path.name}) is a {kind} cell, "
                                "not a code cell: change it back to code")
            continue
        if meta.get("solution") is not True:
            problems[module] = (f"cell {index} of {path.name} has grade_id {grade_id!r} but is not marked as a solution "
                                "cell (its nbgrader metadata was changed): use the solution cell of a fresh copy of "
                                "the course notebook")
            continue
        source = _source(cell)
        if source is None:
            problems[module] = f"the solution cell of {module} (cell {index}) does not hold text"
            continue
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError:
            problems[module] = f"the solution cell of {module} (cell {index}) holds characters that are not valid text"
            continue
        if len(data) > cell_cap:
            problems[module] = (f"the solution cell of {module} (cell {index}) is {len(data) / 2**20:.1f} MiB, over the "
                                f"{cell_cap / 2**20:g} MiB limit")
            continue
        if "\0" in source:
            problems[module] = f"the solution cell of {module} (cell {index}) contains NUL characters"
            continue
        source, dropped = _without_ipython(source)
        if dropped:
            lines = ", ".join(str(line) for line in dropped)
            notes.append(f"{module}: IPython line(s) {lines} of the solution cell (shell commands or magics) were left "
                         "out: the grader runs the cell as plain Python")
        if source and not source.endswith("\n"):
            source += "\n"
        files[module] = source.encode("utf-8")
    if files:
        taken = ", ".join(f"{module} (cell {found[module][0]})" for module in files)
        notes.append(f"exercise code taken from the solution cells of {path.name}: {taken}")
    elif not problems:
        raise IntakeError(f"{path.name} holds no solution cell: none of its cells carries an nbgrader grade_id such as "
                          "'scores_solution'. Hand in the course notebook itself; the grader finds your code through "
                          "the metadata of its solution cell")
    return files


def modules_from_nbgrader_submission(student_dir, problems: dict[str, str] | None = None,
                                     notes: list[str] | None = None, limits=None) -> dict[str, bytes]:
    """The exercise code of one student's nbgrader submission: module -> source bytes.

    ``student_dir`` is ``submitted/<student>`` (or ``autograded/<student>``) of an nbgrader course: it holds
    one folder per assignment, ``<assignment>/<assignment>.ipynb``. Assignments the student did not hand in
    are simply absent from the result; problems with one notebook go to ``problems`` under its module.
    """
    problems = {} if problems is None else problems
    notes = [] if notes is None else notes
    student_dir = Path(student_dir)
    if student_dir.is_symlink() or not student_dir.is_dir():
        raise IntakeError(f"{student_dir} is not a folder of nbgrader assignments")
    files: dict[str, bytes] = {}
    for entry in sorted(student_dir.iterdir()):
        if entry.name.startswith("."):
            continue
        module = ASSIGNMENTS.get(entry.name)
        if module is None:
            notes.append(f"ignored {clean(entry.name, MAX_NAME)}: not one of the course's assignments")
            continue
        if entry.is_symlink() or not entry.is_dir():
            problems[module] = f"{entry.name} is not a folder of the submission"
            continue
        notebook = entry / f"{entry.name}.ipynb"
        if not os.path.lexists(notebook):
            others = sorted(p for p in entry.glob("*.ipynb") if not p.is_symlink() and p.is_file())
            if len(others) != 1:
                problems[module] = (f"{entry.name}/ holds no notebook {notebook.name}" if not others else
                                    f"{entry.name}/ holds {len(others)} notebooks and none is {notebook.name}")
                continue
            notebook = others[0]
        local: dict[str, str] = {}
        try:
            found = read_notebook(notebook, local, notes, limits)
        except IntakeError as error:
            problems[module] = str(error)
            continue
        for name, data in found.items():
            if name in files:
                problems[name] = f"{name} appears in more than one assignment's notebook; only the first was taken"
            else:
                files[name] = data
        for name, problem in local.items():
            problems.setdefault(name, problem)
    return files
