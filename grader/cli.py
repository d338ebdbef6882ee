"""The `grader` command line: one sub-command per job."""
from __future__ import annotations

import argparse
import sys

from . import __version__


def _stubs(args) -> int:
    from .stubs import stale_files, write_exercises

    if args.check:
        stale = stale_files()
        if stale:
            print(f"exercises/ is out of date with solutions/ ({', '.join(stale)}): run `python -m grader stubs`")
            return 1
        print("exercises/ is up to date")
        return 0
    changed = write_exercises()
    print(f"regenerated {', '.join(changed)}" if changed else "exercises/ already up to date")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    stubs = commands.add_parser("stubs", help="generate exercises/ from solutions/")
    stubs.add_argument("--check", action="store_true", help="only report whether exercises/ is stale")
    stubs.set_defaults(run=_stubs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
