"""Intake (grader/intake/submission.py): what is taken from a submission, and every malformed input refused with a clear
one-line message, never a traceback, never a change to the submission, never a link followed.

No student code runs here; these tests only read and stage files.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from courses import MODULES

from grader import ROOT
from grader.course import course
from grader.intake import IntakeError, IntakeFault
from grader.intake.submission import _validated, read_submission, stage
from grader.intake.walk import raw_digest

SOLUTIONS = ROOT / "solutions"
LIMITS = course().grading.intake
MB = 2**20


# ---------------------------------------------------------------- helpers


def solutions_into(folder: Path, modules=MODULES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for module in modules:
        (folder / f"{module}.py").write_bytes((SOLUTIONS / f"{module}.py").read_bytes())
    return folder


def zip_of(path: Path, entries: dict[str, bytes | str], compression=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def solution_entries(prefix: str = "") -> dict[str, bytes]:
    return {f"{prefix}{m}.py": (SOLUTIONS / f"{m}.py").read_bytes() for m in MODULES}


def mark_encrypted(path: Path, name: str) -> None:
    """Set the "encrypted" flag of one member, in its local header and in the central directory."""
    data = bytearray(path.read_bytes())
    for marker, flags_at, name_len_at, name_at in ((b"PK\x03\x04", 6, 26, 30), (b"PK\x01\x02", 8, 28, 46)):
        start = 0
        while (start := data.find(marker, start)) != -1:
            length = int.from_bytes(data[start + name_len_at:start + name_len_at + 2], "little")
            if data[start + name_at:start + name_at + length] == name.encode():
                data[start + flags_at] |= 0x1
            start += 4
    path.write_bytes(bytes(data))


def tree_state(path: Path) -> str:
    """A hash of everything about a tree that intake could change: names, modes, times, links, contents."""
    digest = hashlib.sha256()
    paths = [path, *sorted(path.rglob("*"))] if path.is_dir() and not path.is_symlink() else [path]
    for item in paths:
        info = item.lstat()
        digest.update(f"{item}\0{info.st_mode:o}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
        if stat.S_ISLNK(info.st_mode):
            digest.update(os.readlink(item).encode())
        elif stat.S_ISREG(info.st_mode):
            digest.update(item.read_bytes())
    return digest.hexdigest()


def refused(path, match: str) -> str:
    with pytest.raises(IntakeError) as error:
        read_submission(path, LIMITS)
    message = str(error.value)
    assert "\n" not in message and message.strip() == message
    assert match in message, message
    return message


# ---------------------------------------------------------------- folders


def test_files_at_the_root_in_exercises_or_one_level_down_are_taken(tmp_path):
    for layout in ("", "exercises/", "alice/exercises/"):
        folder = tmp_path / f"case{len(layout)}"
        solutions_into(folder / layout)
        before = tree_state(folder)
        files, problems, notes, *_ = read_submission(folder, LIMITS)
        assert sorted(files) == sorted(MODULES) and not problems
        assert files["softmax"] == (SOLUTIONS / "softmax.py").read_bytes()
        assert (f"exercise files taken from {layout}" in " ".join(notes)) == (layout not in ("", "exercises/"))
        assert tree_state(folder) == before


def test_an_exercise_file_named_in_other_letter_cases_is_said_to_be_renamed(tmp_path):
    """Softmax.py beside the other files (a folder or a zip) costs softmax, saying to rename it: the student read
    "softmax.py is not in the submission" beside the Softmax.py they handed in (found by our instructor's
    walk-through); alone, the refusal of the submission says it."""
    folder = solutions_into(tmp_path / "caps")
    (folder / "softmax.py").rename(folder / "Softmax.py")
    entries = {("Softmax.py" if name == "softmax.py" else name): data for name, data in solution_entries().items()}
    for submission in (folder, zip_of(tmp_path / "caps.zip", entries)):
        files, problems, *_ = read_submission(submission, LIMITS)
        assert "softmax" not in files and sorted(files) == sorted(m for m in MODULES if m != "softmax")
        assert problems == {"softmax": "Softmax.py is not read: name it softmax.py, in lower case, as in the handout"}
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "SOFTMAX.PY").write_bytes((SOLUTIONS / "softmax.py").read_bytes())
    with pytest.raises(IntakeError, match=r"\(SOFTMAX\.PY is not read: name it softmax\.py, in lower case"):
        read_submission(alone, LIMITS)


def test_only_the_eight_exercise_files_are_staged(tmp_path):
    """conftest.py, sitecustomize.py, usercustomize.py, .pth, pytest.ini, __init__.py, other modules, hidden and
    __pycache__ folders: none of it is staged."""
    folder = solutions_into(tmp_path / "sub")
    for name in ("conftest.py", "sitecustomize.py", "usercustomize.py", "evil.pth", "pytest.ini", "setup.cfg",
                 "__init__.py", "torch.py", "helpers.py", "softmax.pyc", "softmax.py.orig", ".softmax.py"):
        (folder / name).write_text("raise SystemExit('must never run')\n")
    for name in ("__pycache__/softmax.py", ".git/quiz.py", "tests/conftest.py"):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text("raise SystemExit('must never run')\n")
    staged = stage(folder, LIMITS)
    try:
        assert sorted(p.name for p in staged.directory.iterdir()) == sorted(f"{m}.py" for m in MODULES)
        for module in MODULES:
            assert (staged.directory / f"{module}.py").read_bytes() == (SOLUTIONS / f"{module}.py").read_bytes()
    finally:
        staged.cleanup()
    assert not staged.directory.parent.exists()


def test_staged_folder_is_private_and_readable_by_the_sandbox(tmp_path):
    staged = stage(solutions_into(tmp_path / "sub"), LIMITS)
    try:
        assert staged.directory.parent.name.startswith("grader-")
        assert stat.S_IMODE(staged.directory.parent.stat().st_mode) == 0o700  # no other user of the machine
        assert stat.S_IMODE(staged.directory.stat().st_mode) == 0o755  # bind-mounted into the sandbox
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in staged.directory.iterdir())
        assert len(staged.sha256) == 64
    finally:
        staged.cleanup()


def test_same_files_same_digest(tmp_path):
    a = read_submission(solutions_into(tmp_path / "a"), LIMITS)[0]
    b = read_submission(zip_of(tmp_path / "b.zip", solution_entries("exercises/")), LIMITS)[0]
    assert a == b
    assert stage(tmp_path / "a", LIMITS).sha256 == stage(tmp_path / "b.zip", LIMITS).sha256


def test_several_candidate_folders_are_named_in_a_note(tmp_path):
    solutions_into(tmp_path / "sub" / "draft")
    solutions_into(tmp_path / "sub" / "final")
    files, problems, notes, *_ = read_submission(tmp_path / "sub", LIMITS)
    assert sorted(files) == sorted(MODULES)
    assert any("several folders" in note and "draft/" in note and "final/" in note for note in notes), notes


def test_a_folder_holding_only_a_zip_names_it(tmp_path):
    """A zip inside the folder handed in is not opened, and the refusal says so, naming it (it said only that the
    folder held none of the exercise files: our instructor's walk-through, on Gradescope)."""
    (tmp_path / "sub").mkdir()
    zip_of(tmp_path / "sub" / "my work.zip", solution_entries(""))
    refused(tmp_path / "sub", "; a zip inside a folder is not opened (my work.zip): hand in the zip itself or the files in it")


def test_too_deep_folders_are_not_searched(tmp_path):
    """Files four folders down are not looked for, and the refusal says how deep the grader looks (it said "in any
    folder" for the notebooks: instructor walk-through 5)."""
    solutions_into(tmp_path / "sub" / "a" / "b" / "c" / "d")
    refused(tmp_path / "sub", "holds none of the exercise files")
    refused(tmp_path / "sub", "up to 3 folders down, outside hidden and __ folders: hand in your exercise files")


@pytest.mark.parametrize("case", ["missing", "empty", "only-other-files", "plain-file", "symlink"])
def test_what_is_no_submission_is_refused_in_one_line(tmp_path, case):
    path = tmp_path / case
    if case == "empty":
        path.mkdir()
    elif case == "only-other-files":
        path.mkdir()
        (path / "notes.txt").write_text("hi")
        (path / "main.py").write_text("print('hi')")
    elif case == "plain-file":
        path = tmp_path / "softmax.py"
        path.write_text("x = 1")
    elif case == "symlink":
        path.symlink_to(SOLUTIONS)
    match = {"missing": "does not exist", "empty": "holds none of the exercise files",
             "only-other-files": "holds none of the exercise files", "plain-file": "is not a folder, a .zip",
             "symlink": "is a symbolic link"}[case]
    refused(path, match)


def test_too_many_files_or_folders_is_refused(tmp_path):
    folder = solutions_into(tmp_path / "files")
    for i in range(LIMITS.max_files):
        (folder / f"junk{i}.txt").touch()
    refused(folder, f"more than {LIMITS.max_files} files")
    folder = solutions_into(tmp_path / "dirs")
    for i in range(LIMITS.max_files):
        (folder / f"d{i}").mkdir()
    refused(folder, f"more than {LIMITS.max_files} files")


def test_a_folder_whose_readable_files_add_up_past_the_total_cap_is_refused(tmp_path):
    """Exercise files and notebooks that intake would read, each within its own cap, adding up to more than
    max_total_mb refuse the submission by their sizes, before any is read: the cap that lets the batch digest a
    submission in bounded time. Files intake never reads, and notebooks over their own cap, do not count."""
    folder = solutions_into(tmp_path / "checkout" / "exercises")
    third = int(LIMITS.max_total_mb * MB / 3) + 1
    for n in range(3):
        (tmp_path / "checkout" / "notebooks" / f"n{n}").mkdir(parents=True)
        (tmp_path / "checkout" / "notebooks" / f"n{n}" / f"n{n}.ipynb").write_bytes(b" " * third)
    refused(folder.parent, f"add up to {3 * third / MB:.1f} MiB, over the {LIMITS.max_total_mb:g} MiB limit")
    (tmp_path / "checkout" / "notebooks" / "n2" / "n2.ipynb").rename(tmp_path / "checkout" / "notebooks" / "n2" / "n2.bin")
    (tmp_path / "checkout" / "notebooks" / "n1" / "n1.ipynb").write_bytes(b" " * int(LIMITS.max_total_mb * MB + 1))
    files, problems, *_ = read_submission(folder.parent, LIMITS)
    assert set(files) == set(MODULES) and not problems


def test_the_raw_digest_changes_with_what_intake_may_read_and_reads_nothing_past_the_caps(tmp_path):
    """raw_digest (the batch's fingerprint, computed without parsing) changes when a byte intake may read changes,
    or a name; not when a file intake never reads changes, nor a time. A file, zip or folder over its cap is digested
    from its size alone: changing its bytes changes nothing, as intake refuses it by its size."""
    digest = lambda path: raw_digest(path, LIMITS, course())  # noqa: E731
    folder = solutions_into(tmp_path / "checkout" / "exercises")
    (folder.parent / "README.md").write_text("mine\n")
    before = digest(folder.parent)
    os.utime(folder / "softmax.py", (0, 0))
    (folder.parent / "README.md").write_text("ours\n")
    assert digest(folder.parent) == before
    (folder / "softmax.py").write_bytes((folder / "softmax.py").read_bytes().replace(b"dim", b"dam", 1))
    changed = digest(folder.parent)
    (folder / "softmax.py").rename(folder / "softmax_.py")
    assert len({before, changed, digest(folder.parent)}) == 3
    huge = folder / "context.py"
    huge.write_bytes(b"#" * int(LIMITS.max_file_mb * MB + 1))
    over = digest(folder.parent)
    huge.write_bytes(b"x" * int(LIMITS.max_file_mb * MB + 1))
    assert digest(folder.parent) == over
    archive = tmp_path / "big.zip"
    archive.write_bytes(b"\0" * int(LIMITS.max_total_mb * MB + 1))
    over = digest(archive)
    archive.write_bytes(b"\1" * int(LIMITS.max_total_mb * MB + 1))
    assert digest(archive) == over
    for n in range(LIMITS.max_files):
        (folder.parent / f"junk{n}").touch()
    over = digest(folder.parent)
    (folder / "scores.py").write_text("anything\n")
    assert digest(folder.parent) == over


def test_symlinks_are_never_followed(tmp_path):
    """A symlinked softmax.py pointing at solutions/softmax.py is not taken (a problem for softmax only); a
    symlinked folder is not searched; nothing outside the submission is read."""
    folder = solutions_into(tmp_path / "sub", [m for m in MODULES if m != "softmax"])
    (folder / "softmax.py").symlink_to(SOLUTIONS / "softmax.py")
    files, problems, *_ = read_submission(folder, LIMITS)
    assert "softmax" not in files and "symbolic link" in problems["softmax"]
    assert sorted(files) == sorted(m for m in MODULES if m != "softmax")
    staged = stage(folder, LIMITS)
    try:
        assert not (staged.directory / "softmax.py").exists()
    finally:
        staged.cleanup()

    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "exercises").symlink_to(SOLUTIONS, target_is_directory=True)
    refused(linked, "holds none of the exercise files")


