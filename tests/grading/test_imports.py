"""The import rule (grader/sandbox/imports.py), read from a file's source without running it."""
from grader.sandbox.imports import forbidden, forbidden_through, imports_of

MODULES = ("scores", "softmax", "context")


def judged(source: str, module: str = "softmax") -> list[str]:
    return [name for name, _ in forbidden(imports_of(source), module, MODULES)]


def test_torch_math_and_their_submodules_are_allowed():
    """torch, math and their submodules, in every form of import, break no rule."""
    source = ("import torch\nimport torch.nn.functional as F\nfrom torch import nn\nfrom torch.nn import functional\n"
              "import math\nfrom math import sqrt\n")
    assert judged(source) == []


def test_a_future_statement_is_no_import():
    """`from __future__ import annotations` is a directive to the compiler, allowed in every exercise."""
    assert judged("from __future__ import annotations\nimport torch\n") == []


def test_other_modules_are_named_with_their_line():
    """numpy, os and __import__ are forbidden, each named at its line."""
    found = forbidden(imports_of("import torch\nimport numpy as np\nfrom os import path\nx = __import__('sys')\n"),
                      "softmax", MODULES)
    assert found == [("numpy", 2), ("os", 3), ("__import__", 4)]


def test_only_earlier_exercises_may_be_imported_relatively():
    """softmax may import scores (earlier) with a relative import, never context (later)."""
    assert judged("from .scores import dot\n") == []
    assert judged("from . import scores\n") == []
    assert judged("from .context import attention_weights\n") == [".context"]


def test_imports_past_what_is_read_break_the_rule():
    """A hundred allowed imports are judged as such; past them, what is not read breaks the rule, saying so: an
    `import os` after a line of 100 `math` passed (red team)."""
    hundred = "import " + ", ".join(["math"] * 100) + "\n"
    assert forbidden(imports_of(hundred), "softmax", MODULES) == []
    bad = forbidden(imports_of(hundred + "import os\n"), "softmax", MODULES)
    assert bad == [("more than 99 modules, past which nothing is read", 1)]
    assert len(imports_of(hundred * 3)) == 100


def test_a_private_part_of_torch_breaks_the_rule_however_it_is_reached():
    """torch._C (whose DisableTorchFunction hides calls from the grader's watch: red team 17), reached by an import, an
    attribute of a name bound to torch or getattr, breaks the rule at its line, and so does any private name the file
    does not define (x._version); dunders such as __version__ and the file's own private attributes do not."""
    source = ("import torch\nimport torch.nn.functional as F\nfrom torch import nn, _C\nfrom torch._C import X\n"
              "def dot(a, b):\n    with torch._C.DisableTorchFunction():\n        return torch.dot(a, b)\n"
              "g = getattr(torch, '_C')\nh = F._canonical_mask\nv = torch.__version__\nw = nn.Module.__init__\n"
              "class A(nn.Module):\n    def f(self, x):\n        self._mask = x\n        return self._mask, x._version\n")
    assert forbidden(imports_of(source), "scores", MODULES) == [
        ("torch._C", 3), ("torch._C", 4), ("torch._C", 6), ("torch._C", 8), ("torch.nn.functional._canonical_mask", 9),
        ("x._version", 15)]


def test_what_hides_calls_from_the_checks_breaks_the_rule_by_its_public_names_too():
    """torch.DisableTorchFunction (public, the same as torch._C's), torch.jit, torch.compile, torch.overrides, a
    module's __dict__ (vars, __getattribute__) and getattr used as a value break the rule (review 11: the public name
    scored full marks past the private one's refusal); getattr of a public name and dunders such as __version__ do
    not."""
    source = ("import torch\nimport torch.jit\nfrom torch import DisableTorchFunction\n"
              "with torch.DisableTorchFunction():\n    pass\nb = torch.__dict__['_C']\nc = vars(torch)\n"
              "d = torch.__getattribute__('dot')\ng = getattr\nh = torch.compile\n"
              "ok = getattr(torch, 'softmax'), torch.__version__\n")
    assert forbidden(imports_of(source), "scores", MODULES) == [
        ("torch.jit", 2), ("torch.DisableTorchFunction", 3), ("torch.DisableTorchFunction", 4), ("torch.__dict__", 6),
        ("vars", 7), ("torch.__getattribute__", 8), ("getattr as a value", 9), ("torch.compile", 10)]


