"""Confine a worker process before it imports student code (Linux namespaces + rlimits).

``confine()`` is called in a freshly forked, single-threaded child. On Linux with
namespaces it:

* unshares a PID namespace (plus a user namespace when not root) and forks once more:
  the caller becomes a tiny supervisor that only waits and mirrors the exit status,
  and ``confine`` returns in the inner process, pid 1 of the new namespace;
* gives the inner process new mount, network, IPC and UTS namespaces, a tmpfs root
  entered with ``pivot_root`` that holds only read-only system directories, the
  Python installation, a fresh ``/proc``, a minimal ``/dev``, a private ``/tmp`` and
  the submission read-only at ``/submission``;
* drops privileges (a dedicated uid when started as root), sets no_new_privs, a
  seccomp filter that keeps the parent-death signal in place, and the rlimits, scrubs
  the environment and starts a new session.

Where namespaces cannot be used it applies the rlimits only (or raises
``SandboxUnavailable`` with ``require=True``). See docs/sandbox.md.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import importlib
import os
import platform
import re
import select
import signal
import socket
import stat
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

try:
    import resource
except ImportError:  # pragma: no cover - not a Unix
    resource = None  # type: ignore[assignment]

__all__ = ["Limits", "SandboxUnavailable", "probe", "confine", "SANDBOX_UID", "SANDBOX_GID",
           "SUBMISSION_DIR", "HOSTNAME", "SANDBOX_ENV", "lease_sandbox_uid"]

# Read once, when the grader imports this module (students never get to set these).
SANDBOX_UID = int(os.environ.get("GRADER_SANDBOX_UID", "64055"))
SANDBOX_GID = int(os.environ.get("GRADER_SANDBOX_GID", str(SANDBOX_UID)))

SUBMISSION_DIR = "/submission"
HOSTNAME = "sandbox"
SANDBOX_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    # Without a passwd entry for the sandbox uid, getpass.getuser() would raise.
    "USER": "sandbox",
    "LOGNAME": "sandbox",
}
# RLIMIT_AS is never set below what the process already maps plus this much
# (torch alone maps ~625 MiB after fork; a limit under that would break every allocation).
MEMORY_HEADROOM_MB = 256
# RLIMIT_NOFILE is never set below the highest fd kept open plus this much.
NOFILE_HEADROOM = 32

REPO_ROOT = Path(__file__).resolve().parent.parent  # holds hidden tests and solutions
try:
    _IMPORT_CWD = os.path.realpath(os.getcwd())
except OSError:  # pragma: no cover
    _IMPORT_CWD = "/"

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_DEV_NODES = ("null", "zero", "full", "random", "urandom")
_CUDA_DIRS = ("/usr/local/nvidia", "/usr/local/cuda", "/opt/nvidia")
_PROBE_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 4096        # RLIMIT_AS (floored at current mappings + MEMORY_HEADROOM_MB)
    cpu_seconds: int = 60        # RLIMIT_CPU (SIGKILL when reached)
    processes: int = 64          # RLIMIT_NPROC (only meaningful for a non-root uid)
    file_size_mb: int = 16       # RLIMIT_FSIZE
    open_files: int = 256        # RLIMIT_NOFILE (floored at highest kept fd + NOFILE_HEADROOM)
    tmp_mb: int = 64             # size of the private tmpfs at /tmp (and of /dev/shm)


class SandboxUnavailable(RuntimeError):
    """The sandbox was required but cannot be set up here (or its setup failed midway)."""


class _NotEntered(Exception):
    """Namespaces could not be created; nothing about the process has changed."""


# --------------------------------------------------------------------------- libc

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME = 32, 1024, 2048
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
MNT_DETACH = 2

MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC = 1, 2, 4, 8
AT_FDCWD, AT_RECURSIVE = -100, 0x8000

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_SYSCALLS = {  # only for libcs that lack the wrapper
    "x86_64": {"pivot_root": 155, "capset": 126},
    "aarch64": {"pivot_root": 41, "capset": 91},
    "riscv64": {"pivot_root": 41, "capset": 91},
}
_NR_MOUNT_SETATTR = 442  # same number on every architecture
# The seccomp filter refuses prctl(PR_SET_PDEATHSIG): (audit arch, prctl numbers) for each
# syscall ABI a process of this machine can use; any other ABI is refused outright.
_SECCOMP_ABIS = {
    "x86_64": [(0xC000003E, (157, 0x40000000 | 157)), (0x40000003, (172,))],  # x86-64 (+x32), i386
    "aarch64": [(0xC00000B7, (167,)), (0x40000028, (172,))],                  # arm64, arm
    "riscv64": [(0xC00000F3, (167,))],
}


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _load_libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall  # noqa: B018 - must exist
    except (OSError, AttributeError):  # pragma: no cover
        return None
    libc.unshare.argtypes = [ctypes.c_int]
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                           ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                           ctypes.c_ulong]
    return libc


_libc = _load_libc()


def _os_error(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def _call(ret: int, what: str) -> int:
    if ret == -1:
        raise _os_error(what)
    return ret


def _syscall(name: str, *args) -> int:
    fn = getattr(_libc, name, None)
    if fn is not None:
        return fn(*args)
    nr = _SYSCALLS.get(platform.machine(), {}).get(name)
    if nr is None:
        raise OSError(errno.ENOSYS, f"{name}: no syscall number for {platform.machine()}")
    return _libc.syscall(ctypes.c_long(nr), *args)


def _b(path) -> bytes | None:
    return None if path is None else os.fsencode(path)


def _unshare(flags: int) -> None:
    _call(_libc.unshare(flags), f"unshare({flags:#x})")


def _mount(src, dst, fstype, flags: int, data: str | None = None) -> None:
    _call(_libc.mount(_b(src), _b(dst), _b(fstype), flags, _b(data)), f"mount {src} on {dst}")


def _prctl(option: int, arg: int = 0) -> int:
    return _call(_libc.prctl(option, arg, 0, 0, 0), f"prctl({option})")


_MOUNT_SETATTR_WORKS = True  # set to False (once) when the kernel lacks mount_setattr


def _restrict_mount(path: str, attrs: int, recursive: bool) -> None:
    """Add MOUNT_ATTR_* flags to the mount at path (and to the mounts beneath it)."""
    global _MOUNT_SETATTR_WORKS
    if _MOUNT_SETATTR_WORKS:
        attr = _MountAttr(attrs, 0, 0, 0)
        fn = getattr(_libc, "mount_setattr", None)
        args = (ctypes.c_int(AT_FDCWD), _b(path), ctypes.c_uint(AT_RECURSIVE if recursive else 0),
                ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
        ret = fn(*args) if fn is not None else _libc.syscall(ctypes.c_long(_NR_MOUNT_SETATTR), *args)
        if ret == 0:
            return
        if ctypes.get_errno() != errno.ENOSYS:
            raise _os_error(f"mount_setattr {path}")
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
            point = _unescape(fields[4])
            if point == path or (recursive and point.startswith(prefix)):
                have = 0
                for opt in fields[5].split(","):
                    have |= known.get(opt, 0)
                _mount(None, point, None, MS_REMOUNT | MS_BIND | have | add)


def _unescape(s: str) -> str:
    """Undo mountinfo's octal escapes (\\040 for a space, ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


