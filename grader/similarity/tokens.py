"""Normalized token streams of one exercise file, per function, without running or importing anything.

Read with ``tokenize`` (no recursion, so deep nesting costs nothing; a syntax error ends the stream where the
tokenizer stops); only which lines are unused comes from the syntax tree (``unused``). What a copy may change without
changing the code is normalized away:

* names of variables, parameters, functions, classes and of attributes the file assigns become ``N``/``A``; Python's
  keywords and builtins, the imported modules (``import torch as t``: ``t`` reads ``torch``) and the attributes the
  file does not define (``.transpose``, ``.exp``: the library's API) are kept;
* comments, docstrings, blank lines, line breaks inside brackets, spacing and parentheses (redundant ones are
  formatting too) disappear; every string literal (adjacent ones: one literal) is ``S``;
  indentation becomes ``{``/``}`` relative to the enclosing function, so moving code in or out of a class changes
  nothing;
* imports are dropped (the course dictates them), and so is every logical line that, normalized, is a line of the
  stub students start from (signatures, ``raise NotImplementedError(...)``, ``super().__init__()``), and code that
  nothing runs or uses (``unused``: padding such as an unused helper or ``if _DEBUG:`` blocks);
* each top-level function, class body and method is its own unit, so reordering them changes no fingerprint.
"""
from __future__ import annotations

import builtins
import io
import keyword
import tokenize
import unicodedata
from dataclasses import dataclass, field

from grader.similarity.unused import unused_rows

MAX_SOURCE_CHARS = 100_000  # characters of a file read (about 2,000 lines; a solution here is under 200)
MAX_TOKENS = 20_000  # tokens of a file normalized
KEPT_NAMES = frozenset(keyword.kwlist) | frozenset(name for name in dir(builtins) if not name.startswith("_"))
ASSIGNMENTS = frozenset({"=", "+=", "-=", "*=", "/=", "//=", "%=", "@=", "**=", "&=", "|=", "^=", ">>=", "<<=", ":="})
PARENTHESES = frozenset("()")  # dropped: redundant ones are formatting, the others add nothing the names do not say
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+: f-strings come as several tokens
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)
MODULE_UNIT = "(module)"


@dataclass
class Unit:
    """A function, a class body or the module's other statements, as normalized symbols with their source lines."""

    name: str
    symbols: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


@dataclass
class Normalized:
    units: list[Unit]
    note: str | None = None  # why only part of the file was read, for the report


@dataclass
class _Line:
    """A logical line: its indentation depth and its tokens (type, text, row)."""

    depth: int
    tokens: list[tuple[int, str, int]]


def readable(text: str) -> tuple[str, str | None]:
    """The part of ``text`` that is compared, as Python reads it (without a UTF-8 byte order mark), and a note when
    the cap on characters cut it."""
    text = text.removeprefix("\ufeff")
    if len(text) > MAX_SOURCE_CHARS:
        return text[:MAX_SOURCE_CHARS], f"only the first {MAX_SOURCE_CHARS:,} characters compared"
    return text, None


def logical_lines(text: str) -> tuple[list[_Line], str | None]:
    """The logical lines of ``readable(text)`` (comments and blank lines dropped, f-strings as one STRING), and a
    note when the tokenizer stopped early or a cap cut the file."""
    text, note = readable(text)
    lines: list[_Line] = []
    current: list[tuple[int, str, int]] = []
    depth = start_depth = fstrings = count = 0
    end = None  # where the last token kept ends
    try:
        # newline=None: lines end at \r too, as Python reads source (a file of \r alone is not one comment line)
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            kind = token.type
            if fstrings:  # inside an f-string (3.12+): its parts are one STRING
                fstrings += (kind == _FSTRING_START) - (kind == _FSTRING_END)
                continue
            if kind == tokenize.ERRORTOKEN and token.string.isspace():  # spaces before a character it splits off
                continue
            if kind == tokenize.INDENT:
                depth += 1
            elif kind == tokenize.DEDENT:
                depth -= 1
            elif kind == tokenize.NEWLINE:
                if current:
                    lines.append(_Line(start_depth, current))
                current = []
            elif kind not in SKIPPED:
                count += 1
                if count > MAX_TOKENS:
                    note = f"only the first {MAX_TOKENS:,} tokens compared"
                    break
                if kind == _FSTRING_START:
                    fstrings, kind = 1, tokenize.STRING
                if not current:
                    start_depth = depth
                string = token.string
                # Names as Python reads them (PEP 3131): NFKC-normalized, so that 𝐭𝐨𝐫𝐜𝐡 is torch here too, and whole:
                # `tokenize` splits off identifier characters outside \w (℘, ·) as error tokens
                if kind == tokenize.NAME or kind == tokenize.ERRORTOKEN and ("_" + string).isidentifier():
                    if current and current[-1][0] == tokenize.NAME and end == token.start:
                        string = current.pop()[1] + string
                    kind, string = tokenize.NAME, unicodedata.normalize("NFKC", string)
                current.append((kind, string, token.start[0]))
                end = token.end
    except (tokenize.TokenError, SyntaxError) as error:  # IndentationError is a SyntaxError
        line = getattr(error, "lineno", None) or (error.args[1][0] if len(error.args) > 1 else "?")
        note = f"read up to line {line}: the tokenizer stopped ({type(error).__name__})"
    if current:
        lines.append(_Line(start_depth, current))
    return lines, note


