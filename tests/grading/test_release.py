"""`grader release`: the handout holds what students need and nothing hidden; its workflow is valid and its
steps run; the Gradescope autograder zip is complete and its scripts work."""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from courses import MODULES, course_variant
from no_namespaces import refused

from grader import ROOT, cli
from grader.authoring.gradescope import gradescope_zip
from grader.authoring.release import (
    WORKFLOW,
    ReleaseError,
    build_handout,
    find_leaks,
    handout_files,
    meaningful,
    notebook_sources,
    pinned,
    public_sources,
    release_notebook,
    secret_lines,
    secret_values,
    solutions_in_public,
    workflow_course_path,
)
from grader.authoring.stubs import render_exercises
from grader.cli import GRADER_FAULT_STATUS
from grader.course import COURSE_FILE, CourseError, course, load_course
from grader.reports.results import GRADESCOPE_SCHEMA
from grader.sandbox.host.problems import GraderFault

REPOSITORY = "course-org/attention-grader"



@pytest.fixture(scope="module")
def handout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("release") / "handout"
    build_handout(root, grader_repository=REPOSITORY, grader_ref="v1")
    return root


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


# ----------------------------------------------------------------- contents

def test_handout_layout(handout):
    files = _files(handout)
    expected = ({f"exercises/{name}" for name in render_exercises()}
                | {f"tests/public/{part}_{m}.py" for m in MODULES for part in ("test", "hints")}
                | {f"tests/public/{name}" for name in ("conftest.py", "checking.py", "diagnosis.py", "import_rule.py",
                                                       "stub_message.py", "wording.py", "hints.py", "exercises.json")}
                | {"README.md", "requirements.txt", "pyproject.toml", ".gitignore", WORKFLOW}
                | {f"notebooks/{p.parent.name}/{p.name}" for p in notebook_sources(course())})
    assert files == expected
    assert not any(part.startswith(("solutions", "hidden", "nbgrader", "lesson", "grader", "__pycache__"))
                   for f in files for part in f.split("/"))
    for name, text in render_exercises().items():
        assert (handout / "exercises" / name).read_text() == text
    public = ROOT / "grader" / "suites" / "public"
    assert (handout / "tests/public/conftest.py").read_bytes() == (public / "harness.py").read_bytes()
    assert (handout / "tests/public/import_rule.py").read_bytes() == (ROOT / "grader/sandbox/imports.py").read_bytes()
    assert json.loads((handout / "tests/public/exercises.json").read_text()) == {
        exercise.module: exercise.title for exercise in course().exercises}


