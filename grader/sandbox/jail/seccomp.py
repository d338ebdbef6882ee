"""The worker's syscall filter (seccomp), in the spirit of Docker's default profile, installed last in the sandbox.

Keyrings, ptrace, namespaces, mounts, new sessions, kernel modules... are refused with EPERM, and the
parent-death signal stays in place; see docs/sandbox.md (the syscall filter).
"""
from __future__ import annotations

import ctypes
import errno
import platform

from grader.sandbox.jail.syscalls import (
    CLONE_NEWCGROUP,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    NATIVE_ABIS,
    PR_SET_PDEATHSIG,
    checked,
    libc,
)

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2

# What the worker's syscall filter refuses with EPERM, after Docker's default seccomp profile (the calls it
# refuses to a container without added capabilities). clone with a CLONE_NEW* flag, clone3 (ENOSYS: glibc
# then falls back to clone), personality other than PER_LINUX and prctl(PR_SET_PDEATHSIG) are refused too.
DENIED_SYSCALLS = (
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
_CLONE_NAMESPACES = (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER
                     | CLONE_NEWPID | CLONE_NEWNET)
PER_LINUX, PERSONALITY_QUERY = 0, 0xFFFFFFFF


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _seccomp_program() -> list[tuple[int, int, int, int]]:
    """The worker's syscall filter as classic BPF (code, jt, jf, k): refuses DENIED_SYSCALLS, clone with a
    CLONE_NEW* flag, personality other than PER_LINUX (or the query), prctl(PR_SET_PDEATHSIG) and every
    foreign syscall ABI with EPERM, and clone3 with ENOSYS; allows everything else."""
    machine = platform.machine()
    if machine not in NATIVE_ABIS:
        raise OSError(errno.ENOSYS, f"no syscall table for {machine}")
    arch, numbers = NATIVE_ABIS[machine]
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
        *[(jeq, "deny", numbers[name]) for name in DENIED_SYSCALLS if name in numbers],
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


def install_syscall_filter() -> None:
    """Load _seccomp_program() for this process and everything it starts (it cannot be removed)."""
    program = _seccomp_program()
    filters = (_SockFilter * len(program))(*(_SockFilter(*ins) for ins in program))
    fprog = _SockFprog(len(program), filters)
    checked(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0),
            "install seccomp filter")
