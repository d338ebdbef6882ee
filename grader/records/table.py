"""An instructor's CSV file (a roster, overrides, submission times): rows by line number, and its times.

Every problem is a ``TableError`` of one line that names the file and the line: ``roster.csv:4: two rows for
student 'ann' (the other on line 2)``. Column names are matched whatever their case, spaces, dashes or
underscores (``Commit time`` is ``commit_time``).
"""
from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader.text import MAX_NAME, clean, csv_value

MAX_BYTES = 16 * 2**20  # an instructor's table is small: a bigger file is the wrong file
_SPACES = re.compile(r"[\s_-]+")
_TIME = re.compile(r"(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d{1,6})?)?)\s*(?P<zone>Z|[+-]\d\d:?\d\d|[A-Za-z_/+-]+)?")


class TableError(ValueError):
    """An instructor's file cannot be used (one line naming the file and the line)."""


class Row(dict):
    """One row of a table: column -> cell (stripped; "" where the row is short), and where it is (``file:line``)."""

    where: str
    line: int


def column(name: str) -> str:
    """A column name as it is matched: lower case, words joined by ``_``."""
    return _SPACES.sub("_", name.strip().lower()).strip("_")


class Header(list):
    """A table's column names as matched (``column``); an error names a column as the file wrote it."""

    def __init__(self, cells: list[str]):
        super().__init__(column(cell) for cell in cells)
        self.written = {column(cell): cell.strip() for cell in cells}

    def unknown(self, known: tuple[str, ...]) -> str | None:
        """The first column not among ``known``, as the file wrote it (cleaned for an error), if any."""
        return next((clean(self.written[name], MAX_NAME) for name in self if name and name not in known), None)


def read_table(path: str | Path, what: str) -> tuple[Header, list[Row]]:
    """The columns and rows of the CSV file ``path`` (``what`` it should be, for the errors): UTF-8 (a byte-order mark
    is fine), a header line, then one row per line; blank lines are skipped. A cell reads as ``text.csv_cell`` wrote
    it (the grader's own files read back: the ``'`` before a leading ``= + - @`` is not part of it)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise TableError(f"{path}: over {MAX_BYTES // 2**20} MiB: not {what}")
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise TableError(f"{path}: cannot read {what}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        line = path.read_bytes()[:error.start].count(b"\n") + 1
        raise TableError(f"{path}:{line}: not UTF-8 text (save {what} as CSV UTF-8)") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[Row] = []
    header: Header | None = None
    try:
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            if header is None:
                if len(cells) == 1 and ";" in cells[0]:  # a spreadsheet's CSV where the decimal comma is the custom
                    raise TableError(f"{path}:{reader.line_num}: the columns are separated by ';': save {what} as "
                                     f"comma-separated CSV")
                header = Header(cells)
                twice = sorted({c for c in header if c and header.count(c) > 1})
                if twice:
                    raise TableError(f"{path}:{reader.line_num}: column {twice[0]!r} appears twice in the header")
                continue
            if len(cells) > len(header) and any(cell.strip() for cell in cells[len(header):]):
                raise TableError(f"{path}:{reader.line_num}: {len(cells)} cells where the header names {len(header)} "
                                 '(a cell holding a comma, a check\'s name say, goes in double quotes: "a, b")')
            row = Row((name, csv_value(cell.strip())) for name, cell in zip(header, cells + [""] * len(header)) if name)
            row.where, row.line = f"{path}:{reader.line_num}", reader.line_num
            rows.append(row)
    except csv.Error as error:
        raise TableError(f"{path}:{reader.line_num}: not CSV: {error}") from None
    if header is None:
        raise TableError(f"{path}: empty: {what} needs a header line and a row per student")
    return header, rows


def pick(header: list[str], names: tuple[str, ...]) -> str | None:
    """The first of ``names`` that the header has."""
    return next((name for name in names if name in header), None)


def parse_time(text: str, zone: tzinfo, where: str) -> datetime:
    """A time as instructors and tools write it: ISO 8601 (``2026-11-20T14:03:12+01:00``, ``...Z``), or nbgrader's
    ``2026-11-20 14:03:12.123456 UTC`` (a zone name); a time without a zone is in ``zone``. Always aware."""
    match = _TIME.fullmatch(text.strip())
    if not match:
        raise TableError(f"{where}: {clean(text, MAX_NAME)!r} is not a date and time (e.g. 2026-11-20T14:03:00+01:00)")
    try:
        moment = datetime.fromisoformat(match["time"].replace(" ", "T"))
    except ValueError as error:
        raise TableError(f"{where}: {clean(text, MAX_NAME)!r} is not a date and time ({error})") from None
    name = match["zone"]
    if name in (None, ""):
        return moment.replace(tzinfo=zone)
    if name in ("Z", "UTC", "GMT"):
        return moment.replace(tzinfo=timezone.utc)
    try:  # an offset of a day or more (+99:00), a zone name that is a folder (Europe) or too long: one line
        if name[0] in "+-" and name[1:].replace(":", "").isdigit():
            digits = name[1:].replace(":", "")
            return datetime.fromisoformat(f"{match['time'].replace(' ', 'T')}{name[0]}{digits[:2]}:{digits[2:]}")
        return moment.replace(tzinfo=ZoneInfo(name))
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise TableError(f"{where}: unknown time zone {clean(name, MAX_NAME)!r} in {clean(text, MAX_NAME)!r}") from None
