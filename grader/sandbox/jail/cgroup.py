"""A cgroup of its own for each worker: at most one CPU and a pids limit, whatever its processes do.

The zygote (trusted, before any student code runs) finds where it may make cgroups (``hierarchies``):
the cgroup v2 ``cpu`` controller where it is enabled for us, else the cgroup v1 ``cpu`` hierarchy (plus
v1 ``pids`` where writable), else none. For each worker it makes ``grader-<zygote pid>-<n>`` there
(``create``), the forked worker moves itself in before it enters the sandbox (``join``), so the
supervisor, the worker and everything student code forks share one CPU; once the worker is reaped
the zygote removes the cgroup, killing whatever is left in it (``remove``). Student code runs as an
unprivileged uid without cgroupfs in its mount namespace: it cannot leave the cgroup nor change it.

``GRADER_CGROUP`` in the grader's environment overrides the search: ``none`` uses no cgroup, a path
names a cgroup directory to make worker cgroups in (for cgroup v2, one whose ``cgroup.subtree_control``
has, or may be given, ``+cpu``: a delegated subtree). Where no cgroup can be used, grading goes on
and the workers' description says why (see docs/sandbox.md for the fallback).
"""
from __future__ import annotations

import errno
import os
import re
import signal
import time
from dataclasses import dataclass

from grader.sandbox.jail.rootfs import unescape_mountinfo

__all__ = ["CPU_PERIOD_US", "Hierarchy", "create", "hierarchies", "join", "remove", "sweep"]

CPU_PERIOD_US = 100_000  # the quota equals the period: one CPU
_NAME = re.compile(r"grader-(\d+)-\d+")
_REMOVE_SECONDS = 30.0


@dataclass(frozen=True)
class Hierarchy:
    base: str          # the directory worker cgroups are made in
    version: int       # 1 or 2
    controllers: tuple[str, ...]  # of "cpu" and "pids", the limits this hierarchy sets


def hierarchies() -> tuple[list[Hierarchy], str]:
    """Where worker cgroups go, and a one-line description ("cgroup v1: cpu, pids" or "none: <why>")."""
    wanted = os.environ.get("GRADER_CGROUP", "")
    if wanted == "none":
        return [], "none: GRADER_CGROUP=none"
    if wanted:
        version = 2 if os.path.exists(os.path.join(wanted, "cgroup.controllers")) else 1
        found = [h for h in [_usable(wanted, version)] if h]
        why = f"GRADER_CGROUP={wanted} is not a cgroup with the cpu controller that we may write"
    else:
        mounts, mine = _mounts(), _own_cgroups()
        v2 = _usable(_join_path(mounts[""], mine[""]), 2) if "" in mounts and "" in mine else None
        found = [v2] if v2 else [h for c in ("cpu", "pids") if c in mounts and c in mine
                                 if (h := _usable(_join_path(mounts[c], mine[c]), 1, c))]
        if not any("cpu" in h.controllers for h in found):
            found = []
        why = "no cgroup with the cpu controller is writable here"
    if not found:
        return [], f"none: {why}"
    return found, f"cgroup v{found[0].version}: " + ", ".join(c for h in found for c in h.controllers)


def _mounts() -> dict[str, tuple[str, str]]:
    """Controller ("" for cgroup v2) -> (mount root inside the hierarchy, mount point)."""
    found: dict[str, tuple[str, str]] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                fields, _, tail = line.partition(" - ")
                fields, tail = fields.split(), tail.split()
                if len(fields) < 5 or len(tail) < 3:
                    continue
                root, point = unescape_mountinfo(fields[3]), unescape_mountinfo(fields[4])
                if tail[0] == "cgroup2":
                    found.setdefault("", (root, point))
                elif tail[0] == "cgroup":
                    for controller in tail[2].split(","):
                        found.setdefault(controller, (root, point))
    except OSError:
        pass
    return found


