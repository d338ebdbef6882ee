"""The `grader` command line: one sub-command per job."""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path

from grader import COURSE_FILE, GRADER_FAULT_STATUS, __version__, course_root
from grader.authoring.commands import add_authoring_commands
from grader.extras import MissingExtra, need
from grader.memory import pause_collector
from grader.sandbox import TRUSTED_OPTION


def _load(args):
    """The course of ``--course``, or None after printing why it cannot be loaded."""
    from grader.course import CourseError, load_course

    try:
        return load_course(args.course)
    except CourseError as error:
        print(f"grader: {error}", file=sys.stderr)
        return None


def _grade(args) -> int:
    """Grade one submission. Its zygote starts first, so that its import of torch runs while this process imports
    torch, pytest and the suites: a cold grade waits for one import of torch, not for two in a row."""
    from grader.sandbox.host.zygote import GraderFault, Zygote

    zygote = Zygote(hide=(course_root(args.course),))  # the course's folder, hidden from the sandbox
    try:
        from rich.console import Console
        from rich.text import Text

        from grader.course import CourseError, load_course
        from grader.text import terminal, terminal_lines

        console = Console(stderr=True, soft_wrap=True)
        try:
            course = load_course(args.course)
            if args.assignment:
                course = course.assignment(args.assignment)
        except CourseError as error:  # the grader's setup, never the submission: no score is final
            console.print(Text.assemble("grader: ", terminal_lines(error)))
            return GRADER_FAULT_STATUS
        from grader.grade import DeviceError, grade_submission, resolve_device
        from grader.intake import IntakeError, IntakeFault
        from grader.memory import bound_grading_memory, out_of_memory
        from grader.reports.files import write_json
        from grader.reports.terminal import print_summary

        try:
            device = resolve_device(args.device)
        except DeviceError as error:
            console.print(Text.assemble("grader: ", terminal(str(error))))
            return GRADER_FAULT_STATUS
        bound_grading_memory(device)
        try:
            outcome = grade_submission(args.submission, course, zygote=zygote, device=device,
                                       require_sandbox=not args.allow_unsandboxed)
        except IntakeError as error:
            console.print(Text.assemble("grader: cannot grade ", terminal(args.submission), ": ", terminal(str(error))))
            return 2
        except CourseError as error:  # found in the suites: the course's to fix, never the submission's score
            console.print(Text.assemble("grader: ", terminal_lines(error)))
            return GRADER_FAULT_STATUS
        except (GraderFault, IntakeFault, OSError) as error:  # the grader's own failure (a file of the course or the
            # system it could not use), never the submission's score: grade it again
            console.print(Text.assemble("grader: grader fault while grading ", terminal(args.submission), ": ",
                                        terminal(str(error)), " (not the submission's fault: grade it again)"))
            return GRADER_FAULT_STATUS
        except Exception as error:  # noqa: BLE001 - past the grading process's memory bound outside a check
            if not out_of_memory(error):
                raise
            console.print(Text.assemble("grader: grader fault while grading ", terminal(args.submission),
                                        ": the grading process ran out of memory (grade it again)"))
            return GRADER_FAULT_STATUS
        try:
            write_json(outcome.results, args.out)
        except OSError as error:  # graded, but not recorded: no score is given
            console.print(Text.assemble("grader: cannot write ", terminal(args.out), ": ",
                                        terminal(error.strerror or str(error))))
            return GRADER_FAULT_STATUS
    finally:
        zygote.close()
    print_summary(outcome.grade, Console())
    return 0


