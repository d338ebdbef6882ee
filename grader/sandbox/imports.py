"""The syllabus's import rule: an exercise file imports only torch and math (``ALLOWED``, and their public submodules:
no private part such as ``torch._C``, whose ``DisableTorchFunction`` hides calls from the grader's watch, even used
through ``torch._C.<name>``), and may import an earlier exercise of its package with a relative import (``from
.<earlier> import <name>``); Python's ways around an import statement or an attribute's name (``exec``,
``__builtins__``, ``__globals__``, a module passed around as a value: ``_off_limits_uses``) break it too.

Read from the source, never run: intake lists a submission's imports (``imports_of``, in its bounded child, before
any code of the submission runs anywhere, so that nothing the student's code saw can change them) and the hidden
suite judges them (``forbidden``). This file depends on the standard library only: the handout's public checks use
the same two functions (``grader/suites/public/import_rule.py`` is this file, shipped as it is as tests/public/import_rule.py).
"""
from __future__ import annotations

import ast
import warnings
from collections import Counter, deque

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
    found, bound, modules = [], {}, set()  # bound: a name bound to an allowed module (or a name in one) -> its path
    nodes, scopes = _walk(tree)  # walked once: every pass below reads these
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
            named = dict((alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0],) * 2
                         for alias in node.names)
            bound.update(named)
            modules.update(named)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [(base, node.lineno)] if node.module else [(base + alias.name, node.lineno) for alias in node.names]
            if node.module and not node.level:
                named = {alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names}
                bound.update(named)
                modules.update(name for name, path in named.items() if path.rsplit(".", 1)[-1] in SUBMODULES)
                found += [(path, node.lineno) for path in named.values() if off_limits(path.rsplit(".", 1)[-1])]
    allowed_bound = {name: path for name, path in bound.items() if path.split(".")[0] in ALLOWED}
    found += _off_limits_uses(tree, nodes, scopes, allowed_bound, modules)
    found = [(name[:MAX_IMPORT_NAME], line) for name, line in sorted(found, key=lambda item: item[1])]
    if len(found) > MAX_IMPORTS:  # the rest is not read: said, so that nothing hides behind a hundred `import math`
        return found[:MAX_IMPORTS - 1] + [(TOO_MANY, found[MAX_IMPORTS - 1][1])]
    return found


# Public names of torch that turn off its torch function modes, or run code outside them, the grader's watch of the
# calls included (red team 17, review 11).
ESCAPES = frozenset({"DisableTorchFunction", "DisableTorchFunctionSubclass", "overrides", "jit", "compile", "library",
                     "custom_op", "cpp_extension", "as_subclass", "__torch_function__", "__torch_dispatch__"})
# Modules outside torch that torch's namespaces hold (torch.sys, torch.os, torch.nn.functional.np, ...: red team 18's
# torch.sys.modules["torch._C"]), and torch itself held by its submodules (torch.nn.functional.torch): reached as an
# attribute, they are imports the rule refuses, like their own.
FOREIGN = frozenset({"builtins", "ctypes", "dataclasses", "functools", "gc", "glob", "importlib", "inspect", "marshal",
                     "np", "numpy", "os", "pickle", "platform", "subprocess", "sys", "textwrap", "threading",
                     "warnings", "operator", "typing", "types", "string", "traceback", "weakref", "copyreg", "runpy",
                     "pdb", "dis", "ast", "multiprocessing", "signal", "socket", "tempfile", "shutil", "pathlib",
                     "logging", "atexit", "site", "linecache", *ALLOWED})
# Python's own ways around an import statement, or to the namespaces of the code that calls the student's (red team
# 19: exec("import os"), __builtins__["__import__"], a function's __globals__, a generator's frame): refused wherever
# they appear. The dunders an exercise may read are DUNDERS; any other (__globals__, __dict__, __subclasses__) is not.
REFLECTIVE = frozenset({"exec", "eval", "compile", "__import__", "__builtins__", "globals", "locals", "vars",
                        "breakpoint", "__loader__", "__spec__"})
