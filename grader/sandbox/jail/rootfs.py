"""The worker's root filesystem: what the new root holds (planned before any namespace exists) and how it is built.

A tmpfs root entered with ``pivot_root`` that holds only read-only system directories, the Python installation, a
fresh ``/proc``, a minimal ``/dev``, a private ``/tmp`` and the submission read-only at ``/submission``; the
grader's repository is never bound. See docs/sandbox.md.
"""
from __future__ import annotations

import ctypes
import errno
import os
import re
import site
import sys
import sysconfig
from pathlib import Path

from grader.sandbox.jail.syscalls import checked, fsencode, libc, os_error, syscall
from grader.sandbox.limits import Limits

SUBMISSION_DIR = "/submission"


def repository(package_file: str | os.PathLike) -> Path | None:
    """The grader's repository, the folder above the ``grader`` package that ``package_file`` (one of its modules'
    files) is in: it holds hidden tests and solutions. None for a grader installed into a site-packages folder, which
    holds no course (the course it grades is hidden as one of HIDDEN_TREES) and the Python packages workers need."""
    root = Path(package_file).resolve().parents[2]
    installed = {*site.getsitepackages(), site.getusersitepackages(), *(sysconfig.get_path(n) for n in ("purelib", "platlib"))}
    return None if str(root) in {os.path.realpath(folder) for folder in installed} else root


REPO_ROOT = repository(__file__)
# More folders hidden like REPO_ROOT: the root of a course graded from elsewhere (its suites and references).
# The zygote is told them on its standard input (``Zygote(hide=...)``), before any worker exists.
HIDDEN_TREES: list[str] = []
try:
    _IMPORT_CWD = os.path.realpath(os.getcwd())
except OSError:  # pragma: no cover
    _IMPORT_CWD = "/"

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_DEV_NODES = ("null", "zero", "full", "random", "urandom")
# Files and folders a private tmpfs may hold, per MiB of its size: its `size` bounds the pages of data, not the
# kernel's memory for each inode (about 1 KiB of an empty file, 3 million of them by default on a 24 GiB machine).
TMP_INODES_PER_MB = 64
_MASKED_PROC_FILES = ("/proc/keys", "/proc/key-users")
_CUDA_DIRS = ("/usr/local/nvidia", "/usr/local/cuda", "/opt/nvidia")

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME = 32, 1024, 2048
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
MNT_DETACH = 2

MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC = 1, 2, 4, 8
AT_FDCWD, AT_RECURSIVE = -100, 0x8000


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def mount(src, dst, fstype, flags: int, data: str | None = None) -> None:
    """mount(2); raises OSError naming the mount that failed."""
    checked(libc.mount(fsencode(src), fsencode(dst), fsencode(fstype), flags, fsencode(data)), f"mount {src} on {dst}")


_MOUNT_SETATTR_WORKS = True  # set to False (once) when the kernel lacks mount_setattr


def _restrict_mount(path: str, attrs: int, recursive: bool) -> None:
    """Add MOUNT_ATTR_* flags to the mount at path (and to the mounts beneath it)."""
    global _MOUNT_SETATTR_WORKS
    if _MOUNT_SETATTR_WORKS:
        attr = _MountAttr(attrs, 0, 0, 0)
        ret = syscall("mount_setattr", ctypes.c_int(AT_FDCWD), fsencode(path),
                       ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr),
                       ctypes.c_size_t(ctypes.sizeof(attr)))
        if ret == 0:
            return
        if ctypes.get_errno() != errno.ENOSYS:
            raise os_error(f"mount_setattr {path}")
        _MOUNT_SETATTR_WORKS = False
    # Older kernels: remount every affected mount, keeping the flags it already has
    # (a user namespace may not clear flags inherited from the host).
    add = ((MS_RDONLY if attrs & MOUNT_ATTR_RDONLY else 0) | (MS_NOSUID if attrs & MOUNT_ATTR_NOSUID else 0)
           | (MS_NODEV if attrs & MOUNT_ATTR_NODEV else 0) | (MS_NOEXEC if attrs & MOUNT_ATTR_NOEXEC else 0))
    known = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
             "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME,
             "strictatime": MS_STRICTATIME}
    prefix = path.rstrip("/") + "/"
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            point = unescape_mountinfo(fields[4])
            if point == path or (recursive and point.startswith(prefix)):
                have = 0
                for opt in fields[5].split(","):
                    have |= known.get(opt, 0)
                mount(None, point, None, MS_REMOUNT | MS_BIND | have | add)


