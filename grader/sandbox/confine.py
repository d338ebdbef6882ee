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
* joins a fresh session keyring, drops privileges (a dedicated uid when started as
  root), sets no_new_privs and the rlimits, scrubs the environment, starts a new session
  and, last, installs a syscall filter (seccomp) in the spirit of Docker's default
  profile: keyrings, ptrace, namespaces, mounts, new sessions, kernel modules... are
  refused, and the parent-death signal stays in place.

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

REPO_ROOT = Path(__file__).resolve().parents[2]  # holds hidden tests and solutions
# More folders hidden like REPO_ROOT: the root of a course graded from elsewhere (its suites and references).
# The zygote is told them on its command line (``--hide PATH``), before any worker exists.
HIDDEN_TREES: list[str] = []
try:
    _IMPORT_CWD = os.path.realpath(os.getcwd())
except OSError:  # pragma: no cover
    _IMPORT_CWD = "/"

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_DEV_NODES = ("null", "zero", "full", "random", "urandom")
_MASKED_PROC_FILES = ("/proc/keys", "/proc/key-users")
_CUDA_DIRS = ("/usr/local/nvidia", "/usr/local/cuda", "/opt/nvidia")
_PROBE_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 4096        # RLIMIT_AS (floored at current mappings + MEMORY_HEADROOM_MB)
    cpu_seconds: int = 60        # RLIMIT_CPU soft limit (SIGKILL at the hard one, a little above)
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

# System call numbers, from the kernel's tables: arch/x86/entry/syscalls/syscall_64.tbl for x86_64,
# include/uapi/asm-generic/unistd.h for aarch64 and riscv64. A name missing from a table does not exist
# there. Only the calls the sandbox makes without a libc wrapper and those its syscall filter looks at.
_X86_64_SYSCALLS = {
    "clone": 56, "ptrace": 101, "syslog": 103, "setpgid": 109, "setsid": 112, "capset": 126,
    "uselib": 134, "personality": 135, "ustat": 136, "sysfs": 139, "vhangup": 153, "pivot_root": 155,
    "_sysctl": 156, "prctl": 157, "adjtimex": 159, "chroot": 161, "acct": 163, "settimeofday": 164,
    "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170,
    "setdomainname": 171, "iopl": 172, "ioperm": 173, "create_module": 174, "init_module": 175,
    "delete_module": 176, "get_kernel_syms": 177, "query_module": 178, "quotactl": 179, "nfsservctl": 180,
    "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246, "add_key": 248, "request_key": 249,
    "keyctl": 250, "unshare": 272, "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320, "bpf": 321,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443,
}
_GENERIC_SYSCALLS = {
    "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "nfsservctl": 42, "chroot": 51,
    "vhangup": 58, "quotactl": 60, "acct": 89, "capset": 91, "personality": 92, "unshare": 97,
    "kexec_load": 104, "init_module": 105, "delete_module": 106, "clock_settime": 112, "syslog": 116,
    "ptrace": 117, "reboot": 142, "setpgid": 154, "setsid": 157, "sethostname": 161, "setdomainname": 162,
    "prctl": 167, "settimeofday": 170, "adjtimex": 171, "add_key": 217, "request_key": 218, "keyctl": 219,
    "clone": 220, "swapon": 224, "swapoff": 225, "perf_event_open": 241, "fanotify_init": 262,
    "name_to_handle_at": 264, "open_by_handle_at": 265, "clock_adjtime": 266, "setns": 268,
    "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "finit_module": 273, "bpf": 280,
    "userfaultfd": 282, "kexec_file_load": 294, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440,
    "mount_setattr": 442, "quotactl_fd": 443,
}
# Per machine: the audit arch of its native syscall ABI, and that ABI's numbers. The filter refuses
# every other ABI a process could use (i386 and x32 on x86_64, 32-bit arm on aarch64).
_NATIVE_ABIS = {
    "x86_64": (0xC000003E, _X86_64_SYSCALLS),
    "aarch64": (0xC00000B7, _GENERIC_SYSCALLS),
    "riscv64": (0xC00000F3, _GENERIC_SYSCALLS),
}
# What the worker's syscall filter refuses with EPERM, after Docker's default seccomp profile (the calls it
# refuses to a container without added capabilities). clone with a CLONE_NEW* flag, clone3 (ENOSYS: glibc
# then falls back to clone), personality other than PER_LINUX and prctl(PR_SET_PDEATHSIG) are refused too.
_DENIED_SYSCALLS = (
    # kernel keyrings: a uid's keyring outlives its processes and is shared by every worker of that uid
    "add_key", "keyctl", "request_key",
    # other processes' memory, files and descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
    # large kernel attack surface
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "fanotify_init",
    # namespaces, mounts and file handles
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr", "open_by_handle_at", "name_to_handle_at", "quotactl",
    "quotactl_fd",
    # the machine: modules, reboot, swap, accounting, kernel log, names, clocks, I/O ports, terminals
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "acct", "syslog", "sethostname", "setdomainname", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "iopl", "ioperm", "vhangup",
    # obsolete
    "lookup_dcookie", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl", "create_module",
    "get_kernel_syms", "query_module",
    # every process of a worker stays in its session (and so in its scheduling autogroup)
    "setsid", "setpgid",
)
CLONE_NEWCGROUP = 0x02000000
_CLONE_NAMESPACES = (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER
                     | CLONE_NEWPID | CLONE_NEWNET)
