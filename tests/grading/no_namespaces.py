"""Run a command where the kernel refuses new namespaces, as a container runtime's seccomp profile does for a process
without CAP_SYS_ADMIN: ``python no_namespaces.py COMMAND [ARG]...``.

A syscall filter that fails ``unshare`` with EPERM (the call the sandbox is built with; everything else is allowed)
is installed, then COMMAND is executed: the filter holds for it and everything it starts, so the grader's probe finds
that no sandbox can be built. ``refused(command)`` is the command line that does this.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

from grader.sandbox.jail.syscalls import NATIVE_ABIS, libc

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def refused(command: list[str]) -> list[str]:
    """``command`` run by this script: without namespaces."""
    return [sys.executable, os.path.abspath(__file__), *command]


def refuse_unshare() -> None:
    """Make ``unshare`` fail with EPERM for this process and all it starts (it cannot be undone)."""
    arch, numbers = NATIVE_ABIS[platform.machine()]
    load, ret, jump_if_equal = 0x20, 0x06, 0x15  # BPF_LD|BPF_W|BPF_ABS, BPF_RET|BPF_K, BPF_JMP|BPF_JEQ|BPF_K
    allow, eperm = 0x7FFF0000, 0x00050000 | errno.EPERM
    program = [(load, 0, 0, 4), (jump_if_equal, 0, 3, arch),  # another ABI: allowed (jump to the end)
               (load, 0, 0, 0), (jump_if_equal, 0, 1, numbers["unshare"]), (ret, 0, 0, eperm),
               (ret, 0, 0, allow)]
    instructions = (_Instruction * len(program))(*(_Instruction(*step) for step in program))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or libc.prctl(
            PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(_Program(len(program), instructions)), 0, 0):
        raise OSError(ctypes.get_errno(), "the syscall filter could not be installed")


if __name__ == "__main__":
    refuse_unshare()
    os.execvp(sys.argv[1], sys.argv[1:])
