"""The public checks (each exercise's tests/course/<module>/test_<module>.py, tests/public in the handout): green on
the references, and one readable line per failure on the stubs."""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from grader.authoring.release import build_handout, public_checks
from grader.course import load_course

ROOT = Path(__file__).resolve().parents[2]
COURSE = load_course(ROOT / "course.yaml")
MODULES = COURSE.modules  # the exercises of course.yaml, in order


def handout_checks(target: Path) -> None:
    """Write the handout's tests/public (``release.public_checks``) into ``target``."""
    for relative, text in public_checks(COURSE).items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_text(text, encoding="utf-8")


def filled_handout(target: Path) -> Path:
    """A handout-like folder at ``target`` whose exercises are the references: its public checks and pytest settings."""
    shutil.copytree(ROOT / "solutions", target / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    handout_checks(target)
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target
STUB_LINE = re.compile(r"^(?P<module>\w+)\.[\w.]+ is not implemented yet: fill in the stub in exercises/(?P<file>\w+)\.py$")


def run_public(tmp_path: Path, *args: str, root: Path = ROOT) -> tuple[subprocess.CompletedProcess, dict[str, str | None]]:
    """Run the public checks under ``root`` (the repository, or a handout-like copy holding them in tests/public);
    return the process and {test id: failure message or None}."""
    suite = "tests/course" if root == ROOT else "tests/public"
    report = tmp_path / f"public-{len(list(tmp_path.glob('public-*.xml')))}.xml"
    process = subprocess.run(
        [sys.executable, "-m", "pytest", suite, "-p", "no:cacheprovider", "-q", "--strict-markers",
         f"--junitxml={report}", *args],
        cwd=root, capture_output=True, text=True, timeout=120,
    )
    results: dict[str, str | None] = {}
    if report.is_file():
        for case in ET.parse(report).getroot().iter("testcase"):
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            key = f"{case.get('classname')}::{case.get('name')}"
            results[key] = None if failure is None else failure.get("message", "") + "\n" + (failure.text or "")
    return process, results


def module_of(test_id: str) -> str:
    """'tests.public.test_softmax::test_x' (or tests.course.softmax.test_softmax::...) -> 'softmax'."""
    return test_id.split("::")[0].rsplit(".", 1)[-1].removeprefix("test_")


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory):
    """One run of the public suite against exercises/ (the stubs), shared by the tests below."""
    return run_public(tmp_path_factory.mktemp("stubs"))


def test_public_suite_passes_on_solutions(tmp_path):
    """`pytest tests/public --impl solutions` passes every test (and collects one file per exercise)."""
    process, results = run_public(tmp_path, "--impl", "solutions")
    output = process.stdout + process.stderr
    assert process.returncode == 0, output[-6000:]
    assert results and all(message is None for message in results.values()), output[-6000:]
    assert {module_of(test) for test in results} == set(MODULES)


def test_public_suite_fails_every_value_check_on_stubs(stub_run):
    """Against the stubs every public check fails but the import rule's (a stub imports only torch), and none errors
    in set-up."""
    process, results = stub_run
    output = process.stdout + process.stderr
    assert process.returncode == 1, output[-6000:]
    assert results, output[-6000:]
    passed = sorted(test for test, message in results.items() if message is None)
    assert passed == sorted(f"tests.course.{module}.test_{module}::test_imports_allowed" for module in MODULES), passed
    assert re.search(rf"\b{len(results) - len(passed)} failed\b", output), output[-2000:]
    assert " error" not in output.splitlines()[-1]


def test_stub_failures_are_one_line(stub_run):
    """Each stub failure is the one line 'module.name is not implemented yet: fill in the stub in exercises/module.py'."""
    _, results = stub_run
    for test, message in results.items():
        if message is None:
            continue
        lines = [line for line in message.splitlines() if line.strip()]
        assert len(set(lines)) == 1, f"{test}: expected one line, got:\n{message}"
        match = STUB_LINE.match(lines[0])
        assert match, f"{test}: {lines[0]!r}"
        assert match["module"] == match["file"] == module_of(test), f"{test} points at the wrong file: {lines[0]}"