PER_LINUX, PERSONALITY_QUERY = 0, 0xFFFFFFFF
KEYCTL_JOIN_SESSION_KEYRING = 1


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
    nr = _NATIVE_ABIS.get(platform.machine(), (0, {}))[1].get(name)
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
        ret = _syscall("mount_setattr", ctypes.c_int(AT_FDCWD), _b(path),
                       ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr),
                       ctypes.c_size_t(ctypes.sizeof(attr)))
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
    for step in (_join_fresh_session_keyring, _install_syscall_filter):  # what this kernel allows
        try:
            step()
        except OSError:
            pass


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

    The exit code is the inner process's, or 128+signal. Pid 1 of a namespace ignores the
    SIGXCPU of the soft CPU limit, so the hard limit kills it with SIGKILL: a SIGKILL after
    cpu_seconds of CPU time is reported as 128+SIGXCPU.
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
                        and usage.ru_utime + usage.ru_stime >= cpu_seconds):
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
    _join_fresh_session_keyring()
    _drop_privileges(root)
    _die_with_supervisor(alive_r)  # credential changes clear the parent-death signal
    os.close(alive_r)
    os.setsid()
    _scrub_env()
    os.chdir(SUBMISSION_DIR)
    if sub is not None and not os.access(SUBMISSION_DIR, os.R_OK | os.X_OK):
        raise PermissionError(errno.EACCES, f"uid {os.getuid()} cannot read the submission", sub)
    importlib.invalidate_caches()
    if not expose_cuda:  # CUDA reserves tens of GiB of address space: no RLIMIT_AS with a GPU
        _set_address_space(limits)
    _install_syscall_filter()  # last: the setup itself mounts, sets the hostname and calls setsid


def _seccomp_program() -> list[tuple[int, int, int, int]]:
    """The worker's syscall filter as classic BPF (code, jt, jf, k): refuses _DENIED_SYSCALLS, clone with a
    CLONE_NEW* flag, personality other than PER_LINUX (or the query), prctl(PR_SET_PDEATHSIG) and every
    foreign syscall ABI with EPERM, and clone3 with ENOSYS; allows everything else."""
    machine = platform.machine()
    if machine not in _NATIVE_ABIS:
        raise OSError(errno.ENOSYS, f"no syscall table for {machine}")
    arch, numbers = _NATIVE_ABIS[machine]
    ld, ret = 0x20, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_RET|BPF_K
    jeq, jge, jset = 0x15, 0x35, 0x45  # BPF_JMP|BPF_JEQ / BPF_JGE / BPF_JSET, |BPF_K
    nr, arch_offset, arg0 = 0, 4, 16  # offsets in struct seccomp_data (arg0: the low half of args[0])
    allow = 0x7FFF0000  # SECCOMP_RET_ALLOW
    eperm, enosys = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS  # SECCOMP_RET_ERRNO | errno
    code: list = [  # (op, jump-if-true label or None, k); a str alone is a label
        (ld, None, arch_offset), (jeq, "native", arch), (ret, None, eperm),
        "native", (ld, None, nr),
        (jge, "deny", 0x40000000),  # the x32 ABI: x86_64's arch with this bit set in the number
        (jeq, "clone", numbers["clone"]), (jeq, "enosys", numbers["clone3"]),
        (jeq, "prctl", numbers["prctl"]), (jeq, "personality", numbers["personality"]),
        *[(jeq, "deny", numbers[name]) for name in _DENIED_SYSCALLS if name in numbers],
        (ret, None, allow),
        "clone", (ld, None, arg0), (jset, "deny", _CLONE_NAMESPACES), (ret, None, allow),
        "prctl", (ld, None, arg0), (jeq, "deny", PR_SET_PDEATHSIG), (ret, None, allow),
        "personality", (ld, None, arg0), (jeq, "allow", PER_LINUX), (jeq, "allow", PERSONALITY_QUERY),
        "deny", (ret, None, eperm),
        "enosys", (ret, None, enosys),
        "allow", (ret, None, allow),
    ]
    labels, program = {}, []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(program)
        else:
            program.append(item)
    assembled = []
    for pc, (op, target, k) in enumerate(program):
        jump = labels[target] - pc - 1 if target else 0
        if not 0 <= jump <= 255:
            raise OSError(errno.E2BIG, f"seccomp jump out of range at {pc}")
        assembled.append((op, jump, 0, k))
    return assembled