def test_readme_and_dependencies(handout):
    readme = (handout / "README.md").read_text()
    assert "@@" not in readme
    for exercise in course().exercises:
        assert f"| `exercises/{exercise.module}.py` | {exercise.title} | {exercise.points} |" in readme
        assert f"- {exercise.title} (`{exercise.module}`): {exercise.points} points" in readme
    assert f"worth {course().total_points} points" in readme and f"**total: {course().total_points} points**" in readme
    for section in ("## Set up", "## Run the public checks", "## Submit", "## How your score is computed", "## Rules"):
        assert section in readme
    assert "python -m pytest tests/public" in readme and "Autograding Tests" in readme
    assert f"torch=={pinned('torch')}" in readme
    assert ("## Notebooks" in readme) == bool(notebook_sources(course()))
    lines = [line for line in (handout / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert lines[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"  # the CPU build of torch on Linux
    assert lines[-1] == "jupyterlab>=4"  # the notebooks open in it
    requirements = lines[1:-1]
    assert requirements == [f"torch=={pinned('torch')}", f"pytest=={pinned('pytest')}",
                            f"matplotlib=={pinned('matplotlib')}"]  # matplotlib: the notebooks' heatmaps
    assert "python -m pip install -r requirements.txt" in readme and "cu128" in readme  # one command; GPU: say how
    for requirement in requirements:  # what CI and this machine have is what students get
        name, version = requirement.split("==")
        assert importlib.metadata.version(name).split("+")[0] == version
    assert 'testpaths = ["tests/public"]' in (handout / "pyproject.toml").read_text()


def test_the_readme_says_when_the_work_is_due_and_what_it_is(tmp_path):
    """With course.yaml's late policy, the README says the due date and what a late hand-in costs (the course's, or
    the assignment's for its handout; a policy that gives the assignment none says nothing); an assignment's handout
    is titled and counted as that assignment (it said "The course is worth N points" under the course's title; found
    by our instructor's walk-through)."""
    first, second = course().exercises[:2]  # the second exercise's assignment has a due date of its own, the first none
    due, undue = course().notebook_name(second.module), course().notebook_name(first.module)
    data = yaml.safe_load((ROOT / "course.yaml").read_text(encoding="utf-8"))
    data["late"] = {"due": {"course": "2026-12-01T23:59:00+01:00", due: "2026-11-20T23:59:00+01:00"},
                    "percent": 10, "cap_percent": 50, "grace_minutes": 15}
    path = course_variant(tmp_path / "course", yaml.safe_dump(data, sort_keys=False))

    def readme(name: str, assignment: str | None = None) -> str:
        built = build_handout(tmp_path / name, course_file=path, assignment=assignment, grader_repository=REPOSITORY)
        return (built.root / "README.md").read_text()

    assert ("**Due 2026-12-01 23:59+01:00.** Work handed in later loses 10% of the points possible per started day "
            "past it, at most 50% (nothing within 15 minutes of it).") in readme("whole")
    one = readme("one", due)
    assert one.startswith(f"# {course().title}: {second.title}\n")
    assert f"Assignment {due} is worth {second.points} points" in one and "**Due 2026-11-20 23:59+01:00.**" in one
    assert "Due " not in readme("other", undue)
    gradescope = build_handout(tmp_path / "gradescope", course_file=path, grader_repository=None, gradescope=True)
    assert any(note.startswith("the README states course.yaml's late policy, which the Gradescope autograder does not "
                               "apply") for note in gradescope.notes), gradescope.notes  # the fourth walk-through


def test_a_course_grading_would_refuse_is_never_released(tmp_path):
    """A banned entry no check reads (a misspelled function) is refused by release as by grade and batch: the handout
    listed a rule that bans nothing, and its Gradescope autograder failed every submission (found by our instructor's
    walk-through); nothing is written."""
    data = yaml.safe_load((ROOT / "course.yaml").read_text(encoding="utf-8"))
    data["banned"]["softmax.softmaxx"] = data["banned"].pop("softmax.softmax")
    path = course_variant(tmp_path / "course", yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(CourseError, match="softmax.softmaxx: .*did you mean softmax.softmax"):
        build_handout(tmp_path / "handout", course_file=path, grader_repository=REPOSITORY)
    assert not (tmp_path / "handout").exists()


# ----------------------------------------------------------------- nothing hidden

def test_no_line_of_the_hidden_suites_or_solutions_in_the_handout(handout):
    secrets = secret_lines(course())
    origins = {origin.split(":")[0].split(" ")[0] for origin in secrets.values()}
    assert any(o.startswith("tests/course/softmax/hidden_") for o in origins) and any(o.startswith("solutions/") for o in origins)
    assert len(secrets) > 100, "the secret lines were collected"
    assert find_leaks(handout, course(), secrets) == []


def test_no_hidden_value_in_the_handout(handout):
    """The handout holds none of the hidden material's specific numbers, the seed of the hidden inputs among them,
    while its public checks and notebooks keep the lecture's numbers."""
    values = secret_values(course())
    assert str(course().seed) in values
    assert "0.4387" not in values  # the quiz's answer: in the lecture, so public
    assert find_leaks(handout, course(), {}, values) == []
    assert "0.4387" in (handout / "tests" / "public" / "test_quiz.py").read_text()


def test_the_leak_check_finds_planted_values(handout, tmp_path):
    """A hidden suite's specific number, or the seed, anywhere in the handout is a leak (here in a comment and in a
    notebook's markdown)."""
    copy = tmp_path / "planted"
    shutil.copytree(handout, copy)
    suite = ROOT / "tests" / "course" / "softmax" / "hidden_softmax.py"
    values = secret_values(course()) | {"0.731059": f"{suite.relative_to(ROOT)}:1"}  # as if a hidden suite held it
    (copy / "tests" / "public" / "test_softmax.py").write_text(
        (copy / "tests" / "public" / "test_softmax.py").read_text() + "# expected 0.731059 on the hidden case\n")
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [f"seed {course().seed}\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (copy / "notes.ipynb").write_text(json.dumps(notebook))
    leaks = {(file, origin) for file, _, origin in find_leaks(copy, course(), {}, values)}
    assert leaks == {("tests/public/test_softmax.py", f"the value 0.731059 of {suite.relative_to(ROOT)}:1"),
                     ("notes.ipynb", f"the value {course().seed} of course.yaml seed")}


def test_the_leak_check_finds_planted_lines(handout, tmp_path):
    copy = tmp_path / "planted"
    shutil.copytree(handout, copy)
    secrets = secret_lines(course())
    hidden = next(line for line, origin in secrets.items() if origin.startswith("tests/course/softmax/hidden_softmax.py"))
    solution = next(line for line, origin in secrets.items() if origin.startswith("solutions/softmax.py"))
    (copy / "exercises" / "softmax.py").write_text((copy / "exercises" / "softmax.py").read_text() + f"\n    {solution}\n")
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [f"  {hidden}\n"]}], "metadata": {},
                "nbformat": 4, "nbformat_minor": 5}
    (copy / "notes.ipynb").write_text(json.dumps(notebook))
    leaks = find_leaks(copy, course(), secrets, {})
    assert {(file, origin.split(":")[0]) for file, _, origin in leaks} == {
        ("exercises/softmax.py", "solutions/softmax.py"), ("notes.ipynb", "tests/course/softmax/hidden_softmax.py")}


def test_release_refuses_a_leaking_handout(tmp_path, monkeypatch):
    import grader.authoring.release as release

    secret = next(iter(secret_lines(course())))
    original = release.handout_files

    def leaky(*args, **kwargs):
        files, notes = original(*args, **kwargs)
        files["README.md"] += f"\n{secret}\n"
        return files, notes

    monkeypatch.setattr(release, "handout_files", leaky)
    with pytest.raises(ReleaseError, match="would hold 1 line"):
        build_handout(tmp_path / "out", grader_repository=REPOSITORY)
    assert not (tmp_path / "out").exists()


def test_public_sources_copy_no_hidden_test():
    """Lines the public sources share with the secret ones are exempt from the leak check (a check like
    `torch.testing.assert_close(out, expected)` may appear in both); no run of three such lines is (a copied test)."""
    secrets = secret_lines(course(), exempt_public=False)
    texts = {f"exercises/{name}": text for name, text in render_exercises().items()}
    texts |= {p.relative_to(ROOT).as_posix(): p.read_text() for m in MODULES
              for p in (course().public_checks(m), course().hints_file(m))}
    for name, text in texts.items():
        run = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            run = [*run, (number, line.strip())] if line.strip() in secrets else []
            assert len(run) < 3, f"{name} lines {run[0][0]}-{number} copy {secrets[run[0][1]]}: {run}"


def test_the_reference_lines_the_public_hints_hold_are_told_to_the_instructor(tmp_path):
    """A line of code of a solution block that the public checks or hints hold too (the causal mask, which a hint
    recomputes) is public by design, not refused as a leak, but named in a note of release: a hint recomputing a
    mistake holds the right computation, for students to read (found by our instructor's walk-through)."""
    files, _ = handout_files(course(), grader_repository=REPOSITORY)
    shared = solutions_in_public(course(), files)
    line = next(number for number, text in enumerate((ROOT / "solutions" / "causal.py").read_text().splitlines(), 1)
                if "dtype=torch.bool, device=device).tril()" in text)
    assert f"solutions/causal.py:{line}" in shared
    built = build_handout(tmp_path / "handout", grader_repository=REPOSITORY)
    assert any(note.startswith(f"the public checks or hints hold {len(shared)} line(s) of the reference solutions "
                               f"({shared[0]}") for note in built.notes), built.notes
    week1 = course_variant(tmp_path / "course", COURSE_FILE.read_text(encoding="utf-8").replace(
        "# assignments:\n#   - {name: week1", "assignments:\n  - {name: week1"))  # scores and softmax
    partial = build_handout(tmp_path / "week1", grader_repository=REPOSITORY, course_file=week1, assignment="week1")
    assert not any("solutions/causal.py" in note for note in partial.notes), partial.notes  # the sixth walk-through


def test_meaningful_lines():
    assert meaningful("    e = torch.exp(x - x.amax(dim, keepdim=True))")
    for line in ("", "    return x", "import torch", "from solutions import softmax as ref", "super().__init__()",
                 "pytestmark = pytest.mark.softmax", "@pytest.mark.weight(2)", "    ])", 'x = """', "torch.manual_seed(12)",
                 '    """A temperature <= 0 raises ValueError."""'):
        assert not meaningful(line), line
    assert len(public_sources(course())) > 100


def test_outdir_must_be_new_or_empty(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x")
    with pytest.raises(ReleaseError, match="not empty"):
        build_handout(tmp_path / "full", grader_repository=REPOSITORY)
    with pytest.raises(ReleaseError, match="course repository"):
        build_handout(ROOT, grader_repository=REPOSITORY)
    with pytest.raises(ReleaseError, match="OWNER/NAME"):
        build_handout(tmp_path / "new", grader_repository="https://example.org/x")
    build_handout(tmp_path / "full", grader_repository=REPOSITORY, force=True)
    assert not (tmp_path / "full" / "keep.txt").exists() and (tmp_path / "full" / "README.md").is_file()


def test_release_refuses_a_workflow_without_the_grader_repository(tmp_path):
    """Without --grader-repository (or with the docs' placeholder) the workflow could never fetch the grader: the
    command refuses with one line naming the option, exit status 2, and writes nothing."""
    for extra in ([], ["--grader-repository", "ORG/attention-grader"]):
        run = subprocess.run([sys.executable, "-m", "grader", "release", str(tmp_path / "out"), *extra],
                             capture_output=True, text=True)
        assert run.returncode == 2 and "--grader-repository" in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    with pytest.raises(ReleaseError, match="--grader-repository"):
        build_handout(tmp_path / "out", grader_repository=None)


def test_release_for_gradescope_alone_needs_no_grader_repository(tmp_path, handout, capsys):
    """`release OUT --gradescope ZIP` without --grader-repository (a course graded on Gradescope alone; its usage
    line shows the option optional) writes the handout without the workflow, its README telling students to upload to
    Gradescope and nothing of pushes, and the autograder zip; it used to refuse for want of the repository."""
    out, archive = tmp_path / "handout", tmp_path / "autograder.zip"
    assert cli.main(["release", str(out), "--gradescope", str(archive)]) == 0
    assert "note: no GitHub Actions workflow in the handout" in capsys.readouterr().out
    assert _files(out) == _files(handout) - {WORKFLOW} and zipfile.is_zipfile(archive)
    readme = (out / "README.md").read_text()
    assert "@@" not in readme and "checks, and upload your work to Gradescope, which grades it." in readme
    submit = readme[readme.index("## Submit"):readme.index("## How your score is computed")]
    assert "Upload your work to the course's assignment on Gradescope" in submit
    assert not re.search(r"push|workflow|Actions", readme), "a Gradescope handout mentions the workflow"


# ----------------------------------------------------------------- notebooks

def _notebook(*cells) -> dict:
    return {"cells": list(cells), "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


def _code(source, **nbgrader):
    metadata = {"nbgrader": {"grade_id": "x", "schema_version": 3, "checksum": "abc", **nbgrader}} if nbgrader else {}
    return {"cell_type": "code", "metadata": metadata, "source": source, "execution_count": 7,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "secret output\n"}]}


def test_release_notebook_strips_solutions_hidden_tests_and_outputs():
    solution = ("import torch\n\n\ndef softmax(x, dim=-1):\n    \"\"\"Doc.\"\"\"\n    ### BEGIN SOLUTION\n"
                "    e = torch.exp(x - x.amax(dim, keepdim=True))\n    return e / e.sum(dim, keepdim=True)\n"
                "    ### END SOLUTION\n")
    magic = "%matplotlib inline\nvalue = 1\n### BEGIN SOLUTION\nvalue = 42\n### END SOLUTION\n"
    tests = ["assert softmax(torch.zeros(2)).sum() == 1\n", "### BEGIN HIDDEN TESTS\n",
             "assert torch.isfinite(softmax(torch.tensor([1e4, 0.0]))).all()\n", "### END HIDDEN TESTS\n"]
    answer = {"cell_type": "markdown", "metadata": {"nbgrader": {"solution": True, "grade_id": "why"}},
              "source": "Because the maximum cancels."}
    released = release_notebook(_notebook(_code(solution, solution=True), _code(magic, solution=True),
                                          _code(tests, grade=True, points=2), _code("whole = 'answer'\n", solution=True),
                                          answer, {"cell_type": "markdown", "metadata": {}, "source": "# Softmax"}),
                                "softmax")
    cells = released["cells"]
    assert cells[0]["source"] == ('import torch\n\n\ndef softmax(x, dim=-1):\n    """Doc."""\n'
                                  '    raise NotImplementedError("softmax.softmax: fill in this stub (see its docstring)")\n')
    assert cells[1]["source"] == '%matplotlib inline\nvalue = 1\nraise NotImplementedError("softmax: fill in this stub")\n'
    assert cells[2]["source"] == "assert softmax(torch.zeros(2)).sum() == 1\n"
    assert cells[3]["source"] == 'raise NotImplementedError("softmax: fill in this stub")\n'
    assert cells[4]["source"] == "YOUR ANSWER HERE" and cells[5]["source"] == "# Softmax"
    for cell in cells[:4]:
        assert cell["outputs"] == [] and cell["execution_count"] is None and "checksum" not in cell["metadata"]["nbgrader"]
    assert cells[2]["metadata"]["nbgrader"]["points"] == 2 and released["metadata"] == {"kernelspec": {"name": "python3"}}


@pytest.mark.skipif(not notebook_sources(course()), reason="no nbgrader/source notebooks yet")
def test_released_notebooks(handout):
    """Valid notebooks, no markers or outputs left, and the grader's notebook intake finds the (stub) exercise code."""
    import nbformat

    from grader.intake.notebooks import read_notebook

    stubs = render_exercises()
    for source in notebook_sources(course()):
        path = handout / "notebooks" / source.parent.name / source.name
        nbformat.validate(nbformat.read(path, as_version=4))
        released, original = json.loads(path.read_text()), json.loads(source.read_text())
        assert len(released["cells"]) == len(original["cells"])
        for cell in released["cells"]:
            text = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            assert "### BEGIN" not in text and "### END" not in text, source.name
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None
        problems, notes = {}, []
        code = read_notebook(path, problems, notes)
        assert not problems and code, (source.name, problems)
        for module, text in code.items():  # the solution cell became the same stubs as exercises/
            assert text.decode() in stubs[f"{module}.py"], (source.name, module)


def test_release_without_notebooks_says_so(tmp_path):
    handout = build_handout(tmp_path / "out", grader_repository=REPOSITORY, notebooks=tmp_path / "none")
    assert not any(f.startswith("notebooks/") for f in handout.files)
    assert any("no notebooks released" in note for note in handout.notes)
    assert "## Notebooks" not in (tmp_path / "out" / "README.md").read_text()


# ----------------------------------------------------------------- the workflow

@pytest.fixture(scope="module")
def workflow(handout) -> dict:
    return yaml.safe_load((handout / WORKFLOW).read_text())


def _steps(workflow) -> dict[str, dict]:
    return {step["name"]: step for step in workflow["jobs"]["autograding"]["steps"]}


def test_workflow_structure(handout, workflow):
    """The workflow's shape: what each step is given, and the order that keeps the submission out of everything but
    the sandbox (it is run as GitHub runs it by tests/grading/test_workflow.py)."""
    text = (handout / WORKFLOW).read_text()
    assert "@@" not in text
    assert workflow["name"] == "Autograding Tests" and set(workflow["on"]) == {"push", "workflow_dispatch"}
    assert workflow["permissions"] == {"checks": "write", "actions": "read", "contents": "read"}
    assert workflow["env"]["GRADER_REPOSITORY"] == "course-org/attention-grader" and workflow["env"]["GRADER_REF"] == "v1"
    assert workflow["env"]["GRADER_POLICY"] == "--never-fail" and workflow["env"]["PIP_CONFIG_FILE"] == "/dev/null"
    assert workflow["defaults"] == {"run": {"shell": "bash"}}
    job = workflow["jobs"]["autograding"]
    assert job["name"] == "Autograding Tests", "the Classroom reporter looks for the check run of this name"
    assert job["runs-on"] == "ubuntu-latest" and job["timeout-minutes"] <= 60
    steps = job["steps"]
    ids = {step["id"] for step in steps if "id" in step}
    for step in steps:
        assert set(step) <= {"name", "id", "if", "uses", "with", "env", "run", "continue-on-error", "working-directory"}, step
        assert ("uses" in step) != ("run" in step), step["name"]
        if "run" in step:
            assert "${{" not in step["run"], f"{step['name']}: pass expressions through env, not into the script"
        for reference in re.findall(r"steps\.([\w-]+)\.outputs", json.dumps(step)):
            assert reference in ids, reference
    names = [step["name"] for step in steps]
    assert names == ["Set up Python", "Install PyTorch (CPU build) and pytest", "Fetch the grader", "Install the grader",
                     "Check out the submission", "Allow the grader's sandbox", "Grade",
                     "Report the score to GitHub Classroom", "Public checks only (no grader secret here)"]
    uses = [step["uses"] for step in steps if "uses" in step]
    assert uses == ["actions/setup-python@v5", "actions/checkout@v4", "classroom-resources/autograding-grading-reporter@v1"]
    by_name = _steps(workflow)
    assert by_name["Set up Python"]["with"] == {"python-version": "3.11"}, "no cache: any job of the repository writes it"
    assert by_name["Check out the submission"]["with"] == {"path": "submission", "persist-credentials": False}
    before = steps[:names.index("Check out the submission")]
    for step in before:  # every Python started before the checkout is isolated, in the runner's temporary folder
        if "run" in step:
            assert step["working-directory"] == "${{ runner.temp }}", step["name"]
            calls = re.findall(r"python\S*\"? (-\w+)", step["run"])
            assert all(flag == "-I" for flag in calls), (step["name"], calls)
    fetch = by_name["Fetch the grader"]
    assert fetch["env"] == {"GRADER_TOKEN": "${{ secrets.GRADER_TOKEN }}"} and text.count("secrets.") == 1
    assert "@github.com" not in fetch["run"] and "http.extraheader" in fetch["run"]
    assert "|| true" not in by_name["Allow the grader's sandbox"]["run"]
    grade = by_name["Grade"]
    assert grade["id"] == "autograder" and grade["working-directory"] == "${{ runner.temp }}"
    assert '-I -m grader ci "${GITHUB_WORKSPACE}/submission"' in grade["run"] and "${GRADER_POLICY}" in grade["run"]
    reporter = by_name["Report the score to GitHub Classroom"]
    assert reporter["with"] == {"runners": "autograder"} and reporter["continue-on-error"] is True
    assert reporter["env"]["AUTOGRADER_RESULTS"] == "${{ steps.autograder.outputs.result }}"
    public = by_name["Public checks only (no grader secret here)"]
    assert public["if"] == "steps.grader.outputs.available == 'false'" and public["working-directory"] == "submission"


def test_workflow_follows_the_github_workflow_schema(workflow):
    """SchemaStore's schema of workflow files, as vendored by check-jsonschema (where installed)."""
    try:
        import check_jsonschema
    except ImportError:
        pytest.skip("check-jsonschema is not installed (it vendors SchemaStore's github-workflows schema)")
    schema = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "github-workflows.json"
    jsonschema.validate(workflow, json.loads(schema.read_text()))


def test_workflow_lints(handout, workflow):
    """actionlint where installed; otherwise shellcheck on every run: script where shellcheck is installed."""
    if shutil.which("actionlint"):
        lint = subprocess.run(["actionlint", str(handout / WORKFLOW)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    if not shutil.which("shellcheck"):
        pytest.skip("neither actionlint nor shellcheck is installed")
    for step in workflow["jobs"]["autograding"]["steps"]:
        if "run" in step:
            check = subprocess.run(["shellcheck", "--shell=bash", "-"], input=step["run"], capture_output=True, text=True)
            assert check.returncode == 0, f"{step['name']}:\n{check.stdout}"


# ----------------------------------------------------------------- Gradescope

def test_gradescope_zip(tmp_path):
    path = gradescope_zip(tmp_path / "autograder.zip")
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        for script in ("setup.sh", "run_autograder"):
            assert archive.getinfo(script).external_attr >> 16 & 0o111, f"{script} is executable"
            text = archive.read(script).decode()
            assert text.startswith("#!/usr/bin/env bash") and "@@" not in text
        assert f"torch=={pinned('torch')}" in archive.read("setup.sh").decode()
        archive.extractall(tmp_path / "source")
    for required in ("course.yaml", "pyproject.toml", "README.md", "grader/cli.py", "grader/authoring/templates/handout/README.md",
                     "grader/suites/pytest.ini", "grader/suites/public/diagnosis.py", "tests/course/hints.py",
                     "tests/course/hidden_contract.py", *(f"solutions/{m}.py" for m in MODULES),
                     *(f"tests/course/{m}/{part}_{m}.py" for m in MODULES for part in ("hidden", "hints"))):
        assert required in names, required
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
    for script in ("setup.sh", "run_autograder"):
        assert subprocess.run(["bash", "-n", str(tmp_path / "source" / script)]).returncode == 0
        if shutil.which("shellcheck"):
            check = subprocess.run(["shellcheck", str(tmp_path / "source" / script)], capture_output=True, text=True)
            assert check.returncode == 0, check.stdout


def run_autograder(tmp_path, grader_shim: str, launch=list, files=()) -> tuple[subprocess.CompletedProcess, Path]:
    """Gradescope's layout in a folder (AUTOGRADER) with a submission of ``files`` (none: empty), run with ``grader``
    as the shell script ``grader_shim`` (and the command line given to ``launch``): the run and the autograder's
    root."""
    path = gradescope_zip(tmp_path / "autograder.zip")
    root = tmp_path / "autograder"
    with zipfile.ZipFile(path) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    for file in files:
        shutil.copy(file, root / "submission")
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "grader").write_text(grader_shim)
    (shims / "grader").chmod(0o755)
    env = {**os.environ, "AUTOGRADER": str(root), "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(launch(["bash", str(root / "source" / "run_autograder")]), env=env, capture_output=True,
                         text=True, timeout=300)
    return run, root


def test_run_autograder_reports_an_ungradable_submission(tmp_path):
    """Gradescope's layout in a folder (AUTOGRADER): an empty submission gives results.json with 0 points and why."""
    run, root = run_autograder(tmp_path, f'#!/bin/sh\nexec "{sys.executable}" -m grader "$@"\n')
    assert run.returncode == 0, run.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == 0 and results["tests"] == [] and "holds none of the exercise files" in results["output"]
    assert "04_qkv.ipynb" in results["output"] and results["output"].endswith("hand in your exercise files or your "
                                                                             "notebooks"), results["output"]


def test_run_autograder_grades_a_notebook_uploaded_alone(tmp_path):
    """A student uploads only their filled 04_qkv notebook to the course's autograder: its exercise is graded (it
    scored 0, "submission holds none of the exercise files", when only the handout's notebooks/ path was searched)."""
    notebook = course().nbgrader_dir / "source" / "04_qkv" / "04_qkv.ipynb"
    run, root = run_autograder(tmp_path, f'#!/bin/sh\nexec "{sys.executable}" -m grader "$@"\n', files=[notebook])
    assert run.returncode == 0, run.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    qkv = course().exercise("qkv").points
    assert results["score"] == results["exercises"]["qkv"]["score"] == qkv, results["output"][:2000]
    assert "qkv: graded the solution cell of 04_qkv.ipynb" in results["output"]


def test_run_autograder_grades_with_the_zips_course(tmp_path):
    """run_autograder grades with the course.yaml of its zip, not with the course of whichever grader is installed:
    the documented local trial graded another course (walk-through 8: 80/100 on the grader's own exercises)."""
    calls = tmp_path / "calls"
    run, root = run_autograder(tmp_path, f'#!/bin/sh\nprintf "%s\\n" "$@" > "{calls}"\nexit 2\n')
    assert run.returncode == 0, run.stderr
    arguments = calls.read_text().splitlines()
    assert arguments[arguments.index("--course") + 1] == str(root / "source" / "course.yaml")


def test_the_workflow_grades_with_the_released_course(tmp_path):
    """The handout's workflow passes the released course's place in the grader's repository; a course outside that
    repository is said in a note, since the workflow then grades with the repository's own course.yaml
    (walk-through 8: every push was graded on another course, without a word)."""
    built = build_handout(tmp_path / "handout", grader_repository=REPOSITORY)
    assert '--course "${RUNNER_TEMP}/grader/course.yaml"' in (built.root / WORKFLOW).read_text(encoding="utf-8")
    assert not any("lies outside the grader's repository" in note for note in built.notes)
    elsewhere = course_variant(tmp_path / "course", COURSE_FILE.read_text(encoding="utf-8"))
    outside = build_handout(tmp_path / "outside", course_file=elsewhere, grader_repository=REPOSITORY)
    assert any(f"({elsewhere}) lies outside the grader's repository" in note for note in outside.notes), outside.notes
    inside = load_course()
    inside._file = ROOT / "courses" / "spring" / "course.yaml"
    assert workflow_course_path(inside) == ("courses/spring/course.yaml", False)
    inside._file = ROOT / "courses" / "spring $(term)" / "course.yaml"  # written into the workflow's shell script
    with pytest.raises(ReleaseError, match="holds characters a workflow cannot quote"):
        workflow_course_path(inside)


def test_run_autograder_never_records_a_grader_fault_as_a_score(tmp_path):
    """A grader fault (exit status 3) is tried once more and then leaves no results.json: no score is recorded."""
    calls = tmp_path / "calls"
    shim = (f'#!/bin/sh\necho "grader: grader fault while grading: the worker could not start" >&2\n'
            f'echo call >> "{calls}"\nexit {GRADER_FAULT_STATUS}\n')
    run, root = run_autograder(tmp_path, shim)
    assert run.returncode == 1 and "no score is recorded" in run.stderr
    assert calls.read_text().count("call") == 2
    assert not (root / "results" / "results.json").exists()


def test_run_autograder_grades_nothing_without_a_sandbox(tmp_path):
    """Where the container refuses namespaces, the real grader refuses to run student code (exit status 3, twice):
    no results.json, no score, and the reason in the autograder's output."""
    run, root = run_autograder(tmp_path, f'#!/bin/sh\nexec "{sys.executable}" -m grader "$@"\n', launch=refused,
                               files=[ROOT / "solutions" / "scores.py"])
    assert run.returncode == 1 and "the grader failed twice (exit status 3); no score is recorded" in run.stderr
    assert " ".join(run.stderr.split()).count("no sandbox can be built here") == 2, run.stderr
    assert not (root / "results" / "results.json").exists()


def test_grade_exits_3_on_a_grader_fault(tmp_path, monkeypatch, capsys):
    """`grader grade` tells a grader fault (3: grade again) from a submission that cannot be graded (2)."""
    import grader.grade

    def fault(*args, **kwargs):
        raise GraderFault("the worker could not start")

    monkeypatch.setattr(grader.grade, "grade_submission", fault)
    assert cli.main(["grade", str(ROOT / "solutions"), "--out", str(tmp_path / "r.json")]) == GRADER_FAULT_STATUS
    assert "grader fault" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
