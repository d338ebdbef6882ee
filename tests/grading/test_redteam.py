"""Red-team attacks that break a promise of SECURITY.md (each test fails until the grader is fixed).

Each case grades a hostile submission from tests/grading/hostile/<trick>/ through the real pipeline, as
tests/test_hostile.py does, and states the promise it checks in its docstring.
"""
from __future__ import annotations

import pytest
from test_hostile import (  # noqa: F401  (fixtures used by name)
    AVAILABLE,
    HOSTILE,
    WHY,
    assert_trick_earns_nothing,
    baseline,
    course,
    grade,
    grading_peak_mib,
    hostile_submission,
    nothing_left_behind,
    outputs,
    private_tmp,
    raised_by,
    secret_env,
    zygote,
)

from grader.sandbox import wire
from grader.sandbox.host.strikes import Abandoned, Shares

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not AVAILABLE, reason=f"no sandbox here: {WHY}")]


PAD_LINES = 10_100


def padded(submission):
    """line_channel's quiz.py with its padding: identical lines, so that every line number it may pick exists."""
    with open(submission / "quiz.py", "a", encoding="utf-8") as quiz:
        quiz.write("pass  # pad\n" * PAD_LINES)
    return submission


def test_the_line_number_of_an_exception_carries_no_input(tmp_path, zygote, course, baseline):  # noqa: F811
    """Feedback on a hidden check carries nothing the student's code chose after it saw an input (SECURITY.md, "What
    comes back"): quiz.py raising from line N of its own file, N computed from the hidden input (exec of code compiled
    under the file's own name, the file padded with identical lines), gets, word for word, the feedback of the same
    code raising from a constant line, on two seeds."""
    for seed in (course.seed, course.seed + 1):
        seeded = course.model_copy(update={"seed": seed})
        (tmp_path / f"leaky{seed}").mkdir(), (tmp_path / f"blind{seed}").mkdir()
        leaky = grade(padded(hostile_submission(tmp_path / f"leaky{seed}", "line_channel")), seeded, zygote, "quiz")
        blind = grade(padded(hostile_submission(tmp_path / f"blind{seed}", "line_channel", blind=True)), seeded, zygote,
                      "quiz")
        assert_trick_earns_nothing(leaky, baseline=baseline)
        assert outputs(leaky) == outputs(blind)


def test_a_stray_entry_with_a_non_utf8_name_costs_nothing(tmp_path):
    """Bad input gets a clear one-line error naming the problem, a problem with one file costs at most that file's
    exercise, and a bug of the grader's is never recorded as the student's final result (SECURITY.md, "What must
    hold" 5 and 6): an nbgrader submission holding a valid 05_quiz notebook and a stray, empty folder whose name is
    not UTF-8 (tests/grading/hostile/nbgrader_odd_name) is read: quiz is taken, and every note is valid Unicode."""
    import os
    import shutil

    from grader import ROOT
    from grader.course import COURSE_FILE, load_course
    from grader.intake.submission import read_submission

    student = tmp_path / "submitted" / "student"
    shutil.copytree(ROOT / "nbgrader" / "source" / "05_quiz", student / "05_quiz")
    os.mkdir(os.path.join(os.fsencode(student), b"notes\xff"))
    files, problems, notes, *_ = read_submission(student, load_course(COURSE_FILE).grading.intake)
    assert "quiz" in files and not problems
    assert all(note.encode("utf-8") for note in notes)


def test_a_reply_pins_no_more_than_its_own_frame_while_checks_fail(tmp_path):
    """A reply costs the grading process about its own size, whatever it declares, and the grading process holds about
    one frame per reply (SECURITY.md, "Where the boundary is" and the wire row of "What is isolated"): replies padded
    with 48 MiB of blob bytes no tensor claims (tests/grading/hostile/pinned_padding), each failing a check in another way,
    keep the grading process's peak within two such frames of plain zeros' (measured before such replies were refused:
    three frames were held at once, the first failure of a hypothesis test, its replay and the last error pytest keeps;
    a 48 MiB reply is now refused from its header, over the exercise's share of replies)."""
    pad = 48
    peaks = {trick: grading_peak_mib(hostile_submission(tmp_path, trick)) for trick in ("zeros", "pinned_padding")}
    assert peaks["pinned_padding"] <= peaks["zeros"] + 2 * pad, peaks


