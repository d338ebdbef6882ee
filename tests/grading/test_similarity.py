"""Similarity: disguised copies are flagged, honest work and the stub's code are not, hostile text is escaped, a
malformed file stops nothing, and the same class always gives the same report."""
import json
import sys
import tokenize

import pytest
from courses import MODULES

from grader import ROOT
from grader.cli import main
from grader.similarity import compare_class, stub_sources
from grader.similarity.compare import THRESHOLD
from grader.similarity.report import class_groups, groups, pair_rows, render, student_pairs
from grader.similarity.tokens import MAX_TOKENS, logical_lines, normalize, stub_lines
from grader.similarity.unused import defined_names, unused_rows

sys.path.insert(0, str(ROOT / "tests" / "grading" / "corpus"))
from disguise import disguise  # noqa: E402
from padding import PADDINGS, padded  # noqa: E402
from variants import VARIANTS  # noqa: E402

EXAMPLES = ROOT / "examples" / "submissions"
ADA = {path.stem: path.read_text(encoding="utf-8") for path in (EXAMPLES / "ada").glob("*.py")}
SUBSTANTIAL = ("scores", "qkv", "quiz", "dictionary", "causal", "multihead")  # enough code to be evidence


def _examples() -> dict[str, dict[str, str]]:
    return {student: {path.stem: path.read_text(encoding="utf-8") for path in (EXAMPLES / student).rglob("*.py")}
            for student in ("ada", "ben", "cy")}


def _flagged(report) -> set[tuple[str, str, str]]:
    return {(module, pair.a, pair.b) for module, pairs in report.pairs.items() for pair in pairs}


@pytest.mark.parametrize("module", SUBSTANTIAL)
def test_a_renamed_reordered_reformatted_copy_is_flagged(module):
    """Locals renamed, functions reversed, docstrings and comments replaced, reformatted: still flagged, and each
    function is matched with the function it was copied from."""
    copy = disguise(ADA[module], "zed")
    assert copy != ADA[module]
    report = compare_class({"ada": {module: ADA[module]}, "zed": {module: copy}, "ben": {module: ""}})
    [pair] = report.pairs[module]
    assert (pair.a, pair.b) == ("ada", "zed") and pair.score >= THRESHOLD
    assert pair.fragments and all(a == b for a, b, _ in pair.units)
    written = normalize(ADA[module], stub_lines(stub_sources()[module])).units  # what ada wrote beyond the stub
    assert {name for name, _, _ in pair.units} == {unit.name for unit in written}


def test_copies_of_corpus_variants_are_flagged_among_the_honest_ones():
    """A class of every correct corpus variant and the examples, plus disguised copies of the substantial ones: the
    copies are flagged with their originals, and no honest pair is."""
    klass = _examples()
    copies = set()
    for variant in VARIANTS:
        if variant.kind == "correct":
            klass[variant.id] = {variant.module: variant.source()}  # names repeat across exercises, ids do not
            if variant.module in SUBSTANTIAL:
                klass[f"copy-{variant.id}"] = {variant.module: disguise(variant.source(), "c")}
                copies.add((variant.module, *sorted((variant.id, f"copy-{variant.id}"))))
    assert len(copies) >= 5
    assert _flagged(compare_class(klass)) == copies


@pytest.mark.parametrize("kind", [*PADDINGS, *(f"disguised+{kind}" for kind in PADDINGS)])
def test_padded_copies_are_flagged_among_the_honest_ones(kind):
    """A class of the examples and every correct corpus variant (other styles), plus a copy of each substantial file
    padded with code that changes nothing (tests/grading/corpus/padding.py: an unused line of numbers, unused
    assignments, an unused helper, ``if _DEBUG:`` blocks, a helper that runs, all of them; alone or renamed and
    reordered too): exactly the copies are flagged, each with its original. Scored as a symmetric Dice coefficient
    of everything, between 0 and 22 of the 31 copies of that day were flagged."""
    klass = _examples()
    copies = set()
    for variant in VARIANTS:
        if variant.kind == "correct":
            klass[variant.id] = {variant.module: variant.source()}
    originals = [("ada", m) for m in SUBSTANTIAL] + [(v.id, v.module) for v in VARIANTS
                                                      if v.kind == "correct" and v.module in SUBSTANTIAL]
    for number, (student, module) in enumerate(originals):
        klass[f"copy-{number}"] = {module: padded(klass[student][module], kind, f"c{number}")}
        copies.add((module, *sorted((student, f"copy-{number}"))))
    assert len(copies) == len(originals) >= 20  # one copy of each: the corpus grows, the test holds
    assert _flagged(compare_class(klass)) == copies


