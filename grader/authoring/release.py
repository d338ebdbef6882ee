"""`grader release OUTDIR`: the handout students clone, and the Gradescope autograder zip.

The handout holds only what students may see:

* ``exercises/``: the stubs, generated from ``solutions/`` (``grader.authoring.stubs.render_exercises``);
* ``tests/public/``: the public checks (each exercise's ``tests/course/<module>/test_<module>.py``) with its known
  mistakes (``hints_<module>.py``), the mistakes the exercises share (``tests/course/hints.py``), the machinery they
  run on (``grader/suites/public``: their conftest, diagnosis, comparison, the import rule) and the course's
  exercises in order (``exercises.json``); they test ``exercises`` by default;
* ``notebooks/``: the released course notebooks, when ``nbgrader/source/*/*.ipynb`` exist
  (solution blocks become stubs, hidden tests and outputs are removed);
* ``README.md`` (set-up, public checks, submitting, how points are computed), ``requirements.txt``
  and a ``pyproject.toml`` that points pytest at the public checks;
* ``.github/workflows/classroom.yml``: the workflow that grades every push with `grader ci`.

After writing it, ``build_handout`` scans every line of the handout for the lines of the hidden suites and of the
solution blocks, and for their specific numbers and the hidden inputs' seed (``find_leaks``), and refuses a handout
that holds any (before, it checks the course's suites as grading does: ``check_suites``); the lines of the solution
blocks that the public checks and hints hold by design are named in a note (``solutions_in_public``). The Gradescope
autograder is ``grader.authoring.gradescope``'s.

Both work for the whole course or for one assignment (``Course.assignment``): the handout of an assignment holds
only its exercises' stubs, public checks and notebooks, and its Gradescope autograder grades it out of its points.
All files are the course's, found relative to its course.yaml.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from grader import ROOT
from grader.authoring.readme import banned_list, due_paragraph, exercises_table, first_stub, handout_title, points_list
from grader.authoring.stubs import (
    BEGIN,
    END,
    StubError,
    render_exercises,
    solution_blocks,
    strip_solutions,
)
from grader.course import COURSE_FILE, Course, load_course
from grader.suites import PUBLIC

TEMPLATES = Path(__file__).resolve().parent / "templates"
WORKFLOW = ".github/workflows/classroom.yml"
# The docs' example of --grader-repository: a handout whose workflow clones it could never fetch the grader.
PLACEHOLDER_REPOSITORY = "ORG/attention-grader"
# How students hand in, by whether the handout has a workflow (else they upload to Gradescope): the README's first lines.
HAND_IN = {True: "push. Every push is graded automatically", False: "upload your work to Gradescope, which grades it"}
PYTHON = "3.11"

# tests/public/<name> <- grader/suites/public/<file>
PUBLIC_MACHINERY = {"conftest.py": "harness.py", "checking.py": "checking.py", "diagnosis.py": "diagnosis.py",
                    "import_rule.py": "import_rule.py", "stub_message.py": "stub_message.py",
                    "wording.py": "wording.py"}

HIDDEN_TESTS = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[^\n]*\n.*?^[ \t]*### END HIDDEN TESTS[^\n]*(\n|\Z)", re.S | re.M)
# What is graded, in the words of the README (the notebooks' "how to work" text says the same, tests/course/notebook.md).
GRADED_CODE = ("**Notebook or file: work in one of them.** For each exercise the grader takes "
               "`exercises/<module>.py` once you have filled in any of its stubs, and the solution cell of the "
               "exercise's notebook while that file is untouched. The same code gets the same grade either way; when a notebook's cell is graded, "
               "the grade's notes say so.")
CODE_STUB = 'raise NotImplementedError("{target}: fill in this stub")'
ANSWER_STUB = "YOUR ANSWER HERE"

# A line shorter than this, or one of these shapes, tells nothing (imports, markers, brackets, seeds, test names).
MIN_SECRET_CHARS = 16
MIN_SHOWN_CHARS = 30  # a shorter line of code gives no computation away (B, T, _ = x.shape)
MIN_SECRET_DIGITS = 4  # a number with fewer significant digits (1.0, 100, 1e-4, 0.25) tells nothing
NUMBER = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)(?![\w.])")
TRIVIAL = re.compile(r"(import |from \S+ import |@pytest\.mark\.\w+(\(\s*[\d.]+\s*\))?$|pytestmark = pytest\.mark\.\w+$)"
                     r"|[\W_]*$|super\(\)\.__init__\(\)$|torch\.manual_seed\(\d+\)$"
                     r'|"""[^"]*"""$')  # a one-line docstring: a hidden test's is its name in the feedback


class ReleaseError(ValueError):
    """The handout cannot be built (one line, for the instructor)."""


@dataclass
class Handout:
    root: Path
    files: list[str]  # paths relative to root, sorted
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- templates

def render(template: str, values: dict[str, str]) -> str:
    """A template from grader/authoring/templates with each ``@@KEY@@`` replaced; every placeholder must be given."""
    text = (TEMPLATES / template).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    left = sorted(set(re.findall(r"@@(\w+)@@", text)))
    if left:
        raise ReleaseError(f"template {template} has placeholders without values: {', '.join(left)}")
    return text


def pinned(name: str) -> str:
    """The version the project pins for a dependency, of the core install or of an extra (pyproject.toml:
    ``name==X``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {}).values()
    for requirement in [*project.get("dependencies", []), *(r for extra in extras for r in extra)]:
        match = re.fullmatch(rf"\s*{re.escape(name)}\s*==\s*([\w.+-]+)\s*", requirement, re.I)
        if match:
            return match[1]
    raise ReleaseError(f"pyproject.toml pins no version of {name}")


def assignment_option(course: Course) -> str:
    """The grader's command-line option that grades what ``course`` holds: ``--assignment NAME``, or nothing for the
    whole course (the templates append it to ``grader grade`` and ``grader ci``)."""
    return f" --assignment {course.assignment_name}" if course.assignment_name else ""


# ----------------------------------------------------------------- notebooks

def notebook_sources(course: Course, source: Path | None = None) -> dict[Path, str]:
    """The nbgrader source notebooks (``nbgrader/source/<assignment>/<notebook>.ipynb``) of the course's exercises,
    if any, each with its exercise (the one whose notebook name is the assignment's folder)."""
    source = source or course.nbgrader_dir / "source"
    modules = {course.notebook_name(m): m for m in course.modules}
    return {path: modules[path.parent.name] for path in sorted(source.glob("*/*.ipynb")) if path.parent.name in modules}


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _strip_blocks(source: str, replacement: str) -> str:
    """Each solution block replaced by ``replacement`` at the block's indentation (no parsing needed)."""
    lines = source.splitlines(keepends=True)
    for begin, end in reversed(solution_blocks(source)):
        indent = re.match(r"\s*", lines[begin]).group()
        lines[begin:end + 1] = [f"{indent}{replacement}\n"]
    return "".join(lines)


def release_cell(cell: dict, module: str) -> dict:
    """A cell as students get it: no hidden tests, solution blocks as stubs, no outputs."""
    cell = json.loads(json.dumps(cell))
    source = _source(cell)
    if HIDDEN_TESTS.search(source):
        source = HIDDEN_TESTS.sub("", source).rstrip() + "\n"
    grading = cell.get("metadata", {}).get("nbgrader", {})
    has_blocks = BEGIN in source
    if cell.get("cell_type") == "code":
        if has_blocks:
            try:
                source = strip_solutions(source, module)
            except (SyntaxError, StubError, ValueError):  # magics or loose markers: no names to give, same stubs
                source = _strip_blocks(source, CODE_STUB.format(target=module))
        elif grading.get("solution"):
            source = CODE_STUB.format(target=module) + "\n"
        cell["outputs"] = []
        cell["execution_count"] = None
    elif has_blocks:
        source = _strip_blocks(source, ANSWER_STUB)
    elif grading.get("solution"):
        source = ANSWER_STUB
    if BEGIN in source or END in source:
        raise ReleaseError(f"a cell of the {module} notebook keeps a solution marker after release")
    cell["source"] = source
    if "checksum" in grading:  # nbgrader's checksum was of the source version
        del cell["metadata"]["nbgrader"]["checksum"]
    return cell


def release_notebook(notebook: dict, module: str) -> dict:
    """The student version of an nbgrader source notebook (the JSON of an .ipynb)."""
    released = dict(notebook)
    released["cells"] = [release_cell(cell, module) for cell in notebook.get("cells", [])]
    return released


# ----------------------------------------------------------------- leaks

def meaningful(line: str) -> bool:
    """A line long and specific enough that finding it in the handout would give something away."""
    line = line.strip()
    return len(line) >= MIN_SECRET_CHARS and not TRIVIAL.match(line)


def _text_lines(path: Path) -> list[str]:
    """The lines a file shows: a notebook's cell sources, a text file's lines (binary files have none)."""
    if path.suffix == ".ipynb":
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (ValueError, OSError):
            return path.read_text(encoding="utf-8", errors="replace").splitlines()
        return [line for cell in cells for line in _source(cell).splitlines()]
    data = path.read_bytes()
    if b"\0" in data:
        return []
    return data.decode("utf-8", errors="replace").splitlines()


def public_sources(course: Course) -> set[str]:
    """Stripped lines of what is public by design: the generated stubs and the public checks with their hints."""
    lines = {line.strip() for text in render_exercises(course).values() for line in text.splitlines()}
    for text in public_checks(course.whole).values():
        lines |= {line.strip() for line in text.splitlines()}
    return lines


def solutions_in_public(course: Course, files: Mapping[str, str]) -> list[str]:
    """Where a line of code of a solution block of the handout's exercises (comments aside, at least
    MIN_SHOWN_CHARS long) is in its stubs or public checks too (``files``: the handout's, path -> text; a hint
    recomputing a mistake beside the right computation, say): public by design, so no leak, but there for students
    to read."""
    def code(line: str) -> str:
        return line.split("  #")[0].strip()

    public = {code(line) for name, text in files.items() if name.startswith(("exercises/", "tests/public/"))
              for line in text.splitlines()}
    return [origin for origin, line in solution_lines(course, course.modules)
            if len(code(line)) >= MIN_SHOWN_CHARS and code(line) in public]


def solution_lines(course: Course, modules: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """(where, line) of every line inside a solution block of solutions/ ("solutions/<module>.py:12"): of every file
    there (None), or of ``modules``' own."""
    paths = sorted(course.solutions_dir.glob("*.py")) if modules is None else [
        path for path in (course.solutions_dir / f"{module}.py" for module in modules) if path.is_file()]
    found = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        found += [(f"{path.relative_to(course.root)}:{number + 1}", lines[number])
                  for begin, end in solution_blocks(source) for number in range(begin + 1, end)]
    return found


def hidden_files(course: Course) -> list[Path]:
    """The files of the course's hidden suites: each exercise's ``hidden_<module>.py`` and the shared contract's."""
    return [*(course.hidden_suite(module) for module in course.modules), course.contract_suite]


def secret_lines(course: Course, *, exempt_public: bool = True) -> dict[str, str]:
    """Stripped meaningful line -> where it comes from ("tests/course/<module>/hidden_<module>.py:12"): every line of the hidden
    suites, every line inside a solution block of solutions/, and every line of the source notebooks' solution
    blocks and hidden tests. ``exempt_public`` leaves out lines the public sources hold too (they are public by
    design). Always of the whole course, whatever assignment ``course`` is restricted to."""
    whole = course.whole
    root = course.root
    secrets: dict[str, str] = {}
    for path in hidden_files(whole):
        for number, line in enumerate(_text_lines(path), 1):
            if meaningful(line):
                secrets.setdefault(line.strip(), f"{path.relative_to(root)}:{number}")
    for origin, line in solution_lines(course):
        if meaningful(line):
            secrets.setdefault(line.strip(), origin)
    sources = notebook_sources(whole)
    notebooks = {path: json.loads(path.read_text(encoding="utf-8")) for path in sources}
    # A notebook's hidden test may repeat a line some notebook shows anyway (a visible check, a helper): it is public.
    visible = {line.strip() for path, notebook in notebooks.items()
               for cell in release_notebook(notebook, sources[path])["cells"]
               for line in _source(cell).splitlines()}
    for path, notebook in notebooks.items():  # the source notebooks' solution blocks and hidden tests
        for number, cell in enumerate(notebook.get("cells", []), 1):
            source = _source(cell)
            blocks = [match[0] for match in HIDDEN_TESTS.finditer(source)]
            lines = source.splitlines()
            try:
                blocks += ["\n".join(lines[begin + 1:end]) for begin, end in solution_blocks(source)]
            except StubError:
                blocks.append(source)
            for line in "\n".join(blocks).splitlines():
                if meaningful(line) and line.strip() not in visible:
                    secrets.setdefault(line.strip(), f"{path.relative_to(root)} cell {number}")
    if exempt_public:
        for line in public_sources(whole) & secrets.keys():
            del secrets[line]
    return secrets


def numbers(text: str) -> set[str]:
    """The specific numbers of a text: literals with at least MIN_SECRET_DIGITS significant digits (0.4387, 20261121;
    not 1.0, 100 or 1e-4), as written."""
    return {n for n in NUMBER.findall(text)
            if len(n.lower().split("e")[0].replace(".", "").strip("0")) >= MIN_SECRET_DIGITS}


def secret_values(course: Course) -> dict[str, str]:
    """Specific number -> where it comes from: the hidden suites' literals (their inputs, magnitudes and cases),
    the solution blocks', the source notebooks' hidden tests', and the seed of the hidden inputs; less those the
    public sources hold (the lecture's numbers)."""
    whole = course.whole
    values = {str(whole.seed): f"{COURSE_FILE.name} seed"}
    suites = [path.relative_to(whole.root).as_posix() for path in hidden_files(whole)]
    for path in hidden_files(whole):
        for number, line in enumerate(_text_lines(path), 1):
            for value in numbers(line):
                values.setdefault(value, f"{path.relative_to(whole.root)}:{number}")
    for line, origin in secret_lines(whole, exempt_public=False).items():
        if origin.split(":")[0] not in suites:
            for value in numbers(line):
                values.setdefault(value, origin)
    public = {value for line in public_sources(whole) for value in numbers(line)}
    public |= {value for path in notebook_sources(whole) for cell in release_notebook(
        json.loads(path.read_text(encoding="utf-8")), notebook_sources(whole)[path])["cells"]
        for value in numbers(_source(cell))}
    return {value: origin for value, origin in values.items() if value not in public}


def find_leaks(folder: str | os.PathLike, course: Course, secrets: dict[str, str] | None = None,
               values: dict[str, str] | None = None) -> list[tuple[str, int, str]]:
    """(file, line number, origin) of every line of ``folder`` that is a line of the course's hidden suites or
    solutions, or holds one of their specific numbers (``secret_values``)."""
    folder = Path(folder)
    secrets = secret_lines(course) if secrets is None else secrets
    values = secret_values(course) if values is None else values
    leaks = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.relative_to(folder).parts):
        for number, line in enumerate(_text_lines(path), 1):
            origin = secrets.get(line.strip()) or next((f"the value {v} of {values[v]}" for v in sorted(numbers(line))
                                                        if v in values), None)
            if origin:
                leaks.append((path.relative_to(folder).as_posix(), number, origin))
    return leaks


# ----------------------------------------------------------------- the handout

def public_checks(course: Course) -> dict[str, str]:
    """tests/public/ of the handout of ``course`` (an assignment: its exercises' checks only): path -> text."""
    files = {f"tests/public/{name}": (PUBLIC / source).read_text(encoding="utf-8")
             for name, source in PUBLIC_MACHINERY.items()}
    files["tests/public/hints.py"] = (course.suites_dir / "hints.py").read_text(encoding="utf-8")
    for module in course.modules:
        for path in (course.public_checks(module), course.hints_file(module)):
            files[f"tests/public/{path.name}"] = path.read_text(encoding="utf-8")
    titles = {exercise.module: exercise.title for exercise in course.whole.exercises}  # the import rule's order
    files["tests/public/exercises.json"] = json.dumps(titles, indent=1) + "\n"
    return files


def handout_files(course: Course, *, grader_repository: str | None, grader_ref: str = "main",
                  notebooks: Path | None = None, gradescope: bool = False) -> tuple[dict[str, str], list[str]]:
    """Relative path -> text of every file of the handout of ``course`` (the whole course or an assignment: its
    exercises only), and notes for the instructor. ``grader_repository``: where its workflow clones the grader from
    (None: a course graded on Gradescope, whose handout has no workflow and says to upload there). ``notebooks``: the
    nbgrader source folder (default: the course's ``nbgrader/source``); ``gradescope``: a Gradescope autograder is
    made beside it."""
    torch, pytest_version, matplotlib = pinned("torch"), pinned("pytest"), pinned("matplotlib")
    exercises = render_exercises(course)
    files: dict[str, str] = {f"exercises/{name}": text for name, text in exercises.items()}
    files.update(public_checks(course))
    notes = []
    released = []
    notebooks = notebooks or course.nbgrader_dir / "source"
    for path, module in notebook_sources(course, notebooks).items():
        relative = f"notebooks/{path.parent.name}/{path.name}"
        files[relative] = json.dumps(release_notebook(json.loads(path.read_text(encoding="utf-8")), module),
                                     indent=1, ensure_ascii=False) + "\n"
        released.append(relative)
    if released:
        section = ("\n## Notebooks\n\nThe notebooks in `notebooks/` walk through the same exercises with the lecture's "
                   "examples, the public checks and a picture of the attention weights; open them with Jupyter "
                   "(`jupyter lab`, installed by `requirements.txt`). Each has a cell that runs the exercise's public "
                   "checks on the notebook's own code, with the same report as `python -m pytest tests/public`.\n\n"
                   + GRADED_CODE + "\n")
    else:
        section = ""
        shown = notebooks.relative_to(course.root) if notebooks.is_relative_to(course.root) else notebooks
        notes.append(f"no notebooks released: {shown}/*/*.ipynb does not exist yet (rerun `grader release` once they do)")
    values = {"TITLE": handout_title(course), "DUE": due_paragraph(course),
              "WORTH": f"Assignment {course.assignment_name} is" if course.assignment_name else "The course is",
              "PYTHON": PYTHON, "TORCH": torch, "PYTEST": pytest_version, "MATPLOTLIB": matplotlib,
              "EXERCISES": exercises_table(course), "POINTS": points_list(course),
              "TOTAL": str(course.total_points), "NOTEBOOKS": section, "FIRST": course.modules[0],
              "MODULES": ", ".join(course.modules), "FIRST_STUB": first_stub(exercises), "BANNED": banned_list(course),
              "ASSIGNMENT": assignment_option(course),
              "GRADER_REPOSITORY": grader_repository or "", "GRADER_REF": grader_ref,
              "HAND_IN": HAND_IN[bool(grader_repository)]}
    values["SUBMIT"] = render(f"handout/submit_{'classroom' if grader_repository else 'gradescope'}.md", values)
    files["README.md"] = render("handout/README.md", values)
    files["requirements.txt"] = render("handout/requirements.txt", values)
    files["pyproject.toml"] = render("handout/pyproject.toml", values)
    files[".gitignore"] = render("handout/gitignore", values)
    if grader_repository:
        values["COURSE_PATH"], outside = workflow_course_path(course)
        files[WORKFLOW] = render("handout/classroom.yml", values)
        if outside:
            notes.append(f"the workflow grades every push with {grader_repository}'s course.yaml, at its root: this "
                         f"course ({course.file}) lies outside the grader's repository ({ROOT}), so commit it there "
                         f"(course.yaml, solutions/, tests/course/) before students push, or students are graded on "
                         f"another course")
    else:
        notes.append("no GitHub Actions workflow in the handout: its README tells students to upload to Gradescope "
                     "(give --grader-repository for a workflow that grades every push)")
    if values["DUE"] and (gradescope or not grader_repository):
        notes.append("the README states course.yaml's late policy, which the Gradescope autograder does not apply "
                     "(it grades what it is given): set the same policy in the Gradescope assignment's settings, "
                     "or grade the class with `grader batch --submitted` from Gradescope's export of the times")
    return files, notes


def workflow_course_path(course: Course) -> tuple[str, bool]:
    """The path of ``course``'s course.yaml in the grader's repository, which the handout's workflow clones, and
    whether the course lies outside it (then the workflow reads the repository's own course.yaml: a note says so)."""
    path = course.file.resolve()
    if not path.is_relative_to(ROOT.resolve()):
        return "course.yaml", True
    relative = path.relative_to(ROOT.resolve()).as_posix()
    if not re.fullmatch(r"[\w./-]+", relative):  # written into the workflow's shell script
        raise ReleaseError(f"the course's path in the grader's repository, {relative!r}, holds characters a workflow "
                           f"cannot quote: name its folders with letters, digits, '.', '_' and '-'")
    return relative, False


def build_handout(outdir: str | os.PathLike, *, grader_repository: str | None,
                  course_file: str | os.PathLike = COURSE_FILE, grader_ref: str = "main", force: bool = False,
                  notebooks: Path | None = None, assignment: str | None = None, gradescope: bool = False) -> Handout:
    """Write the handout of the course (or of one of its assignments) into ``outdir`` (which must be empty or absent
    unless ``force``) and check it for leaks. ``grader_repository``: the OWNER/NAME its workflow clones the grader
    from; refused when missing or the docs' placeholder (every student's run would fail to fetch the grader), unless
    the course is graded on Gradescope (``gradescope``): its handout then has no workflow."""
    outdir = Path(outdir)
    if grader_repository is not None or not gradescope:  # a workflow, which clones the grader from it
        if not grader_repository or grader_repository.lower() == PLACEHOLDER_REPOSITORY.lower():
            raise ReleaseError("give --grader-repository OWNER/NAME: the private repository the handout's workflow "
                               "clones the grader from (without it every student's run fails to fetch the grader), or "
                               "only --gradescope ZIP for a course graded on Gradescope (a handout without the workflow)")
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", grader_repository):
            raise ReleaseError(f"--grader-repository must be OWNER/NAME, not {grader_repository!r}")
    course = load_course(course_file)
    if assignment:
        course = course.assignment(assignment)
    for repository in {ROOT, course.root}:
        if outdir.resolve() == repository or repository.is_relative_to(outdir.resolve()):
            raise ReleaseError(f"{outdir} is the course repository itself (or holds it): choose a new folder")
    if notebooks is None and course.nbgrader_dir.is_dir():  # the course's own: what course.yaml and its lessons make
        from grader.authoring.notebooks import stale_problem

        problem = stale_problem(course.whole)
        if problem:
            raise ReleaseError(problem)
    from grader.suites.plugin import check_suites  # imports torch: after the cheap checks
    check_suites(course)  # as grade and batch do: a banned entry that bans nothing would be in the README
    if outdir.exists() and any(outdir.iterdir()):
        if not force:
            raise ReleaseError(f"{outdir} is not empty (use --force to replace its contents)")
        shutil.rmtree(outdir)
    files, notes = handout_files(course, grader_repository=grader_repository, grader_ref=grader_ref, notebooks=notebooks,
                                 gradescope=gradescope)
    for relative, text in files.items():
        target = outdir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    leaks = find_leaks(outdir, course)
    if leaks:
        shutil.rmtree(outdir)
        shown = "; ".join(f"{file}:{line} is {origin}" for file, line, origin in leaks[:5])
        raise ReleaseError(f"the handout would hold {len(leaks)} line(s) of the hidden suites or solutions ({shown}); "
                           "nothing was written")
    shared = solutions_in_public(course, files)
    if shared:
        notes.append(f"the public checks or hints hold {len(shared)} line(s) of the reference solutions "
                     f"({', '.join(shared[:5])}), as students may read them there: a hint that recomputes a mistake "
                     "beside the right computation gives that computation away")
    return Handout(outdir, sorted(files), notes)