def test_special_files_are_not_read(tmp_path):
    """A FIFO named softmax.py is refused at once (never opened, so never waited on)."""
    folder = solutions_into(tmp_path / "sub", [m for m in MODULES if m != "softmax"])
    os.mkfifo(folder / "softmax.py")
    files, problems, *_ = read_submission(folder, LIMITS)
    assert "not a regular file" in problems["softmax"] and "softmax" not in files


@pytest.mark.parametrize("data, match", [
    ("def softmax(x):\n    return 'é'\n".encode("latin-1"), "is not UTF-8 text"),
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "is not UTF-8 text"),
    (b"import torch\n\x00\x00\x00", "contains NUL bytes"),
], ids=["latin-1", "binary", "nul"])
def test_non_utf8_and_binary_files_cost_only_their_exercise(tmp_path, data, match):
    folder = solutions_into(tmp_path / "sub")
    (folder / "softmax.py").write_bytes(data)
    files, problems, *_ = read_submission(folder, LIMITS)
    assert match in problems["softmax"] and "softmax" not in files
    assert set(files) == set(MODULES) - {"softmax"}


def test_oversized_file_costs_only_its_exercise(tmp_path):
    folder = solutions_into(tmp_path / "sub")
    (folder / "qkv.py").write_bytes(b"# " + b"x" * int(LIMITS.max_file_mb * MB) + b"\n")
    files, problems, *_ = read_submission(folder, LIMITS)
    assert "over the" in problems["qkv"] and "MiB limit" in problems["qkv"] and "qkv" not in files
    assert set(files) == set(MODULES) - {"qkv"}