def test_a_module_outside_torch_reached_through_torch_breaks_the_rule():
    """torch.sys (whose modules hold torch._C: red team 18), torch.os, torch.nn.functional's numpy are imports of what
    the rule refuses, reached through torch; torch's own functions named like a module of Python's (torch.trace,
    torch.select) are not."""
    source = ("import torch\nimport torch.nn.functional as F\nx = torch.sys.modules['torch._C']\ny = F.np.zeros(2)\n"
              "z = torch.trace(torch.eye(2)), torch.select\nfrom torch import os\n")
    assert forbidden(imports_of(source), "scores", MODULES) == [("torch.sys", 3), ("torch.nn.functional.np", 4),
                                                                ("torch.os", 6)]


def test_pythons_own_ways_around_the_rule_break_it_wherever_they_are():
    """exec, eval, __builtins__, globals, a module passed around as a value or aliased, a function's __globals__, a
    class's __subclasses__, a generator's frame and getattr with a name the rule cannot read break the rule at their
    line (red team 19: each reached the grader's watch past it, and exec("import os") passed as no import)."""
    source = ("import torch\nimport torch.nn.functional as F\nexec('import os')\nf = eval('__import__')\n"
              "b = __builtins__['__imp' + 'ort__']\nt = torch\nu = t.utils\nv = u._python_dispatch\n"
              "g = torch.nn.Module.__init__.__globals__['torch']\nk = type(g).__mro__[-1].__subclasses__()\n"
              "frame = (i for i in ()).gi_frame.f_back\nh = getattr(F, 'sof' + 'tmax')\nglobals()\n"
              "m = F.torch\ndef run(module):\n    return module.sys\n")
    assert forbidden(imports_of(source), "scores", MODULES) == [
        ("exec", 3), ("eval", 4), ("__builtins__", 5), ("torch as a value", 6), ("torch.utils._python_dispatch", 8),
        ("torch.nn.Module.__init__.__globals__", 9), (".__mro__", 10), (".__subclasses__", 10), (".gi_frame", 11),
        ("getattr with a computed name", 12), ("globals", 13), ("torch.nn.functional.torch", 14), ("module.sys", 16)]


def test_correct_styles_of_other_projects_break_no_rule():
    """The forms correct code takes break no rule: getattr over a tuple of names (a loop or a comprehension), a method's
    private names of its self (its own, a parent module's: self._modules, super()._split, a classmethod's cls._count),
    self.__class__.__name__, super().__init__(), a tensor's .numpy(), getattr and hasattr of public names (nanoGPT's
    hasattr(F, 'scaled_dot_product_attention'))."""
    source = ("import torch\nfrom torch import nn\nimport torch.nn.functional as F\nfrom . import scores as sc\n"
              "class A(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
              "        self.register_buffer('_tril', torch.ones(n, n).tril())\n"
              "        self.flash = hasattr(F, 'scaled_dot_product_attention')\n"
              "    def _split(self, x):\n        return x, len(self._modules), self.__class__.__name__, sc.dot(x, x)\n"
              "    @classmethod\n    def made(cls):\n        return cls._count\n"
              "class B(A):\n    def _split(self, x):\n        return super()._split(x), B._merge(x), type(self)._k\n"
              "    def __init__(self, names=('W_query',)):\n        for i, name in enumerate(names):\n"
              "            setattr(self, name, i)\n            setattr(self, f'head_{i}', i)\n"
              "    def __repr__(self):\n        return super().__repr__()\n"
              "    @staticmethod\n    def _merge(x):\n        return x\n"
              "    def forward(self, x):\n        return self._split(x), self._tril, x.detach().numpy()\n"
              "def copy(src, dst):\n    for name in ('W_query', 'W_key'):\n        setattr(dst, name, getattr(src, name))\n"
              "    return [getattr(src, n).bias for n in ('W_query', 'W_key')]\n")
    assert forbidden(imports_of(source), "qkv", ("scores", "qkv")) == []