def _install_syscall_filter() -> None:
    """Load _seccomp_program() for this process and everything it starts (it cannot be removed)."""
    program = _seccomp_program()
    filters = (_SockFilter * len(program))(*(_SockFilter(*ins) for ins in program))
    fprog = _SockFprog(len(program), filters)
    _call(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0),
          "install seccomp filter")


def _join_fresh_session_keyring() -> None:
    """Leave the caller's session keyring (a systemd service's, a login's) for a new, empty, anonymous one."""
    if _syscall("keyctl", ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None) == -1:
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EPERM):  # no keyrings in this kernel, or keyctl refused to us too
            raise _os_error("keyctl(KEYCTL_JOIN_SESSION_KEYRING)")


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _plan(sub: str | None, expose_cuda: bool) -> list[tuple]:
    """What the new root holds, as ops on host paths, computed before any namespace exists.

    ("bind", src, dst) read-only bind, ("link", target, dst) symlink, ("tmp", "/tmp") the
    private /tmp, ("mask", dst) empty read-only tmpfs over a hidden path that a bind would
    otherwise reveal. Sorted so that a mount point's parents are mounted first.
    """
    hidden = {os.path.realpath(REPO_ROOT), _IMPORT_CWD, *(os.path.realpath(tree) for tree in HIDDEN_TREES)}
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
    for path in _MASKED_PROC_FILES:  # as Docker does: the kernel's key lists are not the worker's business
        if os.path.exists(path):
            _mount(old + "/dev/null", path, None, MS_BIND)
            _restrict_mount(path, MOUNT_ATTR_RDONLY, recursive=False)

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
    _lower(resource.RLIMIT_CPU, int(limits.cpu_seconds), _cpu_hard_limit(limits.cpu_seconds))
    wanted = [("RLIMIT_FSIZE", limits.file_size_mb * mb), ("RLIMIT_NOFILE", nofile), ("RLIMIT_CORE", 0),
              ("RLIMIT_NPROC", limits.processes)]
    for name, value in wanted:
        res = getattr(resource, name, None)
        if res is not None:
            _lower(res, int(value))


def _cpu_hard_limit(cpu_seconds: float) -> int:
    """RLIMIT_CPU's hard limit (SIGKILL) for a soft limit (SIGXCPU) of cpu_seconds.

    The kernel checks the limits against CPU time sampled at each clock tick, which on a busy machine
    can run ahead of the exact time the supervisor reads from wait4; the margin keeps a process killed
    at the hard limit past cpu_seconds of exact CPU time, so that the cause is reported reliably.
    """
    return int(cpu_seconds) + max(1, int(cpu_seconds) // 10)


def _lower(res: int, soft: int, hard: int | None = None) -> None:
    """Set the soft limit and the hard one (soft when not given), never above the current hard limit
    (raising it needs privilege)."""
    hard = soft if hard is None else hard
    _, current = resource.getrlimit(res)
    if current != resource.RLIM_INFINITY and current >= 0:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(res, (soft, hard))


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