# ---------------------------------------------------------------- zips


def test_zip_at_the_root_or_in_a_folder(tmp_path):
    for prefix in ("", "exercises/", "alice/exercises/"):
        path = zip_of(tmp_path / f"sub{len(prefix)}.zip", solution_entries(prefix))
        files, problems, notes, *_ = read_submission(path, LIMITS)
        assert sorted(files) == sorted(MODULES) and not problems


def test_zip_entries_that_leave_the_archive_are_ignored_and_never_written(tmp_path):
    entries = solution_entries("exercises/")
    evil = b"raise SystemExit('must never run')\n"
    entries.update({"../softmax.py": evil, "/tmp/softmax.py": evil, "exercises/../../quiz.py": evil,
                    "C:\\\\softmax.py": evil, "c:/softmax.py": evil, "..\\\\..\\\\softmax.py": evil})
    for i in range(10):
        entries[f"../../evil{i}.py"] = evil
    path = zip_of(tmp_path / "sub.zip", entries)
    files, problems, notes, *_ = read_submission(path, LIMITS)
    assert all(files[m] == (SOLUTIONS / f"{m}.py").read_bytes() for m in MODULES) and not problems
    ignored = [n for n in notes if n.startswith("ignored")]
    assert ignored and len(ignored) <= 6, notes  # capped: five named, then a count
    staged = stage(path, LIMITS)
    try:
        assert sorted(p.name for p in staged.directory.iterdir()) == sorted(f"{m}.py" for m in MODULES)
        assert not list(staged.directory.parent.parent.glob("evil*.py"))
    finally:
        staged.cleanup()
    assert not (tmp_path.parent / "softmax.py").exists() and not (tmp_path / "quiz.py").exists()


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04", b"PK\x05\x06" + bytes(18), b"this is not a zip" * 100,
                                  bytes(range(256)) * 40], ids=["empty", "header-only", "empty-directory", "text", "noise"])