def test_an_unfinished_exercise_is_one_line(stub_run):
    """The output of the stub run is one line per exercise, naming every stub left in its file (those no check
    reached, behind an unfinished __init__, too) and the file, and no traceback."""
    import stub_message

    process, _ = stub_run
    output = process.stdout + process.stderr
    table = output.split("public checks per exercise", 1)[1].splitlines()[1:]
    for module in MODULES:
        lines = [line for line in table if line.startswith(f"{module} ")]
        assert len(lines) == 1, (module, table)
        stubs = ", ".join(sorted(stub_message.stubs_in((ROOT / "exercises" / f"{module}.py").read_text(encoding="utf-8"))))
        assert lines[0].endswith(f"not implemented yet: fill in the stub in exercises/{module}.py ({stubs})"), lines[0]
    assert len([line for line in table if "not implemented yet" in line]) == len(MODULES), output
    assert "Traceback" not in output
    assert "NotImplementedError" not in output


def test_markers_select_one_exercise():
    """`-m softmax` selects exactly the tests of test_softmax.py, and each file is marked with its exercise."""
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/course", "-p", "no:cacheprovider", "-q", "--strict-markers",
         "--collect-only", "-m", "softmax", "--impl", "solutions"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    ids = [line for line in process.stdout.splitlines() if "::" in line]
    assert ids and all(line.startswith("tests/course/softmax/test_softmax.py::") for line in ids), process.stdout
    for module in MODULES:
        source = COURSE.public_checks(module).read_text(encoding="utf-8")
        assert f"pytestmark = pytest.mark.{module}\n" in source, module


def test_a_misspelled_marker_is_an_error_naming_the_exercises(tmp_path):
    """`-m softmx` stops with one line naming the marker and listing the exercises (it deselected every check and
    said "0 selected")."""
    process, _ = run_public(tmp_path, "-m", f"softmx or {MODULES[0]}", "--impl", "solutions")
    assert process.returncode == pytest.ExitCode.USAGE_ERROR, process.stdout[-2000:] + process.stderr[-2000:]
    assert f"-m 'softmx or {MODULES[0]}': no exercise 'softmx'; the exercises are {', '.join(MODULES)} " in process.stderr


def test_broken_files_fail_with_one_line(tmp_path):
    """A file that does not compile, does not import, or is missing gives one line naming the file (and line)."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "exercises", copy / "exercises")
    handout_checks(copy)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    scores = copy / "exercises" / "scores.py"
    scores.write_text(scores.read_text() + "\ndef broken(:\n    pass\n")
    bad_line = scores.read_text().splitlines().index("def broken(:") + 1
    softmax = copy / "exercises" / "softmax.py"
    softmax.write_text("import torch\nimport not_a_module_of_this_course\n" + softmax.read_text())
    (copy / "exercises" / "quiz.py").unlink()

    process, results = run_public(tmp_path, "-m", "scores or softmax or quiz", root=copy)
    output = process.stdout + process.stderr
    assert process.returncode == 1 and results, output[-4000:]
    expected = {
        "scores": f"exercises/scores.py line {bad_line} does not compile",
        "softmax": "exercises/softmax.py line 2 does not import (ModuleNotFoundError",
        "quiz": "exercises/quiz.py is missing",
    }
    for test, message in results.items():
        lines = {line for line in message.splitlines() if line.strip()}
        assert len(lines) == 1, f"{test}: expected one line, got:\n{message}"
        if test.endswith("test_softmax::test_imports_allowed"):  # the rule is read from the source: it holds here
            assert lines.pop().startswith("softmax.py imports not_a_module_of_this_course (line 2): "), message
        else:
            assert lines.pop().startswith(expected[module_of(test)]), f"{test}: {message}"
    assert "Traceback" not in output


def test_a_wrong_answer_reports_its_property_and_error_size(tmp_path):
    """A wrong (not unfinished) result is reported as the check's property and the size of its error, in the table."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "exercises", copy / "exercises")
    handout_checks(copy)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    quiz = copy / "exercises" / "quiz.py"
    quiz.write_text(quiz.read_text().replace(
        'raise NotImplementedError("quiz.quiz_answer: fill in this stub (see its docstring)")',
        "return torch.tensor([0.5, 0.5])"))
    process, results = run_public(tmp_path, "-k", "test_quiz_answer and not calls_decoder_attention", root=copy)
    output = process.stdout + process.stderr
    assert process.returncode == 1 and len(results) == 1, output[-4000:]
    [test] = results
    doc = ast.get_docstring(next(node for node in ast.walk(ast.parse(COURSE.public_checks("quiz").read_text()))
                                 if isinstance(node, ast.FunctionDef) and node.name == test.split("::")[1]))
    table = output.split("public checks per exercise", 1)[1]
    assert f"  - {doc}\n" in table, table
    assert re.search(r"wrong values: off by (about 1e-\d|about 1|10 or more) at worst\.", table), table
    assert "Traceback" not in output


