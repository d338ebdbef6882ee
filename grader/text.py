"""Text from students, made safe for every format it is written into.

``clean`` is the one cleaner: any value becomes a str of valid Unicode (lone surrogates replaced by U+FFFD), without
terminal escape sequences, control, format (bidi overrides, zero-width) or non-characters, on one line (line breaks
and tabs become spaces) and at most ``limit`` characters long (cut with "…"). The other functions escape cleaned text
for one format each and are used by every writer of that format:

* ``markdown``: job summaries and feedback pages (no heading, link, image, HTML, emphasis or table cell can start);
* ``html``: feedback and summary pages;
* ``csv_cell``: gradebook cells (no spreadsheet formula);
* ``terminal``: rich output (a ``Text``, never parsed for markup or emoji);
* ``workflow_data`` / ``workflow_property``: GitHub workflow commands (annotations).

``student_id`` makes a file or folder name (or a roster's id) a clean student id that fits in a file name.

JSON (results.json, PrairieLearn, Classroom) and XML (JUnit, escaped by ElementTree) take ``clean`` text as it is:
it holds no character either format refuses.
"""
from __future__ import annotations

import hashlib
import html as _html
import re
import unicodedata

MAX_NAME = 100  # a student id, a file name, a title, a type name
MAX_MESSAGE = 2000  # a message, a note, a test's feedback
MAX_LINES = 10  # lines of a text that keeps its lines (an annotation's message)
MAX_ID_BYTES = 200  # a student id is part of file names (at most 255 bytes on most file systems)

_ESCAPE_SEQUENCE = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clear screen
                              r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC (titles, links), DCS, ...
                              r"|\x1b[ -/]*[0-~]?")  # any other escape
# A break and the spaces around it; a run of spaces is tried from its first character only (tried from each, a run of
# n spaces without a break cost n**2 steps: 0.5 s of the grading process per message of 8,000 spaces, red team 10).
_LINE_BREAK = re.compile(r"(?<!\s)\s*[\t\n\v\f\r\x1c-\x1f\x85\u2028\u2029]\s*")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def clean(value, limit: int = MAX_MESSAGE) -> str:
    """``value`` as one line of printable, valid Unicode of at most ``limit`` characters (cut with "…")."""
    text = value if isinstance(value, str) else "" if value is None else repr(value)
    text = text[:4 * limit + 64]  # the work below is bounded by the limit, not by what was sent
    text = _SURROGATE.sub("\ufffd", text)
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _LINE_BREAK.sub(" ", text)
    if not (text.isascii() and text.isprintable()):  # printable ASCII (most text) has nothing left to drop
        text = "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf") and not _noncharacter(c))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _noncharacter(c: str) -> bool:
    return "\ufdd0" <= c <= "\ufdef" or (ord(c) & 0xFFFE) == 0xFFFE


_MARKDOWN_INLINE = re.compile(r"[\\`*_\[\]~|$]")
_MARKDOWN_BLOCK_START = re.compile(r"^(?:[#+=\-]|\d+(?=[.)]))")
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(:)(?=//)|(?<=www)(\.)|(?<=[\w.+-])(@)(?=[\w-]+\.\w)")


def markdown(value, limit: int = MAX_MESSAGE, code: bool = False) -> str:
    """Cleaned text that GitHub-flavoured Markdown shows as it is, inside a line or at the start of a block: HTML and
    entities escaped, link, image, emphasis, code, math and table characters backslash-escaped, the edges' spaces
    dropped and a leading heading or list marker escaped, and URL, ``www.`` and e-mail autolinks broken up (``https[:]//``, ``www[.]``, ``a[@]b.c``).

    ``code``: for inside a code span instead (where nothing is escaped): backticks and pipes become ``'`` and ``/``."""
    if code:
        return clean(value, limit).replace("`", "'").replace("|", "/")
    text = _html.escape(clean(value, limit).strip(), quote=False)  # leading spaces could start a code block
    text = _MARKDOWN_INLINE.sub(lambda m: "\\" + m[0], text)
    text = _AUTOLINK.sub(lambda m: f"\\[{m[0]}\\]", text)
    match = _MARKDOWN_BLOCK_START.match(text)
    if match:
        cut = match.end() if match[0][0].isdigit() else 0
        text = text[:cut] + "\\" + text[cut:]
    return text


def html(value, limit: int = MAX_MESSAGE) -> str:
    """Cleaned text for an HTML page, in an element or an attribute value."""
    return _html.escape(clean(value, limit), quote=True)


FORMULA_STARTS = ("=", "+", "-", "@")  # a cell a spreadsheet runs as a formula starts so


def csv_cell(value, limit: int = MAX_MESSAGE) -> str:
    """Cleaned text for a CSV cell that no spreadsheet runs as a formula (a leading ``= + - @`` gets a ``'``)."""
    text = clean(value, limit)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_value(cell: str) -> str:
    """A cell's value as ``csv_cell`` wrote it: without the ``'`` it put before a leading ``= + - @`` (collect's
    collected.csv, read back as the submission times, named '-mallory for -mallory: the red team)."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell


def terminal(value, limit: int = MAX_MESSAGE, style: str = ""):
    """Cleaned text as a rich ``Text``: printed as it is (no markup, emoji codes or highlighting applied)."""
    from rich.text import Text

    return Text(clean(value, limit), style=style)


def terminal_lines(value, limit: int = MAX_MESSAGE):
    """``terminal`` for each line of ``value`` (at most ``MAX_LINES``), the lines kept: a course.yaml's problems, one
    a line."""
    from rich.text import Text

    return Text("\n").join(terminal(line, limit) for line in str(value).splitlines()[:MAX_LINES])


def workflow_data(value, limit: int = MAX_MESSAGE, lines: bool = False) -> str:
    """Cleaned text as the message of a GitHub workflow command (``::error ...::message``), escaped as the toolkit does.

    ``lines``: keep the text's line breaks (as ``%0A``, which GitHub shows inside the annotation): each line is cleaned,
    at most ``MAX_LINES`` are kept."""
    if lines:
        text = "\n".join(clean(line, limit) for line in str(value)[:MAX_LINES * limit].splitlines()[:MAX_LINES])
    else:
        text = clean(value, limit)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(value, limit: int = MAX_NAME) -> str:
    """Cleaned text as a property value of a workflow command (``file=``, ``title=``)."""
    return workflow_data(value, limit).replace(":", "%3A").replace(",", "%2C")


def student_id(name: str) -> str:
    """The student id of a file or folder name: the name itself where it is ``clean`` (one line of printable Unicode,
    at most ``MAX_NAME`` characters) and short enough for a file name; else its cleaned beginning and a hash of the
    whole name (``Ann…~3fa2b1c4d5e6``), so that different names stay different ids; an id is its own id. A name is
    read in Unicode's composed form (NFC): macOS writes file names decomposed, 'zoë' as 'zoe' and a combining
    diaeresis, which looks the same as a roster's 'zoë' (walk-through 8)."""
    name = unicodedata.normalize("NFC", name)
    if clean(name, MAX_NAME) == name and len(name.encode("utf-8")) <= MAX_ID_BYTES:
        return name
    return f"{clean(name, 40)}~{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
