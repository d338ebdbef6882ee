"""Linux system calls from Python: libc through ctypes, and the kernel's numbers for the calls libc may not wrap.

Shared by the sandbox's stages (``confine``, ``rootfs``, ``seccomp``); ``libc`` is None where it cannot be loaded
(not Linux).
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

# Namespace flags of clone and unshare.
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWCGROUP = 0x02000000

# prctl options.
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
PR_SET_CHILD_SUBREAPER = 36

# System call numbers, from the kernel's tables: arch/x86/entry/syscalls/syscall_64.tbl for x86_64,
# include/uapi/asm-generic/unistd.h for aarch64 and riscv64. A name missing from a table does not exist
# there. Only the calls the sandbox makes without a libc wrapper and those its syscall filter looks at.
X86_64_SYSCALLS = {
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
GENERIC_SYSCALLS = {
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
NATIVE_ABIS = {
    "x86_64": (0xC000003E, X86_64_SYSCALLS),
    "aarch64": (0xC00000B7, GENERIC_SYSCALLS),
    "riscv64": (0xC00000F3, GENERIC_SYSCALLS),
}


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


libc = _load_libc()


def os_error(what: str) -> OSError:
    """An OSError for the errno the last libc call left, saying what failed."""
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def checked(ret: int, what: str) -> int:
    """A libc call's return value, or its OSError when it failed (-1)."""
    if ret == -1:
        raise os_error(what)
    return ret


def syscall(name: str, *args) -> int:
    """Call libc's wrapper of system call ``name``, or the call itself by its number where libc has none."""
    fn = getattr(libc, name, None)
    if fn is not None:
        return fn(*args)
    nr = NATIVE_ABIS.get(platform.machine(), (0, {}))[1].get(name)
    if nr is None:
        raise OSError(errno.ENOSYS, f"{name}: no syscall number for {platform.machine()}")
    return libc.syscall(ctypes.c_long(nr), *args)


def fsencode(path) -> bytes | None:
    """A path as the bytes a libc call takes (None stays None)."""
    return None if path is None else os.fsencode(path)


def prctl(option: int, arg: int = 0) -> int:
    return checked(libc.prctl(option, arg, 0, 0, 0), f"prctl({option})")
