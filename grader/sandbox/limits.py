"""The limits of a worker (course.yaml's ``grading.limits``), and the rlimits that apply them in the sandbox.

One model for both ends: the grading process reads it from course.yaml and sends it to the zygote, the worker
validates it again and sets its rlimits (and the size of its tmpfs) from it.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, fields

try:
    import resource
except ImportError:  # pragma: no cover - not a Unix
    resource = None  # type: ignore[assignment]

# RLIMIT_AS is never set below what the process already maps plus this much
# (torch alone maps ~625 MiB after fork; a limit under that would break every allocation).
MEMORY_HEADROOM_MB = 256
# RLIMIT_NOFILE is never set below the highest fd kept open plus this much.
NOFILE_HEADROOM = 32


@dataclass(frozen=True)
class Limits:
    """Every limit of a worker, each positive, all required (course.yaml states each) but ``replies_mb``.

    A plain dataclass, so that the zygote builds one without importing pydantic (0.2 s on the path of a cold grade):
    course.yaml's model validates it there (types, no unknown key: pydantic reads ``__pydantic_config__``), and
    ``__post_init__`` checks that every limit is positive, on both ends."""

    __pydantic_config__ = {"extra": "forbid"}

    # wall clocks, kept by the grading process
    call_seconds: float        # one call into student code
    import_seconds: float      # importing one module of the submission
    submission_seconds: float  # a whole submission's grading
    # set in the sandbox
    memory_mb: int    # RLIMIT_AS (floored at current mappings + MEMORY_HEADROOM_MB)
    cpu_seconds: int  # RLIMIT_CPU soft limit (SIGKILL at the hard one, a little above)
    processes: int    # RLIMIT_NPROC (only meaningful for a non-root uid) and the worker cgroup's pids.max
    file_size_mb: int  # RLIMIT_FSIZE
    open_files: int   # RLIMIT_NOFILE (floored at highest kept fd + NOFILE_HEADROOM)
    tmp_mb: int       # size of the private tmpfs at /tmp (and of /dev/shm)
    # kept by the grading process: the replies (JSON and tensor bytes) one exercise's checks may read in all; optional,
    # for course.yaml files written before it
    replies_mb: int = 16

    def __post_init__(self):
        not_positive = [field.name for field in fields(self) if not getattr(self, field.name) > 0]
        if not_positive:
            raise ValueError(f"every limit must be positive: {', '.join(not_positive)}")


def set_rlimits(limits: Limits, keep) -> None:
    """Lower this process's CPU, file size, open files, core and process limits to ``limits`` (``keep``: the fds
    kept open, which RLIMIT_NOFILE must leave room for)."""
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


def set_address_space(limits: Limits) -> None:
    """Lower RLIMIT_AS to ``limits.memory_mb``, never below what the process maps already plus a headroom."""
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


def lift_address_space() -> None:
    """Raise RLIMIT_AS's soft limit to its hard one, for a worker on a GPU: CUDA reserves address ranges far larger
    than the memory it uses, and a soft bound inherited from a grading process (``memory.bound_grading_memory``)
    would refuse them."""
    if resource is None or not hasattr(resource, "RLIMIT_AS"):  # pragma: no cover
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def process_facts() -> str:
    """What this process has against its limits (open files, threads, its uid's processes, address space): said when
    CUDA did not start in a worker, where it tells a limit reached (CUDA's "OS call failed") from a missing driver."""
    if resource is None:  # pragma: no cover
        return "not a Unix"

    def limit(res: int) -> str:
        soft = resource.getrlimit(res)[0]
        return "unlimited" if soft == resource.RLIM_INFINITY else str(soft)

    facts = []
    with contextlib.suppress(OSError, ValueError):
        facts.append(f"{len(os.listdir('/proc/self/fd'))} open files of {limit(resource.RLIMIT_NOFILE)}")
    with contextlib.suppress(OSError, ValueError, KeyError):
        facts.append(f"{proc_status()['Threads']} threads, {limit(resource.RLIMIT_NPROC)} processes of its uid at most")
    with contextlib.suppress(OSError, ValueError):
        facts.append(f"uid {os.getuid()}, address space {limit(resource.RLIMIT_AS)}")
    return "; ".join(facts)


def proc_status(pid: int | str = "self") -> dict[str, str]:
    """The fields of ``/proc/<pid>/status`` (``Uid``, ``State``, ``Threads``, ...), a zombie's too; OSError where there is
    no such process."""
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        return {key: value.strip() for key, _, value in (line.partition(":") for line in status)}