GETTERS = frozenset({"getattr", "setattr", "delattr", "hasattr"})  # an attribute by a string: written out, or refused
DUNDERS = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__class__", "__module__", "__version__",
                     "__call__", "__repr__", "__str__", "__len__", "__iter__", "__getitem__", "__post_init__"})
TENSOR_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})  # never defined, named or read by an exercise
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)  # each its own scope
FRAMES = frozenset({"gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "f_globals", "f_locals",
                    "f_builtins", "f_back", "f_code", "tb_frame", "tb_next", "co_code", "co_consts"})
# torch's submodules, as a name bound by ``from torch import nn`` holds them: like a module imported, never a value.
SUBMODULES = frozenset({"nn", "functional", "init", "linalg", "fft", "special", "autograd", "utils", "cuda",
                        "backends", "ops", "classes", "nested", "sparse", "masked"})


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def off_limits(name: str) -> bool:
    """A part of a module no exercise uses: a private name (``_C``), a dunder other than DUNDERS (``__globals__``), one
    of ``ESCAPES``, a module it holds (``FOREIGN``) or a frame's part (``FRAMES``)."""
    if _dunder(name):
        return name not in DUNDERS
    return name in ESCAPES or name in FOREIGN or name in FRAMES or name.startswith("_")


def _walk(tree: ast.Module) -> tuple[list[ast.AST], dict[int, int]]:
    """Every node of ``tree``, in ``ast.walk``'s order, and by its id the id of its scope: the function, lambda or
    comprehension it is in (the module for the rest)."""
    nodes, scopes, todo = [], {}, deque([(tree, id(tree))])
    while todo:
        node, scope = todo.popleft()
        nodes.append(node)
        scopes[id(node)] = scope
        inner = id(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, *COMPREHENSIONS)) \
            else scope
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
    return nodes, scopes