@pytest.mark.parametrize("claimed", [False, True], ids=["unclaimed", "claimed-where-unread"])
def test_a_padded_reply_is_read_once_per_function(tmp_path, zygote, course, monkeypatch, claimed):  # noqa: F811
    """A reply the student's code changed is refused, and its function not called again (SECURITY.md, "What comes
    back"): replies padded with bytes no tensor claims, or that a tensor claims where no check reads
    (tests/grading/hostile/pinned_padding), passed every check the reference's code made, each call one more 48 MiB
    read; now each padded reply fails its check, one per function (here 1 MiB of padding, within the exercise's share
    of replies, which refuses 48 MiB from the header)."""
    refused, forged = [], Abandoned.forged  # the functions of each reply refused
    monkeypatch.setattr(Abandoned, "forged",
                        lambda abandoned, labels: refused.extend(dict.fromkeys(labels)) or forged(abandoned, labels))
    results = grade(hostile_submission(tmp_path, "pinned_padding", claimed=claimed, pad_mib=1), course, zygote)
    assert refused and len(refused) == len(set(refused)), refused
    assert all(e["score"] < e["max_score"] for e in results["exercises"].values()), results["exercises"]
    assert "it held bytes that none of its values use" in outputs(results, "softmax")


@pytest.mark.parametrize("blob", [False, True], ids=["json", "blob"])
def test_replies_no_check_reads_cost_an_exercise_at_most_its_share(tmp_path, zygote, course, monkeypatch, blob):  # noqa: F811
    """What the grading process reads for an exercise's checks is bounded (course.yaml's replies_mb), whether a check
    reads it or not (SECURITY.md, "What comes back"): replies with 4 MiB of JSON no check reads, or with a 60 MiB tensor
    as a result a check drops (tests/grading/hostile/reply_junk), kept full marks at 20 to 40 times a correct
    submission's time (red team 15); now an exercise reads at most its share, then its remaining checks are not run."""
    read, charge = {}, Shares.charge

    def counted(shares, exercise, seconds=0.0, nbytes=0):
        charge(shares, exercise, seconds, nbytes)
        read[exercise] = max(read.get(exercise, 0), shares.read.get(exercise, 0))
    monkeypatch.setattr(Shares, "charge", counted)
    results = grade(hostile_submission(tmp_path, "reply_junk", blob=blob), course, zygote)
    share = course.grading.limits.replies_mb << 20
    assert read and max(read.values()) <= share + wire.HEADER.size, read
    stopped = [e for e in course.modules if f"came to more than {share >> 20} MiB in all" in outputs(results, e)]
    assert stopped and all(results["exercises"][e]["score"] < results["exercises"][e]["max_score"] for e in stopped)
    assert not blob or "quiz" not in stopped  # a share is its own exercise's: quiz loads no parameters


def test_a_padded_import_reply_costs_only_its_module(tmp_path, zygote, course):  # noqa: F811
    """A start's, an import's and a sync's replies are held to 64 KiB (SECURITY.md, "What comes back"): quiz.py, whose
    import pads every frame with 4 MiB of JSON (tests/grading/hostile/reply_junk), had every worker restart read and
    parse 16 of them; now its own import's reply is refused, quiz.py is not used, and the other exercises, graded in a
    worker without it, keep full marks."""
    results = grade(hostile_submission(tmp_path, "reply_junk", everywhere=True), course, zygote)
    assert "quiz: 0/" in results["output"] and "over the 64 KiB limit" in outputs(results), outputs(results)
    assert all(e["score"] == e["max_score"] for name, e in results["exercises"].items() if name != "quiz")


def test_an_infinite_gradient_is_no_right_gradient(tmp_path, zygote, course):  # noqa: F811
    """A trick earns nothing: a rule holds only where it is checked (SECURITY.md, "What comes back"): quiz.py with
    right values and gradients that are 0 but for one +inf entry (tests/grading/hostile/infinite_gradient) used to pass
    the autograd check, whose two sides were both infinite (inf <= inf); the check fails as it does for zeros alone."""
    results = grade(hostile_submission(tmp_path, "infinite_gradient"), course, zygote, "quiz")
    autograd = [t for t in results["tests"] if "quiz" in t["tags"] and t["name"].startswith("quiz: Gradients reach")]
    assert [t["status"] for t in autograd] == ["failed"], outputs(results)
    assert results["exercises"]["quiz"]["score"] < results["exercises"]["quiz"]["max_score"]


