"""Intake: turn what a student handed in into a private folder holding only the exercise files.

A submission is a folder (the files at its root, in ``exercises/``, or one
level further down, and notebooks anywhere in it: ``notebooks.take_notebooks``), a ``.zip`` of such a folder, or a
notebook. Nothing is
executed or imported here, the original is never modified, symbolic links are
never followed, and every size is capped by course.yaml. Problems with single
files are kept per exercise, so they cost that exercise and nothing else.
The reading itself (walking folders, unzipping, parsing notebooks) runs in a
forked child bounded in CPU time, wall clock and memory (course.yaml's
``grading.intake``), which sends back only plain, validated data.
"""
from __future__ import annotations

import codecs
import hashlib
import io
import json
import os
import re
import resource
import select
import shutil
import signal
import stat
import tempfile
import time
import tokenize
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from grader.course import Course, Intake
from grader.course import course as project_course
from grader.intake import IntakeError, IntakeFault, IntakeTimeout
from grader.intake.walk import MAX_DEPTH, intake_reads, listing, module_of, zips_at_top
from grader.sandbox.imports import MAX_IMPORT_NAME, MAX_IMPORTS, imports_of_files
from grader.sandbox.jail.lifeline import die_with_parent
from grader.text import MAX_MESSAGE, MAX_NAME, clean

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")  # Read.stamp: a zip entry's time, to the second
MAX_NOTES = 5  # notes about ignored archive entries (then one line with the count of the rest)
READING_NICENESS = 10  # a slow submission's reading yields the CPU to classmates' grading
WALL_FACTOR = 3  # the wall clock a reading child gets, in multiples of its CPU time: a backstop on a busy machine


@dataclass
class Staged:
    """The private copy of a submission: ``directory`` holds ``<module>.py`` files only."""

    directory: Path
    sha256: str
    problems: dict[str, str] = field(default_factory=dict)  # module -> why its file was not taken
    notes: list[str] = field(default_factory=list)
    covers: tuple[str, ...] | None = None  # a notebook's exercises (those it carries cells of); None: not a notebook
    sources: dict[str, str] = field(default_factory=dict)  # module -> the handout notebook its code was taken from
    imports: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # module -> its imports (``imports_of``)

    def cleanup(self):
        shutil.rmtree(self.directory.parent, ignore_errors=True)


def _show(path) -> str:
    """A path or name for a one-line message (``text.clean``: one line, printable, capped)."""
    return clean(str(path), MAX_NAME)


def _choose_folder(folders: dict[str, set[str]], notes: list[str]) -> str | None:
    """Of the folders that hold exercise files, the one holding most (ties: the shallowest, then by name);
    ``notes`` learns which one was taken when it is not the top folder."""
    if not folders:
        return None
    key = lambda f: (-len(folders[f]), f.count("/"), f)  # noqa: E731
    chosen = min(folders, key=key)
    rivals = sorted((f for f in folders if f != chosen and key(f)[:2] == key(chosen)[:2]), key=key)
    if rivals:
        names = ", ".join(_show(f + "/" if f else "the top folder") for f in [chosen, *rivals][:4])
        notes.append(f"several folders hold exercise files ({names}): graded {_show(chosen + '/' if chosen else 'the top folder')}")
    if chosen and chosen != "exercises":  # the handout's own folder goes without saying
        notes.append(f"exercise files taken from {_show(chosen)}/")
    return chosen


def _check_text(module: str, data: bytes, problems: dict[str, str]) -> bytes | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        problems[module] = f"{module}.py is not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start}): save it as UTF-8"
        return None
    if b"\0" in data:
        problems[module] = f"{module}.py contains NUL bytes: it looks like a binary file, not Python source"
        return None
    return data


