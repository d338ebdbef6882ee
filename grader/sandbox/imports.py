"""The syllabus's import rule: an exercise file imports only torch and math (``ALLOWED``, and their submodules), and
may import an earlier exercise of its package with a relative import (``from .<earlier> import <name>``).

Read from the source, never run: intake lists a submission's imports (``imports_of``, in its bounded child, before
any code of the submission runs anywhere, so that nothing the student's code saw can change them) and the hidden
suite judges them (``forbidden``). This file depends on the standard library only: the handout's public checks use
the same two functions (``grader/suites/public/import_rule.py`` is this file, shipped as it is as tests/public/import_rule.py).
"""
from __future__ import annotations

import ast
import warnings

ALLOWED = ("torch", "math")  # the syllabus's list
MAX_IMPORTS = 100  # imports reported per file
MAX_NAME = 60  # characters of a module's name shown back
MAX_IMPORT_NAME = 200  # characters of a module's name kept: longer than any allowed name, so the verdict is the same
TOO_MANY = ""  # the last import listed when there are more than MAX_IMPORTS (no import statement names "")


def parsed(source: str | bytes) -> ast.Module | None:
    """The syntax tree of a submission's ``source``, or None where Python cannot parse it: a syntax error, or nesting
    too deep for its parser (RecursionError; CPython's parser says MemoryError past about 6,000 levels, which is no
    lack of memory). Its warnings (an invalid escape, ``1if``) are the student's, never printed by the grader."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def imports_of(source: str | bytes) -> list[tuple[str, int]] | None:
    """(module as written, line) per import statement of ``source`` and per use of ``__import__``, in line order:
    ``.<earlier>`` for a relative import (``from . import <earlier>`` too), ``torch`` for ``from torch import nn``; past
    MAX_IMPORTS, the last one is ``TOO_MANY`` (which breaks the rule: what is not read cannot be judged). None where
    Python cannot parse ``source`` (``parsed``)."""
    tree = parsed(source)
    if tree is None:
        return None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [(base, node.lineno)] if node.module else [(base + alias.name, node.lineno) for alias in node.names]
        elif "__import__" in (getattr(node, "id", None), getattr(node, "attr", None)):
            found.append(("__import__", node.lineno))
    found = [(name[:MAX_IMPORT_NAME], line) for name, line in sorted(found, key=lambda item: item[1])]
    if len(found) > MAX_IMPORTS:  # the rest is not read: said, so that nothing hides behind a hundred `import math`
        return found[:MAX_IMPORTS - 1] + [(TOO_MANY, found[MAX_IMPORTS - 1][1])]
    return found


def allowed_import(name: str, module: str, modules: list[str] | tuple[str, ...], allowed=ALLOWED) -> bool:
    """Whether ``module``'s file may import ``name``: an allowed module or one of its submodules, or ``.other`` where
    ``other`` is an exercise before ``module`` in the course (``modules``, in order)."""
    if name == "__future__":  # a directive to the compiler (from __future__ import annotations), not a module used
        return True
    if name.startswith("."):
        other = name[1:]
        return other in modules and module in modules and modules.index(other) < modules.index(module)
    return name.split(".")[0] in allowed


def forbidden(imports, module: str, modules, allowed=ALLOWED) -> list[tuple[str, int]]:
    """The imports (from ``imports_of``) that break the rule, each (name, line): the name is shown only when it is a
    plain dotted name of at most MAX_NAME characters (else "a module")."""
    bad = []
    for name, line in imports:
        name = str(name)
        if name == TOO_MANY:
            bad.append((f"more than {MAX_IMPORTS - 1} modules, past which nothing is read", int(line)))
        elif not allowed_import(name, module, modules, allowed):
            plain = len(name) <= MAX_NAME and all(part.isidentifier() for part in name.lstrip(".").split("."))
            bad.append((name if plain else "a module", int(line)))
    return bad


def rule(allowed=ALLOWED) -> str:
    """The rule in words, for feedback and the public checks."""
    return (f"an exercise file imports only {' and '.join(allowed)}, and earlier exercises of the course with a "
            f"relative import (from .<earlier exercise> import <name>)")


def imports_of_files(files: dict[str, bytes]) -> dict[str, list[tuple[str, int]]]:
    """Each file's imports (``imports_of``), read by intake before any code of the submission runs anywhere, so that
    nothing the student's code saw can change them (the import rule's feedback names them); a file Python cannot
    parse has none (its import fails in the worker, saying why)."""
    found = {module: imports_of(data) for module, data in files.items()}
    return {module: imports for module, imports in found.items() if imports is not None}