def test_a_link_loop_in_a_checkout_costs_only_its_exercise(tmp_path, zygote, capsys):  # noqa: F811
    """Nothing handed in crashes the grader: malformed input ends in a one-line message and costs that file's exercise
    (SECURITY.md, "What must hold" 5): a handout checkout whose exercises/quiz.py is a link to itself used to crash
    `grader ci` with a traceback (the annotation's path was resolved through the link), in its fallback too, so the
    commit got no grade at all; it is graded, quiz.py refused as a symbolic link."""
    import io
    import shutil

    from grader import ROOT
    from grader.ci import run_ci

    exercises = tmp_path / "checkout" / "exercises"
    shutil.copytree(ROOT / "solutions", exercises, ignore=shutil.ignore_patterns("__pycache__"))
    (exercises / "quiz.py").unlink()
    (exercises / "quiz.py").symlink_to("quiz.py")
    out = io.StringIO()
    status = run_ci(tmp_path / "checkout", env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path / "checkout")}, stdout=out,
                    zygote=zygote, assignment="05_quiz")
    assert status == 0, capsys.readouterr().err
    assert "quiz.py is a symbolic link" in out.getvalue() and "Score: 0/10" in out.getvalue(), out.getvalue()
    assert "::error file=exercises/quiz.py" in out.getvalue(), out.getvalue()


def test_a_link_loop_in_one_submission_stops_no_classmate(tmp_path):
    """A student cannot stop or delay the grading of anyone else; malformed input gets a one-line error (SECURITY.md,
    "What must hold" 4 and 5): in nbgrader's layout, bob's 05_quiz.ipynb is a link to itself. `grader batch` resolved
    each submission's path through its links before handing it to a job, and the loop's RuntimeError stopped the
    whole batch before anyone was graded; now alice is graded and bob's record says why his is not."""
    import shutil

    from grader import ROOT
    from grader.batch import run_batch
    from grader.course import COURSE_FILE

    klass = tmp_path / "submitted"
    shutil.copytree(ROOT / "nbgrader" / "source" / "05_quiz", klass / "alice" / "05_quiz")
    (klass / "bob" / "05_quiz").mkdir(parents=True)
    (klass / "bob" / "05_quiz" / "05_quiz.ipynb").symlink_to("05_quiz.ipynb")
    rows = {row["student"]: row for row in run_batch(klass, tmp_path / "out", course_file=COURSE_FILE)}
    assert rows["alice"]["status"] == "graded" and rows["alice"]["score"] == 10, rows
    assert "symbolic link" in rows["bob"]["status"], rows


def test_a_line_of_parentheses_alone_stops_no_class_report(tmp_path):
    """Nothing handed in crashes the grader (SECURITY.md, "What must hold" 5; the similarity row of "What is
    isolated"): bob's quiz.py holds a line `()` (tests/grading/hostile/empty_tuple_line). The similarity check drops
    parentheses, found an empty line and raised IndexError in the batch's own process after grading: no class summary,
    no similarity report, a traceback. Both pages are written, and bob is graded like alice."""
    from grader.batch import run_batch
    from grader.course import COURSE_FILE

    klass = tmp_path / "class"
    klass.mkdir()
    for student, trick in (("alice", "zeros"), ("bob", "empty_tuple_line")):
        hostile_submission(tmp_path, trick).rename(klass / student)
    rows = {row["student"]: row for row in run_batch(klass, tmp_path / "out", course_file=COURSE_FILE,
                                                      assignment="05_quiz")}
    assert rows["bob"]["status"] == "graded" and rows["bob"]["score"] == 10, rows
    assert (tmp_path / "out" / "summary.html").is_file() and (tmp_path / "out" / "similarity.html").is_file()


def test_code_hidden_behind_a_coding_line_is_refused(tmp_path, course):  # noqa: F811
    """Files must be UTF-8, and the similarity check reads each file as grading reads it (SECURITY.md, "What is
    isolated": the files handed in, the similarity check): quiz.py declares `# coding: utf-7`
    (tests/grading/hostile/utf7_disguise). As UTF-8, which the grader checks, fingerprints and compares, it is two
    comment lines and `PARAMS = {}`; Python honours the coding line and runs a whole solution hidden in the comment.
    It scored 10/10 in `grader batch` while the similarity check, comparing it with the very same code in plain text, flagged nothing;
    now the file is refused with a line naming the coding line."""
    from grader.intake.submission import read_submission

    read = read_submission(hostile_submission(tmp_path, "utf7_disguise"), course.grading.intake, course)
    assert "quiz" not in read.files and "softmax" in read.files
    assert "declares the source encoding 'utf-7' on a coding line" in read.problems["quiz"], read.problems