def unescape_mountinfo(s: str) -> str:
    """Undo mountinfo's octal escapes (\\040 for a space, ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def plan_root(sub: str | None, expose_cuda: bool) -> list[tuple]:
    """What the new root holds, as ops on host paths, computed before any namespace exists.

    ("bind", src, dst) read-only bind, ("link", target, dst) symlink, ("tmp", "/tmp") the
    private /tmp, ("mask", dst) empty read-only tmpfs over a hidden path that a bind would
    otherwise reveal. Sorted so that a mount point's parents are mounted first.
    """
    trees = [*HIDDEN_TREES, REPO_ROOT] if REPO_ROOT is not None else HIDDEN_TREES
    hidden = {_IMPORT_CWD, *(os.path.realpath(tree) for tree in trees)}
    try:
        hidden.add(os.path.realpath(os.getcwd()))
    except OSError:
        pass
    hidden.discard("/")

    ops: list[tuple] = []
    dirs: list[str] = []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            ops.append(("link", os.readlink(d), d))
        elif os.path.isdir(d):
            dirs.append(os.path.realpath(d))
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):  # always, even inside a hidden tree
        rp = os.path.realpath(p)
        if os.path.isdir(rp):
            dirs.append(rp)
    for p in sys.path:
        rp = os.path.realpath(p or ".")
        if os.path.isdir(rp) and not any(_inside(rp, h) or _inside(h, rp) for h in hidden):
            dirs.append(rp)
    # The sandbox's own mount points are never bound from the host (a script in /tmp
    # puts /tmp on sys.path); a prefix *inside* /tmp is bound over the private /tmp.
    dirs = [d for d in dirs if d not in ("/tmp", "/dev/shm")
            and not _inside(d, "/proc") and not _inside(d, "/dev") and not _inside(d, SUBMISSION_DIR)]
    if expose_cuda:
        dirs.extend(os.path.realpath(d) for d in _CUDA_DIRS if os.path.isdir(d))
        dirs.extend(_loaded_gpu_lib_dirs())
    chosen: list[str] = []
    for d in sorted(set(dirs), key=len):
        if d != "/" and not any(_inside(d, c) for c in chosen):
            chosen.append(d)
    binds = [(d, d) for d in chosen]
    if sub is not None:
        binds.append((sub, SUBMISSION_DIR))
    ops.append(("tmp", "/tmp"))
    for src, dst in binds:
        ops.append(("bind", src, dst))
        for h in hidden:
            if h != src and _inside(h, src):
                ops.append(("mask", dst + h[len(src):]))
    ops.sort(key=lambda op: (op[-1].count("/"), op[-1]))  # parents before children
    return ops


def _loaded_gpu_lib_dirs() -> list[str]:
    found = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                name = os.path.basename(path)
                if path.startswith("/") and name.startswith(("libcuda", "libnvidia")):
                    found.add(os.path.dirname(os.path.realpath(path)))
    except OSError:
        pass
    return sorted(found)


def _ensure(path: str, like: str) -> None:
    """Create path as a mount point of the same kind (dir or file) as host path like."""
    if os.path.isdir(like):
        os.makedirs(path, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        if not os.path.lexists(path):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


def build_root(plan, sub, limits: Limits, expose_cuda: bool) -> None:
    """Make ``plan`` (from ``plan_root``) the process's root, in its new mount namespace; the host's root is
    unmounted from it at the end."""
    # bubblewrap's order: a tmpfs on /tmp becomes the new root at once; the old root,
    # /tmp included, stays reachable at /.oldroot until everything is bound in.
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    os.mkdir("/tmp/.oldroot", 0o700)
    checked(syscall("pivot_root", b"/tmp", b"/tmp/.oldroot"), "pivot_root")
    os.chdir("/")
    old = "/.oldroot"

    os.mkdir("/proc", 0o555)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in _MASKED_PROC_FILES:  # as Docker does: the kernel's key lists are not the worker's business
        if os.path.exists(path):
            mount(old + "/dev/null", path, None, MS_BIND)
            _restrict_mount(path, MOUNT_ATTR_RDONLY, recursive=False)

    tmp_mb = max(1, int(limits.tmp_mb))
    size = f"size={tmp_mb}m,nr_inodes={tmp_mb * TMP_INODES_PER_MB},mode=1777"
    masks = []
    for op in plan:
        if op[0] == "link":
            os.symlink(op[1], op[2])
        elif op[0] == "bind":
            src, dst = old + op[1], op[2]
            _ensure(dst, src)
            mount(src, dst, None, MS_BIND | MS_REC)
            _restrict_mount(dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, recursive=True)
        elif op[0] == "tmp":
            os.makedirs(op[1], 0o755, exist_ok=True)
            mount("tmpfs", op[1], "tmpfs", MS_NOSUID | MS_NODEV, size)
        else:  # mask
            os.makedirs(op[1], 0o755, exist_ok=True)
            mount("tmpfs", op[1], "tmpfs", MS_NOSUID | MS_NODEV, "size=16k,nr_inodes=64,mode=0755")
            masks.append(op[1])
    if sub is None:
        os.mkdir(SUBMISSION_DIR, 0o755)

    os.makedirs("/dev", 0o755, exist_ok=True)
    nodes = [f"/dev/{n}" for n in _DEV_NODES]
    if expose_cuda:
        nodes += sorted(f"/dev/{n}" for n in os.listdir(old + "/dev") if n.startswith("nvidia"))
    for node in nodes:
        if os.path.exists(old + node):
            _ensure(node, old + node)
            mount(old + node, node, None, MS_BIND | MS_REC)
            _restrict_mount(node, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, recursive=True)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")
    os.mkdir("/dev/shm", 0o755)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, size)

    checked(libc.umount2(fsencode(old), MNT_DETACH), "umount old root")
    os.rmdir(old)
    for m in masks:
        _restrict_mount(m, MOUNT_ATTR_RDONLY, recursive=False)
    _restrict_mount("/", MOUNT_ATTR_RDONLY, recursive=False)
