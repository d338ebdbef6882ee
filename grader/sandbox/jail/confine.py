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
``SandboxUnavailable`` with ``require=True``). The root filesystem is ``rootfs``'s, the syscall filter
``seccomp``'s, the rlimits ``limits``'s, the uid ``uids``'s. See docs/sandbox.md.
"""
from __future__ import annotations

import ctypes
import errno
import importlib
import os
import select
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence

from grader.sandbox import TRUSTED_OPTION
from grader.sandbox.jail import uids
from grader.sandbox.jail.rootfs import (
    MS_PRIVATE,
    MS_REC,
    REPO_ROOT,
    SUBMISSION_DIR,
    build_root,
    mount,
    plan_root,
)
from grader.sandbox.jail.seccomp import install_syscall_filter
from grader.sandbox.jail.syscalls import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    checked,
    libc,
    os_error,
    prctl,
    syscall,
)
from grader.sandbox.limits import Limits, lift_address_space, set_address_space, set_rlimits

__all__ = ["HOSTNAME", "PROBE_LIMITS", "SANDBOX_ENV", "SandboxUnavailable", "confine", "probe", "refusal",
           "require_namespaces"]

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
_PROBE_TIMEOUT_S = 20.0
# What the probe's throwaway sandbox runs under (it runs no student code).
PROBE_LIMITS = Limits(call_seconds=60, import_seconds=60, submission_seconds=60, memory_mb=4096, cpu_seconds=60,
                      processes=64, file_size_mb=16, open_files=256, tmp_mb=64)


class SandboxUnavailable(RuntimeError):
    """The sandbox was required but cannot be set up here (or its setup failed midway)."""


class _NotEntered(Exception):
    """Namespaces could not be created; nothing about the process has changed."""


_LINUX_CAPABILITY_VERSION_3 = 0x20080522
KEYCTL_JOIN_SESSION_KEYRING = 1


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _unshare(flags: int) -> None:
    checked(libc.unshare(flags), f"unshare({flags:#x})")


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


def refusal(why: str) -> str:
    """One line for a grader that needs the sandbox where ``why`` (the probe's reason) keeps it from being built:
    what is missing, how to allow it, and the option that grades code one trusts without it."""
    if sys.platform != "linux":
        allow = "grade on Linux"
    elif os.geteuid() == 0:
        allow = ("as root the grader needs CAP_SYS_ADMIN: in a container, run it with that capability (Docker: "
                 "--cap-add SYS_ADMIN) and a seccomp and AppArmor profile that allow unshare and mount")
    else:
        allow = ("allow unprivileged user namespaces, as root: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
                 "(Ubuntu 23.10 and later), sysctl -w kernel.unprivileged_userns_clone=1 (older Debian and Ubuntu "
                 "kernels), user.max_user_namespaces above 0; in a container, a seccomp and AppArmor profile that "
                 "allow unshare and mount")
    return (f"no sandbox can be built here ({why}), and student code never runs without one: {allow}; or, for "
            f"code you trust only, grade with {TRUSTED_OPTION} (resource limits only)")


def require_namespaces() -> None:
    """Raise SandboxUnavailable (``refusal``) where no namespace sandbox can be built here."""
    ok, why = probe()
    if not ok:
        raise SandboxUnavailable(refusal(why))


def _run_probe() -> tuple[bool, str]:
    if libc is None:
        return False, f"namespaces need Linux (this is {sys.platform})"
    r, w = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError as e:
        os.close(r)
        os.close(w)
        return False, _one_line(f"fork failed: {e}")
    if pid == 0:  # throwaway child: try the real thing, report, never return
        code, msg = 1, b"probe failed"
        try:
            # it dies with the zygote, like every worker: a zygote killed mid-probe leaves no supervisor behind
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(1)
            os.close(r)
            _enter_namespaces(None, PROBE_LIMITS, expose_cuda=False, keep_fds=(w,))
            if os.getpid() != 1:
                raise SandboxUnavailable("not pid 1 of a new pid namespace")
            code, msg = 0, b"ok"
        except _NotEntered as e:  # says what the kernel refused
            msg = str(e).encode()
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
    With require=True, raises SandboxUnavailable (``refusal``) instead of degrading.

    With namespaces the calling process never returns: it becomes the supervisor and
    exits with the inner process's status (its exit code, or 128+signal). A failure
    after the namespaces were entered raises SandboxUnavailable even when require=False.
    """
    sub = os.path.realpath(os.fspath(submission_dir))
    if not os.path.isdir(sub):
        raise NotADirectoryError(errno.ENOTDIR, "submission is not a directory", sub)
    if REPO_ROOT is not None and sub == os.path.realpath(REPO_ROOT):
        raise ValueError("the submission directory is the grader's repository")
    keep = tuple(sorted({int(fd) for fd in keep_fds}))
    ok, why = probe()
    if ok:
        try:
            return _enter_namespaces(sub, limits, expose_cuda=expose_cuda, keep_fds=keep)
        except _NotEntered as e:
            why = str(e)
    if require:
        raise SandboxUnavailable(refusal(why))
    _rlimits_only(sub, limits, keep)
    return f"rlimits only: {why}"


def _rlimits_only(sub: str, limits: Limits, keep: tuple[int, ...]) -> None:
    _close_fds(set(keep))
    _stdin_devnull()
    if libc is not None:
        try:
            prctl(PR_SET_NO_NEW_PRIVS, 1)
        except OSError:
            pass
    try:
        os.setsid()
    except OSError:
        pass
    set_rlimits(limits, keep)
    _scrub_env()
    os.chdir(sub)
    set_address_space(limits)
    for step in (_join_fresh_session_keyring, install_syscall_filter):  # what this kernel allows
        try:
            step()
        except OSError:
            pass


def _enter_namespaces(sub: str | None, limits: Limits, *, expose_cuda: bool,
                      keep_fds: Sequence[int]) -> str:
    root = os.geteuid() == 0
    if root and sub is not None:
        _check_readable_by_sandbox(sub)
    plan = plan_root(sub, expose_cuda)
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
            prctl(PR_SET_DUMPABLE, 1)
            _write_id_maps(uid, gid)
        # A zygote that ignores SIGCHLD would have the inner process auto-reaped before
        # the supervisor could read its status: wait-able while forking, restored inside.
        old_chld = _set_handler(signal.SIGCHLD, signal.SIG_DFL)
        alive_r, alive_w = os.pipe()
        # A SIGTERM (the grader ending the worker) waits until the supervisor can pass it on: see _supervise.
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
        pid = os.fork()
    except BaseException as e:
        raise SandboxUnavailable(_one_line(f"sandbox setup failed: {e}")) from e
    if pid:
        os.close(alive_r)
        _supervise(pid, alive_w, limits.cpu_seconds)  # never returns
    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
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
    if st.st_uid == uids.SANDBOX_UID:
        ok = (st.st_mode & 0o500) == 0o500
    elif st.st_gid == uids.SANDBOX_GID:
        ok = (st.st_mode & 0o050) == 0o050
    else:
        ok = (st.st_mode & 0o005) == 0o005
    if not ok:
        raise PermissionError(errno.EACCES, f"the sandbox uid {uids.SANDBOX_UID} cannot read the submission "
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

    SIGTERM is how the grader ends a worker: the supervisor SIGKILLs the inner process and exits once it is reaped,
    which is once every process of its namespace is gone. A supervisor SIGKILLed itself leaves its inner process to
    die orphaned, a zombie of the sandbox uid until init reaps it; where init never does (a container whose first
    process is no init), those zombies fill the uid's RLIMIT_NPROC and its next workers cannot start a thread.
    """
    code = 70
    try:
        # A terminal's or a session's signals (Ctrl-C, a dropped SSH session) reach the process group it shares with
        # the grading process, theirs to act on: it ends with its zygote or on SIGTERM, never mid-check
        # (walk-through 8).
        for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            _set_handler(sig, signal.SIG_IGN)
        for sig in (signal.SIGPIPE, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
            _set_handler(sig, signal.SIG_DFL)
        _close_fds({alive_w})  # hold nothing of the worker's (its socket included)
        # SIGTERM (blocked since before the fork) and SIGCHLD stay blocked and are taken from the queue: neither is
        # lost between a look at the child and the wait for the next signal.
        signal.pthread_sigmask(signal.SIG_SETMASK, [signal.SIGTERM, signal.SIGCHLD])
        while True:
            try:
                pid, status, usage = os.wait4(child, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                code = os.waitstatus_to_exitcode(status)
                code = 128 - code if code < 0 else code
                if (code == 128 + signal.SIGKILL
                        and usage.ru_utime + usage.ru_stime >= cpu_seconds):
                    code = 128 + signal.SIGXCPU
                break
            if signal.sigwaitinfo({signal.SIGTERM, signal.SIGCHLD}).si_signo == signal.SIGTERM:
                os.kill(child, signal.SIGKILL)  # not reaped yet: the pid is still the child's
    finally:
        os._exit(code & 0xFF)


# --------------------------------------------------------------------------- the inner process

def _die_with_supervisor(alive_r: int) -> None:
    """SIGKILL this process when the supervisor dies; exit now if it already has."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
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
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    build_root(plan, sub, limits, expose_cuda)
    socket.sethostname(HOSTNAME)
    set_rlimits(limits, keep)
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
    if expose_cuda:  # CUDA reserves tens of GiB of address space: no RLIMIT_AS with a GPU
        lift_address_space()
    else:
        set_address_space(limits)
    install_syscall_filter()  # last: the setup itself mounts, sets the hostname and calls setsid


def _join_fresh_session_keyring() -> None:
    """Leave the caller's session keyring (a systemd service's, a login's) for a new, empty, anonymous one."""
    if syscall("keyctl", ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None) == -1:
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EPERM):  # no keyrings in this kernel, or keyctl refused to us too
            raise os_error("keyctl(KEYCTL_JOIN_SESSION_KEYRING)")


def _drop_privileges(root: bool) -> None:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last_cap = int(f.read())
    except (OSError, ValueError):
        last_cap = 63
    for cap in range(last_cap + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
    if root:
        os.setgroups([])
        os.setresgid(uids.SANDBOX_GID, uids.SANDBOX_GID, uids.SANDBOX_GID)
        os.setresuid(uids.SANDBOX_UID, uids.SANDBOX_UID, uids.SANDBOX_UID)
        # Leaving root made us non-dumpable, which makes /proc/self/* root-owned and
        # unreadable to ourselves; only processes of this pid namespace can see us.
        prctl(PR_SET_DUMPABLE, 1)
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    checked(syscall("capset", ctypes.byref(header), ctypes.byref(data)), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
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


def _scrub_env() -> None:
    os.environ.clear()
    if libc is not None:  # also what C code put there behind os.environ's back (ncurses sets LINES...)
        libc.clearenv()
    os.environ.update(SANDBOX_ENV)
    tempfile.tempdir = None  # forget a directory the zygote may have cached