def test_corrupt_zips_are_refused_in_one_line(tmp_path, data):
    path = tmp_path / "sub.zip"
    path.write_bytes(data)
    refused(path, "sub.zip")


def test_damaged_zips_never_raise_anything_but_intake_errors(tmp_path):
    """Random damage to a valid archive: each read ends in files, per-exercise problems or an IntakeError."""
    good = zip_of(tmp_path / "good.zip", solution_entries("exercises/")).read_bytes()
    rng = random.Random(20261121)
    path = tmp_path / "damaged.zip"
    outcomes = set()
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[:rng.randrange(len(data))]
        path.write_bytes(bytes(data))
        try:
            files, problems, *_ = read_submission(path, LIMITS)
            outcomes.add("problems" if problems else "files")
            assert all("\n" not in p for p in problems.values())
        except IntakeError as error:
            assert "\n" not in str(error)
            outcomes.add("refused")
    assert outcomes >= {"problems", "refused"}


def test_zip_bomb_is_refused_before_unpacking(tmp_path):
    """Entries that declare more than max_total_mb in all are refused without being unpacked."""
    entries = solution_entries()
    for i in range(3):
        entries[f"padding{i}.bin"] = b"\0" * int(LIMITS.max_total_mb * MB / 2)
    path = zip_of(tmp_path / "bomb.zip", entries)
    assert path.stat().st_size < MB  # it compresses to almost nothing
    refused(path, f"unpacks to more than {LIMITS.max_total_mb:g} MiB")


