"""What intake may read of a submission folder: the walk (at most MAX_DEPTH folders down, hidden and private folders
skipped, links never followed, ``max_files`` names at most), which files it may take, the caps on their sizes; and
``raw_digest``, the bounded hash of a submission's raw bytes a batch fingerprints it with, parsing nothing. Shared by
intake, the batch and ``grader collect`` (which writes only what intake may read)."""
from __future__ import annotations

import hashlib
import itertools
import os
import stat
from pathlib import Path

from grader.course import Course, Intake
from grader.intake import IntakeError

MAX_DEPTH = 3


def module_of(name: str, modules) -> str | None:
    """The exercise whose file ``name`` is (``<module>.py``: ``<module>``), else None."""
    stem, dot, suffix = name.rpartition(".")
    return stem if dot and suffix == "py" and stem in modules else None


def intake_reads(parts: tuple[str, ...], modules) -> bool:
    """Whether intake may read the file at ``parts`` (its path inside a submission folder, split): an exercise file or
    a notebook, at most MAX_DEPTH folders down, in no hidden (``.``) or private (``__``) folder."""
    *folders, name = parts
    return (len(folders) <= MAX_DEPTH and all(f and not f.startswith((".", "__")) for f in folders)
            and (module_of(name, modules) is not None or name.endswith(".ipynb")))


def listing(root: Path, limits: Intake, modules) -> list[tuple[tuple[str, ...], os.stat_result | None]]:
    """Every file and folder of a submission folder that intake walks, as (path inside ``root`` split, lstat; None
    where a folder lists a name it does not let us look at), sorted: at most MAX_DEPTH folders down, hidden and
    private folders skipped, links never followed. IntakeError when the walk meets more than ``max_files`` (it stops
    there), or when the files intake may read within their own caps (``within_cap``) add up to more than
    ``max_total_mb``."""
    found, seen, pending = [], 0, [()]
    while pending:
        parts = pending.pop()
        try:
            scan = os.scandir(root.joinpath(*parts))
        except OSError:  # a folder that cannot be read holds nothing intake takes
            continue
        with scan:
            for entry in scan:
                seen += 1  # directories count too: a million empty folders is no submission either
                if seen > limits.max_files:
                    raise IntakeError(f"the submission holds more than {limits.max_files} files; hand in only the "
                                      "exercise files")
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:  # listed, out of reach: reading it says why
                    info = None
                found.append((parts + (entry.name,), info))
                if (info and stat.S_ISDIR(info.st_mode) and len(parts) < MAX_DEPTH
                        and not entry.name.startswith((".", "__"))):
                    pending.append(parts + (entry.name,))
    found.sort(key=lambda item: item[0])
    total = sum(info.st_size for parts, info in found if within_cap(parts, info, limits, modules))
    if total > limits.max_total_mb * 2**20:
        raise IntakeError(f"the exercise files and notebooks of the submission add up to {total / 2**20:.1f} MiB, over "
                          f"the {limits.max_total_mb:g} MiB limit of a submission: clear the notebooks' outputs, or "
                          "hand in only the exercise files")
    return found


def within_cap(parts: tuple[str, ...], info: os.stat_result | None, limits: Intake, modules) -> bool:
    """Whether intake would read this file: one it may read, regular, and within its cap (an exercise file's
    ``max_file_mb``, a notebook's ``max_total_mb``); a file over its cap is refused by its size alone."""
    cap = limits.max_file_mb if module_of(parts[-1], modules) else limits.max_total_mb
    return (info is not None and stat.S_ISREG(info.st_mode) and intake_reads(parts, modules)
            and info.st_size <= cap * 2**20)


def raw_digest(path: str | os.PathLike, limits: Intake, course: Course) -> str:
    """A SHA-256 of what intake may read of a submission, from its raw bytes, parsing nothing: the names, kinds and
    sizes of what it walks, and the bytes of every file it would read within that file's cap, a block at a time (at
    most ``max_total_mb`` in all). Equal digests mean equal intake outcomes: a submission that intake refuses by its
    sizes or its count of files is digested from those alone, and read no further."""
    path = Path(path)
    hasher = hashlib.sha256()
    try:
        info = path.lstat()
    except OSError as error:
        hasher.update(f"unreadable\0{error.errno}".encode())
        return hasher.hexdigest()
    if not stat.S_ISDIR(info.st_mode):
        within = stat.S_ISREG(info.st_mode) and info.st_size <= limits.max_total_mb * 2**20  # a zip's, a notebook's cap
        _digest_file(hasher, path, info, within)
        return hasher.hexdigest()
    try:
        walked = listing(path, limits, course.modules)
    except IntakeError as error:  # refused by counts and sizes alone: the same refusal for the same digest
        hasher.update(f"refused\0{error}".encode())
        return hasher.hexdigest()
    for parts, info in walked:
        hasher.update(os.fsencode("/".join(parts)) + b"\0")
        _digest_file(hasher, path.joinpath(*parts), info, within_cap(parts, info, limits, course.modules))
    return hasher.hexdigest()


def _digest_file(hasher, path: Path, info: os.stat_result | None, read: bool) -> None:
    """Add a file's kind and size to ``hasher`` (None: out of reach), a link's target, and (``read``) its bytes,
    never following a link nor waiting on a FIFO."""
    if info is None:
        hasher.update(b"out of reach\0")
        return
    hasher.update(f"{stat.S_IFMT(info.st_mode)}\0{info.st_mode & 0o777}\0{info.st_size}\0".encode())
    try:
        if stat.S_ISLNK(info.st_mode):
            hasher.update(os.fsencode(os.readlink(path)) + b"\0")
        if not read:
            return
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since its lstat
                raise OSError(0, "not a regular file")
            left = info.st_size + 1  # a file that grew since its lstat digests differently
            while left > 0 and (block := handle.read(min(left, 1 << 20))):
                hasher.update(block)
                left -= len(block)
        hasher.update(b"\0")
    except OSError as error:
        hasher.update(f"unreadable\0{error.errno}\0".encode())


def zips_at_top(path: Path, most: int = 3) -> list[str]:
    """The first ``most`` names of zip files at the top of the folder ``path`` (none for a file)."""
    try:
        with os.scandir(path) as entries:
            return sorted(entry.name for entry in itertools.islice(entries, 1000)
                          if entry.name.lower().endswith(".zip") and entry.is_file(follow_symlinks=False))[:most]
    except OSError:  # a file, or unreadable: nothing more to say
        return []