def flagged_pairs(tmp_path, bob: bytes) -> list[tuple[str, str]]:
    """The pairs `grader batch` flags in a class of alice (the reference quiz.py) and bob (``bob``), both 10/10."""
    import json

    from grader import ROOT
    from grader.batch import run_batch
    from grader.course import COURSE_FILE

    for student, text in (("alice", (ROOT / "solutions" / "quiz.py").read_bytes()), ("bob", bob)):
        (tmp_path / "class" / student).mkdir(parents=True)
        (tmp_path / "class" / student / "quiz.py").write_bytes(text)
    rows = {row["student"]: row for row in run_batch(tmp_path / "class", tmp_path / "out", course_file=COURSE_FILE,
                                                      assignment="05_quiz")}
    assert rows["alice"]["score"] == rows["bob"]["score"] == 10, rows
    pairs = json.loads((tmp_path / "out" / "similarity.json").read_text(encoding="utf-8"))["pairs"]
    return [(pair["a"], pair["b"]) for pair in pairs]


def test_code_with_carriage_returns_alone_is_compared(tmp_path):
    """The similarity check reads each file as grading reads it (SECURITY.md, the similarity row of "What is
    isolated"): bob's quiz.py is alice's, its lines ended by a carriage return alone after a first line `#`. Python
    ends lines at `\\r`; the similarity tokenizer did not, saw one comment line and compared nothing, so the copy went
    unflagged while it scored 10/10. The pair is flagged."""
    from grader import ROOT

    code = (ROOT / "solutions" / "quiz.py").read_bytes()
    assert flagged_pairs(tmp_path, b"#\r" + code.replace(b"\n", b"\r")) == [("alice/05_quiz", "bob/05_quiz")]


def test_code_with_lookalike_names_is_compared(tmp_path):
    """The similarity check reads each file as grading reads it (SECURITY.md, the similarity row of "What is
    isolated"): bob's quiz.py is alice's with every name in mathematical bold letters
    (tests/grading/hostile/lookalike_names: `import 𝐭𝐨𝐫𝐜𝐡`, `.𝐬𝐨𝐟𝐭𝐦𝐚𝐱`), which Python reads NFKC-normalized as the same
    names: the very same code, unflagged while it scored 10/10. Names are compared as Python reads them."""
    assert flagged_pairs(tmp_path, (HOSTILE / "lookalike_names" / "quiz.py").read_bytes()) == [
        ("alice/05_quiz", "bob/05_quiz")]


def test_a_private_tmpfs_holds_a_bounded_number_of_files(tmp_path, zygote, course):  # noqa: F811
    """What a worker's two tmpfs may cost the machine is bounded (SECURITY.md, "Real memory": `2 × tmp_mb` and the
    inodes of at most `tmp_mb × 64` files each): quiz.py creates empty files in /tmp and /dev/shm
    (tests/grading/hostile/inode_flood). Their `size` counted none of them: at about 1 KiB of kernel memory each, a
    worker could hold 3 million per tmpfs (6 GiB on a 24 GiB machine) outside every limit; now each stops at its
    inode limit."""
    from grader.sandbox.jail.rootfs import TMP_INODES_PER_MB

    limit = course.grading.limits.tmp_mb * TMP_INODES_PER_MB
    text = raised_by(hostile_submission(tmp_path, "inode_flood", tries=limit + 1000), course, zygote)
    counts = dict(part.split("=") for part in text.removeprefix("INODES ").split())
    assert 0 < int(counts["tmp"]) <= limit and 0 < int(counts["shm"]) <= limit, text


def test_code_after_a_byte_order_mark_is_compared(tmp_path):
    """The similarity check reads each file as grading reads it (SECURITY.md, the similarity row of "What is
    isolated"): bob's quiz.py is alice's without its docstring line, after a UTF-8 byte order mark. Python drops the
    mark; the tokenizer kept it in front of `import torch`, which then was no import, so every `torch.` differed and
    the copy scored 0.73, under the threshold, while it scored 10/10. The pair is flagged."""
    from grader import ROOT

    code = (ROOT / "solutions" / "quiz.py").read_bytes().split(b"\n", 1)[1]
    assert code.startswith(b"import torch")
    assert flagged_pairs(tmp_path, b"\xef\xbb\xbf" + code) == [("alice/05_quiz", "bob/05_quiz")]


