"""Tie a process's life to its parent's, and start the zygote that way (importable without torch).

Run as ``__main__`` with the arguments PARENT_PID CONTROL_FD (``zygote.BOOTSTRAP``), it is how the grading process
starts its zygote: the parent-death signal is set, and the parent checked, before the ~2 s import of torch, so a
grading process killed at any moment leaves no zygote behind. Its settings (the folders to hide, whether to build
namespaces, the variables it takes on) come as a JSON line on its standard input, never in its environment or on its
command line, which every worker inherits.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
# Looked up once, here: a process forked from a threaded one must not take the dynamic loader's lock (another
# thread may have held it at the fork) to find prctl.
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL this process when its parent dies; ``parent`` is the pid the parent had before forking us: if it
    died already (before the signal was set), exit at once."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)



def take_environment(environ: dict[str, str | None]) -> None:
    """Set the grading process's variables a zygote takes on (``host.zygote.PASSED_ON``), removing those it lacks
    (None)."""
    for name, value in environ.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def describe_status(status: int) -> str:
    """A waitpid status (or a sandbox supervisor's 128+signal exit code) in words."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
    elif os.WIFEXITED(status) and os.WEXITSTATUS(status) > 128:
        number = os.WEXITSTATUS(status) - 128
    else:  # the student's code picks its exit status: say only whether it is 0
        return "exited with status 0" if os.WEXITSTATUS(status) == 0 else "exited with a non-zero status"
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = ""
    return {"SIGSEGV": "crashed (segmentation fault)", "SIGKILL": "was killed (SIGKILL)", "SIGXCPU": "ran out of CPU time",
            "SIGABRT": "aborted", "SIGXFSZ": "wrote a file larger than allowed"}.get(name, "was killed by a signal")


if __name__ == "__main__":
    gc.disable()  # while torch is imported (10 to 15% of its import); zygote._ready turns it back on for the workers
    die_with_parent(int(sys.argv[1]))
    settings = json.loads(sys.stdin.readline())
    take_environment(settings["environ"])  # before the sandbox's modules read them
    from grader.sandbox.jail import zygote

    zygote.start(int(sys.argv[2]), settings)
    sys.stderr.flush()
    os._exit(0)  # its workers are reaped and their cgroups removed: tearing down torch's interpreter would only
    # keep the grading process waiting in Zygote.close
