"""A copy disguised as plagiarists disguise one: every local name and parameter renamed, the functions and classes in
reverse order, comments and docstrings replaced, the whole reformatted (``ast.unparse``). The similarity check must
still see the copy (tests/grading/test_similarity.py, benchmarks/similarity.py)."""
import ast


def disguise(source: str, salt: str = "x") -> str:
    """``source`` with its local names renamed (``name`` -> ``salt_<n>``), top-level definitions reversed, docstrings
    replaced and formatting changed; the exercise's own function and class names are kept (a copy is never run)."""
    tree = ast.parse(source)
    local = sorted({node.id for node in ast.walk(tree)
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
                   | {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg) and node.arg != "self"}
                   | {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                      and not any(node in parent.body for parent in ast.walk(tree)
                                  if isinstance(parent, (ast.Module, ast.ClassDef)))})
    names = {name: f"{salt}_{number}" for number, name in enumerate(local)}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            node.id = names.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = names.get(node.arg, node.arg)
            return node

        def visit_FunctionDef(self, node):
            self.generic_visit(node)
            node.name = names.get(node.name, node.name)
            body = node.body[1:] if _docstring(node) else node.body
            node.body = [ast.Expr(ast.Constant(f"My own {node.name}, written by {salt}.")), *body]
            return node

    tree = Rename().visit(tree)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [node for node in tree.body if node not in imports and not _is_docstring(node)]
    tree.body = [*imports, *reversed(rest)]
    return f"# {salt}'s homework\n" + ast.unparse(ast.fix_missing_locations(tree)).replace("    ", "  ") + "\n"


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _docstring(node) -> bool:
    return bool(node.body) and _is_docstring(node.body[0])
