"""The `grader` command line: one sub-command per job."""
from __future__ import annotations

import argparse
import sys

from . import __version__
from .course import COURSE_FILE


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


def _grade(args) -> int:
    from rich.console import Console

    from .course import CourseError, load_course
    from .intake import IntakeError
    from .pipeline import DeviceError, grade_submission, resolve_device
    from .remote import Zygote
    from .reports import print_summary, write_json

    console = Console(stderr=True)
    try:
        course = load_course(args.course)
        device = resolve_device(args.device)
    except (CourseError, DeviceError) as error:
        console.print(f"grader: {error}", highlight=False)
        return 2
    zygote = Zygote()
    try:
        outcome = grade_submission(args.submission, course, zygote, device, args.require_sandbox)
    except IntakeError as error:
        console.print(f"grader: cannot grade {args.submission}: {error}", highlight=False)
        return 2
    finally:
        zygote.close()
    write_json(outcome.results, args.out)
    print_summary(outcome.grade, Console())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    stubs = commands.add_parser("stubs", help="generate exercises/ from solutions/")
    stubs.add_argument("--check", action="store_true", help="only report whether exercises/ is stale")
    stubs.set_defaults(run=_stubs)

    grade = commands.add_parser("grade", help="grade one submission and write its results.json")
    grade.add_argument("submission", help="a folder with the exercise files (at its root or in exercises/), a .zip or a .ipynb")
    grade.add_argument("--out", default="results.json", help="where to write results.json (default: %(default)s)")
    grade.add_argument("--device", default="cpu", help="cpu, cuda or auto (cuda when present); default: %(default)s")
    grade.add_argument("--course", default=str(COURSE_FILE), help="course.yaml to grade with")
    grade.add_argument("--require-sandbox", action="store_true", help="refuse to grade where no sandbox can be built")
    grade.set_defaults(run=_grade)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