def test_failures_with_one_cause_are_said_once(tmp_path):
    """Checks that all fail with the same error say it once, with what torch's error means, how many it stopped and
    which (a view of a transposed tensor printed torch's message once per check, 7 times; then the count alone, and
    keys computed with W_query printed "wrong values" and "2 checks failed for this reason", naming no check)."""
    copy = filled_handout(tmp_path / "repo")
    multihead = copy / "exercises" / "multihead.py"
    merge = "context = (weights @ values).transpose(1, 2).reshape(B, T, -1)"
    assert merge in multihead.read_text()
    multihead.write_text(multihead.read_text().replace(merge, merge.replace("reshape", "view")))
    process, results = run_public(tmp_path, "-m", "multihead", root=copy)
    failed = sum(message is not None for message in results.values())
    table = (process.stdout + process.stderr).split("public checks per exercise", 1)[1]
    assert failed > 2 and table.count("view size is not compatible") == 1, table
    assert "This error means: view() of a tensor whose memory is not laid out in order" in table
    assert f"    {failed} checks failed for this reason:\n" in table and table.count("\n  - ") == failed, table


def test_a_wrong_layer_or_shape_is_named_not_an_assert_expression(tmp_path):
    """nn.Linear(d_in, d_out) without bias=qkv_bias: the layers' check names the layer and the fix, where an ``and``
    of asserts printed "failed: assert (True and torch.Size([2, 3]) == (2, 3))"."""
    copy = filled_handout(tmp_path / "repo")
    qkv = copy / "exercises" / "qkv.py"
    made = "self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)"
    assert made in qkv.read_text()
    qkv.write_text(qkv.read_text().replace(made, "self.W_query = nn.Linear(d_in, d_out)"))
    process, _ = run_public(tmp_path, "-m", "qkv", root=copy)
    table = (process.stdout + process.stderr).split("public checks per exercise", 1)[1]
    assert "W_query has a bias with qkv_bias=False: pass bias=qkv_bias to nn.Linear" in table, table
    assert "assert (" not in table and "torch.Size" not in table, table