def test_a_name_the_rule_cannot_read_breaks_it_wherever_it_comes_from():
    """getattr with a name it cannot read breaks the rule, on self too (review 12: `def part(self, n): return
    getattr(self, n)` called with a torch module reached torch._C), and so does a loop's name read outside its loop or
    assigned elsewhere too (a loop anywhere made the name readable everywhere); a private name of anything but self or
    an earlier exercise breaks it, whatever the file defines (decoys: `_C = None`)."""
    source = ("import torch\ndef part(self, n):\n    return getattr(self, n)\n"
              "for name in ('W_query',):\n    pass\ndef g(obj):\n    return getattr(obj, name)\n"
              "for key in ('bias',):\n    key = '_C'\n    getattr(torch, key)\n"
              "_C = None\nclass A:\n    _C = None\n    def f(self, m):\n        return m._C, self._C\n"
              "def h(self, i):\n    return getattr(self, f'head_{i}')\n"
              "for name in ('W_query',):\n    f = lambda name: getattr(torch, name)\n")
    assert forbidden(imports_of(source), "scores", MODULES) == [
        ("getattr with a computed name", 3), ("getattr with a computed name", 7), ("getattr with a computed name", 10),
        ("m._C", 15), ("getattr with a computed name", 17), ("getattr with a computed name", 19)]


def test_a_tensor_subclass_and_a_self_that_is_no_methods_break_the_rule():
    """A tensor subclass's __torch_function__ (defined, or named as a string), which runs unwatched, breaks the rule;
    so do private names of a `self` that is no method's first parameter (a plain function's, a lambda's, one assigned
    or looped over), and a private name past the first of a method's self (self._C._pop...: red team 20)."""
    source = ("import torch\nclass Door(torch.Tensor):\n    @classmethod\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
              "        return f\nD = type('D', (torch.Tensor,), {'__torch_dispatch__': None})\n"
              "def h(self):\n    return self._C\nk = lambda self: self._C\nclass M:\n    def f(self):\n"
              "        return self._C._pop_torch_function_stack()\n    def g(self):\n        self = self.m\n"
              "        return self._C\n")
    assert forbidden(imports_of(source), "scores", MODULES) == [
        ("__torch_function__ defined", 4), ("__torch_dispatch__", 6), ("self._C", 8), ("self._C", 9),
        ("self._C._pop_torch_function_stack", 12), ("self._C", 15)]


def test_a_dunder_assigned_breaks_the_rule():
    """Assigning a dunder (written out, or with setattr) breaks the rule: the watch names torch's functions by their
    __name__, so a banned function renamed was a call it missed (review 13)."""
    source = ("import torch\nimport torch.nn.functional as F\nF.softmax.__name__ = 'x'\n"
              "setattr(torch.softmax, '__qualname__', 'y')\nclass M(torch.nn.Module):\n    __call__ = torch.nn.Module.__call__\n"
              "    def f(self):\n        return type(self).__name__\n")
    assert forbidden(imports_of(source), "scores", MODULES) == [("__name__ assigned", 3), ("__qualname__ assigned", 4)]


def test_an_earlier_exercise_that_breaks_the_rule_breaks_it_for_those_that_import_it():
    """A later exercise that imports an earlier one breaking the rule breaks it too, through a chain of them: an escape
    written in one file and used in another is judged where it is used (red team 20)."""
    files = {"scores": "import torch\npop = torch._C._pop_torch_function_stack\n",
             "softmax": "from .scores import pop\n", "context": "from . import softmax\nimport torch\n"}
    read = {module: imports_of(source) for module, source in files.items()}.get
    assert forbidden_through(read, "context", MODULES) == [
        (".softmax breaking it with .scores breaking it with torch._C at its line 2 at its line 1", 1)]
    assert forbidden_through(read, "softmax", MODULES) == [(".scores breaking it with torch._C at its line 2", 1)]
    files["scores"] = "import torch\ndef dot(a, b):\n    return (a * b).sum()\n"
    read = {module: imports_of(source) for module, source in files.items()}.get
    assert forbidden_through(read, "context", MODULES) == []
