"""The message of an unfinished stub, in one place: what a generated stub raises, and how the grader, the public
checks and the reports recognise it. The standard library only: it ships in the handout (tests/public)."""
import re

TEMPLATE = "{target}: fill in this stub (see its docstring)"  # target: <module>.<function>, <module>.<Class>.forward
# Names of bounded length, starting after a character no name holds: a scan of a line of any length is linear in it
# (unbounded ``\w+\.[\w.]+`` backtracks over every start of a long run of letters: quadratic).
PATTERN = re.compile(r"(?<![\w.])(?P<target>(?P<module>[A-Za-z_]\w{0,99})\.(?P<name>[A-Za-z_][\w.]{0,199})): "
                     r"fill in this stub")


def message(target: str) -> str:
    """What the stub of ``target`` raises (NotImplementedError's message)."""
    return TEMPLATE.format(target=target)


def raising(target: str) -> str:
    """The stub's line: ``raise NotImplementedError("...")``."""
    return f'raise NotImplementedError("{message(target)}")'


def stubs_in(source: str) -> dict[str, int]:
    """Each stub left in a module's ``source`` -> the line of its first message."""
    lines: dict[str, int] = {}
    for number, line in enumerate(source.splitlines(), 1):
        for match in PATTERN.finditer(line):
            lines.setdefault(match["target"], number)
    return lines