def test_honest_variants_and_examples_are_not_flagged():
    """The correct corpus variants (other styles of each exercise) and the three examples: no pair."""
    klass = _examples()
    for variant in VARIANTS:
        if variant.kind == "correct":
            klass[variant.id] = {variant.module: variant.source()}
    report = compare_class(klass)
    assert _flagged(report) == set()
    styles = sum(variant.kind == "correct" and variant.module == "multihead" for variant in VARIANTS)
    assert report.compared["multihead"] == 1 + styles  # ada and every correct multihead variant were compared


@pytest.mark.parametrize("module", MODULES)
def test_the_stub_is_removed_entirely(module):
    """Every line of the stub is code nobody wrote: normalized against itself, nothing is left."""
    stub = stub_sources()[module]
    assert normalize(stub, stub_lines(stub)).units == []
    assert normalize(stub).units  # without the stub removed, there is code


def test_students_who_wrote_nothing_or_only_kept_the_stubs_are_not_flagged():
    stubs = stub_sources()
    reformatted = {m: "# my work\n" + text.replace("    ", "  ").replace('"', "'") for m, text in stubs.items()}
    report = compare_class({"a": stubs, "b": dict(stubs), "c": reformatted, "d": {m: "" for m in MODULES}})
    assert _flagged(report) == set()
    assert report.compared == {m: 4 for m in MODULES}


def test_a_copy_that_fills_the_stub_is_flagged_and_the_stub_lines_are_not_highlighted():
    """Both students start from the stub and paste the same body: the pair is flagged on the bodies; the docstring
    and signature lines of the stub match in both files but are not part of any fragment."""
    solution = (ROOT / "solutions" / "multihead.py").read_text(encoding="utf-8")
    stub = stub_sources()["multihead"]
    report = compare_class({"a": {"multihead": solution}, "b": {"multihead": disguise(solution, "b")}})
    [pair] = report.pairs["multihead"]
    highlighted = {line for f in pair.fragments for line in range(f.a_lines[0], f.a_lines[1] + 1)}
    docstring = range(solution.index('"""``num_heads``'), solution.index("def __init__"))
    docstring_lines = set(range(solution[:docstring.start].count("\n") + 1, solution[:docstring.stop].count("\n")))
    assert highlighted and not highlighted & docstring_lines
    assert "num_heads" in stub


HOSTILE_ID = "<script>alert(1)</script>\u202eevil"
HOSTILE_CODE = '"""</div><script>steal()</script>"""\n# \u202e bidi override\n'


def test_hostile_ids_and_code_are_escaped_in_the_report(tmp_path):
    """Student ids and code reach the page only through grader.text.html: no tag opens, no bidi override is left."""
    source = HOSTILE_CODE + ADA["multihead"] + "\nLABEL = '</span><img src=x onerror=alert(1)>'\n"
    klass = {HOSTILE_ID: {"multihead": source}, "zed<b>": {"multihead": disguise(source, "zed")}}
    report = compare_class(klass)
    assert len(report.pairs["multihead"]) == 1
    page = render(report)
    for text in ("<script", "<img", "zed<b>", "\u202e"):
        assert text not in page
    for text in ("&lt;script&gt;alert(1)&lt;/script&gt;evil", "&lt;img src=x", "zed&lt;b&gt;", "&lt;/div&gt;"):
        assert text in page