def _from_folder(root: Path, limits: Intake, modules, problems: dict[str, str], notes: list[str],
                 notebooks: list[tuple[str, ...]]) -> dict[str, bytes]:
    """The exercise files of a folder (those of the folder holding most of them); ``notebooks`` learns the notebooks
    intake may read in it, wherever they are (their paths inside ``root``, split)."""
    try:
        os.scandir(root).close()
    except OSError as error:
        raise IntakeError(f"{_show(root.name or root)} cannot be read: {error.strerror}") from None
    folders: dict[str, set[str]] = {}
    names = []
    for parts, info in listing(root, limits, modules):
        names.append(parts[-1])
        if (info and stat.S_ISDIR(info.st_mode)) or not intake_reads(parts, modules):
            continue
        if module_of(parts[-1], modules):  # a link or a special file is taken to say why it is refused
            folders.setdefault("/".join(parts[:-1]), set()).add(parts[-1])
        elif info is None or stat.S_ISREG(info.st_mode):  # one listed but out of reach is refused saying why
            notebooks.append(parts)
    chosen = _choose_folder(folders, notes)
    taken: dict[str, bytes] = {}
    _misnamed(names, modules, folders, problems, notes)
    if chosen is None:
        return taken
    limit = int(limits.max_file_mb * 2**20)
    for name in sorted(folders[chosen]):
        module, path = module_of(name, modules), root / chosen / name
        try:
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                problems[module] = f"{name} is a symbolic link; hand in the file itself"
                continue
            if not stat.S_ISREG(info.st_mode):
                problems[module] = f"{name} is not a regular file"
                continue
            if info.st_size > limit:
                problems[module] = f"{name} is {info.st_size / 2**20:.1f} MiB, over the {limits.max_file_mb:g} MiB limit"
                continue
            # O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or a FIFO since lstat is refused, never waited on
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with open(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    problems[module] = f"{name} is not a regular file"
                    continue
                raw = handle.read(limit + 1)
        except OSError as error:
            problems[module] = f"{name} could not be read ({error.strerror or error})"
            continue
        if len(raw) > limit:
            problems[module] = f"{name} is over the {limits.max_file_mb:g} MiB limit"
            continue
        data = _check_text(module, raw, problems)
        if data is not None:
            taken[module] = data
    return taken


MISNAMED = " is not read: name it "


def _misnamed(names, modules, folders: dict[str, set[str]], problems: dict[str, str], notes: list[str]) -> None:
    """An exercise whose file is nowhere, though a file of its name in other letter cases is (``Dot.py`` for
    ``dot.py``): its problem says to rename that file (else: "dot.py is not in the submission", beside the Dot.py the
    student sees); where no exercise file is there at all, a note that the refusal of the submission repeats."""
    present = {name for found in folders.values() for name in found}
    for name in names:
        module = module_of(name.lower(), modules)
        if module and f"{module}.py" not in present and module not in problems:
            said = f"{_show(name)}{MISNAMED}{module}.py, in lower case, as in the handout"
            if folders:
                problems[module] = said
            else:
                notes.append(said)


def _from_zip(path: Path, limits: Intake, modules, problems: dict[str, str], notes: list[str],
              stamps: list[str]) -> dict[str, bytes]:
    label = _show(path.name)
    try:
        if not path.is_file():
            raise IntakeError(f"{label} is not a regular file")
        size = path.stat().st_size
        if size > limits.max_total_mb * 2**20:
            raise IntakeError(f"{label} is {size / 2**20:.1f} MiB, over the {limits.max_total_mb:g} MiB limit of a submission")
        archive = zipfile.ZipFile(path)
    except IntakeError:
        raise
    except Exception as error:  # noqa: BLE001 - zipfile raises many kinds on a hostile archive
        raise IntakeError(f"{label} is not a readable zip file ({_show(error)})") from None
    with archive:
        members = archive.infolist()
        if len(members) > limits.max_files:
            raise IntakeError(f"{label} holds {len(members)} entries, over the limit of {limits.max_files}")
        if sum(m.file_size for m in members) > limits.max_total_mb * 2**20:
            raise IntakeError(f"{label} unpacks to more than {limits.max_total_mb:g} MiB")
        times = [m.date_time for m in members if not m.is_dir()]
        try:  # the newest entry: when the zip was made (its local time), for late penalties
            stamps += [datetime(*max(times)).isoformat()] if times else []
        except ValueError:  # an impossible date (month 0): no time
            pass
        folders: dict[str, set[str]] = {}
        entries: dict[tuple[str, str], zipfile.ZipInfo] = {}
        ignored: list[str] = []
        for member in members:
            name = PurePosixPath(member.filename)
            if member.filename.startswith("/") or ".." in name.parts or ":" in member.filename or "\\" in member.filename:
                ignored.append(member.filename)
                continue
            if member.is_dir() or not module_of(name.name, modules) or len(name.parts) > MAX_DEPTH + 1:
                continue
            if any(part.startswith((".", "__")) for part in name.parts[:-1]):
                continue
            folder = name.parent.as_posix() if name.parent.as_posix() != "." else ""
            folders.setdefault(folder, set()).add(name.name)
            entries[folder, name.name] = member
        for filename in ignored[:MAX_NOTES]:
            notes.append(f"ignored {_show(repr(filename))}: paths must stay inside the archive")
        if len(ignored) > MAX_NOTES:
            notes.append(f"ignored {len(ignored) - MAX_NOTES} more entries whose paths leave the archive")
        chosen = _choose_folder(folders, notes)
        taken: dict[str, bytes] = {}
        _misnamed([PurePosixPath(m.filename).name for m in members], modules, folders, problems, notes)
        if chosen is None:
            return taken
        for name in sorted(folders[chosen]):
            member, module = entries[chosen, name], module_of(name, modules)
            if stat.S_ISLNK(member.external_attr >> 16):
                problems[module] = f"{name} is a symbolic link; hand in the file itself"
            elif member.file_size > limits.max_file_mb * 2**20:
                problems[module] = f"{name} is {member.file_size / 2**20:.1f} MiB, over the {limits.max_file_mb:g} MiB limit"
            else:
                try:
                    with archive.open(member) as handle:
                        data = handle.read(int(limits.max_file_mb * 2**20) + 1)
                except Exception as error:  # noqa: BLE001 - BadZipFile, zlib.error, NotImplementedError, ...
                    problems[module] = f"{name} could not be unpacked ({_show(error)})"
                    continue
                if len(data) > limits.max_file_mb * 2**20:
                    problems[module] = f"{name} unpacks to more than its declared size"
                    continue
                data = _check_text(module, data, problems)
                if data is not None:
                    taken[module] = data
        return taken


def read_submission(path: str | os.PathLike, limits: Intake, course: Course | None = None) -> Read:
    """The exercise files of a submission (module -> source bytes) for the exercises of ``course`` (default: the
    project's), the per-module problems, notes, and the exercises a notebook covers.

    Read in a forked child limited to ``limits.seconds`` of CPU time and ``limits.memory_mb`` more memory;
    IntakeError when the submission cannot be graded (reading it exceeded a bound included). The CPU time is what
    the submission costs, the same on a busy machine; the wall clock is only a backstop (``WALL_FACTOR`` times as
    long): a child stopped by it had CPU time left, so the machine, not the submission, was slow: IntakeFault."""
    from grader.intake import notebooks  # noqa: F401  (imported here, once, instead of in every child)

    course = course or project_course()
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(write_end, parent, Path(path), limits, course)
    os.close(write_end)
    try:
        reply, timed_out = _collect(read_end, pid, limits, course)
    finally:
        os.close(read_end)
        _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    try:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            raise IntakeTimeout(f"reading the submission took more than {limits.seconds:g} s (the course's limit): "
                                "hand in only the exercise files")
        if timed_out:
            raise IntakeFault(f"reading the submission took more than {WALL_FACTOR * limits.seconds:g} s of wall clock "
                              f"with {cpu:.1f} s of CPU time: the machine was too busy (grade it again)")
        return _validated(reply, status, limits, course)._replace(cpu_seconds=cpu)
    except IntakeError as error:
        error.cpu_seconds = cpu
        raise


def _child(pipe: int, parent: int, path: Path, limits: Intake, course: Course) -> None:
    """In the forked child: bound this process, read the submission, send the outcome as JSON; never returns."""
    code = 70
    try:
        die_with_parent(parent)
        os.nice(READING_NICENESS)
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        memory = mapped + limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        cpu = max(1, round(limits.seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        try:
            read = _read(path, limits, course)
            reply = {"files": {m: data.decode("utf-8") for m, data in read.files.items()}, "problems": read.problems,
                     "notes": read.notes, "covers": read.covers, "sources": read.sources, "stamp": read.stamp,
                     "imports": read.imports}
        except IntakeError as error:
            reply = {"error": str(error)}
        except MemoryError:
            reply = {"error": f"reading the submission needed more than {limits.memory_mb} MB (the course's limit): "
                              "hand in only the exercise files"}
        except Exception as error:  # noqa: BLE001 - a bug of the grader's: reported as a fault, never as the student's
            reply = {"fault": f"{type(error).__name__}: {error}"}
        with open(pipe, "wb") as out:  # escaped to ASCII: a name that is not valid Unicode cannot stop the reply
            out.write(json.dumps(reply, ensure_ascii=True).encode("ascii"))
        code = 0
    finally:
        os._exit(code)


def _collect(pipe: int, pid: int, limits: Intake, course: Course) -> tuple[bytes, bool]:
    """What the child wrote until it closed the pipe (at most what a valid reply can take), and whether it ran
    past the wall clock (it is then killed)."""
    cap = 6 * int(limits.max_file_mb * 2**20) * len(course.modules) + 2**20  # JSON escapes take at most 6 bytes a byte
    deadline = time.monotonic() + WALL_FACTOR * limits.seconds
    poller = select.poll()
    poller.register(pipe, select.POLLIN)
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            os.kill(pid, signal.SIGKILL)
            return b"", True
        chunk = os.read(pipe, 1 << 20)
        if not chunk:
            return b"".join(chunks), False
        size += len(chunk)
        if size > cap:
            os.kill(pid, signal.SIGKILL)
            raise IntakeError(f"reading the submission gave more than {cap} bytes: hand in only the exercise files")
        chunks.append(chunk)


def _validated(reply: bytes, status: int, limits: Intake, course: Course) -> Read:
    """The child's reply, checked to be exactly what ``_read`` returns; IntakeError or IntakeFault otherwise."""
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 70:  # an exception escaped the child's own handling
        raise IntakeFault("the child reading the submission failed outside its error handling (exit status 70)")
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit status {os.WEXITSTATUS(status)}"
        raise IntakeError(f"reading the submission stopped ({how}) within the course's limits of {limits.seconds:g} s "
                          f"and {limits.memory_mb} MB: hand in only the exercise files")
    try:
        data = json.loads(reply)
    except ValueError as error:
        raise IntakeFault(f"the reply of the child reading the submission is not JSON ({error})") from None
    if not isinstance(data, dict):
        data = {}
    if set(data) == {"error"} and isinstance(data["error"], str):
        raise IntakeError(clean(data["error"], MAX_MESSAGE))
    if set(data) == {"fault"}:
        raise IntakeFault(f"reading the submission failed: {_show(data['fault'])[:1000]}")
    files, problems, notes, covers = data.get("files"), data.get("problems"), data.get("notes"), data.get("covers")
    sources, stamp, imports = data.get("sources"), data.get("stamp"), data.get("imports")
    modules = set(course.modules)
    if (set(data) != {"files", "problems", "notes", "covers", "sources", "stamp", "imports"} or not isinstance(files, dict)
            or not isinstance(problems, dict) or not isinstance(notes, list) or not set(files) | set(problems) <= modules
            or not (covers is None or isinstance(covers, list) and set(covers) <= modules)
            or not isinstance(sources, dict) or not set(sources) <= set(files)
            or not all(isinstance(v, str) and len(v) <= MAX_NAME for v in sources.values())
            or not all(isinstance(v, str) for v in [*files.values(), *problems.values(), *notes])
            or not (stamp is None or isinstance(stamp, str) and STAMP.fullmatch(stamp))
            or not _valid_imports(imports, files)):
        raise IntakeFault("the child reading the submission sent back something else than files, problems and notes")
    return Read({m: text.encode("utf-8") for m, text in files.items()}, problems, notes,
                None if covers is None else tuple(m for m in course.modules if m in covers), sources, stamp,
                {m: [(name, line) for name, line in found] for m, found in imports.items()})


def _valid_imports(imports, files: dict) -> bool:
    """Whether ``imports`` is what ``_imports`` makes of ``files``: per file, at most MAX_IMPORTS (name, line) pairs,
    each line one of the file's."""
    if not isinstance(imports, dict) or not set(imports) <= set(files):
        return False
    for module, found in imports.items():
        if not isinstance(found, list) or len(found) > MAX_IMPORTS:
            return False
        lines = len(files[module].splitlines()) + 1  # at least the lines Python counts (\r, \f ... end lines too)
        if not all(isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                   and len(item[0]) <= MAX_IMPORT_NAME and type(item[1]) is int and 1 <= item[1] <= lines
                   for item in found):
            return False
    return True


class Read(NamedTuple):
    """What reading a submission found: module -> source bytes, module -> problem, notes, and a notebook's exercises
    (None: not a notebook)."""

    files: dict[str, bytes]
    problems: dict[str, str]
    notes: list[str]
    covers: tuple[str, ...] | None = None
    sources: dict[str, str] = {}  # module -> the handout notebook its code was taken from (never mutated)
    stamp: str | None = None  # a zip's newest entry, ISO 8601 without a zone (the zip's local time)
    imports: dict[str, list[tuple[str, int]]] = {}  # module -> its imports (``_imports``; never mutated)
    cpu_seconds: float = 0.0  # the CPU time reading took


def _read(path: Path, limits: Intake, course: Course) -> Read:
    covers = None
    sources: dict[str, str] = {}
    problems: dict[str, str] = {}
    notes: list[str] = []
    stamps: list[str] = []
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise IntakeError(f"{_show(path.name or path)} does not exist") from None
    except OSError as error:
        raise IntakeError(f"{_show(path.name or path)} cannot be read: {error.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise IntakeError(f"{_show(path.name or path)} is a symbolic link; give the submission itself")
    if stat.S_ISDIR(info.st_mode):
        notebooks: list[tuple[str, ...]] = []
        files = _from_folder(path, limits, course.modules, problems, notes, notebooks)
        if notebooks:
            from grader.intake.notebooks import take_notebooks

            sources = take_notebooks(path, notebooks, files, problems, notes, limits, course)
    elif path.suffix.lower() == ".zip":
        files = _from_zip(path, limits, course.modules, problems, notes, stamps)
    elif path.suffix.lower() == ".ipynb":
        from grader.intake.notebooks import read_notebook

        covers = set()
        files = read_notebook(path, problems, notes, limits, course, covers)
    else:
        raise IntakeError(f"{_show(path.name)} is not a folder, a .zip or a .ipynb notebook")
    for module, data in list(files.items()):
        declared = _foreign_encoding(data)
        if declared:
            del files[module]
            sources.pop(module, None)  # its notebook's cell is not taken either
            problems[module] = (f"{module}.py declares the source encoding {declared} on a coding line: Python would "
                                "run other code than the UTF-8 text the grader reads; remove that line and save the "
                                "file as UTF-8")
    if not files and not problems:
        raise IntakeError(nothing_to_grade(_show(path.name or path), course, notes, zips_at_top(path)))
    return Read(files, problems, notes, None if covers is None else sorted(covers), sources, stamps[0] if stamps else None,
                imports_of_files(files))


def nothing_to_grade(name: str, course: Course, notes: list[str], zips: Sequence[str] = ()) -> str:
    """Why a submission holding nothing to grade is refused: what was looked for (the exercise files, and the course's
    notebooks wherever they are), why the notebooks it holds, if any, gave nothing, and the ``zips`` a folder holds
    (a zip inside the folder uploaded is not opened: it was not said)."""
    names = [f"{course.notebook_name(m)}.ipynb" for m in course.modules]
    unread = [note for note in notes if " was not graded: " in note or MISNAMED in note]
    what_to_do = (f"; a zip inside a folder is not opened ({', '.join(_show(zip) for zip in zips)}): hand in the zip "
                  "itself or the files in it") if zips else ": hand in your exercise files or your notebooks"
    return (f"{name} holds none of the exercise files ({', '.join(m + '.py' for m in course.modules)}) and no course "
            f"notebook with a solution cell ({', '.join(names)}) up to {MAX_DEPTH} folders down, outside hidden and "
            f"__ folders{what_to_do}"
            + (f" ({'; '.join(unread[:MAX_NOTES])})" if unread else ""))


def _foreign_encoding(data: bytes) -> str | None:
    """The encoding other than UTF-8 that a PEP 263 coding line in ``data``'s first two lines declares, else None
    (Python honours that line on import: UTF-7 text, say, is valid UTF-8 that runs as other code)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:  # an unknown codec, or one that contradicts the BOM
        return "that Python cannot use"
    return None if codecs.lookup(encoding).name in ("utf-8", "utf-8-sig") else _show(repr(encoding))


def digest(files: dict[str, bytes]) -> str:
    """The submission's SHA-256: of the exercise files taken, by name and content."""
    hasher = hashlib.sha256()
    for module in sorted(files):
        hasher.update(f"{module}.py\0{len(files[module])}\0".encode() + files[module])
    return hasher.hexdigest()


def stage(path: str | os.PathLike, limits: Intake, course: Course | None = None, read: Read | None = None) -> Staged:
    """Copy the files of the exercises of ``course`` (default: the project's) from a submission (or from what
    ``read_submission`` already ``read`` of it) into a fresh private folder (readable by the sandbox user)."""
    read = read or read_submission(path, limits, course)
    files = read.files
    base = Path(tempfile.mkdtemp(prefix="grader-"))  # mode 0700: no other user of this machine can read it
    directory = base / "submission"
    try:
        directory.mkdir()
        for module, data in files.items():
            (directory / f"{module}.py").write_bytes(data)
            os.chmod(directory / f"{module}.py", 0o644)
        os.chmod(directory, 0o755)  # bind-mounted into the sandbox as /submission: its uid must read it
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return Staged(directory, digest(files), read.problems, read.notes, read.covers, read.sources, read.imports)
