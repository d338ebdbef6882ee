"""Copies padded as plagiarists pad one: code that changes nothing the file computes, added so that the copy looks
less like its original. The similarity check must still see the copy (tests/grading/test_similarity.py,
benchmarks/similarity.py); ``PADDINGS`` names each kind, ``padded(source, kind, salt)`` applies one.

Each padding keeps the rest of the file verbatim: lines are inserted, never changed, so that any difference the
check sees is the padding's. Combine with ``disguise`` for renamed and reordered copies.
"""
import ast
import random

from disguise import disguise

NUMBERS = 60  # numbers in the unused line of numbers (about the length of the padding line)
HELPERS = (  # plausible code that nothing calls, as a student might have left it (or a copier added it)
    '''def _normalized_rows(weights, eps=1e-12):
    """Rows rescaled to sum to one, for checking the weights."""
    totals = weights.sum(dim=-1, keepdim=True)
    totals = totals.clamp_min(eps)
    scaled = weights / totals
    if not torch.isfinite(scaled).all():
        raise ValueError("weights are not finite")
    return scaled
''',
    '''def _check_shapes(queries, keys, values):
    """Raise when the three inputs cannot attend to each other."""
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries {tuple(queries.shape)} and keys {tuple(keys.shape)} differ in width")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError("one value per key is needed")
    if queries.dtype != keys.dtype:
        raise ValueError("queries and keys differ in dtype")
    return queries.shape[-2], keys.shape[-2]
''',
    '''def _causal_bias(size, device=None, dtype=torch.float32):
    """An additive mask: 0 where a position may look, -inf above the diagonal."""
    upper = torch.ones(size, size, dtype=torch.bool, device=device).triu(1)
    bias = torch.zeros(size, size, dtype=dtype, device=device)
    bias = bias.masked_fill(upper, float("-inf"))
    return bias
''',
)


TRACE = '''TRACE = []  # shapes are printed while this holds something


def _trace(*values):
    """Print the shape and dtype of each value while TRACE holds something; return them unchanged."""
    if not TRACE:
        return values
    for value in values:
        shape = tuple(getattr(value, "shape", ()))
        kind = getattr(value, "dtype", type(value).__name__)
        print(f"{shape} {kind}")
    return values
'''


def _statements_in_functions(tree: ast.Module) -> list[ast.stmt]:
    """The simple statements of every function body (not compound ones: what follows them stays their sibling)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [s for s in ast.walk(node) if isinstance(s, ast.stmt) and s is not node
                      and not hasattr(s, "body") and not isinstance(s, (ast.Return, ast.Raise))]
    return found


def _insert_after_statements(source: str, make_lines) -> str:
    """``source`` with the lines ``make_lines(statement)`` returns inserted after each simple statement of a
    function body that has its lines to itself, at that statement's indentation."""
    lines = source.splitlines()
    tree = ast.parse(source)
    alone = [s for s in _statements_in_functions(tree) if not lines[s.lineno - 1][:s.col_offset].strip()
             and not lines[s.end_lineno - 1][s.end_col_offset:].strip().startswith(";")]
    for statement in sorted(alone, key=lambda s: -s.end_lineno):
        indent = " " * statement.col_offset
        lines[statement.end_lineno:statement.end_lineno] = [indent + line for line in make_lines(statement)]
    return "\n".join(lines) + "\n"


def _after_imports(source: str, block: str) -> str:
    """``source`` with ``block`` inserted after its last top-level import."""
    tree = ast.parse(source)
    imports = [node.end_lineno for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    lines = source.splitlines()
    at = max(imports, default=0)
    return "\n".join([*lines[:at], "", *block.splitlines(), "", *lines[at:]]) + "\n"


def numbers_line(source: str, salt: str) -> str:
    """One unused line of numbers per file."""
    rng = random.Random(salt)
    return _after_imports(source, f"_TABLE = {[rng.randrange(1000) for _ in range(NUMBERS)]}")


def dead_lines(source: str, salt: str) -> str:
    """An unused assignment of numbers after every statement of every function."""
    rng = random.Random(salt)
    return _insert_after_statements(
        source, lambda statement: [f"_pad{statement.lineno} = {rng.randrange(100)} * {rng.randrange(100)} + 1"])


def dead_helper(source: str, salt: str) -> str:
    """A helper function of plausible code (8 lines) that nothing calls."""
    return _after_imports(source, HELPERS[random.Random(salt).randrange(len(HELPERS))])


def debug_blocks(source: str, salt: str) -> str:
    """``_DEBUG = False`` at the top, and after every assignment in a function an ``if _DEBUG:`` block that prints
    and checks what was assigned."""
    def block(statement):
        if not isinstance(statement, ast.Assign) or not isinstance(statement.targets[0], ast.Name):
            return []
        name = statement.targets[0].id
        return ["if _DEBUG:", f"    print('{name}', getattr({name}, 'shape', {name}))",
                f"    assert {name} is not None, '{name} is missing'"]
    return _insert_after_statements(_after_imports(source, "_DEBUG = False"), block)


def running_helper(source: str, salt: str) -> str:
    """A helper that runs, so it is no dead code: every function starts by calling it on its arguments."""
    tree = ast.parse(source)
    lines = source.splitlines()
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and node.name != "__init__" and lines[node.body[0].lineno - 1][:node.body[0].col_offset].isspace()]
    for function in sorted(functions, key=lambda f: -f.body[0].lineno):
        first = function.body[0]
        arguments = ", ".join(a.arg for a in function.args.args if a.arg != "self")
        lines[first.lineno - 1:first.lineno - 1] = [" " * first.col_offset + f"_trace({arguments})"]
    return _after_imports("\n".join(lines) + "\n", TRACE)


def everything(source: str, salt: str) -> str:
    """Every padding above at once."""
    for pad in (numbers_line, dead_lines, dead_helper, debug_blocks, running_helper):
        source = pad(source, salt)
    return source


PADDINGS = {"numbers_line": numbers_line, "dead_lines": dead_lines, "dead_helper": dead_helper,
            "debug_blocks": debug_blocks, "running_helper": running_helper, "everything": everything}


def padded(source: str, kind: str, salt: str = "x") -> str:
    """``source`` padded the way ``kind`` names (a key of ``PADDINGS``, or ``disguised+<key>`` for the padded copy
    renamed, reordered and reformatted by ``disguise``)."""
    if kind.startswith("disguised+"):
        return disguise(PADDINGS[kind.removeprefix("disguised+")](source, salt), salt)
    return PADDINGS[kind](source, salt)
