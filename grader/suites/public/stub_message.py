"""The message of an unfinished stub, in one place: what a generated stub raises, and how the grader, the public
checks and the reports recognise it. The standard library only: it ships in the handout (tests/public)."""
import re

TEMPLATE = "{target}: fill in this stub (see its docstring)"  # target: <module>.<function>, <module>.<Class>.forward
PATTERN = re.compile(r"(?P<target>(?P<module>\w+)\.(?P<name>[\w.]+)): fill in this stub")


def message(target: str) -> str:
    """What the stub of ``target`` raises (NotImplementedError's message)."""
    return TEMPLATE.format(target=target)


def raising(target: str) -> str:
    """The stub's line: ``raise NotImplementedError("...")``."""
    return f'raise NotImplementedError("{message(target)}")'