def _batch(args) -> int:
    from rich.console import Console
    from rich.text import Text

    from grader.batch import BatchFailed, run_batch
    from grader.course import CourseError
    from grader.entries import BatchError
    from grader.grade import DeviceError, resolve_device
    from grader.records.adjust import MISSING, NotApplied
    from grader.records.table import TableError
    from grader.reports.terminal import BatchProgress, print_class
    from grader.sandbox.jail.confine import SandboxUnavailable
    from grader.text import terminal

    console = Console(stderr=True, soft_wrap=True)
    progress = BatchProgress(console)
    failure: tuple[Exception, int] | None = None  # what stopped the batch, and its exit status
    unapplied: NotApplied | None = None  # the class is graded and reported, less lines of the records
    try:
        course_file, _, records, replacing = _class_records(args)
        rows = run_batch(args.submissions, args.out, course_file=course_file, jobs=args.jobs,
                         device=resolve_device(args.device), force=args.force, require_sandbox=not args.allow_unsandboxed, dask=args.dask,
                         progress=progress, assignment=args.assignment, records=records)
    except NotApplied as error:
        rows, unapplied = error.rows, error
    except (BatchError, CourseError, DeviceError, TableError) as error:
        failure = error, 2
    except (SandboxUnavailable, BatchFailed) as error:  # nobody was graded: no record, or no report, is written
        failure = error, GRADER_FAULT_STATUS
    finally:
        if hasattr(progress, "task"):
            progress.stop()
    if failure:  # said below the progress bar, as the last line
        console.print(Text.assemble("grader: ", terminal(str(failure[0]))))
        return failure[1]
    _keep(args, course_file, replacing)
    missing = sum(row.get("status") == MISSING for row in rows)  # the roster's students without a submission
    print_class(rows, f"{len(rows) - missing} submissions" + (f", {missing} missing" if missing else "")
                + f" -> {args.out} (course {course_file})", args.out)  # a class graded from another checkout takes
    # that one's course (instructor walk-through 7)
    if unapplied:
        console.print(Text.assemble("grader: ", terminal(str(unapplied))))
    if _said_grader_faults(rows):  # their grading did not complete: the batch did not either
        return GRADER_FAULT_STATUS
    return 2 if unapplied else 0


def _said_grader_faults(rows: list[dict]) -> bool:
    """Whether some of a graded class's ``rows`` are grader errors, not final; if so, one line on stderr names them."""
    from grader.batch import is_final
    from grader.reports.terminal import named, record_keys

    faults = [row for row in rows if not is_final(row)]
    if faults:
        print(f"grader: {len(faults)} of {len(rows)} records are grader errors, not final "
              f"({named(record_keys(faults))}): the reports show them so; run the batch again to grade them",
              file=sys.stderr)
    return bool(faults)


def _class_records(args):
    """A class's course file (``kept.class_course``), its course, the instructor's records named by ``--roster``,
    ``--overrides``, ``--submitted`` and ``--extensions``, else those kept in the output folder by an earlier run, each
    kept one said on stderr (CourseError, TableError), and the notes of the files given that replace a kept one
    without some of its rows: said by ``_keep``, once the run that keeps them has succeeded (instructor walk-through
    7: said before an error, they told of a file that was not kept)."""
    from grader.course import load_course
    from grader.records.kept import class_course, kept_records, replaced_rows

    course_file, kept_course = class_course(args.out, args.course)
    course = load_course(course_file)
    records, kept = kept_records(course, args.out, args.roster, args.overrides, args.submitted, args.extensions)
    if kept_course:
        print(f"grader: using the course {course_file} (the one {args.out} was graded with)", file=sys.stderr)
    for path in kept:
        print(f"grader: using {path} (kept from an earlier run; give one with only its header line to clear it)",
              file=sys.stderr)
    replacing = replaced_rows(course, args.out, overrides=args.overrides, extensions=args.extensions,
                              submitted=args.submitted)
    return course_file, course, records, replacing


def _keep(args, course_file: Path, replacing: list[str]) -> None:
    from grader.records.kept import keep_course, keep_records

    keep_records(args.out, roster=args.roster, overrides=args.overrides, submitted=args.submitted,
                 extensions=args.extensions)
    keep_course(args.out, course_file)
    for note in replacing:
        print(f"grader: {note}", file=sys.stderr)


def _gradebook(args) -> int:
    from grader.batch import load_results
    from grader.course import CourseError
    from grader.entries import BatchError, hold_out
    from grader.records.adjust import check_graded_with
    from grader.records.publish import publish
    from grader.records.table import TableError
    from grader.reports.terminal import print_class
    from grader.similarity.report import saved_summary_rows

    out = Path(args.out)
    try:
        course_file, course, records, replacing = _class_records(args)
        rows = [row for row in load_results(out).values() if args.assignment in (None, row.get("assignment"))]
        if not rows:
            raise CourseError(f"{out / 'results'} holds no results{' of ' + args.assignment if args.assignment else ''}: "
                              "run `grader batch` first")
        check_graded_with(course, rows)
        with hold_out(out):  # never beside a batch writing the same folder
            shown = publish(course, out, rows, records, similar=saved_summary_rows(out), assignment=args.assignment,
                            strict=True)
    except (BatchError, CourseError, TableError) as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    _keep(args, course_file, replacing)
    print_class(shown.rows, f"{len(shown.rows)} records -> {out / 'gradebook.csv'}, canvas.csv, moodle.csv (course "
                f"{course_file})", out)
    return 0