def test_code_with_names_the_tokenizer_splits_is_compared(tmp_path):
    """The similarity check reads each file as grading reads it (SECURITY.md, the similarity row of "What is
    isolated"): bob's quiz.py is alice's with every local name starting with ℘ (tests/grading/hostile/split_names), an
    identifier character to Python that the tokenize module splits off as an error token, after one for the space
    before it: the very same code scored 0.50, unflagged, while it scored 10/10. Names are read whole."""
    assert flagged_pairs(tmp_path, (HOSTILE / "split_names" / "quiz.py").read_bytes()) == [
        ("alice/05_quiz", "bob/05_quiz")]


def test_uniform_weights_earn_nothing(tmp_path, zygote, course):  # noqa: F811
    """A trick earns nothing: only right results pay, and a rule any result may follow pays as far as they are right
    (SECURITY.md, "What comes back": the trick ceiling is 0): context.py returns uniform weights 1/T whatever the
    scores (tests/grading/hostile/uniform_weights). "Each row of the attention weights is a distribution" was a values
    check, which any distribution passes: the trick earned 0.92/10. It is a rule now, and the trick earns 0."""
    results = grade(hostile_submission(tmp_path, "uniform_weights", module="context"), course, zygote, "context")
    assert_trick_earns_nothing(results, module="context")


def unprivileged(check) -> bool:
    """``check()`` in a forked child that runs as an unprivileged user where we are root (root reads a folder of mode
    000 all the same): whether it returned True (an exception, like False, fails)."""
    import codecs
    import os

    codecs.lookup("ascii")  # looked up before the fork: the unprivileged child may not read the interpreter's files
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if os.getuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            code = 0 if check() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def public_tmp():
    """A folder in /tmp that an unprivileged user reaches (pytest's own are private), removed afterwards whatever
    its modes."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="redteam-", dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    for parent, dirs, _ in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(parent, name), 0o755)
    shutil.rmtree(folder)


def test_an_unreadable_folder_stops_no_batch(public_tmp):
    """A student cannot stop the grading of anyone else (SECURITY.md, "What must hold" 4 and 5): bob's folder has
    mode 000 (as unzip restores a zip's permissions), and the grader runs unprivileged. Looking for nbgrader's
    assignment folders in it raised PermissionError in `discover`, which stopped the whole batch before anyone was
    graded; bob is listed like alice (and his intake says that his folder cannot be read)."""
    import shutil

    from grader import ROOT
    from grader.course import COURSE_FILE, load_course
    from grader.entries import discover

    loaded = load_course(COURSE_FILE)
    shutil.copytree(ROOT / "nbgrader" / "source" / "05_quiz", public_tmp / "alice" / "05_quiz")
    (public_tmp / "bob").mkdir(mode=0)
    assert unprivileged(lambda: sorted(entry.student for entry in discover(public_tmp, loaded)) == ["alice", "bob"])


@pytest.mark.parametrize("layout", ["notebooks folder of mode 000", "checkout of mode 444", "assignment of mode 444"])
def test_an_unreadable_folder_is_no_grader_fault(public_tmp, layout):
    """Malformed input gets a clear outcome, and a grader fault is never the student's (SECURITY.md, "What must hold"
    5 and 6), read by an unprivileged grader: a handout checkout whose exercises/ holds the stubs and whose notebooks/
    has mode 000, a checkout of mode 444 (its names listed, its files out of reach), an nbgrader assignment folder of
    mode 444. Looking for notebooks raised
    PermissionError in the reading child, reported as a fault of the grader (graded again on every run, a traceback
    from `grader grade`); the stubs are taken, or the files out of reach are problems saying why."""
    import os
    import shutil

    from grader import ROOT
    from grader.course import COURSE_FILE, load_course
    from grader.intake.submission import read_submission

    loaded = load_course(COURSE_FILE)
    checkout = public_tmp / "checkout"
    if layout.startswith("notebooks"):
        shutil.copytree(ROOT / "exercises", checkout / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
        (checkout / "notebooks").mkdir(mode=0)
        taken = sorted(loaded.modules)
    elif layout.startswith("checkout"):
        shutil.copytree(ROOT / "solutions", checkout, ignore=shutil.ignore_patterns("__pycache__"))
        os.chmod(checkout, 0o444)
        taken = []
    else:  # nbgrader's layout, its notebook renamed: listed, out of reach
        shutil.copy(ROOT / "nbgrader" / "source" / "05_quiz" / "05_quiz.ipynb", public_tmp / "mine.ipynb")
        (checkout / "05_quiz").mkdir(parents=True)
        shutil.move(public_tmp / "mine.ipynb", checkout / "05_quiz" / "mine.ipynb")
        os.chmod(checkout / "05_quiz", 0o444)
        taken = []

    def check():
        read = read_submission(checkout, loaded.grading.intake, loaded)
        return sorted(read.files) == taken  # an IntakeFault, raised, fails
    assert unprivileged(check)


def test_a_timestamp_no_clock_can_show_stops_nothing(tmp_path):
    """One bad submission never stops the others, and an instructor's bad file gets one line (SECURITY.md, "Times a
    submission gives"): nbgrader's timestamp.txt, which the student writes, holding a time with an offset of +99:00
    (tests/grading/hostile/timestamp_offset) gives that submission no time, where it stopped `grader batch` before any
    report; the same time in the instructor's list of submission times is a TableError naming the line."""
    import shutil
    from datetime import timezone

    from grader.records.late import submission_time
    from grader.records.table import TableError, parse_time

    folder = tmp_path / "submitted" / "student" / "05_quiz"
    folder.mkdir(parents=True)
    shutil.copy(HOSTILE / "timestamp_offset" / "timestamp.txt", folder / "timestamp.txt")
    (folder / "05_quiz.ipynb").write_text("{}", encoding="utf-8")
    assert submission_time(folder / "05_quiz.ipynb", True, None, None) is None
    text = (folder / "timestamp.txt").read_text(encoding="utf-8")
    for bad in (text, "2026-11-20 14:03:12 Europe", "2026-11-20 14:03:12 " + "A" * 300):
        with pytest.raises(TableError, match="^times.csv:2: "):
            parse_time(bad, timezone.utc, "times.csv:2")