WALKTHROUGH_BUGS = [  # rounds of {module: (edit of the reference, what its checks must say, what they must not)}
    {"scores": (("return (a * b).sum()  # ()", "return (a * b).sum().item()"),
                "could not use what your code returned (TypeError", "raised TypeError"),
     "quiz": (("return decoder_attention(s, H)  # (d,)", "return decoder_attention(s, H).double()"),
              "float64 result; expected float32, the default dtype", "assert ("),
     "dictionary": (("vector = torch.zeros(n)  # (n,)", "vector = torch.zeros(n, dtype=torch.long)"),
                    "int64 result; expected float32, the default dtype", "the input's dtype"),
     "causal": (("return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)",
                 "return torch.ones(T, T, dtype=torch.bool, device=device).tril(-1)"),
                "NaN in the result", "off by about 1e-10"),
     "multihead": (("return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)",
                    "return t.view(B, self.num_heads, T, self.head_dim)"),
                   "Hint: the heads are split and merged without transposes", "out_proj is not applied")},
    {"qkv": (("queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)  # (..., T, d_out) each\n"
              "        return scaled_dot_product_attention(queries, keys, values)  # (..., T, d_out)",
              "queries, keys, values = project(x, self.W_query, self.W_key, self.W_value)\n"
              "        return torch.softmax(queries @ keys.transpose(-2, -1) / math.sqrt(x.shape[-1]), dim=-1) @ values"),
             "Hint: you scale by sqrt(d_in)", "wrong values: off by about 1e-3 at worst.\n"),
     "quiz": (("alphas = torch.softmax(scores, dim=-1)  # (..., n)", "alphas = torch.softmax(scores, dim=0)"),
              "Hint: the softmax runs over the wrong dim", "Hint: these are v"),
     "scores": (("def dot(", "def dot_product("), "exercises/scores.py defines no dot: keep the name the handout gives it",
                "could not use"),
     "context": (("return weights @ x  # (..., T, d)", "return x @ weights"),
                 "6x6). Hint: the product is the wrong way round", ".. Hint"),
     "causal": (("weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, T, T)",
                 "weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), self.dropout.p, training=True)"),
                "in eval mode the output changes with the dropout rate (0.5 against 0). Hint: dropout must be off in "
                "eval mode", "raised")},
    {"multihead": (("if num_heads <= 0 or d_out % num_heads:\n"
                    "            raise ValueError(f\"d_out ({d_out}) must be divisible by num_heads ({num_heads})\")",
                    "assert d_out % num_heads == 0, \"d_out must be divisible by num_heads\""),
                   "raised AssertionError: d_out must be divisible by num_heads (exercises/multihead.py, line",
                   "failed: d_out"),
     "qkv": (("/ math.sqrt(d_k)  # (..., Tq, Tk)", "/ math.sqrt(queries.shape[-2])"),
             "Hint: you scale by the square root of a sequence length (shape[-2]", "Hint: you scale by sqrt(d_v)"),
     "causal": (("scores = scores.masked_fill(~self.mask[:T, :T], float(\"-inf\"))\n"
                 "        weights = self.dropout(torch.softmax(scores, dim=-1))  # (B, T, T)",
                 "scores = self.dropout(scores.masked_fill(~self.mask[:T, :T], float(\"-inf\")))\n"
                 "        weights = torch.softmax(scores, dim=-1)"),
                "dropout acts before the attention weights are normalized (the masked entries are -inf there)",
                "NaN or inf"),
     "softmax": (("z = z - z.amax(dim=dim, keepdim=True)", "z = z - z.max(dim=dim).values.unsqueeze(-1)"),
                 "Hint: the row max is taken along, or put back at, the last dim", "without keepdim"),
     "quiz": (("return decoder_attention(s, H)  # (d,)", "return torch.tensor([0.4387, 0.4855])"),
              "makes fewer tensor operations than decoder_attention(s, H)", "assert")},
    {"qkv": (("        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
              "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n",
              "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
              "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"),
             "the parameters are made in the order W_key, W_query, W_value; expected W_query, W_key, W_value",
             "assert [")},
]