def _off_limits_uses(tree: ast.Module, nodes: list[ast.AST], scopes: dict[int, int], bound: dict[str, str],
                     modules: set[str]) -> list[tuple[str, int]]:
    """Each use of an off-limits part (``off_limits``), with its line, up to that part: through a name bound to an
    allowed module (or an alias of one, ``nn = torch.nn``), ``torch._C.DisableTorchFunction()`` is ``torch._C``,
    ``getattr(torch, "_C")`` too; on anything else (``type(x).__mro__``, ``f.__globals__``) it is said as written,
    but for the first private name of a method's ``self`` (``self._mask``), of ``super()`` and of a classmethod's
    ``cls``. Also: ``REFLECTIVE`` names, ``TENSOR_HOOKS`` defined or named, a ``GETTERS`` function used as a value or
    with a name it computes (a loop's over a tuple of strings is read), and a module (``modules``) used as a value,
    which the rule could not follow."""
    stored = Counter(node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
    defined = Counter(node.name for node in nodes if isinstance(node, (ast.ClassDef, ast.FunctionDef,
                                                                        ast.AsyncFunctionDef)))
    looped, selves = _looped_names(tree, nodes, scopes, stored), _method_selves(nodes)
    own_classes = {node.name for node in nodes if isinstance(node, ast.ClassDef)
                   if defined[node.name] == 1 and not stored[node.name]}
    classes = {id(node) for node in nodes if isinstance(node, ast.Name) and node.id in own_classes}  # Cls._merge(...)
    for _ in range(2):  # an alias of an alias
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                path = _path(node.value, bound)
                if path is not None:
                    bound[node.targets[0].id] = path
    bases = {id(node.value) for node in nodes if isinstance(node, ast.Attribute)} | {
        id(node.args[0]) for node in nodes if isinstance(node, ast.Call) and node.args
        and getattr(node.func, "id", None) in GETTERS | {"vars"}}  # judged as the attribute, or as vars
    called = {id(node.func) for node in nodes if isinstance(node, ast.Call)}
    found = []
    for node in nodes:
        defined = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        hook = node.name if defined else node.value if isinstance(node, ast.Constant) else getattr(node, "id", None)
        if hook in TENSOR_HOOKS:  # a tensor subclass's own dispatch runs unwatched (red team 20)
            found.append((f"{hook} defined" if defined else hook, node.lineno))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in REFLECTIVE:
                found.append((node.id, node.lineno))
            elif node.id in GETTERS and id(node) not in called or node.id in modules and id(node) not in bases:
                found.append((f"{node.id} as a value", node.lineno))
            continue
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and _dunder(node.attr):
            found.append((f"{node.attr} assigned", node.lineno))  # a torch function renamed is a call the watch misses
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in GETTERS:
            owner, attribute = node.args[0] if node.args else None, node.args[1] if len(node.args) > 1 else None
            if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
                names = [attribute.value]
            elif id(attribute) in looped:
                names = sorted(looped[id(attribute)])  # for name in ("W_query", "W_key"): getattr(module, name)
            elif id(owner) in selves:  # a method's own layers by a name it builds (setattr(self, f"head_{i}", ...)):
                continue  # no more than its self's first private name reaches (handout walk-through 14)
            else:
                found.append((f"{node.func.id} with a computed name", node.lineno))
                continue
            chains = [[name] for name in names]
            if node.func.id in ("setattr", "delattr"):
                found += [(f"{name} assigned", node.lineno) for name in names if _dunder(name)]
        elif isinstance(node, ast.Attribute):
            owner, chains = node.value, [[node.attr]]
        else:
            continue
        while isinstance(owner, ast.Attribute):
            owner, chains = owner.value, [[owner.attr, *chain] for chain in chains]
        strict = isinstance(owner, ast.Name) and owner.id in bound
        own = id(owner) in selves or id(owner) in classes or isinstance(owner, ast.Call) and (
            getattr(owner.func, "id", None) == "super" or getattr(owner.func, "id", None) == "type"
            and len(owner.args) == 1 and id(owner.args[0]) in selves)  # super(), type(self)
        for chain in chains:
            bad = next((i for i, part in enumerate(chain) if off_limits(part) and not (
                part == "numpy" and not strict  # a tensor's .numpy()
                or own and i == 0 and part.startswith("_") and not part.endswith("__"))), None)
            if bad is not None:
                root = bound[owner.id] if strict else owner.id if isinstance(owner, ast.Name) else ""
                found.append((".".join([root, *chain[:bad + 1]]), node.lineno))
    return sorted(set(found), key=lambda item: (item[1], item[0]))  # torch._C.A.B is one use, though two attributes


def _path(node: ast.expr, bound: dict[str, str]) -> str | None:
    """The dotted path of ``node`` where it is a name bound to an allowed module or an attribute chain of one."""
    chain = []
    while isinstance(node, ast.Attribute):
        node, chain = node.value, [node.attr, *chain]
    return ".".join([bound[node.id], *chain]) if isinstance(node, ast.Name) and node.id in bound else None


def _method_selves(nodes: list[ast.AST]) -> set[int]:
    """The reads of a method's first parameter (``self``, a classmethod's ``cls``) in its body, where nothing assigns it
    and no function inside takes that name again: whose own private names (``self._mask``) a module may read (red
    team 20: any name spelled ``self``, a plain function's too, passed one of torch's modules)."""
    found = set()
    for cls in (node for node in nodes if isinstance(node, ast.ClassDef)):
        for method in (item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))):
            static = any(getattr(d, "id", None) == "staticmethod" for d in method.decorator_list)
            if static or not method.args.args:
                continue
            name, reads, stack = method.args.args[0].arg, [], list(method.body)
            while stack:
                node = stack.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and name in {
                        a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}:
                    continue  # another function's own parameter of that name
                if isinstance(node, ast.Name) and node.id == name:
                    reads.append(node)
                stack.extend(ast.iter_child_nodes(node))
            if all(isinstance(read.ctx, ast.Load) for read in reads):
                found.update(id(read) for read in reads)
    return found