# --------------------------------------------------------------------------- probe

_probe_result: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """Whether namespaces can be used here (checked in a throwaway forked child), and a one-line reason if not.

    The answer is cached in this process, and forked children inherit the cache: call
    it once in the zygote so that confine() in each worker need not probe again.
    """
    global _probe_result
    if _probe_result is None:
        _probe_result = _run_probe()
    return _probe_result


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]


def _run_probe() -> tuple[bool, str]:
    if _libc is None:
        return False, f"namespaces need Linux (this is {sys.platform})"
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as e:
        os.close(r)
        os.close(w)
        return False, _one_line(f"fork failed: {e}")
    if pid == 0:  # throwaway child: try the real thing, report, never return
        code, msg = 1, b"probe failed"
        try:
            os.close(r)
            _enter_namespaces(None, Limits(), expose_cuda=False, keep_fds=(w,))
            if os.getpid() != 1:
                raise SandboxUnavailable("not pid 1 of a new pid namespace")
            code, msg = 0, b"ok"
        except BaseException as e:  # noqa: BLE001 - report anything
            msg = _one_line(f"{type(e).__name__}: {e}").encode()
        finally:
            try:
                os.write(w, msg)
            finally:
                os._exit(code)
    os.close(w)
    out, deadline = b"", time.monotonic() + _PROBE_TIMEOUT_S
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
                return False, "namespace probe timed out"
            chunk = os.read(r, 4096)
            if not chunk:
                break
            out += chunk
    finally:
        os.close(r)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # SIGCHLD ignored here: the child was reaped for us
        status = None
    if out == b"ok":
        return True, ""
    reason = out.decode(errors="replace") or f"probe child died (wait status {status})"
    return False, _one_line(reason)