def test_zip_member_lying_about_its_size_is_not_taken(tmp_path):
    """A member whose header declares a small size but unpacks to more is cut off at the cap and refused."""
    entries = solution_entries()
    entries["softmax.py"] = b"#" * (3 * int(LIMITS.max_file_mb * MB))
    path = zip_of(tmp_path / "liar.zip", entries)
    data = bytearray(path.read_bytes())
    big = (3 * int(LIMITS.max_file_mb * MB)).to_bytes(4, "little")
    small = (100).to_bytes(4, "little")
    # rewrite the uncompressed size of softmax.py in its local header and the central directory
    for marker in (b"PK\x03\x04", b"PK\x01\x02"):
        start = 0
        while (start := data.find(marker, start)) != -1:
            offset = start + (22 if marker == b"PK\x03\x04" else 24)
            if data[offset:offset + 4] == big:
                data[offset:offset + 4] = small
            start += 4
    path.write_bytes(bytes(data))
    files, problems, *_ = read_submission(path, LIMITS)
    assert "softmax" not in files and "softmax" in problems, problems
    assert set(files) == set(MODULES) - {"softmax"}


def test_oversized_zip_member_and_oversized_zip(tmp_path):
    entries = solution_entries()
    entries["qkv.py"] = b"#" * (int(LIMITS.max_file_mb * MB) + 10)
    files, problems, *_ = read_submission(zip_of(tmp_path / "big-member.zip", entries), LIMITS)
    assert "over the" in problems["qkv"] and set(files) == set(MODULES) - {"qkv"}

    big = tmp_path / "big.zip"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as archive:
        for name, data in solution_entries().items():
            archive.writestr(name, data)
        archive.writestr("video.bin", os.urandom(int(LIMITS.max_total_mb * MB) + 1000))
    refused(big, f"over the {LIMITS.max_total_mb:g} MiB limit")


