"""The grader's layout, read statically from its source (nothing of it is imported here).

* the import graph of the ``grader`` package has no cycle;
* the grading side never imports the worker (the code that runs inside the sandbox): only the zygote's
  launcher does;
* no module is longer than MAX_LINES lines;
* every module and package says in a docstring what it is.

An import counts wherever it is written, in a module's body or in a function, except under ``if TYPE_CHECKING:``
(read by type checkers only) and, for the graph, under ``if __name__ == "__main__":`` (run only when the file is
the program, as the module ``__main__``, never when another module imports it).
"""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[2] / "grader"
MAX_LINES = 500
WORKER = "grader.sandbox.jail.worker"
ZYGOTE = "grader.sandbox.jail.zygote"  # the zygote, which forks and runs the workers
LAUNCHER = "grader.sandbox.jail.lifeline"  # run as __main__ (grader.sandbox.host.zygote.BOOTSTRAP), it starts the zygote
GRADING_CLIENT = ("grader.sandbox.host.client", "grader.sandbox.host.proxy")


def module_name(path: Path) -> str:
    parts = path.relative_to(GRADER.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {module_name(path): path for path in sorted(GRADER.rglob("*.py"))}


def _guarded_by(test: ast.expr) -> str | None:
    """'type checking' or 'main' for the two guards whose bodies are not run when a module is imported."""
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" \
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
        return "type checking"
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators):
        return "main"
    return None


def _import_nodes(nodes, skip: set[str]):
    """Every import statement in ``nodes`` and under them, leaving out the bodies of ``if`` blocks guarded by a
    guard in ``skip``."""
    for node in nodes:
        if isinstance(node, ast.If) and _guarded_by(node.test) in skip:
            yield from _import_nodes(node.orelse, skip)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _import_nodes(ast.iter_child_nodes(node), skip)


def imported(module: str, skip: set[str]) -> set[str]:
    """The grader modules ``module`` imports (``from package import name`` counts the package, and ``name`` when
    it is a module of its own)."""
    path = FILES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path)).body, skip):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
        source = ".".join([*base, *([node.module] if node.module else [])])
        found.add(source)
        found.update(f"{source}.{alias.name}" for alias in node.names)
    return {name for name in found if name in FILES and name != module}


def import_graph(skip: set[str]) -> dict[str, set[str]]:
    return {module: imported(module, skip) for module in FILES}


RUNTIME = {"type checking", "main"}  # the guards whose imports a module's import never runs


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules, the first one repeated at the end), or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once all it reaches is explored
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target):], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


def test_the_layout_reads_the_whole_package():
    """The checks below see every module, and see imports the way they are written (guards, relative imports)."""
    assert {"grader", "grader.sandbox.host.client", "grader.sandbox.host.proxy", WORKER, ZYGOTE, LAUNCHER} <= set(FILES)
    assert "grader.sandbox.jail.lifeline" in imported(ZYGOTE, RUNTIME)
    assert ZYGOTE in imported(LAUNCHER, set()) and ZYGOTE not in imported(LAUNCHER, RUNTIME)
    assert "grader.sandbox.host.client" in imported("grader.sandbox.host.proxy", set())
    assert "grader.sandbox.host.client" not in imported("grader.sandbox.host.proxy", RUNTIME)


def test_find_cycle_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_import_graph_has_no_cycle():
    """No module of the grader imports, directly or through others, a module that imports it back."""
    cycle = find_cycle(import_graph(RUNTIME))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("module", GRADING_CLIENT)
def test_the_client_never_reaches_the_worker(module):
    """The grading process's side of the worker (the zygote, the session, the proxies) imports nothing that
    imports the worker, directly or through others."""
    assert WORKER not in reachable(import_graph(RUNTIME), module)


def test_only_the_zygote_launcher_imports_the_worker():
    """The grading side never imports the worker module: only the zygote does, which only the zygote's launcher
    imports, once it runs as the zygote (its ``__main__`` block)."""
    graph = import_graph(set())
    assert sorted(module for module, targets in graph.items() if WORKER in targets) == [ZYGOTE]
    assert sorted(module for module, targets in graph.items() if ZYGOTE in targets) == [LAUNCHER]


def test_no_module_is_too_long():
    """Every module of the grader is at most MAX_LINES lines long."""
    lengths = {module: len(path.read_text().splitlines()) for module, path in FILES.items()}
    too_long = {module: n for module, n in sorted(lengths.items()) if n > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines: " + ", ".join(f"{m} ({n})" for m, n in too_long.items())


def test_every_module_has_a_docstring():
    """Every module and package of the grader says what it is in a docstring."""
    missing = [module for module, path in FILES.items() if not ast.get_docstring(ast.parse(path.read_text()))]
    assert not missing, "no docstring: " + ", ".join(missing)


def _readme_layout() -> str:
    readme = (GRADER.parent / "README.md").read_text(encoding="utf-8")
    return readme[readme.index("## Layout"):]


def test_the_readme_layout_names_every_module():
    """README's layout section names every module and subpackage of the grader (a newcomer finds each in one look)."""
    layout = _readme_layout()
    missing = []
    for module, path in FILES.items():
        if path.name == "__init__.py":
            named = f"`{path.parent.name}/" in layout
        else:
            named = any(f"`{form}" in layout for form in (path.name, path.stem + "`", f"{path.parent.name}/{path.name}"))
        if not named:
            missing.append(module)
    assert not missing, "README's layout section does not name: " + ", ".join(missing)


def test_the_readme_layout_names_every_top_level_folder():
    """README's layout section names every folder at the top of the repository (those git tracks)."""
    layout = _readme_layout()
    tracked = subprocess.run(["git", "ls-files"], cwd=GRADER.parent, capture_output=True, text=True, check=True).stdout
    folders = sorted({line.split("/")[0] for line in tracked.splitlines() if "/" in line and not line.startswith(".")})
    missing = [name for name in folders if f"`{name}/" not in layout]
    assert not missing, "README's layout section does not name: " + ", ".join(missing)
