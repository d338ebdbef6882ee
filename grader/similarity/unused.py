"""Code that nothing runs or uses, found in the file's syntax tree (``ast.parse`` only parses: nothing is run): the
similarity check leaves its lines out, so that padding a copy with such code changes nothing.

Left out, statement by statement:

* functions and classes that nothing kept refers to and that the exercise's contract does not name (the names its
  stub defines); methods likewise, but for ``__dunder__`` ones, which Python calls itself, and those PyTorch calls
  (``forward``, ``backward``, ``setup_context``, ``extra_repr``);
* statements that cannot run: the body of an ``if``, ``elif`` or ``while`` whose condition is constantly false
  (``False``, ``0``, ``__name__ == "__main__"`` in a module the grader imports, a module constant such as
  ``_DEBUG = False`` that nothing rebinds, ``not``, ``and``, ``or`` of those), the ``else`` of a constantly true
  ``if``, and what follows ``return``, ``raise``, ``break`` or ``continue`` in the same body;
* assignments to names that nothing kept reads (unused variables and constants), expression statements that call
  nothing (a line of numbers), ``assert`` of a constantly true condition, ``pass``, ``global`` and ``nonlocal``.

Names are matched by name alone, not by scope, and reading an attribute (``self.helper``) counts as using every
definition of that name: what is left out is surely unused, what is kept may not be. The tree is walked without
recursion, but for ``and``/``or`` nesting, which needs parentheses (Python allows 200 levels); a file Python
cannot parse (a syntax error, absurd nesting) keeps every line.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass

from grader.sandbox.imports import parsed

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue)  # what follows one in its body never runs
EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)  # an expression statement without any computes nothing
LEAVES = frozenset(type_ for base in (ast.stmt, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
                   for type_ in base.__subclasses__())  # nodes of no expression's (a statement's own, or nothing)
NOTHING = (ast.Pass, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)
PYTORCH_HOOKS = frozenset({"forward", "backward", "setup_context", "extra_repr"})  # methods torch calls itself


@dataclass(eq=False)
class _Statement:
    """One statement of the file and what liveness needs of it."""

    node: ast.stmt
    scope: _Statement | None  # the function or class whose code it is (None: the module's)
    parent: _Statement | None  # the statement whose body holds it (None: the module)
    kind: str  # definition, assignment (to plain names), block (if, for, with, ...), effect, nothing, unreachable
    defines: frozenset[str]
    uses: frozenset[str]  # names read and attributes named in its own expressions (a block's: its header's)
    live: bool = False


def defined_names(source: str) -> frozenset[str]:
    """The names of every function, method and class ``source`` defines (a stub's: the exercise's contract)."""
    tree = parsed(source)
    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, DEFINITIONS)) if tree else frozenset()


def unused_rows(source: str, required: frozenset[str] = frozenset()) -> frozenset[int]:
    """The line numbers of ``source`` that hold only code nothing runs or uses (see the module's docstring), with
    the functions, classes and methods named in ``required`` kept (without any: every public one)."""
    tree = parsed(source)
    if tree is None:
        return frozenset()
    statements = _statements(tree)
    if not required:
        required = frozenset(s.node.name for s in statements if s.kind == "definition"
                             and (s.scope is None or isinstance(s.scope.node, ast.ClassDef))
                             and not s.node.name.startswith("_"))
    _mark_live(statements, required)
    rows: set[int] = set()
    for statement in statements:
        if not statement.live:
            node = statement.node
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
            rows.update(range(first, node.end_lineno + 1))
    rows.difference_update(statement.node.lineno for statement in statements if statement.live)
    return frozenset(rows)


def _statements(tree: ast.Module) -> list[_Statement]:
    """Every statement of ``tree``, the bodies that cannot run included (as ``unreachable``, their own statements
    left out: their lines are the unreachable one's)."""
    constants = _constants(tree)
    found: list[_Statement] = []
    pending: list[tuple[list[ast.stmt], _Statement | None, _Statement | None, bool]] = [(tree.body, None, None, True)]
    while pending:
        body, scope, parent, reachable = pending.pop()
        for node in body:
            if not reachable:
                found.append(_Statement(node, scope, parent, "unreachable", frozenset(), frozenset()))
                continue
            statement = _Statement(node, scope, parent, *_role(node, constants))
            found.append(statement)
            inner = statement if statement.kind == "definition" else scope
            pending += [(branch, inner, statement, runs) for branch, runs in _bodies(node, constants)]
            reachable = not isinstance(node, JUMPS)
    return found


def _bodies(node: ast.stmt, constants: dict[str, bool]) -> list[tuple[list[ast.stmt], bool]]:
    """The bodies of statements ``node`` holds, each with whether it can run."""
    if isinstance(node, (ast.If, ast.While)):
        truth = _truth(node.test, constants)
        return [(node.body, truth is not False), (node.orelse, truth is not True or isinstance(node, ast.While))]
    bodies = [getattr(node, field) for field in ("body", "orelse", "finalbody") if hasattr(node, field)]
    bodies += [clause.body for clause in [*getattr(node, "handlers", ()), *getattr(node, "cases", ())]]
    return [(body, True) for body in bodies]


def _role(node: ast.stmt, constants: dict[str, bool]) -> tuple[str, frozenset[str], frozenset[str]]:
    """What ``node`` is to liveness: its kind, the names it assigns or defines, and the names it uses."""
    uses, walrus, effect = _expressions(node)
    if isinstance(node, DEFINITIONS):
        return "definition", frozenset([node.name]), uses
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None:  # `x: int`, an annotation alone
            return "nothing", frozenset(), frozenset()
        if all(_plain(target) for target in targets):
            stored = frozenset(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            return "assignment", stored | walrus, uses
        return "effect", frozenset(), uses  # an attribute or an item is assigned: state that lives on
    if isinstance(node, ast.Expr) and not effect:
        return ("assignment", walrus, uses) if walrus else ("nothing", frozenset(), frozenset())
    if isinstance(node, NOTHING) or isinstance(node, ast.Assert) and _truth(node.test, constants) is True:
        return "nothing", frozenset(), frozenset()
    if hasattr(node, "body"):
        return "block", walrus, uses
    return "effect", walrus, uses  # return, raise, assert, del, break, continue, a call: and anything newer


def _plain(target: ast.expr) -> bool:
    """Whether an assignment target binds names only (``x``, ``a, *b``), not an attribute or an item."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_plain(element) for element in target.elts)
    return isinstance(target, ast.Name) or isinstance(target, ast.Starred) and _plain(target.value)


def _expressions(node: ast.stmt) -> tuple[frozenset[str], frozenset[str], bool]:
    """What ``node``'s own expressions (not the statements of its bodies) do: the names they read and the
    attributes they name, the names they assign with ``:=``, and whether they call anything."""
    names, walrus, effect = set(), set(), False
    pending = [node]
    while pending:
        current = pending.pop()
        for field in current._fields:  # ast.iter_child_nodes, without a generator's cost
            value = getattr(current, field, None)
            for child in value if type(value) is list else (value,):
                kind = type(child)
                if kind is ast.Name:
                    if type(child.ctx) is not ast.Store:
                        names.add(child.id)
                    continue
                if kind in LEAVES or not isinstance(child, ast.AST):
                    continue
                if kind is ast.Attribute:
                    names.add(child.attr)
                elif kind is ast.NamedExpr:
                    walrus.add(child.target.id)
                elif kind in EFFECTS:
                    effect = True
                pending.append(child)
    return frozenset(names), frozenset(walrus), effect


def _constants(tree: ast.Module) -> dict[str, bool]:
    """Module constants: names bound once in the whole file, at its top level, to a value of known truth (a
    literal, ``not``, ``and``, ``or`` of literals); each with its truth."""
    candidates = {node.targets[0].id: truth for node in tree.body
                  if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and (truth := _truth(node.value, {})) is not None}
    if not candidates:
        return {}
    bindings: defaultdict[str, int] = defaultdict(int)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bindings[node.id] += 1
        elif isinstance(node, (*DEFINITIONS, ast.MatchAs, ast.MatchStar, ast.ExceptHandler)) and node.name:
            bindings[node.name] += 1
        elif isinstance(node, ast.arg):
            bindings[node.arg] += 1
        elif isinstance(node, ast.alias):
            bindings[node.asname or node.name] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bindings[name] += 1
    return {name: truth for name, truth in candidates.items() if bindings[name] == 1}


def _truth(test: ast.expr, constants: dict[str, bool]) -> bool | None:
    """Whether ``test`` is always true or always false, as far as constants say (None: it depends)."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):  # `not not ... x` needs no parentheses
        test, negated = test.operand, not negated
    truth = None
    if isinstance(test, ast.Constant):
        truth = bool(test.value)
    elif isinstance(test, ast.Name):
        truth = constants.get(test.id)
    elif isinstance(test, ast.Compare) and _is_main_test(test):
        truth = False  # the grader imports the module: `if __name__ == "__main__":` never runs
    elif isinstance(test, ast.BoolOp):
        decisive = isinstance(test.op, ast.Or)  # one true operand makes an `or` true, one false an `and` false
        truths = [_truth(value, constants) for value in test.values]
        truth = decisive if decisive in truths else (not decisive if None not in truths else None)
    return truth if truth is None else truth != negated


def _is_main_test(test: ast.Compare) -> bool:
    sides = [test.left, *test.comparators]
    return (len(sides) == 2 and isinstance(test.ops[0], ast.Eq)
            and {ast.dump(side) for side in sides} == {ast.dump(ast.Name("__name__", ast.Load())),
                                                       ast.dump(ast.Constant("__main__"))})


def _called_implicitly(method: str) -> bool:
    return method.startswith("__") and method.endswith("__") or method in PYTORCH_HOOKS


def _mark_live(statements: list[_Statement], required: frozenset[str]) -> None:
    """Set ``live`` on the statements that run and matter: from the module's effects and the ``required`` names,
    each live statement makes live the names it uses, the statements that define them (where their code runs), the
    blocks around it and, for a function or class, the effects of its body."""
    definers: defaultdict[str, list[_Statement]] = defaultdict(list)
    in_scope: defaultdict[_Statement | None, list[_Statement]] = defaultdict(list)
    for statement in statements:
        if statement.kind != "unreachable":
            for name in statement.defines:
                definers[name].append(statement)
            in_scope[statement.scope].append(statement)
    live_names: set[str] = set()
    names = list(required)
    work: list[_Statement] = []

    def wake(scope: _Statement | None) -> None:
        """The statements of ``scope``, now running, that are live by themselves or by a live name."""
        in_class = scope is not None and isinstance(scope.node, ast.ClassDef)
        work.extend(s for s in in_scope[scope] if s.kind == "effect" or not s.defines.isdisjoint(live_names)
                    or in_class and any(_called_implicitly(name) for name in s.defines))

    wake(None)
    while work or names:
        if work:
            statement = work.pop()
            if statement.live:
                continue
            statement.live = True
            names += statement.uses
            if statement.parent is not None and statement.parent is not statement.scope:
                work.append(statement.parent)  # the block around it runs
            if statement.kind == "definition":
                wake(statement)
            continue
        name = names.pop()
        if name not in live_names:
            live_names.add(name)
            work += [s for s in definers[name] if s.scope is None or s.scope.live]