def _similarity(args) -> int:
    from grader.course import CourseError, load_course
    from grader.entries import BatchError, discover, entry_course, read_entry
    from grader.similarity.compare import THRESHOLD
    from grader.similarity.report import class_report
    from grader.text import MAX_NAME, clean

    try:
        course = load_course(args.course)
        entries = discover(args.submissions, course)
    except (BatchError, CourseError) as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    for entry in entries:
        if entry.problem:
            print(f"note: {clean(entry.key, MAX_NAME)} left out of the comparison: {clean(entry.problem)}", file=sys.stderr)
    reads = {e.key: read_entry(e, entry_course(course, e)) for e in entries if not e.problem}
    sources = {key: read.files for key, read in reads.items() if read is not None}  # the unreadable are left out
    report = class_report(sources, course, Path(args.out), THRESHOLD if args.threshold is None else args.threshold)
    flagged = sum(len(pairs) for pairs in report.pairs.values())
    print(f"{flagged} similar pair(s) among {len(entries)} submissions -> {Path(args.out) / 'similarity.html'}")
    return 0


def _collect(args) -> int:
    from grader.batch import BatchFailed
    from grader.collect import CLONE_MB, CLONE_SECONDS, CollectError, collect, shared_repositories
    from grader.course import CourseError
    from grader.grade import DeviceError, resolve_device
    from grader.records.table import TableError
    from grader.sandbox.jail.confine import SandboxUnavailable
    from grader.text import clean

    try:
        repositories, rows = collect(args.roster, args.out, deadline=args.deadline, course_file=args.course,
                                     seconds=CLONE_SECONDS if args.clone_seconds is None else args.clone_seconds,
                                     megabytes=CLONE_MB if args.clone_mb is None else args.clone_mb, jobs=args.jobs,
                                     device=resolve_device(args.device), assignment=args.assignment)
    except (CollectError, CourseError, DeviceError, TableError) as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    except (SandboxUnavailable, BatchFailed) as error:  # collected, and nobody graded
        print(f"grader: {error}", file=sys.stderr)
        return GRADER_FAULT_STATUS
    failed = [r for r in repositories if not r.commit]
    print(f"collected {len(repositories) - len(failed)} of {len(repositories)} repositories -> "
          f"{Path(args.out) / 'collected.csv'}; grades in {Path(args.out) / 'grades'}")
    for repository in failed:
        print(f"  {repository.student}: {repository.status}")
    for url, students in shared_repositories(repositories).items():
        named = ", ".join(clean(student) for student in students)
        print(f"grader: note: one repository, {clean(url, 300)}, is listed for {named}: each has a grade of it (a line "
              "pasted twice?)", file=sys.stderr)
    return GRADER_FAULT_STATUS if _said_grader_faults(rows) else 0


def _ci(args) -> int:
    """Grade a checkout in CI. As in `grade`, its zygote starts first, so that its import of torch runs while this
    process imports torch, pytest and the suites."""
    from grader.sandbox.host.zygote import Zygote

    zygote = Zygote(hide=(course_root(args.course),))
    try:
        from grader.ci import run_ci

        return run_ci(args.path, course_file=args.course, min_score=args.min_score, device=args.device,
                      zygote=zygote, results_path=args.results, junit_path=args.junit, assignment=args.assignment,
                      require_sandbox=not args.allow_unsandboxed)
    finally:
        zygote.close()


def _number(kind, within, what: str):
    """An argparse type: a number of ``kind`` for which ``within(value)`` holds, else an error saying ``what`` it must
    be (``--jobs 0`` was a traceback from the pool)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole ' * (kind is int)}number") from None
        if not within(value):
            raise argparse.ArgumentTypeError(f"{what}, not {text}")
        return value
    return parse


def _above_zero(kind):
    """An argparse type: a finite number of ``kind`` above zero."""
    return _number(kind, lambda value: 0 < value < float("inf"), "must be above 0")


_share = _number(float, lambda value: 0 <= value <= 1, "a score from 0 to 1")  # an argparse type: a share


def _folder(text: str) -> str:
    """An argparse type: a folder to write into, made if missing (a file there was a traceback after grading began)."""
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return text


def _dask_address(text: str) -> str:
    """An argparse type: a Dask scheduler's address (PROTOCOL://HOST:PORT) or 'local'."""
    if text != "local" and not re.fullmatch(r"((tcp|tls|ucx|inproc)://)?[^\s/:]+:\d{1,5}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is no scheduler address: tcp://HOST:PORT, or 'local' for a "
                                         "LocalCluster")
    return text