@pytest.mark.parametrize("bugs", WALKTHROUGH_BUGS, ids=["round1", "round2", "round3", "round4"])
def test_the_student_walkthroughs_bugs_are_said_in_the_right_words(tmp_path, bugs):
    """Found by our sixth student walk-through: the checks' own errors on what a .item() returned were printed as the
    student's ("raised TypeError"), a float64 answer as "assert (True and ...)", a function without a tensor input
    asked for "the input's dtype", NaN against NaN as "off by about 1e-10", heads split and merged without transposes
    got no hint (the multihead merge is edited to reshape alone below), and the lecture's numbers named no mistake
    (sqrt(d_in), a softmax over the batch, x @ weights, dropout left on in eval mode) where the grader names each; a
    function renamed is said as a name missing (our reviewer: the first fix called it "could not use what was
    returned"). Our seventh: a student's own assert was printed as the check's verdict, sqrt(Tq) got three
    contradictory hints (sqrt(d_v), not scaled, d_k itself: each true of one input's sizes alone), dropout on the
    scores sent the student to values checks that pass, a max unsqueezed at the last dim named nothing, and a
    parameter order was a raw assert expression."""
    copy = filled_handout(tmp_path / "repo")
    for module, ((old, new), _, _) in bugs.items():
        path = copy / "exercises" / f"{module}.py"
        assert old in path.read_text(), (module, old)
        path.write_text(path.read_text().replace(old, new))
    multihead = copy / "exercises" / "multihead.py"
    merge = "context = (weights @ values).transpose(1, 2).reshape(B, T, -1)"
    multihead.write_text(multihead.read_text().replace(merge, "context = (weights @ values).reshape(B, T, -1)"))
    process, _ = run_public(tmp_path, "-m", " or ".join(bugs), root=copy)
    table = (process.stdout + process.stderr).split("public checks per exercise", 1)[1]
    parts = dict(re.findall(r"(?ms)^(\w+) +\d+/\d+ +passed\n(.*?)(?=^\w+ +\d+/\d+ +passed|\Z)", table))
    for module, (_, said, unsaid) in bugs.items():
        assert said in parts[module] and unsaid not in parts[module], (module, parts[module])


def test_dropout_made_before_the_layers_passes(tmp_path):
    """The syllabus orders the layers with weights (their random draws); a dropout, which draws nothing when made, may
    come first: the layers' checks of causal and multihead pass (found by our fairness review: they failed)."""
    copy = filled_handout(tmp_path / "repo")
    for module in ("causal", "multihead"):
        path = copy / "exercises" / f"{module}.py"
        lines = path.read_text().splitlines(keepends=True)
        dropout = next(i for i, line in enumerate(lines) if "self.dropout = nn.Dropout(dropout)" in line)
        first = next(i for i, line in enumerate(lines) if "self.W_query = nn.Linear(" in line)
        lines.insert(first, lines.pop(dropout))
        path.write_text("".join(lines))
    process, results = run_public(tmp_path, "-m", "causal or multihead", root=copy)
    assert results and not any(results.values()), process.stdout[-3000:]


def test_every_correct_variant_passes_the_public_checks(tmp_path):
    """Correct code of every style in the corpus (kind "correct": other projects' manners included) passes the public
    checks as it earns full marks from the grader: a public check stricter than the contract fails honest code that
    the grader accepts. The variants are run in rounds, one of each exercise's per round."""
    import itertools

    sys.path.insert(0, str(ROOT / "tests" / "grading" / "corpus"))
    from variants import VARIANTS
    by_module = [[v for v in VARIANTS if v.kind == "correct" and v.module == module] for module in MODULES]
    failures = []
    for n, round_ in enumerate(itertools.zip_longest(*by_module)):
        copy = filled_handout(tmp_path / f"round{n}")
        for variant in filter(None, round_):
            (copy / "exercises" / f"{variant.module}.py").write_text(variant.source(), encoding="utf-8")
        process, results = run_public(tmp_path, root=copy)
        failed = [test for test, message in results.items() if message]
        if failed or not results:
            failures.append(f"{[v.id for v in round_ if v]}: {failed or process.stdout[-2000:]}")
    assert not failures, "\n".join(failures)


def test_every_public_test_has_a_one_line_docstring():
    """Every test function of the public checks has a docstring of exactly one line (what the student reads)."""
    missing = []
    for path in map(COURSE.public_checks, MODULES):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node)
                if not doc or "\n" in doc.strip():
                    missing.append(f"{path.name}::{node.name}")
    assert not missing, missing


CLASSIC_BUGS = {  # a corpus variant (tests/grading/corpus/variants.py) -> the misconception both must name
    "buggy/softmax/no_max_subtraction": "softmax.no_max",
    "buggy/softmax/last_dim_only": "softmax.last_dim_only",
    "buggy/softmax/global_max": "softmax.global_max",
    "buggy/qkv/scale_by_d_k": "attention.scale_by_d",
    "buggy/scores/pairwise_dot_T": "scores.batched_T",
    "buggy/qkv/mask_inverted": "attention.mask_inverted",
}