def test_a_backdated_zip_is_not_silently_on_time(tmp_path, capsys):
    """A late penalty a student can dodge is never silent (SECURITY.md, "Submission times"): a late zip whose entries
    are dated before the due date (tests/grading/hostile/backdated_zip), or hold an impossible date (no time at all),
    is on time by its own word; without the instructor's list its record is marked ``time_unlisted`` and `grader
    batch` / `grader gradebook` say in one line that lateness was judged by what submissions say; with the list, the
    listed time is used and the record is not marked."""
    import zipfile
    from datetime import datetime, timedelta, timezone

    from grader import ROOT
    from grader.course import COURSE_FILE, Late, load_course
    from grader.intake.submission import read_submission
    from grader.records.adjust import Records, class_view
    from grader.records.late import Times, submission_time
    from grader.reports.terminal import note_unlisted_times

    due = datetime(2026, 11, 20, 23, 59, tzinfo=timezone.utc)
    late = load_course(COURSE_FILE).model_copy(update={"late": Late(due={"course": due}, percent=10)})
    stamps = {}
    for student, when in (("early", (2026, 11, 19, 12, 0, 0)), ("nodate", (2107, 0, 0, 0, 0, 0))):
        path = tmp_path / f"{student}.zip"
        with zipfile.ZipFile(path, "w") as archive:
            for module in late.modules:
                archive.writestr(zipfile.ZipInfo(f"{module}.py", (2026, 11, 19, 12, 0, 0)),
                                 (ROOT / "solutions" / f"{module}.py").read_bytes())
            if student == "nodate":
                archive.writestr(zipfile.ZipInfo("notes.txt", when), b"")
        stamp = read_submission(path, late.grading.intake).stamp
        stamps[student] = submission_time(path, False, stamp, late.late)
    assert stamps["early"] < due and stamps["nodate"] is None  # what the zips say: on time, or no time
    rows = [{"student": s, "score": 10.0, "max_score": 10, "tests": [], "exercises": {}, "status": "graded",
             "output": ""} for s in stamps]
    views = class_view(late, rows, Records(), stamps).rows
    assert [v["time_unlisted"] for v in views] == [True, True] and not any(v["adjustments"] for v in views)
    note_unlisted_times(views)
    assert capsys.readouterr().err.count("\n") == 1
    listed = Records(submitted=Times({(s, None): due + timedelta(days=1) for s in stamps}))
    views = class_view(late, rows, listed, stamps).rows
    assert [v["time_unlisted"] for v in views] == [False, False] and all(v["score"] == 9.0 for v in views)
    note_unlisted_times(views)
    assert capsys.readouterr().err == ""