def _looped_names(tree: ast.Module, nodes: list[ast.AST], scope_of: dict[int, int],
                  stored: Counter) -> dict[int, set[str]]:
    """The strings a name read inside a loop (a ``for``, or a comprehension) over a tuple or list of them (or a name
    the file assigns once to one) can hold, by the read's node: a name the file assigns nowhere but as such a loop's
    target in the loop's scope (its function, or comprehension: review 12, a loop anywhere made the name readable
    everywhere; handout walk-through 14, a name reused in another function made a loop unreadable) and no ``global``
    or ``nonlocal`` names."""
    declared = {name for node in nodes if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    stores = {}  # (name, scope) -> the nodes that assign it there
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores.setdefault((node.id, scope_of[id(node)]), []).append(id(node))
    assigned = [(node.targets[0], node.value) for node in tree.body if isinstance(node, ast.Assign)
                and len(node.targets) == 1] + [(node.target, node.value) for node in tree.body
                                               if isinstance(node, ast.AnnAssign)]
    named = {target.id: value for target, value in assigned if isinstance(target, ast.Name)
             and stored[target.id] == 1}  # NAMES = ("W_query", "W_key") (annotated or not), assigned once
    loops = {}
    for node in nodes:
        if isinstance(node, ast.For):
            target, iterable, inside = node.target, node.iter, node.body
        elif isinstance(node, COMPREHENSIONS) and len(node.generators) == 1:
            target, iterable = node.generators[0].target, node.generators[0].iter
            inside = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        else:
            continue
        iterable = named.get(iterable.id, iterable) if isinstance(iterable, ast.Name) else iterable
        items = iterable.elts if isinstance(iterable, (ast.Tuple, ast.List)) else []
        if isinstance(target, ast.Name) and items and all(isinstance(item, ast.Constant) and isinstance(item.value, str)
                                                          for item in items):
            loops[id(target)] = (target.id, {item.value for item in items}, inside)
    found = {}
    for target, (name, values, inside) in loops.items():
        if name not in declared and all(store in loops for store in stores[name, scope_of[target]]):
            found.update((id(read), values) for part in inside for read in ast.walk(part)  # in the loop's own scope:
                         if isinstance(read, ast.Name) and read.id == name and isinstance(read.ctx, ast.Load)
                         and scope_of[id(read)] == scope_of[target])  # a lambda's parameter of that name is another
    return found


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
            plain = len(name) <= MAX_NAME + 40 and all(part.isidentifier() or part.isdigit()
                                                       for part in name.lstrip(".").replace(" ", ".").split("."))
            bad.append((name if plain else "a module", int(line)))
    return bad


def forbidden_through(imports_of_module, module: str, modules, allowed=ALLOWED,
                      seen=frozenset()) -> list[tuple[str, int]]:
    """``forbidden`` of ``module``'s imports (``imports_of_module(name)``: a list, or None where unread), and an entry
    for each earlier exercise it imports that breaks the rule, itself or through those it imports: what an exercise
    takes from another is judged with it (red team 20: an escape written in an earlier file, used in a later one)."""
    imports = imports_of_module(module) or []
    bad, seen = forbidden(imports, module, modules, allowed), seen | {module}
    for name, line in imports:
        other = str(name)[1:] if str(name).startswith(".") else None
        theirs = forbidden_through(imports_of_module, other, modules, allowed, seen) \
            if other in modules and other not in seen else []
        if theirs:  # what breaks it there, and where (handout walk-through 14: the later file alone was named)
            bad.append((f"{name} breaking it with {theirs[0][0]} at its line {theirs[0][1]}", int(line)))
    return bad


def rule(allowed=ALLOWED) -> str:
    """The rule in words, for feedback and the public checks."""
    return (f"an exercise file imports only {' and '.join(allowed)} (none of their private parts, such as torch._C, "
            f"nor what hides your calls from the checks: torch.DisableTorchFunction, torch.overrides, torch.jit, "
            f"torch.compile), and earlier exercises of the course with a relative import (from .<earlier exercise> "
            f"import <name>); it uses none of Python's ways around an import or an attribute's name (exec, eval, "
            f"__builtins__, dunders such as __globals__, a module used as a value, getattr of a name it computes)")


def imports_of_files(files: dict[str, bytes]) -> dict[str, list[tuple[str, int]]]:
    """Each file's imports (``imports_of``), read by intake before any code of the submission runs anywhere, so that
    nothing the student's code saw can change them (the import rule's feedback names them); a file Python cannot
    parse has none (its import fails in the worker, saying why)."""
    found = {module: imports_of(data) for module, data in files.items()}
    return {module: imports for module, imports in found.items() if imports is not None}