def test_malformed_files_do_not_stop_the_others():
    """Not UTF-8, a syntax error, an unterminated string, absurd nesting and a flood of tokens: each is noted or
    compared as far as it reads, and the copied pair of the class is still flagged."""
    klass = {
        "ada": {"qkv": ADA["qkv"]}, "zed": {"qkv": disguise(ADA["qkv"], "zed")},
        "bytes": {"qkv": b"def f(x):\n    return x \xff\xfe\n"},
        "syntax": {"qkv": ADA["qkv"].replace("):", ")", 3)},
        "unterminated": {"qkv": 'x = """never closed\n' + ADA["qkv"]},
        "nested": {"qkv": "x = " + "(" * 100_000 + ")" * 100_000 + "\n"},
        "flood": {"qkv": "x = 1\n" * (MAX_TOKENS // 2)},
    }
    report = compare_class(klass)
    assert ("qkv", "ada", "zed") in _flagged(report)
    notes = {student: note for student, _, note in report.notes}
    assert notes["bytes"] == "not UTF-8 text: not compared"
    assert "tokenizer stopped" in notes["unterminated"]
    assert f"first {MAX_TOKENS:,} tokens" in notes["flood"]
    assert report.compared["qkv"] == 6
    assert "not UTF-8" in render(report)


def test_the_same_class_gives_the_same_report_whatever_the_order():
    klass = _examples()
    klass["zed"] = {m: disguise(t, "zed") for m, t in ADA.items()}
    first = compare_class(klass)
    second = compare_class(dict(reversed(list(klass.items()))))
    assert first.pairs == second.pairs and first.pairs["qkv"]
    assert render(first) == render(second)
    assert pair_rows(first) == pair_rows(second)


def test_rows_for_the_summary_point_at_the_pages_sections():
    report = compare_class({"ada": ADA, "zed": {m: disguise(t, "zed") for m, t in ADA.items()}})
    rows = pair_rows(report)
    assert {row["exercise"] for row in rows} == set(SUBSTANTIAL)
    page = render(report)
    for row in rows:
        assert f"id='{row['anchor']}'" in page
        assert row["score"] >= THRESHOLD and row["lines_a"] > 0 and row["lines_b"] > 0


def _sharers_and_a_copy() -> dict[str, dict[str, str]]:
    """Four students who all hand in the references, ada, and zed with a disguised copy of ada's files."""
    references = {m: (ROOT / "solutions" / f"{m}.py").read_text(encoding="utf-8") for m in MODULES}
    klass = {student: dict(references) for student in ("dee", "eli", "fay", "gus")}
    klass["ada"], klass["zed"] = ADA, {m: disguise(t, "zed") for m, t in ADA.items()}
    return klass


def test_pairs_are_rolled_up_by_student_and_joined_into_groups():
    """Per exercise, the four who share the references are one group (3 pairs join it, 3 more are its other pairs)
    and ada and zed another; across exercises, the groups table names each set of students once with its exercises,
    and the student pairs are listed most exercises first."""
    report = compare_class(_sharers_and_a_copy())
    sharers = ("dee", "eli", "fay", "gus")
    found = groups("qkv", report.pairs["qkv"])
    assert sorted(group.students for group in found) == [("ada", "zed"), sharers]
    big = next(group for group in found if group.students == sharers)
    assert len(big.joining) == 3 and len(big.others) == 3
    assert {s for pair, _ in big.joining for s in (pair.a, pair.b)} == set(sharers)  # the tree reaches everyone
    rows = {students: [module for module, _ in exercises] for students, exercises in class_groups(report)}
    assert set(rows) == {sharers, ("ada", "zed")} and rows["ada", "zed"] == list(SUBSTANTIAL)
    rolled = student_pairs(report)
    assert len(rolled) == 7 and rolled[-1][0] == ("ada", "zed")  # six sharer pairs, flagged in more exercises
    assert [len(flagged) for _, flagged in rolled] == sorted((len(flagged) for _, flagged in rolled), reverse=True)


def test_two_students_alone_come_before_pairs_of_a_larger_group_flagged_as_often():
    """Flagged in as many exercises, ada and zed, a group of two, come before the pairs of four students who hand in
    the same references (a renamed copy was left off the summary's first ten pairs: our instructor's walk-through)."""
    klass = {student: {m: text for m, text in files.items() if m in SUBSTANTIAL}
             for student, files in _sharers_and_a_copy().items()}
    rolled = student_pairs(compare_class(klass))
    assert {len(flagged) for _, flagged in rolled} == {len(SUBSTANTIAL)} and rolled[0][0] == ("ada", "zed")


def test_only_the_pairs_joining_a_group_are_shown_side_by_side_and_every_pair_keeps_its_anchor():
    report = compare_class(_sharers_and_a_copy())
    page = render(report)
    shown = sum(len(group.joining) for m in MODULES for group in groups(m, report.pairs[m]))
    flagged = sum(len(pairs) for pairs in report.pairs.values())
    assert page.count("<section class='pair'") == shown < flagged
    assert all(f"id='{row['anchor']}'" in page for row in pair_rows(report))
    assert page.index("<h2 id='groups'>") < page.index("<h2 id='student-pairs'>") < page.index("<h2 id='scores'>")


def test_entries_of_one_student_are_rolled_up_as_one():
    """A batch of nbgrader assignments compares ``student/assignment`` entries: the roll-up joins a student's."""
    klass = {f"{student}/{module}": {module: text} for student, files in
             {"ada": ADA, "zed": {m: disguise(t, "zed") for m, t in ADA.items()}}.items()
             for module, text in files.items()}
    [(students, flagged)] = student_pairs(compare_class(klass))
    assert students == ("ada", "zed") and len(flagged) == len(SUBSTANTIAL)


def test_the_command_writes_the_report_for_a_folder_of_submissions(tmp_path, capsys):
    klass = tmp_path / "class"
    for student, files in {"ada": ADA, "zed": {m: disguise(t, "zed") for m, t in ADA.items()}}.items():
        (klass / student).mkdir(parents=True)
        for module, text in files.items():
            (klass / student / f"{module}.py").write_text(text, encoding="utf-8")
    (klass / "broken.zip").write_bytes(b"not a zip")
    assert main(["similarity", str(klass), "--out", str(tmp_path / "out")]) == 0
    assert f"{len(SUBSTANTIAL)} similar pair(s) among 3 submissions" in capsys.readouterr().out
    data = json.loads((tmp_path / "out" / "similarity.json").read_text(encoding="utf-8"))
    assert {(row["a"], row["b"]) for row in data["pairs"]} == {("ada", "zed")}
    assert "ada and zed" in (tmp_path / "out" / "similarity.html").read_text(encoding="utf-8")


UNUSED = """\
_DEBUG = False  # unused
LIMIT = 3
FLAG = True
FLAG = False


def helper(x):  # unused
    return x + 1  # unused


def used(x):
    return x * LIMIT


def attention(x):
    scores = used(x)
    _table = [3, 1, 4, 1, 5]  # unused
    first = 3  # unused
    second = first + 1  # unused
    if _DEBUG:  # unused
        print(scores)  # unused
    if FLAG:
        print("FLAG is bound twice: no constant")
    if False:  # unused
        scores = scores + 1  # unused
    if __name__ == "__main__":  # unused
        print(scores)  # unused
    12345  # unused
    pass  # unused
    assert not _DEBUG  # unused
    (n := 2)
    return scores[:n]
    print("after return")  # unused


class Model:
    def __init__(self):
        self.size = 3

    def forward(self, x):
        return self._scale(x)

    def _scale(self, x):
        return x * self.size

    @staticmethod  # unused
    def spare(x):  # unused
        return x  # unused
"""
MARKED = {number for number, line in enumerate(UNUSED.splitlines(), 1) if line.endswith("# unused")}


def test_unused_code_is_found_statement_by_statement():
    """Unused constants and assignments (a chain of two too), a helper nothing calls, ``if _DEBUG:`` (a constant nothing rebinds),
    ``if False:``, a ``__main__`` block, a line of numbers, ``pass``, an assert that always holds, what follows a
    return, a method nothing calls and its decorator: exactly those lines. Kept: what the contract names
    (``attention``, ``Model``), what kept code uses (``used``, ``LIMIT``, ``self._scale``, a ``:=`` name), a name
    bound twice, ``__init__`` and ``forward``."""
    assert unused_rows(UNUSED, frozenset({"attention", "Model"})) == MARKED


def test_without_a_contract_every_public_function_and_method_is_kept():
    helper_and_spare = {UNUSED.splitlines().index(line) + 1 for line in
                        ("def helper(x):  # unused", "    return x + 1  # unused", "    @staticmethod  # unused",
                         "    def spare(x):  # unused", "        return x  # unused")}
    assert unused_rows(UNUSED) == MARKED - helper_and_spare


@pytest.mark.parametrize("source", ["def f(:\n    return 1\n", "x = a" + "[0]" * 30_000 + "\n",
                                    "x = " + "not " * 30_000 + "a\n"], ids=["syntax_error", "deep", "deeper"])
def test_a_file_python_cannot_parse_keeps_every_line(source):
    """A syntax error, or nesting too deep for Python's parser: nothing is found unused, and nothing raises."""
    assert unused_rows(source) == frozenset()


@pytest.mark.parametrize("path", [folder / f"{m}.py" for folder in (ROOT / "solutions", EXAMPLES / "ada") for m in MODULES],
                         ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_correct_solutions_lose_no_line_of_code(path):
    """The references and ada's correct files hold no unused code: normalized, every line of theirs is kept."""
    text = path.read_text(encoding="utf-8")
    rows = unused_rows(text, defined_names(stub_sources()[path.stem]))
    lines, _ = logical_lines(text)
    code = {line.tokens[0][2] for line in lines if line.tokens[0][1] not in ("import", "from")
            and not all(kind == tokenize.STRING for kind, _, _ in line.tokens)}  # not a docstring
    assert code and not code & rows
