"""The authoring tools' commands (`grader stubs`, `notebooks`, `new-exercise`, `check-exercise`, `release`), beside
the pipeline's in grader/cli.py, which adds them (``add_authoring_commands``) to its parser."""
from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

from grader import COURSE_FILE, course_root


def _generated(args, load, what: str, sources: str, command: str, stale, write, errors, regenerated) -> int:
    """`grader stubs` and `grader notebooks`: with --check, whether ``what`` is out of date with its ``sources`` (status
    1); else regenerate what changed and say so (``regenerated(changed)``); a course error (``errors``) is one line."""
    course = load(args)
    if course is None:
        return 2
    try:
        if args.check:
            found = stale(course=course)
            if found:
                print(f"{what} is out of date with {sources} ({', '.join(map(str, found))}): run `python -m grader "
                      f"{command}`")
                return 1
            print(f"{what} is up to date")
            return 0
        changed = write(course=course)
    except errors as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    print(regenerated(changed) if changed else f"{what} already up to date")
    return 0


def _stubs(args, load) -> int:
    from grader.authoring.stubs import StubError, stale_files, write_exercises

    return _generated(args, load, "exercises/", "solutions/", "stubs", stale_files, write_exercises, StubError,
                      lambda changed: f"regenerated {', '.join(changed)}")


def _notebooks(args, load) -> int:
    from grader.authoring.lessons import LessonError
    from grader.authoring.notebooks import generate_course, stale_notebooks

    return _generated(args, load, "nbgrader/", "the lessons and solutions/", "notebooks", stale_notebooks,
                      generate_course, LessonError, lambda changed: f"regenerated {len(changed)} file(s) in nbgrader/")


def _new_exercise(args) -> int:
    from grader.authoring.lessons import LessonError
    from grader.authoring.scaffold import ScaffoldError, new_exercise
    from grader.course import CourseError, load_course

    try:
        written = new_exercise(Path(args.course), args.name, args.title or args.name.replace("_", " ").capitalize(),
                               args.points)
    except (CourseError, ScaffoldError, LessonError) as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.resolve().relative_to(course_root(args.course))}")
    print(f"exercise {args.name} works as it is (an example that scales a tensor): make it yours in "
          f"tests/course/{args.name}/ and solutions/{args.name}.py, then run `grader check-exercise {args.name}`")
    assignments = [a.name for a in load_course(Path(args.course)).assignments]
    if assignments:  # the sixth instructor walk-through: added to none, unsaid
        print(f"course.yaml has assignments ({', '.join(assignments)}): add {args.name} to the exercises of the one "
              "that should grade it (no assignment lists it yet; the whole course grades it)")
    return 0


def _check_exercise(args) -> int:
    from rich.console import Console

    from grader.authoring.lessons import LessonError
    from grader.authoring.scaffold import check_exercise, print_checks
    from grader.course import CourseError

    try:
        with Console(stderr=True).status("checking") as status:
            checks = check_exercise(Path(args.course), args.name, progress=lambda text: status.update(f"grading {text}"))
    except (CourseError, LessonError) as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    return 0 if print_checks(checks, args.name, Console()) else 1


def _release(args, load) -> int:
    from grader.authoring.gradescope import gradescope_zip
    from grader.authoring.release import ReleaseError, build_handout
    from grader.course import CourseError

    try:
        handout = build_handout(args.outdir, course_file=args.course, grader_repository=args.grader_repository,
                                grader_ref=args.grader_ref, force=args.force, assignment=args.assignment,
                                gradescope=bool(args.gradescope))
    except (ReleaseError, CourseError) as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    for note in handout.notes:
        print(f"note: {note}")
    print(f"wrote the handout ({len(handout.files)} files) to {handout.root}; no line of the hidden suites or of the "
          "solution blocks is in it, nor any of their specific numbers")
    if args.gradescope:
        autograder = gradescope_zip(args.gradescope, device=args.device, course_file=args.course, assignment=args.assignment)
        print(f"wrote the Gradescope autograder to {autograder} "
              "(instructors only: it holds the hidden suites)")
    return 0


def add_authoring_commands(commands, load) -> None:
    """Add the authoring commands to the ``grader`` parser's sub-commands; ``load(args)``: the course of
    ``--course``, or None after saying why it cannot be loaded."""
    stubs = commands.add_parser("stubs", help="generate exercises/ from solutions/")
    stubs.add_argument("--check", action="store_true", help="only report whether exercises/ is stale")
    stubs.add_argument("--course", default=str(COURSE_FILE), help="course.yaml of the course (default: the project's)")
    stubs.set_defaults(run=partial(_stubs, load=load))

    notebooks = commands.add_parser("notebooks", help="generate the nbgrader course (nbgrader/) from the exercises' lessons and solutions/")
    notebooks.add_argument("--check", action="store_true", help="only report whether nbgrader/ is stale")
    notebooks.add_argument("--course", default=str(COURSE_FILE), help="course.yaml of the course (default: the project's)")
    notebooks.set_defaults(run=partial(_notebooks, load=load), needs=("notebooks",))

    new = commands.add_parser("new-exercise", help="add a complete exercise that works at once (tests/course/NAME/, "
                                                    "its reference, course.yaml entry, stub and notebook)")
    new.add_argument("name", help="the exercise's module: a lowercase identifier (the file students write)")
    new.add_argument("--title", help="its title in the course (default: from the name)")
    new.add_argument("--points", type=int, default=10, help="its points (default: %(default)s; total_points grows by them)")
    new.add_argument("--course", default=str(COURSE_FILE), help="course.yaml of the course (default: the project's)")
    new.set_defaults(run=_new_exercise, needs=("notebooks",))

    check = commands.add_parser("check-exercise", help="verify an exercise as its author must (stub, notebook, public "
                                                        "checks, reference, stub, variants, hints)")
    check.add_argument("name", help="the exercise's module")
    check.add_argument("--course", default=str(COURSE_FILE), help="course.yaml of the course (default: the project's)")
    check.set_defaults(run=_check_exercise, needs=("notebooks",))

    release = commands.add_parser("release", help="build the students' handout (and, with --gradescope, the autograder zip)")
    release.add_argument("outdir", help="folder to write the handout to (new or empty)")
    release.add_argument("--force", action="store_true", help="replace the contents of a non-empty OUTDIR")
    release.add_argument("--grader-repository", metavar="OWNER/NAME",
                         help="the instructor's private repository the handout's workflow installs the grader from "
                              "(e.g. my-course-org/attention-grader); required unless --gradescope is given, which "
                              "alone makes a handout without the workflow, for a course graded on Gradescope")
    release.add_argument("--grader-ref", default="main", help="branch or tag of that repository (default: %(default)s)")
    release.add_argument("--gradescope", metavar="ZIP", help="also write Gradescope's autograder zip (setup.sh, run_autograder, "
                                                            "the grader and its hidden suites) to ZIP")
    release.add_argument("--device", default="cpu", help="device the Gradescope autograder grades on (default: %(default)s)")
    release.add_argument("--course", default=str(COURSE_FILE), help="course.yaml to describe in the handout")
    release.add_argument("--assignment", metavar="NAME", help="release only this assignment's exercises (handout and Gradescope zip)")
    release.set_defaults(run=partial(_release, load=load))