def test_an_unusable_device_or_course_is_no_final_zero(tmp_path):
    """A grader fault is never recorded as the student's score (SECURITY.md, "What must hold" 6): where the
    autograder's device, assignment or course cannot be used (tests/grading/hostile/unusable_device), `grader grade`
    exits 3 (grade again) and Gradescope's run_autograder, after its second try, writes no results.json, where it wrote
    0 points as final for a correct submission."""
    import sys

    from test_release import run_autograder

    from grader import ROOT
    from grader.cli import GRADER_FAULT_STATUS, main

    for flags in (["--device", "tpu"], ["--assignment", "nope"], ["--course", str(tmp_path / "none.yaml")]):
        assert main(["grade", str(ROOT / "solutions"), "--out", str(tmp_path / "r.json"), *flags]) == GRADER_FAULT_STATUS
    # the autograder's device is one this machine cannot use (the last --device wins)
    run, root = run_autograder(tmp_path, f'#!/bin/sh\nexec "{sys.executable}" -m grader "$@" --device tpu\n')
    assert not (root / "results" / "results.json").exists() and run.returncode == 1, run.stderr
    assert "no score is recorded" in run.stderr and not (tmp_path / "r.json").exists()


def test_a_failed_reimport_is_said_in_the_graders_words(monkeypatch):
    """Import errors, shown with their message, cannot carry an input (SECURITY.md, "What comes back"): a module that
    imported in the first worker and fails in a worker restarted after a crash timed from an input
    (tests/grading/hostile/clock_channel: its message holds the clock it read) is said in the grader's words; the first
    import's error keeps its message. The worker's replies are replayed: only the clock tells the two imports apart."""
    from grader.course import COURSE_FILE, load_course
    from grader.sandbox.host.client import WorkerSession

    limits = load_course(COURSE_FILE).grading.limits
    leak = {"ok": False, "failure": {"kind": "import", "message": "quiz.py does not import: ImportError: clock slot 19"}}
    for replies, shown in (([{"ok": True}, leak], False), ([leak], True)):
        session = WorkerSession(None, "/nonexistent", limits, modules=("quiz",))
        answers = iter(replies)
        monkeypatch.setattr(session, "_exchange", lambda *args, answers=answers: next(answers))
        monkeypatch.setattr(session, "_sync", lambda doing: None)
        session.pid = 1
        while session._import_all() and "quiz" not in session.broken:
            session.imported.clear()  # the worker restarted after a crash (what _spawn does)
        assert ("clock slot 19" in str(session.broken["quiz"])) == shown, session.broken


def test_a_tensor_on_another_gpu_is_refused_untouched(monkeypatch):
    """A reply's tensor may claim only the devices the grading uses (SECURITY.md, "Where the boundary is"): grading
    on cuda (torch's current GPU, cuda:0), a tensor claiming cuda:1 (tests/grading/hostile/other_gpu) is refused before
    the grading process places anything there; it was placed on that GPU (a context and the tensor on a GPU another
    job may use) where the machine has one, since only the device's type was compared."""
    import torch

    from grader.course import COURSE_FILE, load_course
    from grader.sandbox.host.client import WorkerSession
    from grader.sandbox.host.problems import SubmissionProblem

    placed = []

    def to(self, *args, **kwargs):
        placed.append(str(args[0]) if args else str(kwargs.get("device")))
        raise RuntimeError("no such device here")

    monkeypatch.setattr(torch.Tensor, "to", to)
    session = WorkerSession(None, "/nonexistent", load_course(COURSE_FILE).grading.limits, device="cuda",
                            modules=("quiz",))
    session._blob = bytearray(16)
    tensor = {"$t": [0, 16], "dtype": "float32", "shape": [4]}
    with pytest.raises(SubmissionProblem, match="could not be read"):
        session._decoder()({**tensor, "device": "cuda:1"}, "decoder_attention(s, H)")
    assert placed == []
    session._decoder()({**tensor, "device": "cpu"}, "decoder_attention(s, H)")  # the CPU needs no placing
    with pytest.raises(SubmissionProblem):
        session._decoder()({**tensor, "device": "cuda:0"}, "decoder_attention(s, H)")
    assert placed == ["cuda:0"]  # the session's own GPU is placed on (here: none to place on)