def test_zip_symlink_and_encrypted_members_cost_only_their_exercise(tmp_path):
    path = tmp_path / "odd.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in solution_entries().items():
            if name == "softmax.py":
                info = zipfile.ZipInfo(name)
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                archive.writestr(info, str(SOLUTIONS / "softmax.py"))
            else:
                archive.writestr(name, data)
    mark_encrypted(path, "quiz.py")
    files, problems, *_ = read_submission(path, LIMITS)
    assert "symbolic link" in problems["softmax"]
    assert "quiz" in problems and "quiz" not in files
    assert set(files) == set(MODULES) - {"softmax", "quiz"}


def test_too_many_zip_entries_is_refused(tmp_path):
    entries = solution_entries()
    entries.update({f"junk/{i}.txt": b"" for i in range(LIMITS.max_files)})
    refused(zip_of(tmp_path / "many.zip", entries), f"over the limit of {LIMITS.max_files}")


def test_a_folder_named_like_a_zip_is_a_folder(tmp_path):
    folder = solutions_into(tmp_path / "sub.zip")
    files, problems, *_ = read_submission(folder, LIMITS)
    assert sorted(files) == sorted(MODULES)


def test_a_submission_is_never_modified(tmp_path):
    """Reading and staging leave the submission bit for bit (and time stamp for time stamp) as it was."""
    folder = solutions_into(tmp_path / "sub")
    (folder / "notes.txt").write_text("hi")
    (folder / "helpers").mkdir()
    (folder / "helpers" / "conftest.py").write_text("x = 1")
    os.chmod(folder / "quiz.py", 0o600)
    archive = zip_of(tmp_path / "sub.zip", solution_entries("exercises/"))
    for path in (folder, archive):
        before = tree_state(path)
        stage(path, LIMITS).cleanup()
        read_submission(path, LIMITS)
        assert tree_state(path) == before


def test_imports_are_read_with_the_files_and_checked_on_their_way_back(tmp_path):
    """Intake reads each file's imports (the rule on imports judges them, never what a worker answers); a file Python
    cannot parse has none; a reply whose imports are not the file's (a line past its end) is the grader's fault."""
    folder = solutions_into(tmp_path / "s")
    (folder / "quiz.py").write_text("import torch\n\nimport os.path\n", encoding="utf-8")
    (folder / "causal.py").write_text("def broken(:\n", encoding="utf-8")
    read = read_submission(folder, LIMITS)
    assert read.imports["quiz"] == [("torch", 1), ("os.path", 3)]
    assert "causal" not in read.imports and read.imports["softmax"]
    reply = {"files": {"quiz": "import torch\n"}, "problems": {}, "notes": [], "covers": None, "sources": {},
             "stamp": None, "imports": {"quiz": [["torch", 1]]}}
    assert _validated(json.dumps(reply).encode(), 0, LIMITS, course()).imports == {"quiz": [("torch", 1)]}
    reply["imports"] = {"quiz": [["torch", 3]]}
    with pytest.raises(IntakeFault):
        _validated(json.dumps(reply).encode(), 0, LIMITS, course())


