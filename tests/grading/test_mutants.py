"""The hidden suites against the corpus: every variant of every exercise (tests/course/<module>/variants_<module>.py):
proof that they grade right.

Every variant is one exercise file of solutions/ with a few edits and a title naming what it is. A submission is
built as a copy of solutions/ with that one file replaced, graded once with one shared worker zygote, and judged
as `grader check-exercise` judges it (``grader.suites.variants.judge``):

- ``buggy/``: one real bug each; the exercise loses points, every other
  exercise keeps full marks, and each failed check says something specific
  (never a bare "a check of this property failed", never a tensor's values);
- ``correct/``: another correct style (einsum, float64 inside, logsumexp, ...);
  full marks everywhere;
- ``partial/``: correct values but a Python loop or a banned built-in; only the
  vectorization or own-implementation checks fail, and the exercise keeps most
  of its points.

The mutation score (buggy variants caught / all buggy variants) is printed and
must be 100%.
"""
from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import pytest
from courses import MODULES

from grader.course import course

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "grading" / "corpus"))
from variants import KINDS, VARIANTS, Variant  # noqa: E402

from grader.suites.variants import judge  # noqa: E402

DEFERRED = "not judged yet: this rule is checked once the values are right"  # checks.DEFERRED: the values say it
MAX_RULES_FAILED = 2  # rules a bug may break beside its values: the bug's own rule, and one it implies
# Code of a book that makes several mistakes at once, each its own rule: one sequence only (judged there:
# contract.judged), float32 and the CPU hard-coded (torch.empty(T, T)), a double loop: the rules each breaks.
SEVERAL_MISTAKES = {"buggy/context/raschka_double_loop": ["test_device_kept", "test_float64_kept", "test_half_precision",
                                                          "test_rows_sum_to_one", "test_vectorized"],
                    # a module that cannot hold the reference's parameters: every rule built on a twin of it fails
                    "buggy/multihead/out_proj_bias_follows_qkv_bias": ["test_dropout_eval", "test_no_peeking",
                                                                       "test_seeded_init"]}

_grades: dict[str, object] = {}


def variant_id(variant: Variant) -> str:
    return variant.id


def of_kind(kind: str) -> list[Variant]:
    return [v for v in VARIANTS if v.kind == kind]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(variant or None) -> a submission folder: solutions/ with the variant's file swapped in."""
    def make(variant: Variant | None, base: Path = ROOT / "solutions") -> Path:
        folder = tmp_path_factory.mktemp("submission")
        for module in MODULES:
            shutil.copy(base / f"{module}.py", folder / f"{module}.py")
        if variant is not None:
            (folder / f"{variant.module}.py").write_text(variant.source(), encoding="utf-8")
        return folder
    return make


@pytest.fixture(scope="module")
def grade(zygote, build):
    """grade(variant) -> the grader.points.Grade of its submission, computed once per variant."""
    from grader.grade import grade_submission

    def run(variant: Variant):
        if variant.id not in _grades:
            _grades[variant.id] = grade_submission(build(variant), course(), zygote).grade
        return _grades[variant.id]
    return run


def scores_by_module(grade) -> dict[str, tuple[float, float]]:
    return {e.module: (e.score, e.max_score) for e in grade.exercises}


def failures(grade, module: str):
    return [t for e in grade.exercises if e.module == module for t in e.tests if t.status == "failed"]


# ---------------------------------------------------------------- the corpus itself (fast)

def test_corpus_layout():
    """At least 40 buggy variants over every exercise, 6 correct ones, partial ones, each titled and changed."""
    buggy = of_kind("buggy")
    assert len(buggy) >= 40, len(buggy)
    assert {v.module for v in buggy} == set(MODULES)
    assert len(of_kind("correct")) >= 6
    assert of_kind("partial")
    assert {v.kind for v in VARIANTS} <= set(KINDS)
    assert len({v.id for v in VARIANTS}) == len(VARIANTS)
    prefixes = {"buggy": "Bug: ", "correct": "Correct: ", "partial": "Partial: "}
    for variant in VARIANTS:
        assert variant.module in MODULES, variant.id
        assert variant.title.startswith(prefixes[variant.kind]), f"{variant.id}: {variant.title!r}"
        reference = (ROOT / "solutions" / f"{variant.module}.py").read_text(encoding="utf-8")
        changed = ast.parse(variant.source())  # also: every edit still applies exactly once
        code = [ast.dump(node) for node in changed.body[1:]]  # past the docstring
        assert code != [ast.dump(node) for node in ast.parse(reference).body[1:]], variant.id


