"""Reading notebooks: the code of each exercise's nbgrader solution cell, and nothing else of the notebook.

``read_notebook`` finds each exercise's solution cell by its nbgrader ``grade_id`` (``<module>_solution``)
and returns the code of those cells only, and the exercises the notebook covers: those whose cells it carries
(any grade_id ``<module>_...``), by which a notebook says which assignment it belongs to. ``take_notebooks`` takes the
code of the notebooks found anywhere in a submission folder (a handout checkout's ``notebooks/<assignment>/``,
nbgrader's ``submitted/<student>/<assignment>/``, a notebook uploaded alone to Gradescope).
"""
from __future__ import annotations

import ast
import json
import os
import re
import stat
from functools import cache
from pathlib import Path

from grader.course import Course
from grader.course import course as project_course
from grader.intake import IntakeError
from grader.sandbox.imports import parsed
from grader.text import MAX_NAME, clean

# Defaults of read_notebook's caps (a notebook with cleared outputs is a few tens of KiB).
MAX_NOTEBOOK_MB = 8
MAX_CELL_MB = 1


def solution_grade_id(module: str) -> str:
    """The nbgrader grade_id of the cell that holds the exercise's code: how the grader finds it."""
    return f"{module}_solution"


SOLUTION_ID = re.compile(r"(?P<module>[a-z][a-z0-9_]*)_solution")
IPYTHON_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<command>[!%].*)$")


@cache
def _public_names(reference: Path) -> frozenset[str]:
    """Top-level functions and classes of an exercise module (from its reference), to recognize a stripped cell."""
    try:
        tree = ast.parse(reference.read_text(encoding="utf-8"))
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


def _lookalikes(cells: list, module: str, course: Course) -> list[str]:
    """Cells without the module's metadata whose code defines the module's functions or classes."""
    names = _public_names(course.solutions_dir / f"{module}.py")
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
    if parsed(source) is not None:
        return source, []
    for i in touched:
        match = IPYTHON_LINE.match(lines[i].rstrip("\r\n"))
        ending = lines[i][len(lines[i].rstrip("\r\n")):]
        lines[i] = f"{match['indent']}pass  # IPython line left out by the grader: {match['command']}{ending}"
    changed = "".join(lines)
    if parsed(changed) is None:
        return source, []
    return changed, [i + 1 for i in touched]


def read_notebook(path, problems: dict[str, str], notes: list[str], limits=None, course: Course | None = None,
                  covers: set[str] | None = None) -> dict[str, bytes]:
    """The exercise code of a notebook: module -> source bytes of its solution cell (grade_id ``<module>_solution``),
    for the exercises of ``course`` (default: the project's).

    Only solution cells are read; every other cell (scratch work, shell commands, outputs) is ignored.
    A notebook may hold one exercise's cell (one assignment) or several. Problems with one exercise's cell
    (missing, duplicated, metadata changed, not text) go to ``problems[module]``; a file that is not a
    readable notebook raises ``IntakeError``. ``covers`` learns the exercises the notebook carries any cell of (its
    assignment's). ``limits`` (course.yaml's intake section) sets the caps: ``max_total_mb`` for the notebook and
    ``max_file_mb`` for one cell; without it, 8 MiB and 1 MiB.
    """
    path = Path(path)
    course = course or project_course()
    modules = course.modules
    notebook_cap = int((limits.max_total_mb if limits else MAX_NOTEBOOK_MB) * 2**20)
    cell_cap = int((limits.max_file_mb if limits else MAX_CELL_MB) * 2**20)
    cells = _parse(path, _read_capped(path, notebook_cap))

    found: dict[str, list[int]] = {}
    mentioned: set[str] = set()
    elsewhere: set[str] = set()  # exercises of other assignments whose solution cells it holds
    for index, cell in enumerate(cells, 1):
        grade_id = _grade_id(cell)
        if grade_id is None:
            continue
        match = SOLUTION_ID.fullmatch(grade_id)
        if match and match["module"] in modules:
            found.setdefault(match["module"], []).append(index)
        elif match:
            elsewhere.add(match["module"])
        mentioned.update(m for m in modules if grade_id.startswith(m + "_"))

    files: dict[str, bytes] = {}
    for module in modules:
        grade_id = solution_grade_id(module)
        indices = found.get(module, [])
        if not indices:
            # A cell defining the module's names counts as a stripped solution cell only where the notebook
            # belongs to this exercise (other cells of it are there) or has lost all its solution cells.
            lookalikes = _lookalikes(cells, module, course) if module in mentioned or not found else []
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
        if "\0" in source:
            problems[module] = f"the solution cell of {module} (cell {index}) contains NUL characters"
            continue
        source, dropped = _without_ipython(source) if len(data) <= cell_cap else (source, [])
        size = len(source.encode("utf-8"))  # its IPython lines rewritten: a line "!a" grows twentyfold
        if size > cell_cap:
            problems[module] = (f"the solution cell of {module} (cell {index}) is {size / 2**20:.1f} MiB"
                                + (" once its IPython lines are left out" if dropped else "")
                                + f", over the {cell_cap / 2**20:g} MiB limit")
            continue
        if dropped:
            lines = ", ".join(str(line) for line in dropped)
            notes.append(f"{module}: IPython line(s) {lines} of the solution cell (shell commands or magics) were left "
                         "out: the grader runs the cell as plain Python")
        if source and not source.endswith("\n"):
            source += "\n"
        files[module] = source.encode("utf-8")
        outside = _lookalikes(cells, module, course) if course is not None else []
        if outside:
            notes.append(f"{module}: {', '.join(outside)} of {path.name}, outside the solution cell (cell {index}): "
                         "only the solution cell is graded; move your code into it")
    if files:
        taken = ", ".join(f"{module} (cell {found[module][0]})" for module in files)
        notes.append(f"exercise code taken from the solution cells of {path.name}: {taken}")
    elif not problems and elsewhere:  # a notebook of another assignment ("no solution cell" sent her to hand it in)
        held = ", ".join(sorted(clean(module, MAX_NAME) for module in elsewhere)[:8])
        raise IntakeError(f"{path.name} holds the solution cell of {held}, not of the exercises graded here "
                          f"({', '.join(modules)}): hand in the notebook of this assignment")
    elif not problems:
        raise IntakeError(f"{path.name} holds no solution cell: none of its cells carries an nbgrader grade_id such as "
                          f"{solution_grade_id(modules[0])!r}. Hand in the course notebook itself; the grader finds your code through "
                          "the metadata of its solution cell")
    if covers is not None:
        covers.update(mentioned | set(files) | set(problems))
    return files