def _imported_names(tokens: list[tuple[int, str, int]]) -> dict[str, str]:
    """``import a.b as c`` / ``from a import b as c``: each local name -> the name it stands for (``c`` -> ``b``)."""
    words = [text for kind, text, _ in tokens if kind == tokenize.NAME or text in (",", ".")]
    from_import = words[0] == "from"
    words = words[words.index("import") + 1:] if "import" in words else []
    names, item = {}, []
    for word in [*words, ","]:
        if word != ",":
            item.append(word)
            continue
        alias = item[-1] if "as" in item[:-1] else None
        dotted = [w for w in (item[:item.index("as")] if alias else item) if w != "."]
        if dotted:
            local = alias or (dotted[-1] if from_import else dotted[0])
            names[local] = dotted[-1] if alias or from_import else dotted[0]
        item = []
    return names


def _defined_attributes(lines: list[_Line]) -> set[str]:
    """Names the file itself gives meaning to as attributes: assigned (``self.w = ...``, ``a.b, c.d = ...``) or
    defined (``def name``, ``class Name``), so that renaming them changes nothing."""
    defined = set()
    for line in lines:
        tokens, depth = line.tokens, 0
        if tokens[0][1] in ("def", "class") and len(tokens) > 1:
            defined.add(tokens[1][1])
        targets_end = 0
        for index, (_, text, _) in enumerate(tokens):
            depth += (text in "([{") - (text in ")]}") if len(text) == 1 else 0
            if depth == 0 and text in ASSIGNMENTS:
                targets_end = index
        defined.update(tokens[i + 1][1] for i in range(targets_end) if tokens[i][1] == "." and i + 1 < targets_end)
    return defined


def _symbols(tokens: list[tuple[int, str, int]], imported: dict[str, str], attributes: set[str]
             ) -> tuple[list[str], list[int]]:
    """The normalized symbols of a logical line and the source line of each."""
    symbols: list[str] = []
    rows: list[int] = []
    for kind, text, row in tokens:
        if kind == tokenize.STRING and symbols and symbols[-1] == "S" or text in PARENTHESES:
            continue
        rows.append(row)
        if kind == tokenize.NAME:
            if symbols and symbols[-1] == ".":
                symbols.append("A" if text in attributes else text)
            else:
                symbols.append(imported.get(text) or (text if text in KEPT_NAMES else "N"))
        elif kind == tokenize.STRING:
            symbols.append("S")
        elif kind == tokenize.NUMBER:
            symbols.append(text.lower().replace("_", ""))
        else:
            symbols.append(text)
    return symbols, rows


def _is_import(line: _Line) -> bool:
    return line.tokens[0][1] in ("import", "from") and line.tokens[0][0] == tokenize.NAME


def _is_docstring(line: _Line) -> bool:
    return all(kind == tokenize.STRING for kind, _, _ in line.tokens)


def stub_lines(stub: str) -> frozenset[tuple[str, ...]]:
    """The normalized logical lines of a stub: what every student is given and nobody wrote."""
    lines, _ = logical_lines(stub)
    imported = _imports(lines)
    attributes = _defined_attributes(lines)
    return frozenset(tuple(_symbols(line.tokens, imported, attributes)[0]) for line in lines
                     if not _is_import(line) and not _is_docstring(line))


def _imports(lines: list[_Line]) -> dict[str, str]:
    imported: dict[str, str] = {}
    for line in lines:
        if _is_import(line):
            imported.update(_imported_names(line.tokens))
    return imported


def normalize(text: str, stub: frozenset[tuple[str, ...]] = frozenset(),
              required: frozenset[str] = frozenset()) -> Normalized:
    """``text`` as normalized units (see the module's docstring); lines of ``stub`` (``stub_lines``) removed, and
    the code nothing runs or uses (``unused.unused_rows``, with the contract's names ``required``)."""
    lines, note = logical_lines(text)
    unused = unused_rows(readable(text)[0], required)
    imported = _imports(lines)
    attributes = _defined_attributes(lines)
    module = Unit(MODULE_UNIT)
    units, open_units = [module], []  # open_units: (header depth, unit, is a class) of the defs around this line
    previous_depth: dict[int, int] = {}  # id(unit) -> depth of its last kept line
    decorators: list[_Line] = []
    for line in lines:
        if _is_import(line) or _is_docstring(line) or line.tokens[0][2] in unused:
            continue
        while open_units and line.depth <= open_units[-1][0]:
            open_units.pop()
        if line.tokens[0][1] == "@":
            decorators.append(line)
            continue
        words = [text for _, text, _ in line.tokens[:3]]
        keyword_at = 1 if words[0] == "async" else 0
        container = open_units[-1] if open_units else (-1, module, True)
        if words[keyword_at:keyword_at + 1] in (["def"], ["class"]) and container[2] and len(words) > keyword_at + 1:
            name = words[keyword_at + 1]
            unit = Unit(name if container[1] is module else f"{container[1].name}.{name}")
            units.append(unit)
            open_units.append((line.depth, unit, words[keyword_at] == "class"))
            previous_depth[id(unit)] = line.depth
        else:
            unit = container[1]
        for kept in [*decorators, line]:
            symbols, rows = _symbols(kept.tokens, imported, attributes)
            if not symbols or tuple(symbols) in stub:  # a line of parentheses alone (``()``) says nothing
                continue
            step = kept.depth - previous_depth.setdefault(id(unit), kept.depth)
            unit.symbols += ["{" if step > 0 else "}"] * abs(step) + symbols + [";"]
            unit.lines += [rows[0]] * abs(step) + rows + [rows[-1]]
            previous_depth[id(unit)] = kept.depth
        decorators = []
    return Normalized([unit for unit in units if unit.symbols], note)