# --------------------------------------------------------------------------- confine

def confine(submission_dir: str | os.PathLike, limits: Limits, *, require: bool = False,
            expose_cuda: bool = False, keep_fds: Sequence[int] = ()) -> str:
    """Enter the sandbox. Called in a freshly forked, single-threaded child. Returns, in the confined
    process only, a short description of the isolation achieved ("namespaces" or "rlimits only: <reason>").
    With require=True, raises SandboxUnavailable instead of degrading.

    With namespaces the calling process never returns: it becomes the supervisor and
    exits with the inner process's status (its exit code, or 128+signal). A failure
    after the namespaces were entered raises SandboxUnavailable even when require=False.
    """
    sub = os.path.realpath(os.fspath(submission_dir))
    if not os.path.isdir(sub):
        raise NotADirectoryError(errno.ENOTDIR, "submission is not a directory", sub)
    if sub == os.path.realpath(REPO_ROOT):
        raise ValueError("the submission directory is the grader's repository")
    keep = tuple(sorted({int(fd) for fd in keep_fds}))
    ok, why = probe()
    if ok:
        try:
            return _enter_namespaces(sub, limits, expose_cuda=expose_cuda, keep_fds=keep)
        except _NotEntered as e:
            why = str(e)
    if require:
        raise SandboxUnavailable(why)
    _rlimits_only(sub, limits, keep)
    return f"rlimits only: {why}"


def _rlimits_only(sub: str, limits: Limits, keep: tuple[int, ...]) -> None:
    _close_fds(set(keep))
    _stdin_devnull()
    if _libc is not None:
        try:
            _prctl(PR_SET_NO_NEW_PRIVS, 1)
        except OSError:
            pass
    try:
        os.setsid()
    except OSError:
        pass
    _set_rlimits(limits, keep)
    _scrub_env()
    os.chdir(sub)
    _set_address_space(limits)


def _enter_namespaces(sub: str | None, limits: Limits, *, expose_cuda: bool,
                      keep_fds: Sequence[int]) -> str:
    root = os.geteuid() == 0
    if root and sub is not None:
        _check_readable_by_sandbox(sub)
    plan = _plan(sub, expose_cuda)
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWPID | (0 if root else CLONE_NEWUSER)
    try:
        _unshare(flags)
    except OSError as e:
        kind = "CLONE_NEWPID" if root else "CLONE_NEWUSER|CLONE_NEWPID"
        raise _NotEntered(_one_line(f"unshare({kind}) failed: {e.strerror or e}")) from e
    # From here on the process has changed: failures raise, never degrade.
    try:
        if not root:
            # A process that left root is non-dumpable, which makes /proc/self/uid_map
            # root-owned and unwritable to it; student code runs as this uid anyway.
            _prctl(PR_SET_DUMPABLE, 1)
            _write_id_maps(uid, gid)
        # A zygote that ignores SIGCHLD would have the inner process auto-reaped before
        # the supervisor could read its status: wait-able while forking, restored inside.
        old_chld = _set_handler(signal.SIGCHLD, signal.SIG_DFL)
        alive_r, alive_w = os.pipe()
        pid = os.fork()
    except BaseException as e:
        raise SandboxUnavailable(_one_line(f"sandbox setup failed: {e}")) from e
    if pid:
        os.close(alive_r)
        _supervise(pid, alive_w, limits.cpu_seconds)  # never returns
    os.close(alive_w)
    if old_chld is not None:
        _set_handler(signal.SIGCHLD, old_chld)
    try:
        _setup_inner(plan, sub, limits, set(keep_fds), alive_r, root, expose_cuda)
    except BaseException as e:
        raise SandboxUnavailable(_one_line(f"sandbox setup failed in the new namespaces: {e}")) from e
    return "namespaces"