def test_a_long_line_costs_the_stub_scan_no_more_than_its_length(tmp_path):
    """Every grading ends within the course's time limits (SECURITY.md, "What must hold" 4): after the suites, the
    grading process looks for stubs left in the staged files, with a pattern that backtracked over every start of a
    long run of letters, so one comment line of a million letters (the intake accepts files of 1 MB) kept it busy for
    about 80 minutes, and a batch's reports waited for it. Eight such files, each with a stub message at the end of
    its line, are scanned well within a minute (linear: about a second on this machine), and the stubs are found."""
    import subprocess
    import sys

    for module in ("scores", "softmax", "context", "qkv", "quiz", "dictionary", "causal", "multihead"):
        (tmp_path / f"{module}.py").write_text("# " + "a" * 999_000 + f" {module}.f: fill in this stub\n")
    scan = "import sys; from pathlib import Path; from grader.grade import stub_lines; print(len(stub_lines(Path(sys.argv[1]))))"
    try:
        found = subprocess.run([sys.executable, "-c", scan, str(tmp_path)], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("scanning eight files of one long line each for stubs took more than a minute")
    assert found.stdout.strip() == "8", found.stderr


def test_the_imports_judged_are_read_before_any_code_runs(tmp_path, zygote, course):  # noqa: F811
    """They cannot read the inputs the suites hold (SECURITY.md, "What must hold" 2): the rule on imports asked the
    worker for a file's imports after the values checks had run there, and printed the names and lines it answered;
    quiz.py (tests/grading/hostile/imports_channel) replaced the worker's reader of imports with one spelling the hidden
    inputs it had seen, and its feedback showed them. Intake reads the imports before any code of the submission
    runs: the same code writing constants gets the same feedback, which names what the file really imports."""
    (tmp_path / "leaky").mkdir(), (tmp_path / "blind").mkdir()
    leaky = grade(hostile_submission(tmp_path / "leaky", "imports_channel"), course, zygote, "quiz")
    blind = grade(hostile_submission(tmp_path / "blind", "imports_channel", blind=True), course, zygote, "quiz")
    assert outputs(leaky) == outputs(blind)
    assert "quiz.py imports sys (line 5)" in outputs(leaky), outputs(leaky)


def test_the_operator_count_carries_nothing_the_code_chose(tmp_path, zygote, course):  # noqa: F811
    """They cannot read the inputs the suites hold (found by our eighth red team): the rule that quiz_answer is
    computed printed the operator counts the worker reported, any integer, and quiz.py
    (tests/grading/hostile/ops_channel) set its count to a negative number spelling the hidden inputs it had seen. A
    count below 0 or past the bound is an unreadable reply; the rule's words hold no count: the same code spelling a
    constant gets the same feedback."""
    (tmp_path / "leaky").mkdir(), (tmp_path / "blind").mkdir()
    leaky = grade(hostile_submission(tmp_path / "leaky", "ops_channel"), course, zygote, "quiz")
    blind = grade(hostile_submission(tmp_path / "blind", "ops_channel", blind=True), course, zygote, "quiz")
    assert outputs(leaky) == outputs(blind)
    assert "12345678" not in outputs(blind), outputs(blind)
    rule = [t for t in leaky["tests"] if "tensor operations decoder_attention makes" in t["name"]]
    assert rule and all(t["score"] == 0 for t in rule), outputs(leaky)


def test_replies_a_check_keeps_while_it_reads_another_fit_the_grading_processs_bound(tmp_path):
    """A grade is final, never a grader fault: softmax returning the largest reply the wire takes once the rule checks
    start (tests/grading/hostile/held_replies) made `grader grade` run out of its memory bound on every run, the float64
    rule keeping one reply and a failure's frames another while it read a third (red team 11: 254 MiB replies). The
    checks keep no reply while they call the worker again (checks.without_frames), and a reply is at most 64 MiB; the
    grade, bounded as on Gradescope, is final: softmax earns nothing, the other exercises full marks."""
    import json
    import subprocess
    import sys

    from courses import MODULES

    from grader import ROOT
    submission = hostile_submission(tmp_path, "held_replies", "softmax")
    run = subprocess.run([sys.executable, "-m", "grader", "grade", submission, "--out", tmp_path / "results.json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    exercises = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["exercises"]
    assert exercises["softmax"]["score"] == 0
    assert all(exercises[m]["score"] == exercises[m]["max_score"] for m in MODULES if m != "softmax"), exercises
