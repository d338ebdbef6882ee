"""The command line's errors and help: each error names what went wrong where it went wrong, and what to do."""
from __future__ import annotations

import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from grader import COURSE_FILE, ROOT, cli
from grader.cli import GRADER_FAULT_STATUS


def test_a_file_missing_while_grading_is_a_grader_fault_not_a_write_error(tmp_path, monkeypatch, capsys):
    """An OSError while grading (a file of the course the grader could not read) is a grader fault naming that file;
    it used to be reported as "cannot write results.json: No such file or directory"."""
    import grader.grade

    missing = tmp_path / "course" / "tests" / "course" / "pytest.ini"

    def unreadable(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", str(missing))

    monkeypatch.setattr(grader.grade, "grade_submission", unreadable)
    out = tmp_path / "r.json"
    assert cli.main(["grade", str(ROOT / "solutions"), "--out", str(out)]) == GRADER_FAULT_STATUS
    error = capsys.readouterr().err
    assert "grader fault while grading" in error and str(missing) in error and "cannot write" not in error, error
    assert not out.exists()


def test_ctrl_c_is_one_line_saying_what_is_kept(tmp_path, monkeypatch, capsys):
    """Ctrl-C stops a command with one line saying that what was written is kept and how to go on (exit status 130),
    not a traceback of thirty lines (walk-through 8), also while the hidden suites run, where pytest catches it
    (review 12: a RuntimeError's traceback)."""
    import grader.suites.checks

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(grader.suites.checks, "attempt", interrupted)
    assert cli.main(["grade", str(ROOT / "solutions"), "--out", str(tmp_path / "r.json")]) == 130
    assert capsys.readouterr().err == ("grader: interrupted: what was written is kept; run `grader grade` again to go "
                                       "on\n")
    assert not (tmp_path / "r.json").exists()


def test_results_that_cannot_be_written_say_so(tmp_path, monkeypatch, capsys):
    """A results.json that cannot be written (``--out`` names a folder) is reported as that: no score is given."""
    import grader.grade

    monkeypatch.setattr(grader.grade, "grade_submission", lambda *args, **kwargs: SimpleNamespace(results={"score": 1}))
    assert cli.main(["grade", str(ROOT / "solutions"), "--out", str(tmp_path)]) == GRADER_FAULT_STATUS
    assert capsys.readouterr().err.strip() == f"grader: cannot write {tmp_path}: Is a directory"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["grade", "SUB"], ["batch", "SUB", "--out", "OUT"], ["similarity", "SUB", "--out", "OUT"],
                                     ["collect", "SUB", "--deadline", "2026-12-01T23:59:00+01:00", "--out", "OUT"],
                                     ["release", "OUT"], ["gradebook", "OUT"], ["stubs"]])
def test_a_wrong_option_shows_its_commands_usage(tmp_path, capsys, command):
    """A misspelt option stops the command (exit status 2) with that command's usage, which lists its options, not the
    top level's, which lists only the commands; nothing is written."""
    places = {"SUB": str(tmp_path / "submissions"), "OUT": str(tmp_path / "out")}
    with pytest.raises(SystemExit) as stopped:
        cli.main([places.get(arg, arg) for arg in command] + ["--forse"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith(f"usage: grader {command[0]} "), error
    assert error.endswith(f"grader {command[0]}: error: unrecognized arguments: --forse\n"), error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option, value, said", [
    ("--jobs", "0", "argument --jobs: must be above 0, not 0"), ("--jobs", "-1", "argument --jobs: must be above 0, not -1"),
    ("--jobs", "two", "argument --jobs: 'two' is not a whole number"),
    ("--dask", "nonsense", "argument --dask: 'nonsense' is no scheduler address: tcp://HOST:PORT, or 'local'"),
    ("--out", "FILE", "argument --out: FILE is a file, not a folder"),
])
def test_a_bad_value_is_one_line_before_any_work(tmp_path, capsys, option, value, said):
    """A value no grading can use is the command's one-line usage error (exit status 2), nothing written (found by our
    instructor's walk-through: --jobs 0, --dask nonsense and --out naming a file were tracebacks, --jobs 0 after
    making the output folder)."""
    file = tmp_path / "notes.txt"
    file.write_text("not a folder", encoding="utf-8")
    value = value.replace("FILE", str(file))
    out = str(file) if option == "--out" else str(tmp_path / "out")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["batch", str(ROOT / "examples" / "submissions"), "--out", out, option, value])
    assert stopped.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"grader batch: error: {said.replace('FILE', str(file))}"), last
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("command", ["similarity", "collect"])
def test_help_shows_the_defaults_values_not_code(capsys, command):
    """Help shows a default as its value, the one the command uses, never as the code that holds it (it showed
    "default: grader.similarity.compare.THRESHOLD")."""
    from grader.collect import CLONE_MB, CLONE_SECONDS
    from grader.similarity.compare import THRESHOLD

    shown = {"similarity": [f"(default: {THRESHOLD}, calibrated in docs/similarity.md)"],
             "collect": [f"in seconds (default: {CLONE_SECONDS})", f"in MB (default: {CLONE_MB})"]}[command]
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(part in text for part in shown), text
    assert not re.search(r"default: ([a-z_]+\.[a-z_]|[A-Z_]{4,}\b)", text), text