# ---------------------------------------------------------------- grading the corpus (slow)

@pytest.mark.slow
def test_references_get_full_marks(zygote, build):
    """solutions/ itself: 100 %, every test passed and none skipped (the same list on every device)."""
    from grader.grade import grade_submission

    grade = grade_submission(build(None), course(), zygote).grade
    assert grade.score == grade.max_score == course().total_points, [
        f"{t.name}: {t.feedback}" for t in grade.tests if t.status == "failed"]
    assert all(t.status == "passed" for t in grade.tests)


@pytest.mark.slow
def test_stubs_get_nothing(zygote):
    """exercises/ (the unfinished stubs): 0 points, and each failure says the stub is not implemented."""
    from grader.grade import grade_submission

    grade = grade_submission(ROOT / "exercises", course(), zygote).grade
    assert grade.score == 0, [f"{t.name}" for t in grade.tests if t.status == "passed"]
    assert all("not implemented yet" in t.feedback or DEFERRED in t.feedback for t in grade.tests if t.status == "failed")


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_variant_is_graded_as_it_declares(grade, variant):
    """Each variant is graded as it declares (grader.suites.variants.judge, as `grader check-exercise` judges it): a
    bug loses points in its own exercise only, with specific feedback that shows no value and names exactly its
    mistakes; a correct style earns full marks; a loop or a built-in fails only its rule and keeps most of its
    exercise; no variant gets a hint that is not its bug's."""
    assert judge(variant, grade(variant)) == [], variant.title