def hint_catalog() -> dict[str, str]:
    """Misconception id -> its text, from the shared module's hint lists on small inputs."""
    import torch
    from test_misconceptions import M

    x, mask = torch.randn(2, 3, 4), torch.ones(3, 3, dtype=torch.bool).tril()
    hints = M.softmax_hints(x, 0, 2.0) + M.attention_hints(x, x, x, mask=mask) + M.pairwise_hints(x)
    return {hint.id: hint.message for hint in hints}


def hints_in(text: str) -> set[str]:
    """The hints a text shows ('Hint: ...' to the end of its line), without their final period."""
    return {match.rstrip(".") for match in re.findall(r"Hint: (.+)", text)}


@pytest.mark.parametrize("variant", sorted(CLASSIC_BUGS))
def test_public_checks_give_the_graders_hint_on_the_classic_bugs(tmp_path, variant):
    """On each classic bug, the grader names the misconception (its id in results.json) and the public checks print
    its hint, and every hint they print is one the grader gives the same code."""
    sys.path.insert(0, str(ROOT / "tests" / "grading" / "corpus"))
    from variants import VARIANTS
    found = next(v for v in VARIANTS if v.id == variant)
    copy = tmp_path / "handout"
    shutil.copytree(ROOT / "solutions", copy / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "exercises" / f"{found.module}.py").write_text(found.source(), encoding="utf-8")
    handout_checks(copy)
    process, _ = run_public(tmp_path, "-m", found.module, root=copy)
    public = hints_in(process.stdout)
    graded = subprocess.run([sys.executable, "-m", "grader", "grade", str(copy), "--out", str(tmp_path / "results.json")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stderr[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    grader = set().union(*(hints_in(test.get("output", "")) for test in results["tests"]))
    ids = {test.get("extra_data", {}).get("misconception") for test in results["tests"]} - {None}
    expected = hint_catalog()[CLASSIC_BUGS[variant]].rstrip(".")
    assert CLASSIC_BUGS[variant] in ids, ids
    assert expected in public, process.stdout[-3000:]
    assert expected in grader, sorted(grader)
    assert public <= grader, sorted(public - grader)


# ----------------------------------------------------------------- what a student's run starts

# Run in a released handout: the public checks (``pytest.main`` with ARGS, or the notebook's cell), then what that run
# imported and left behind, as JSON.
PROBE = """
import json, sys
import torch
torch.set_num_threads(2)
import pytest
args = json.loads(sys.argv[1])
if isinstance(args, dict):  # {"notebook": the file whose code the notebook's solution cell holds, "module": its exercise,
    sys.path.insert(0, "tests/public")  # run as a kernel runs a cell, its text kept for tracebacks but with "no_text"}
    import linecache
    text = open(args["notebook"], encoding="utf-8").read()
    if not args.get("no_text"):
        linecache.cache["<cell 7>"] = (len(text), None, text.splitlines(True), "<cell 7>")
    namespace = {"__name__": "__main__"}
    exec(compile(text, "<cell 7>", "exec"), namespace)
    import checking
    status = checking.run_in_notebook(args.get("module", "softmax"), namespace)
else:
    status = pytest.main(args)
print(json.dumps({"status": int(status), "threads": torch.get_num_threads(),
                  "modules": sorted(name for name in sys.modules if "." not in name)}))
"""


@pytest.fixture(scope="module")
def finished_handout(tmp_path_factory) -> Path:
    """A released handout whose exercises are the references."""
    root = tmp_path_factory.mktemp("handout") / "handout"
    build_handout(root, grader_repository="school/attention-grader")
    for module in MODULES:
        shutil.copyfile(ROOT / "solutions" / f"{module}.py", root / "exercises" / f"{module}.py")
    return root


def probe(handout: Path, args) -> dict:
    process = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=handout, capture_output=True,
                             text=True, timeout=300)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    *printed, last = process.stdout.splitlines()
    return {**json.loads(last), "printed": printed}


def test_a_students_run_loads_no_plugin_and_only_the_chosen_exercises_checks(finished_handout):
    """`-m softmax` in the handout: no plugin through its entry point (hypothesis' is installed here), none of the other
    exercises' check files imported, one intra-op thread while the checks run and the count given back after."""
    assert "hypothesispytest" in {entry.name for entry in entry_points(group="pytest11")}, "nothing to leave out here"
    run = probe(finished_handout, ["tests/public", "-m", "softmax", "-q"])
    assert run["status"] == 0 and run["threads"] == 2
    assert "hypothesis" not in run["modules"] and "_hypothesis_pytestplugin" not in run["modules"]
    assert [name for name in run["modules"] if name.startswith("test_")] == ["test_softmax"]
    run = probe(finished_handout, ["tests/public", "-m", "softmax or qkv", "-q"])
    assert run["status"] == 0 and [name for name in run["modules"] if name.startswith("test_")] == ["test_qkv", "test_softmax"]
    run = probe(finished_handout, ["tests/public", "-m", "not softmax", "-q"])  # not a choice of exercises: all collected
    assert run["status"] == 0 and len([name for name in run["modules"] if name.startswith("test_")]) == len(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_notebooks_check_cell_passes_on_the_reference(finished_handout, module):
    """Each notebook's check cell passes on the reference's code as the notebook defines it (its functions' globals
    are the notebook's, not a module's): the quiz's cell called a correct quiz_answer "typed in", because it watched
    decoder_attention in a copy of the notebook's names that quiz_answer never looks in."""
    run = probe(finished_handout, {"notebook": f"exercises/{module}.py", "module": module})
    assert run["status"] == 0, run["printed"]


def test_the_notebooks_check_cell_checks_the_import_rule_on_the_cells_text(finished_handout, tmp_path):
    """A solution cell importing numpy fails the cell's import check, as the grader's rule does for the file made of
    it (the cell said "all passed", the grader took points off: the twelfth handout walk-through); the reference's
    cell passes it; a kernel that keeps no text of the cell fails it, saying why (review 11: it skipped into green)."""
    cell = tmp_path / "cell.py"
    cell.write_text("import numpy as np\n" + (ROOT / "solutions" / "quiz.py").read_text(encoding="utf-8"), encoding="utf-8")
    run = probe(finished_handout, {"notebook": str(cell), "module": "quiz"})
    assert run["status"] == 1 and any("the solution cell imports numpy (line 1)" in line for line in run["printed"])
    run = probe(finished_handout, {"notebook": "exercises/quiz.py", "module": "quiz"})
    assert run["status"] == 0 and re.fullmatch(r"quiz\s+(\d+)/\1\s+passed", run["printed"][0].strip()), run["printed"]
    run = probe(finished_handout, {"notebook": str(cell), "module": "quiz", "no_text": True})  # never passed unread
    assert run["status"] == 1 and any("the import rule cannot be checked here" in line for line in run["printed"])


def test_the_notebooks_check_cell_runs_its_exercises_checks_alone(finished_handout):
    """The notebook's cell (checking.run_in_notebook) in a kernel: the exercise's checks pass on its code, with the
    handout's configuration (no plugin autoloaded), its own check file only, and the kernel's thread count kept; it
    prints the table alone (it printed pytest's progress dots and counts too), and an unfinished cell is said as the
    notebook's, not as exercises/softmax.py."""
    run = probe(finished_handout, {"notebook": "exercises/softmax.py"})
    assert run["status"] == 0 and run["threads"] == 2
    assert "hypothesis" not in run["modules"]
    assert [name for name in run["modules"] if name.startswith("test_")] == ["test_softmax"]
    [line] = run["printed"]
    assert re.fullmatch(r"softmax\s+(\d+)/\1\s+passed", line.strip()), run["printed"]
    stub = probe(finished_handout, {"notebook": str(ROOT / "exercises" / "softmax.py")})
    assert stub["status"] == 1 and stub["printed"] == [
        "softmax  not implemented yet: fill in the stub in the solution cell of this notebook (softmax.softmax)"]