def test_records_without_a_time_are_named(capsys):
    """The note on records whose due date was judged without the instructor's list of times names them (it said
    "2 of 29 records have no time" and named none): the first ten, then how many more, in one line."""
    from grader.reports.terminal import note_unlisted_times

    rows = [{"student": f"s{n:02d}", "time_unlisted": n % 2 == 0} for n in range(24)]
    rows.append({"student": "eve", "key": "eve/week1", "time_unlisted": True})
    note_unlisted_times(rows)
    note = capsys.readouterr().err
    named = ", ".join(f"s{n:02d}" for n in range(0, 20, 2))
    assert note.startswith(f"grader: 13 of 25 records have a due date but no time in --submitted ({named} and 3 more): ")
    assert note.count("\n") == 1
    note_unlisted_times(rows[-1:])
    assert "but no time in --submitted (eve/week1): " in capsys.readouterr().err


PROBE = """
import gc, sys
from grader import cli
cli.main = lambda: print(gc.isenabled(), flush=True) or 0
sys.argv = ["grader", sys.argv[1]]
cli.script()
"""


@pytest.mark.parametrize("command, collecting", [("grade", "False"), ("ci", "False"), ("batch", "True"),
                                                 ("gradebook", "True")])
def test_only_a_one_shot_grade_imports_with_the_collector_off(command, collecting):
    """`grade` and `ci` run with Python's collector paused until their suites are collected (the imports of torch and
    pytest); every other command collects as usual."""
    run = subprocess.run([sys.executable, "-c", PROBE, command], capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout.strip()) == (0, collecting), run.stderr[-2000:]


@pytest.mark.parametrize("folder", ["tests", "tests/grading", "tests/course"])
def test_python_m_grader_runs_from_any_folder_of_the_repository(folder):
    """`python -m grader` puts the working folder first on the import path: no folder of the project's shadows the
    package (walk-through 7: tests/ held a folder named grader, and `python -m grader` failed there)."""
    process = subprocess.run([sys.executable, "-m", "grader", "--version"], cwd=ROOT / folder, capture_output=True,
                             text=True, timeout=120)
    assert process.returncode == 0, process.stderr
    assert process.stdout.startswith("grader ")


def test_grade_says_every_problem_of_a_course_yaml_a_line_each(tmp_path, capsys):
    """`grader grade` with a course.yaml of two typos says both, a line each (review 12: its cleaning joined the lines
    into one), as grader fault (exit status 3): the course is the grader's setup, never the submission's."""
    broken = tmp_path / "course.yaml"
    broken.write_text(COURSE_FILE.read_text(encoding="utf-8").replace("seed:", "sed:", 1).replace(
        "total_points:", "totl_points:", 1), encoding="utf-8")
    assert cli.main(["grade", str(ROOT / "solutions"), "--out", str(tmp_path / "r.json"),
                     "--course", str(broken)]) == GRADER_FAULT_STATUS
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "sed: unknown key (did you mean seed?)" in "\n".join(lines), lines
    assert any("totl_points: unknown key (did you mean total_points?)" in line for line in lines), lines
