"""The syllabus's import rule: an exercise file imports only torch and math (``ALLOWED``, and their public submodules:
no private part such as ``torch._C``, whose ``DisableTorchFunction`` hides calls from the grader's watch, even used
through ``torch._C.<name>``), and may import an earlier exercise of its package with a relative import (``from
.<earlier> import <name>``).

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
    found, bound = [], {}  # bound: a name the file binds to an allowed module (or a name in one) -> its dotted path
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
            bound.update((alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0],) * 2
                         for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [(base, node.lineno)] if node.module else [(base + alias.name, node.lineno) for alias in node.names]
            if node.module and not node.level:
                named = {alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names}
                bound.update(named)
                found += [(path, node.lineno) for path in named.values() if off_limits(path.rsplit(".", 1)[-1])]
        elif "__import__" in (getattr(node, "id", None), getattr(node, "attr", None)):
            found.append(("__import__", node.lineno))
    found += _off_limits_uses(tree, {name: path for name, path in bound.items() if path.split(".")[0] in ALLOWED})
    found = [(name[:MAX_IMPORT_NAME], line) for name, line in sorted(found, key=lambda item: item[1])]
    if len(found) > MAX_IMPORTS:  # the rest is not read: said, so that nothing hides behind a hundred `import math`
        return found[:MAX_IMPORTS - 1] + [(TOO_MANY, found[MAX_IMPORTS - 1][1])]
    return found


# Public names of torch that turn off its torch function modes, or run code outside them, the grader's watch of the
# calls included (red team 17, review 11); a module's own namespace reaches the rest of it by a string.
ESCAPES = frozenset({"DisableTorchFunction", "DisableTorchFunctionSubclass", "overrides", "jit", "compile", "__dict__",
                     "__getattribute__"})
# Modules outside torch that torch's namespaces hold (torch.sys, torch.os, torch.nn.functional.np, ...: red team 18's
# torch.sys.modules["torch._C"]): reached through torch, they are imports the rule refuses, like their own.
FOREIGN = frozenset({"builtins", "ctypes", "dataclasses", "functools", "gc", "glob", "importlib", "inspect", "marshal",
                     "np", "numpy", "os", "pickle", "platform", "subprocess", "sys", "textwrap", "threading",
                     "warnings"})


def off_limits(name: str) -> bool:
    """A part of a module no exercise uses: a private name (``_C``, not a dunder such as ``__version__``), one of
    ``ESCAPES``, or a module outside torch that it holds (``FOREIGN``)."""
    dunder = name.startswith("__") and name.endswith("__")
    return name in ESCAPES or name in FOREIGN or name.startswith("_") and not dunder


def _off_limits_uses(tree: ast.Module, bound: dict[str, str]) -> list[tuple[str, int]]:
    """Each use of an off-limits part of an allowed module (``off_limits``) through a name bound to it, up to that
    part, with its line: ``torch._C.DisableTorchFunction()`` is ``torch._C``; ``getattr(torch, "_C")`` and ``vars(torch)`` (a
    ``__dict__``) too, and ``getattr`` itself used as a value (``g = getattr``), which hides what it reaches."""
    found, called = [], {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "getattr" and id(node) not in called:
            found.append(("getattr", node.lineno))
            continue
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "vars") and node.args:
            owner, attribute = node.args[0], node.args[1] if len(node.args) > 1 else None
            named = isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)
            chain = ["__dict__"] if node.func.id == "vars" else [attribute.value] if named else []
        elif isinstance(node, ast.Attribute):
            owner, chain = node.value, [node.attr]
        else:
            continue
        while isinstance(owner, ast.Attribute):
            owner, chain = owner.value, [owner.attr, *chain]
        if isinstance(owner, ast.Name) and owner.id in bound and any(off_limits(part) for part in chain):
            parts = chain[:next(i for i, part in enumerate(chain) if off_limits(part)) + 1]
            found.append((".".join([bound[owner.id], *parts]), node.lineno))
    return sorted(set(found), key=lambda item: item[1])  # torch._C.A.B is one use, though two attributes


def allowed_import(name: str, module: str, modules: list[str] | tuple[str, ...], allowed=ALLOWED) -> bool:
    """Whether ``module``'s file may import ``name``: an allowed module or one of its submodules, or ``.other`` where
    ``other`` is an exercise before ``module`` in the course (``modules``, in order)."""
    if name == "__future__":  # a directive to the compiler (from __future__ import annotations), not a module used
        return True
    if name.startswith("."):
        other = name[1:]
        return other in modules and module in modules and modules.index(other) < modules.index(module)
    return name.split(".")[0] in allowed and not any(off_limits(part) for part in name.split(".")[1:])


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
    return (f"an exercise file imports only {' and '.join(allowed)} (none of their private parts, such as torch._C, "
            f"nor what hides your calls from the checks: torch.DisableTorchFunction, torch.overrides, torch.jit, "
            f"torch.compile), and earlier exercises of the course with a relative import (from .<earlier exercise> "
            f"import <name>)")


def imports_of_files(files: dict[str, bytes]) -> dict[str, list[tuple[str, int]]]:
    """Each file's imports (``imports_of``), read by intake before any code of the submission runs anywhere, so that
    nothing the student's code saw can change them (the import rule's feedback names them); a file Python cannot
    parse has none (its import fails in the worker, saying why)."""
    found = {module: imports_of(data) for module, data in files.items()}
    return {module: imports for module, imports in found.items() if imports is not None}