@pytest.mark.slow
def test_each_bug_fails_its_own_tests(grade):
    """One bug fails its own tests: the values checks it breaks, and at most two rules (the property it breaks, or
    one it implies, as float32 inside breaks float64 and half precision); a rule whose subject's values are wrong
    only says it is judged once they are right."""
    offenders = []
    for variant in of_kind("buggy"):
        rules = sorted({t.name.split("::")[-1].split("[")[0] for t in failures(grade(variant), variant.module)
                        if t.kind == "rule" and DEFERRED not in t.feedback})  # half precision: one rule, two dtypes
        several = SEVERAL_MISTAKES.get(variant.id)
        if rules != several if several else len(rules) > MAX_RULES_FAILED:
            offenders.append(f"{variant.id}: {rules}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [v for v in of_kind("buggy") if v.name == "dropout_always"], ids=variant_id)
def test_dropout_in_eval_mode_fails_that_check_only(grade, variant):
    """Dropout left on in eval mode fails the eval-mode dropout check, and no other (training mode included: the
    check there accepts any dropout applied once to the weights)."""
    failed = [t.name.split("::")[-1] for t in failures(grade(variant), variant.module)]
    assert failed == ["test_dropout_eval"], failed


@pytest.mark.slow
def test_mutation_score(grade, capsys):
    """Every buggy variant is caught: the mutation score is 100%."""
    buggy = of_kind("buggy")
    missed = []
    for variant in buggy:
        score, maximum = scores_by_module(grade(variant))[variant.module]
        if score >= maximum:
            missed.append(f"{variant_id(variant)} ({variant.title})")
    caught = len(buggy) - len(missed)
    with capsys.disabled():
        print(f"\nmutation score: {caught}/{len(buggy)} buggy variants caught ({100 * caught / len(buggy):.0f}%)")
    assert not missed, f"missed: {missed}"


@pytest.mark.slow
def test_a_function_wrong_only_with_batch_dims_has_its_rules_judged_on_one_sequence(grade):
    """pairwise_scores with x.T (every dim reversed: right on one sequence, wrong with batch dims) fails its values
    checks, and its rules hold on one sequence (contract.judged, Subject.unbatched): seven of them were "not judged
    yet" before, and the student lost 4.65 of 10 points instead of 2.31 (our seventh student walk-through)."""
    [variant] = [v for v in of_kind("buggy") if v.id == "buggy/scores/pairwise_dot_T"]
    graded = grade(variant)
    assert [t.name for t in failures(graded, "scores") if t.kind == "rule"] == []
    assert [t.kind for t in failures(graded, "scores")] == ["values"]


@pytest.mark.slow
def test_a_quiz_answer_wrong_through_decoder_attention_points_there(grade):
    """quiz_answer() wrong because decoder_attention is (it scales the scores) says the mistake is in
    decoder_attention, not how to build s and H (the tenth student walk-through's M4)."""
    [variant] = [v for v in of_kind("buggy") if v.id == "buggy/quiz/scaled"]
    [answer] = [t for t in failures(grade(variant), "quiz") if t.name.endswith("::test_quiz_answer")]
    assert "the mistake is in decoder_attention" in answer.feedback and "H = [h1, h2, h3]" not in answer.feedback


@pytest.mark.slow
def test_a_module_missing_a_parameter_is_told_which(grade):
    """A module built without a parameter the reference has (out_proj's bias left out when qkv_bias is False) fails
    its values checks naming that parameter, not a generic "parameters are not those asked for" (walk-through 10's
    S1)."""
    [variant] = [v for v in of_kind("buggy") if v.id == "buggy/multihead/out_proj_bias_follows_qkv_bias"]
    values = [t for t in failures(grade(variant), "multihead") if t.kind == "values"]
    assert values and all("has no parameter named out_proj.bias (built as MultiHeadAttention(" in t.feedback
                          for t in values), [t.feedback for t in values]


@pytest.mark.slow
def test_extra_parameters_are_not_blamed_on_dropout(grade):
    """Projections with a bias whatever qkv_bias says fail the values checks and the parameters rule, not the eval-mode
    dropout rule: the twins it compares hold the same extra biases (``modules.twin`` builds after seeding), where
    they held random ones and the check said "dropout must be off in eval mode" (walk-through 11)."""
    [variant] = [v for v in of_kind("buggy") if v.id == "buggy/causal/bias_always"]
    failed = {t.name.split("::")[-1]: t.feedback for t in failures(grade(variant), "causal")}
    assert "test_dropout_eval" not in failed and "test_seeded_init" in failed, failed
    assert "W_key.bias is not one of them (a bias where qkv_bias=False?" in failed["test_seeded_init"]  # walk 13


@pytest.mark.slow
def test_a_forgotten_return_is_said_so(grade):
    """A function that computes its result and returns nothing is told to check its returns (it read as a hint about
    .item(), or said nothing of why the result was None: the twelfth handout walk-through)."""
    from diagnosis import RETURNS_NONE

    [variant] = [v for v in of_kind("buggy") if v.id == "buggy/softmax/no_return"]
    values = [t for t in failures(grade(variant), "softmax") if t.kind == "values"]
    assert values and all("returned None on " in t.feedback and RETURNS_NONE in t.feedback for t in values)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["buggy/causal/output_detached", "buggy/quiz/weights_returned_detached",
                                  "buggy/quiz/result_detached"])
def test_a_detached_result_fails_the_gradients_rule_alone(grade, name):
    """A result cut from autograd fails the gradients rule and no other: the training-mode dropout check's backward
    pass looks for an in-place dropout only (review 11: it charged the same mistake twice), and every tensor a
    function returns is differentiated (walk-through 11: the alphas of return_weights=True were not)."""
    [variant] = [v for v in of_kind("buggy") if v.id == name]
    failed = failures(grade(variant), variant.module)
    assert [t.name.split("::")[-1] for t in failed] == [f"test_autograd[{variant.module}]"]
    assert "is not connected to the inputs by autograd" in failed[0].feedback
    if name.endswith("weights_returned_detached"):  # which one (handout walk-through 14: "each tensor it returns")
        assert "decoder_attention (its second returned tensor) is not connected" in failed[0].feedback