def _own_cgroups() -> dict[str, str]:
    """Controller ("" for cgroup v2) -> this process's cgroup path in that hierarchy."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(",") if controllers else [""]:
                    found[controller] = path
    except (OSError, ValueError):
        pass
    return found


def _join_path(mount: tuple[str, str], path: str) -> str:
    root, point = mount
    if root != "/" and not (path == root or path.startswith(root + "/")):
        return ""  # our cgroup is outside what this mount shows
    return os.path.normpath(os.path.join(point, path[len(root):].lstrip("/") if root != "/" else path.lstrip("/")))


def _usable(base: str, version: int, controller: str = "cpu") -> Hierarchy | None:
    """The hierarchy at ``base`` if we may make cgroups there that limit ``controller`` (v2: cpu, and pids if enabled)."""
    if not base or not os.path.isdir(base) or not os.access(base, os.W_OK):
        return None
    if version == 1:  # the mount told us it is this controller's hierarchy
        return Hierarchy(base, 1, (controller,)) if os.path.exists(os.path.join(base, "cgroup.procs")) else None
    enabled = _read(os.path.join(base, "cgroup.subtree_control")).split()
    offered = _read(os.path.join(base, "cgroup.controllers")).split()
    for name in ("cpu", "pids"):
        if name in offered and name not in enabled:
            try:  # possible in a root cgroup, or a delegated one that holds no process
                _write(os.path.join(base, "cgroup.subtree_control"), f"+{name}")
                enabled.append(name)
            except OSError:
                pass
    if "cpu" not in enabled:
        return None
    return Hierarchy(base, 2, tuple(n for n in ("cpu", "pids") if n in enabled))


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except (OSError, ValueError):
        return ""


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _settings(hierarchy: Hierarchy, processes: int) -> list[tuple[str, str]]:
    pids = str(processes + 1)  # the supervisor is in the cgroup too
    if hierarchy.version == 2:
        return ([("cpu.max", f"{CPU_PERIOD_US} {CPU_PERIOD_US}")]
                + ([("pids.max", pids)] if "pids" in hierarchy.controllers else []))
    if "cpu" in hierarchy.controllers:
        return [("cpu.cfs_period_us", str(CPU_PERIOD_US)), ("cpu.cfs_quota_us", str(CPU_PERIOD_US))]
    return [("pids.max", pids)]


def create(found: list[Hierarchy], name: str, processes: int) -> list[str]:
    """Make the cgroup ``name`` in each hierarchy with its limits; its directories (none made if one fails)."""
    made: list[str] = []
    try:
        for hierarchy in found:
            path = os.path.join(hierarchy.base, name)
            os.mkdir(path, 0o755)
            made.append(path)
            for file, value in _settings(hierarchy, processes):
                _write(os.path.join(path, file), value)
    except OSError:
        remove(made)
        raise
    return made


def join(paths: list[str]) -> None:
    """Move the calling process into these cgroups (its children, forked later, follow)."""
    for path in paths:
        _write(os.path.join(path, "cgroup.procs"), "0")


def remove(paths: list[str]) -> None:
    """Remove worker cgroups, killing whatever processes are still in them: those of a worker being killed (dozens
    of busy ones take a second or two to be gone) and any a sandbox without a pid namespace let outlive it.
    Gives up (leaving the cgroup to ``sweep``) after ``_REMOVE_SECONDS``."""
    deadline = time.monotonic() + _REMOVE_SECONDS
    for path in paths:
        while True:
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError as error:
                if error.errno != errno.EBUSY or time.monotonic() > deadline:
                    break
            for pid in _read(os.path.join(path, "cgroup.procs")).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError, ValueError):
                    pass
            time.sleep(0.005)


def sweep(found: list[Hierarchy]) -> None:
    """Remove empty worker cgroups left by zygotes that are gone (killed before they could clean up)."""
    for hierarchy in found:
        try:
            names = os.listdir(hierarchy.base)
        except OSError:
            continue
        for name in names:
            match = _NAME.fullmatch(name)
            if match and not _alive(int(match.group(1))):
                try:
                    os.rmdir(os.path.join(hierarchy.base, name))
                except OSError:
                    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