def _lines(code: bytes) -> list[bytes]:
    """Code as its lines without their ends and trailing spaces: the same code saved by another editor is the same."""
    return [line.rstrip() for line in code.strip().splitlines()]


def take_notebooks(root: Path, found: list[tuple[str, ...]], files: dict[str, bytes], problems: dict[str, str],
                   notes: list[str], limits, course: Course) -> dict[str, str]:
    """Take exercise code from the notebooks ``found`` in a submission folder (paths inside ``root``, split: wherever
    the student put them, as intake walks a folder), updating ``files`` and ``problems``.

    An exercise whose file was taken and holds code of the student's is graded from its file (the handout's rule);
    one whose file still holds every stub of the handout is graded from a notebook's solution cell with code of the
    student's; and in a folder of notebooks alone (no exercise file), each exercise a notebook carries is graded from
    its solution cell, filled in or not (a notebook that cannot be read is the problem of the exercise its name or
    folder's name names: ``05_quiz.ipynb``, ``05_quiz/mine.ipynb``). Of several notebooks holding code of one exercise, the one named as the
    course's notebook of it (``04_qkv.ipynb``) is taken, else the shallowest, else the first by name, and a note says
    so. Returns module -> the notebook taken (its path inside ``root``). A folder is graded on the course it is given
    (a notebook alone on the assignment it carries: ``read_notebook``'s ``covers``)."""
    from grader.authoring.stubs import render_exercises, unstarted

    notebooks_alone = not files and not problems
    stubs = render_exercises(course)
    cells: dict[str, list[tuple[tuple, str, bytes, list[str]]]] = {}  # module -> (rank, path, code, its notes)
    troubles: dict[str, str] = {}
    for parts in found:
        shown = "/".join(parts)
        local_problems: dict[str, str] = {}
        local_notes: list[str] = []
        try:
            codes = read_notebook(root.joinpath(*parts), local_problems, local_notes, limits, course)
        except IntakeError as error:
            notes.append(f"{clean(shown, MAX_NAME)} was not graded: {error}")
            named = [m for m in course.modules if course.notebook_name(m) in (parts[-1].removesuffix(".ipynb"), *parts[:-1])]
            troubles.update({module: str(error) for module in named if module not in troubles})
            continue
        for module, code in codes.items():
            started = not unstarted(code.decode("utf-8"), stubs[f"{module}.py"])
            rank = (not started, parts[-1] != f"{course.notebook_name(module)}.ipynb", len(parts), parts)
            cells.setdefault(module, []).append((rank, shown, code, local_notes))
        for module, problem in local_problems.items():
            troubles.setdefault(module, problem)
    taken: dict[str, str] = {}
    for module in course.modules:
        stub = stubs[f"{module}.py"]
        if module in files and not unstarted(files[module].decode("utf-8"), stub):
            other = sorted({shown for rank, shown, code, _ in cells.get(module, [])
                            if not rank[0] and _lines(code) != _lines(files[module])})
            if other:
                notes.append(f"{module}: graded {module}.py, which holds code of yours; the solution cell of "
                             f"{clean(', '.join(other), MAX_NAME)} holds other code of it, not graded")
            continue
        candidates = sorted(cells.get(module, []))
        if not notebooks_alone:  # beside exercise files, only a cell with code of the student's replaces one
            candidates = [c for c in candidates if not c[0][0]]
        if not candidates:
            if notebooks_alone and module in troubles:
                problems[module] = troubles[module]
            notes.extend(dict.fromkeys(note for *_, cell_notes in cells.get(module, []) for note in cell_notes
                                       if note.startswith(f"{module}: ")))  # code of it outside a solution cell
            continue
        (_, shown, code, cell_notes), *others = candidates
        files[module] = code
        problems.pop(module, None)
        taken[module] = clean(shown, MAX_NAME)  # as shown in the notes: a deep path is cut, never refused
        notes.extend(note for note in cell_notes if note.startswith(f"{module}: "))
        also = sorted({other for rank, other, other_code, _ in others if other_code != code and not rank[0]})
        notes.append(f"{module}: graded the solution cell of {clean(shown, MAX_NAME)}"
                     + (f" ({module}.py still holds every stub)" if not notebooks_alone else "")
                     + (f"; other notebooks hold other code of it too ({clean(', '.join(also), MAX_NAME)}): only "
                        "this one was graded" if also else ""))
    return taken


def assignment_notebook(folder: Path) -> Path | None:
    """The notebook of an nbgrader assignment folder (``<assignment>/<assignment>.ipynb``, else its only notebook)."""
    notebook = folder / f"{folder.name}.ipynb"
    if os.path.lexists(notebook):
        return notebook
    others = sorted(p for p in folder.glob("*.ipynb") if not os.path.islink(p) and os.path.isfile(p))  # no raise
    return others[0] if len(others) == 1 else None