def _check_readable_by_sandbox(sub: str) -> None:
    st = os.stat(sub)
    if st.st_uid == SANDBOX_UID:
        ok = (st.st_mode & 0o500) == 0o500
    elif st.st_gid == SANDBOX_GID:
        ok = (st.st_mode & 0o050) == 0o050
    else:
        ok = (st.st_mode & 0o005) == 0o005
    if not ok:
        raise PermissionError(errno.EACCES, f"the sandbox uid {SANDBOX_UID} cannot read the submission "
                              "directory (make it o+rx; its files o+r)", sub)


def _write_id_maps(uid: int, gid: int) -> None:
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n"),
                       ("gid_map", f"{gid} {gid} 1\n")):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def _set_handler(sig, handler):
    """signal.signal, or None where Python cannot (not the main thread; a handler set from C)."""
    try:
        return signal.signal(sig, handler)
    except (ValueError, OSError):
        return None


def _supervise(child: int, alive_w: int, cpu_seconds: float) -> None:
    """The caller's process after the inner fork: wait, mirror the status, exit. Never returns.

    The exit code is the inner process's, or 128+signal. The CPU limit kills pid 1 of a
    namespace with SIGKILL (it ignores SIGXCPU): that case is reported as 128+SIGXCPU.
    """
    code = 70
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE,
                    signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
            _set_handler(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        _close_fds({alive_w})  # hold nothing of the worker's (its socket included)
        while True:
            try:
                _, status, usage = os.wait4(child, 0)
            except ChildProcessError:
                break
            if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                code = os.waitstatus_to_exitcode(status)
                code = 128 - code if code < 0 else code
                if (code == 128 + signal.SIGKILL
                        and usage.ru_utime + usage.ru_stime >= cpu_seconds - 0.1):
                    code = 128 + signal.SIGXCPU
                break
    finally:
        os._exit(code & 0xFF)


# --------------------------------------------------------------------------- the inner process

def _die_with_supervisor(alive_r: int) -> None:
    """SIGKILL this process when the supervisor dies; exit now if it already has."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # getppid() is 0 inside the new pid namespace either way: watch the pipe instead,
    # whose only writer is the supervisor.
    if select.select([alive_r], [], [], 0)[0]:
        os._exit(137)


def _setup_inner(plan, sub, limits: Limits, keep: set[int], alive_r: int, root: bool,
                 expose_cuda: bool) -> None:
    _die_with_supervisor(alive_r)
    _close_fds(keep | {alive_r})
    _stdin_devnull()
    os.umask(0o022)
    _unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _build_root(plan, sub, limits, expose_cuda)
    socket.sethostname(HOSTNAME)
    _set_rlimits(limits, keep)
    _drop_privileges(root)
    _die_with_supervisor(alive_r)  # credential changes clear the parent-death signal
    _forbid_clearing_pdeathsig()
    os.close(alive_r)
    os.setsid()
    _scrub_env()
    os.chdir(SUBMISSION_DIR)
    if sub is not None and not os.access(SUBMISSION_DIR, os.R_OK | os.X_OK):
        raise PermissionError(errno.EACCES, f"uid {os.getuid()} cannot read the submission", sub)
    importlib.invalidate_caches()
    if not expose_cuda:  # CUDA reserves tens of GiB of address space: no RLIMIT_AS with a GPU
        _set_address_space(limits)


def _seccomp_program() -> list[tuple[int, int, int, int]]:
    """Classic BPF: prctl(PR_SET_PDEATHSIG, ...) fails with EPERM, everything else is allowed."""
    abis = _SECCOMP_ABIS.get(platform.machine())
    if not abis:
        raise OSError(errno.ENOSYS, f"no seccomp table for {platform.machine()}")
    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
    allow, eperm = 0x7FFF0000, 0x00050000 | errno.EPERM
    code: list[tuple] = [(ld, None, 4)]  # seccomp_data.arch
    code += [(jeq, f"abi{i}", arch) for i, (arch, _) in enumerate(abis)]
    code.append((ret, None, eperm))  # a syscall ABI not listed
    labels = {}
    for i, (_, numbers) in enumerate(abis):
        labels[f"abi{i}"] = len(code)
        code.append((ld, None, 0))  # seccomp_data.nr
        code += [(jeq, "prctl", nr) for nr in numbers]
        code.append((ret, None, allow))
    labels["prctl"] = len(code)
    code += [(ld, None, 16), (jeq, "deny", PR_SET_PDEATHSIG), (ret, None, allow)]  # low half of args[0]
    labels["deny"] = len(code)
    code.append((ret, None, eperm))
    return [(op, labels[to] - pc - 1 if to else 0, 0, k) for pc, (op, to, k) in enumerate(code)]


def _forbid_clearing_pdeathsig() -> None:
    """Killing the supervisor must kill the sandbox: student code may not unset its parent-death signal."""
    program = _seccomp_program()
    filters = (_SockFilter * len(program))(*(_SockFilter(*ins) for ins in program))
    fprog = _SockFprog(len(program), filters)
    _call(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0),
          "install seccomp filter")


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _plan(sub: str | None, expose_cuda: bool) -> list[tuple]:
    """What the new root holds, as ops on host paths, computed before any namespace exists.

    ("bind", src, dst) read-only bind, ("link", target, dst) symlink, ("tmp", "/tmp") the
    private /tmp, ("mask", dst) empty read-only tmpfs over a hidden path that a bind would
    otherwise reveal. Sorted so that a mount point's parents are mounted first.
    """
    hidden = {os.path.realpath(REPO_ROOT), _IMPORT_CWD}
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
                if path.startswith("/") and (name.startswith("libcuda") or name.startswith("libnvidia")):
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


def _build_root(plan, sub, limits: Limits, expose_cuda: bool) -> None:
    # bubblewrap's order: a tmpfs on /tmp becomes the new root at once; the old root,
    # /tmp included, stays reachable at /.oldroot until everything is bound in.
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    os.mkdir("/tmp/.oldroot", 0o700)
    _call(_syscall("pivot_root", b"/tmp", b"/tmp/.oldroot"), "pivot_root")
    os.chdir("/")
    old = "/.oldroot"

    os.mkdir("/proc", 0o555)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)

    size = f"size={max(1, int(limits.tmp_mb))}m,mode=1777"
    masks = []
    for op in plan:
        if op[0] == "link":
            os.symlink(op[1], op[2])
        elif op[0] == "bind":
            src, dst = old + op[1], op[2]
            _ensure(dst, src)
            _mount(src, dst, None, MS_BIND | MS_REC)
            _restrict_mount(dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, recursive=True)
        elif op[0] == "tmp":
            os.makedirs(op[1], 0o755, exist_ok=True)
            _mount("tmpfs", op[1], "tmpfs", MS_NOSUID | MS_NODEV, size)
        else:  # mask
            os.makedirs(op[1], 0o755, exist_ok=True)
            _mount("tmpfs", op[1], "tmpfs", MS_NOSUID | MS_NODEV, "size=16k,nr_inodes=64,mode=0755")
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
            _mount(old + node, node, None, MS_BIND | MS_REC)
            _restrict_mount(node, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, recursive=True)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")
    os.mkdir("/dev/shm", 0o755)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, size)

    _call(_libc.umount2(_b(old), MNT_DETACH), "umount old root")
    os.rmdir(old)
    for m in masks:
        _restrict_mount(m, MOUNT_ATTR_RDONLY, recursive=False)
    _restrict_mount("/", MOUNT_ATTR_RDONLY, recursive=False)


def _drop_privileges(root: bool) -> None:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last_cap = int(f.read())
    except (OSError, ValueError):
        last_cap = 63
    for cap in range(last_cap + 1):
        try:
            _prctl(PR_CAPBSET_DROP, cap)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
    if root:
        os.setgroups([])
        os.setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID)
        os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
        # Leaving root made us non-dumpable, which makes /proc/self/* root-owned and
        # unreadable to ourselves; only processes of this pid namespace can see us.
        _prctl(PR_SET_DUMPABLE, 1)
    try:
        _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _call(_syscall("capset", ctypes.byref(header), ctypes.byref(data)), "capset")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    for key in ("CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if int(status[key], 16):
            raise PermissionError(f"capabilities left after dropping: {key}={status[key].strip()}")
    if root and (os.getuid() == 0 or os.geteuid() == 0):
        raise PermissionError("still root after setresuid")


# --------------------------------------------------------------------------- shared helpers

def _close_fds(keep: set[int]) -> None:
    try:
        fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
    except OSError:
        fds = list(range(3, 4096))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _stdin_devnull() -> None:
    fd = os.open(os.devnull, os.O_RDWR)
    if fd != 0:
        os.dup2(fd, 0)
        os.close(fd)


def _set_rlimits(limits: Limits, keep) -> None:
    if resource is None:  # pragma: no cover
        return
    mb = 1 << 20
    nofile = max(int(limits.open_files), max(keep, default=2) + NOFILE_HEADROOM)
    wanted = [("RLIMIT_CPU", limits.cpu_seconds), ("RLIMIT_FSIZE", limits.file_size_mb * mb),
              ("RLIMIT_NOFILE", nofile), ("RLIMIT_CORE", 0), ("RLIMIT_NPROC", limits.processes)]
    for name, value in wanted:
        res = getattr(resource, name, None)
        if res is not None:
            _lower(res, int(value))


def _lower(res: int, value: int) -> None:
    """Set soft = hard = value, never above the current hard limit (raising it needs privilege)."""
    _, hard = resource.getrlimit(res)
    if hard != resource.RLIM_INFINITY and hard >= 0:
        value = min(value, hard)
    resource.setrlimit(res, (value, value))


def _set_address_space(limits: Limits) -> None:
    if resource is None or not hasattr(resource, "RLIMIT_AS"):  # pragma: no cover
        return
    floor = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    floor = int(line.split()[1]) * 1024 + MEMORY_HEADROOM_MB * (1 << 20)
    except (OSError, ValueError):
        pass
    _lower(resource.RLIMIT_AS, max(int(limits.memory_mb) * (1 << 20), floor))


def _scrub_env() -> None:
    os.environ.clear()
    if _libc is not None:  # also what C code put there behind os.environ's back (ncurses sets LINES...)
        _libc.clearenv()
    os.environ.update(SANDBOX_ENV)
    tempfile.tempdir = None  # forget a directory the zygote may have cached


# --------------------------------------------------------------------------- sandbox uids for concurrent graders

UID_LOCK_DIR = "/run/grader/sandbox-uids" if os.geteuid() == 0 else os.path.join(
    tempfile.gettempdir(), f"grader-sandbox-uids-{os.geteuid()}")


def lease_sandbox_uid(first: int, count: int = 1000, lock_dir: str = UID_LOCK_DIR) -> tuple[int, int]:
    """The lowest uid of ``first`` .. ``first + count - 1`` that no live process holds, and the fd that holds it.

    A uid is held by an exclusive ``flock`` on ``<lock_dir>/<uid>.lock``: keep the fd open for as long as workers
    may run as that uid; the kernel releases it when the process dies, however it dies. ``lock_dir`` must be a
    directory only this user may write (it is made so if missing), or anyone could hold every uid.
    """
    os.makedirs(lock_dir, 0o700, exist_ok=True)
    st = os.lstat(lock_dir)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise PermissionError(errno.EACCES, f"the sandbox uid lock folder must be a folder of uid {os.geteuid()} "
                              "that nobody else may write", lock_dir)
    for uid in range(first, first + count):
        fd = os.open(os.path.join(lock_dir, f"{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uid, fd
    raise RuntimeError(f"no free sandbox uid in {first}..{first + count - 1}: {count} graders are running here")