def test_a_file_too_deep_for_pythons_parser_costs_only_its_exercise_and_prints_nothing(tmp_path):
    """A file nested past the parser's limit (CPython says MemoryError there, red team 14) is read as one Python
    cannot parse, not as the intake running out of memory (which refused the whole submission); the tokenizer's
    warnings on a student's file (``1if``) are never printed on the grader's terminal."""
    folder = solutions_into(tmp_path / "s")
    (folder / "quiz.py").write_text("x = " + "-" * 100_000 + "1\n", encoding="utf-8")
    (folder / "causal.py").write_text((folder / "causal.py").read_text() + "y = [1if True else 2]\n" * 50, "utf-8")
    read = read_submission(folder, LIMITS)
    assert "quiz" not in read.imports and "quiz" in read.files and not read.problems
    # in a process of its own: pytest records the warnings of this one (and of its forked children) instead
    done = subprocess.run([sys.executable, "-c", READ_IMPORTS, str(folder)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == sorted(set(MODULES) - {"quiz"}) and done.stderr == ""


READ_IMPORTS = """
import sys
from grader.course import course
from grader.intake.submission import read_submission
print(*sorted(read_submission(sys.argv[1], course().grading.intake).imports))
"""


def _softmax_notebook(path: Path, first_line: str = "") -> Path:
    """The course's softmax notebook (its solution filled in) at ``path``, its solution cell starting with
    ``first_line``."""
    notebook = json.loads((course().nbgrader_dir / "source" / "02_softmax" / "02_softmax.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    cell["source"] = first_line + "".join(cell["source"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def test_what_a_student_writes_in_names_and_cells_is_never_a_grader_fault(tmp_path):
    """A module name of 2,500 characters in an import, a notebook 150 characters deep and a solution cell declaring
    another encoding are read as the student's (red team): each was refused as the grader's fault (exit status 3,
    graded again on every run), since the reply the grading process checked held more than it allowed."""
    folder = solutions_into(tmp_path / "long")
    (folder / "quiz.py").write_text("import torch." + "a" * 2500 + "\n" + (folder / "quiz.py").read_text(), "utf-8")
    read = read_submission(folder, LIMITS)
    assert read.imports["quiz"][0][0].startswith("torch.aaa") and not read.problems
    deep = _softmax_notebook(tmp_path / "deep" / ("my work, final " * 10) / "02_softmax.ipynb")
    read = read_submission(deep.parent.parent, LIMITS)
    assert "softmax" in read.files and len(read.sources["softmax"]) <= 100
    _softmax_notebook(tmp_path / "coding" / "nb" / "02_softmax.ipynb", "# -*- coding: latin-1 -*-\n")
    solutions_into(tmp_path / "coding", ["scores"])
    read = read_submission(tmp_path / "coding", LIMITS)
    assert "softmax" not in read.files and "declares the source encoding" in read.problems["softmax"]


def test_reading_is_bounded_by_cpu_time_and_a_busy_machine_refuses_nothing(tmp_path, monkeypatch):
    """A reader that runs out of CPU time is the submission's (a final refusal, its CPU time told to the batch that
    charges it); one stopped by the wall clock, three times as long, had CPU time left: the machine was busy, and it
    is the grader's fault, graded again (red team: the same notebooks read by wall clock were refused for good at
    --jobs 2 and graded 10/10 at --jobs 1)."""
    import time

    import grader.intake.submission as submission

    folder = solutions_into(tmp_path / "s")
    limits = LIMITS.model_copy(update={"seconds": 1})
    original = submission._read

    def burning(path, *args):
        end = time.process_time() + 5
        while time.process_time() < end:
            pass
        return original(path, *args)

    monkeypatch.setattr(submission, "_read", burning)
    monkeypatch.setattr(submission, "WALL_FACTOR", 100)  # on a loaded machine 3 s of wall clock came first
    with pytest.raises(IntakeError, match="took more than 1 s") as refused:
        read_submission(folder, limits)
    assert refused.value.cpu_seconds >= 0.5  # charged (about its 1 s: 0.85 s measured on a loaded machine)
    monkeypatch.setattr(submission, "_read", original)
    assert 0 < read_submission(folder, limits).cpu_seconds < 1
    monkeypatch.setattr(submission, "WALL_FACTOR", 3)  # a sleep: the wall clock alone, whatever the load
    monkeypatch.setattr(submission, "_read", lambda path, *args: time.sleep(5) or original(path, *args))
    with pytest.raises(IntakeFault, match=r"more than 3 s of wall clock with 0\.\d s of CPU time"):
        read_submission(folder, limits)