def _class_flags(parser) -> None:
    """The options of a command that grades a whole class (batch, collect): where, how many at once, on what, with
    which course."""
    parser.add_argument("--out", required=True, type=_folder, help="output folder")
    parser.add_argument("--jobs", type=_above_zero(int), default=max(1, len(os.sched_getaffinity(0))),
                        help="parallel gradings (default: CPUs)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto; default: %(default)s")
    parser.add_argument("--course", help="course.yaml to grade with (default: the one the class was graded with, kept "
                                         "in records/course.txt of its output folder; else the project's)")


def _sandbox_flags(command) -> None:
    """Whether student code may run where no sandbox can be built: never (the default), or, for code one trusts,
    with resource limits only."""
    choice = command.add_mutually_exclusive_group()
    choice.add_argument("--require-sandbox", action="store_true", help="refuse to grade where no sandbox can be "
                                                                       "built: a grader fault, exit status 3 (the default)")
    choice.add_argument(TRUSTED_OPTION, dest="allow_unsandboxed", action="store_true",
                        help="for code you trust only: where no sandbox can be built, grade with resource limits only "
                             "(the grade says so in a WARNING)")


def _record_flags(command) -> None:
    # each file given is kept in OUT/records/ and used again by a later run that names none of its kind
    command.add_argument("--roster", metavar="CSV", help="the class list (id, name, email; nbgrader's or GitHub "
                                                         "Classroom's roster): who is missing, names for the LMS exports")
    command.add_argument("--overrides", metavar="CSV", help="points set or taken away by hand (student, assignment, "
                                                            "exercise, check, points or penalty, reason)")
    command.add_argument("--submitted", metavar="CSV", help="submission times (student, submitted_at; `grader collect`'s "
                                                            "commit time too) for course.yaml's late penalties")
    command.add_argument("--extensions", metavar="CSV", help="students' own due dates (student, due, optionally "
                                                             "assignment), later than course.yaml's late.due")


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that shows defaults kept in modules too heavy to import for every command: ``{module:NAME}`` in a help
    text is that constant's value, imported only when the help is shown."""

    def _get_help_string(self, action) -> str:
        return re.sub(r"\{([\w.]+):(\w+)\}", lambda match: str(getattr(importlib.import_module(match[1]), match[2])),
                      action.help)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.set_defaults(needs=())  # the extras a command needs (grader.extras)
    commands = parser.add_subparsers(dest="command", required=True)

    add_authoring_commands(commands, load=_load)

    grade = commands.add_parser("grade", help="grade one submission and write its results.json")
    grade.add_argument("submission", help="a folder with the exercise files (at its root or in exercises/), a .zip or a .ipynb")
    grade.add_argument("--out", default="results.json", help="where to write results.json (default: %(default)s)")
    grade.add_argument("--device", default="cpu", help="cpu, cuda or auto (cuda when present); default: %(default)s")
    grade.add_argument("--course", default=str(COURSE_FILE), help="course.yaml to grade with")
    _sandbox_flags(grade)
    grade.add_argument("--assignment", metavar="NAME", help="grade as this assignment of course.yaml, out of its points (default: the whole course; a notebook: the exercises it holds)")
    grade.set_defaults(run=_grade)

    batch = commands.add_parser("batch", help="grade a whole class: results, gradebook.csv, feedback and summary.html")
    batch.add_argument("submissions", help="a folder of submissions (one subfolder, .zip or .ipynb per student), "
                                           "nbgrader's submitted/ folder, or a text file listing paths")
    _class_flags(batch)
    batch.add_argument("--force", action="store_true", help="regrade even submissions whose results are up to date")
    _sandbox_flags(batch)
    batch.add_argument("--dask", metavar="ADDRESS", type=_dask_address,
                       help="run on a Dask cluster: tcp://SCHEDULER:8786, or 'local' for a LocalCluster")
    batch.add_argument("--assignment", metavar="NAME", help="grade every submission as this assignment (default: the whole course; nbgrader's submitted/: each notebook as its own)")
    _record_flags(batch)
    batch.set_defaults(run=_batch, needs=("plots",))

    gradebook = commands.add_parser("gradebook", help="write the gradebook, the Canvas and Moodle exports, the feedback "
                                                       "and summary.html again from a batch's results, without grading")
    gradebook.add_argument("out", help="the output folder of `grader batch` (its results/)")
    gradebook.add_argument("--course", help="course.yaml (its late policy; default: the one OUT was graded with, kept "
                                            "in OUT/records/course.txt; else the project's)")
    gradebook.add_argument("--assignment", metavar="NAME", help="only the records of this assignment")
    _record_flags(gradebook)
    gradebook.set_defaults(run=_gradebook, needs=("plots",))

    similarity = commands.add_parser("similarity", help="flag submissions whose code is alike (similarity.html); "
                                                         "evidence to look at, never a score", formatter_class=DefaultsFormatter)
    similarity.add_argument("submissions", help="a folder of submissions or a text file listing paths (as for batch)")
    similarity.add_argument("--out", required=True, type=_folder,
                            help="output folder (receives similarity.html and similarity.json)")
    similarity.add_argument("--course", default=str(COURSE_FILE), help="course.yaml (its intake limits)")
    similarity.add_argument("--threshold", type=_share, help="score (0..1) from which a pair is flagged (default: "
                            "{grader.similarity.compare:THRESHOLD}, calibrated in docs/similarity.md)")
    similarity.set_defaults(run=_similarity)

    collect = commands.add_parser("collect", help="the grade of record: clone each student's repository at the deadline "
                                                   "and grade them all (collected.csv, submissions/, grades/)",
                                  formatter_class=DefaultsFormatter)
    collect.add_argument("roster", help="a text file of clone URLs, one per line: 'URL' or 'STUDENT URL'")
    collect.add_argument("--deadline", required=True, help="ISO 8601 time with its zone: the last commit at or before "
                                                           "it is graded (e.g. 2026-12-01T23:59:00+01:00)")
    _class_flags(collect)
    collect.add_argument("--assignment", metavar="NAME", help="grade every repository as this assignment")
    collect.add_argument("--clone-seconds", type=_above_zero(float),
                         help="time bound of one clone, in seconds (default: {grader.collect:CLONE_SECONDS})")
    collect.add_argument("--clone-mb", type=_above_zero(int),
                         help="size bound of one repository, in MB (default: {grader.collect:CLONE_MB})")
    collect.set_defaults(run=_collect, needs=("plots",))

    ci = commands.add_parser("ci", help="grade a checkout in GitHub Actions: job summary, annotations, Classroom result, score")
    ci.add_argument("path", nargs="?", default=".", help="the checkout (its exercises/ folder is graded); default: %(default)s")
    policy = ci.add_mutually_exclusive_group()
    policy.add_argument("--min-score", type=float, metavar="X", help="exit with status 1 when the score is below X")
    policy.add_argument("--never-fail", action="store_true", help="exit with status 0 whatever the score (the default)")
    ci.add_argument("--device", default="cpu", help="cpu, cuda or auto; default: %(default)s")
    ci.add_argument("--course", default=str(COURSE_FILE), help="course.yaml to grade with")
    ci.add_argument("--results", metavar="FILE", help="also write results.json (Gradescope's format) to FILE")
    ci.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    ci.add_argument("--assignment", metavar="NAME", help="grade as this assignment of course.yaml, out of its points")
    _sandbox_flags(ci)
    ci.set_defaults(run=_ci)
    for command in commands.choices.values():
        command.set_defaults(command_parser=command)  # whose usage a wrong option shows
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; a wrong option stops it with the command's usage (exit status 2), and one that needs an extra
    that is not installed stops first, in one line naming it."""
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:  # the command's usage, not the top level's, which lists every command and none of their options
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        for extra in (*args.needs, *(("dask",) if getattr(args, "dask", None) else ())):
            need(extra, f"grader {args.command}")
        return args.run(args)
    except MissingExtra as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: what is written stays (a batch resumes where it stopped), said in a line
        print(f"grader: interrupted: what was written is kept; run `grader {args.command}` again to go on",
              file=sys.stderr)
        return 130


# The commands that grade one submission: once their work is written and their zygote and staged copy are gone,
# nothing is left to tear down.
ONE_GRADE = ("grade", "ci")


def script() -> None:
    """The `grader` command (and `python -m grader`): ``main``. `grade` and `ci` import with the collector paused
    (``memory.pause_collector``), and exit without tearing down an interpreter that holds torch, pytest and
    hypothesis (0.2 to 1 s, for nothing)."""
    one_grade = sys.argv[1:2] and sys.argv[1] in ONE_GRADE
    if one_grade:
        pause_collector()
    code = main()
    if one_grade:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    script()
