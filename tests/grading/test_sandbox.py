"""The worker sandbox (grader/sandbox/jail/confine.py, rootfs.py, seccomp.py, limits.py): each test forks, confines, probes from inside.

The test process plays the zygote: torch is imported and set to one thread before any
fork. A child runs ``confine`` and then a probe function, and sends a JSON result back
over a pipe; it always ``os._exit``s and never returns into pytest. The parent waits
with a deadline and kills the child on timeout.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import encodings.idna  # noqa: F401 - preloaded: the user-namespace test cannot read the stdlib
import errno
import json
import os
import platform
import re
import resource
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from pathlib import Path

import pytest
import torch
from test_hostile import parent_of

from grader.sandbox import TRUSTED_OPTION
from grader.sandbox.jail import confine as sandbox
from grader.sandbox.jail import rootfs, seccomp, syscalls, uids
from grader.sandbox.limits import Limits, _cpu_hard_limit

torch.set_num_threads(1)

AVAILABLE, WHY = sandbox.probe()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"namespaces unavailable here: {WHY}")

REPO = Path(__file__).resolve().parents[2]
THIS_FILE = str(Path(__file__).resolve())
IS_ROOT = os.geteuid() == 0
OTHER_UID = 64056  # an unprivileged caller, for the user-namespace path
RESULT_FD = -1  # in a child: the fd its result goes to (to keep it open across a confine)


def limits_with(**changes) -> Limits:
    """The probe's limits with ``changes``."""
    return dataclasses.replace(sandbox.PROBE_LIMITS, **changes)


class Sandboxed:
    """A forked child that confines itself, runs body() inside and reports body's dict as JSON."""

    def __init__(self, body, *, sub, limits=None, keep=(), linger=False, as_uid=None,
                 before=None, confine=True, expose_cuda=False):
        limits = limits or sandbox.PROBE_LIMITS
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            result = None
            try:
                global RESULT_FD
                RESULT_FD = w
                os.close(r)
                if before is not None:
                    before()
                if as_uid is not None:
                    os.setgroups([])
                    os.setresgid(as_uid, as_uid, as_uid)
                    os.setresuid(as_uid, as_uid, as_uid)
                result = {}
                if confine:
                    t0 = time.perf_counter()
                    result["desc"] = sandbox.confine(sub, limits, require=True, keep_fds=(w, *keep),
                                                     expose_cuda=expose_cuda)
                    result["confine_ms"] = (time.perf_counter() - t0) * 1000
                result.update(body() or {})
            except BaseException as e:  # noqa: BLE001 - report anything to the parent
                result = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
            finally:
                try:
                    os.write(w, json.dumps(result).encode())
                    os.close(w)
                    if linger:
                        time.sleep(60)
                finally:
                    os._exit(0)
        os.close(w)
        self.pid, self._r, self._code = pid, r, None

    def result(self, timeout: float = 30.0) -> dict | None:
        """The body's dict (None if the child died before reporting); fails the test on timeout."""
        data, deadline = b"", time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._r], [], [], left)[0]:
                    self.kill()
                    pytest.fail(f"sandboxed child did not report within {timeout} s")
                chunk = os.read(self._r, 65536)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(self._r)
        return json.loads(data) if data else None

    def wait(self, timeout: float = 30.0) -> int:
        """The child's exit code (128+signal when killed); kills it and fails on timeout."""
        deadline = time.monotonic() + timeout
        while self._code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                self._code = 128 - code if code < 0 else code
            elif time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"sandboxed child did not exit within {timeout} s")
            else:
                time.sleep(0.01)
        return self._code

    def kill(self) -> None:
        if self._code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self._code = 137


@pytest.fixture(scope="module")
def sub():
    """A submission directory every uid can read (and, to show the mount is read-only, write)."""
    d = tempfile.mkdtemp(prefix="sandbox-test-", dir="/tmp")
    Path(d, "student.py").write_text("ANSWER = 42\n")
    os.chmod(Path(d, "student.py"), 0o644)
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def spawn(sub):
    children = []

    def start(body, **kw):
        kw.setdefault("sub", sub)
        child = Sandboxed(body, **kw)
        children.append(child)
        return child

    yield start
    for child in children:
        child.kill()


@pytest.fixture
def run(spawn):
    def run(body, timeout=30.0, **kw):
        child = spawn(body, **kw)
        res = child.result(timeout)
        code = child.wait(timeout)
        if res is not None and "error" in res:
            pytest.fail(f"in the sandbox: {res['error']}\n{res['traceback']}")
        return res, code
    return run


def _status() -> dict:
    with open("/proc/self/status") as f:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}


# ---------------------------------------------------------------------------------------------


def test_probe_says_available():
    """probe() finds namespaces usable on this machine."""
    assert sandbox.probe() == (True, "")


def test_require_gives_namespaces(run):
    """confine(require=True) enters the namespaces: pid 1, own hostname, cwd is the read-only submission."""
    res, code = run(lambda: {"pid": os.getpid(), "host": socket.gethostname(), "cwd": os.getcwd(),
                             "files": os.listdir("."), "answer": open("student.py").read()})
    assert code == 0
    assert res["desc"] == "namespaces"
    assert res["pid"] == 1 and res["host"] == "sandbox"
    assert res["cwd"] == "/submission" and res["files"] == ["student.py"]
    assert res["answer"] == "ANSWER = 42\n"


SANDBOX_OWN = ("/proc", "/dev", "/tmp", rootfs.SUBMISSION_DIR)  # made fresh inside, whatever the host holds there


def _not_bound(sub: str, folder: Path) -> list[str]:
    """The host's entries of folder that the sandbox neither binds on purpose (a system or Python directory,
    or a directory on the way to one) nor makes of its own; masked ones included."""
    plan = rootfs.plan_root(sub, expose_cuda=False)
    binds = [op[2] for op in plan if op[0] == "bind"]
    masks = [op[1] for op in plan if op[0] == "mask"]

    def bound(path: str) -> bool:
        return path in SANDBOX_OWN or (not any(rootfs._inside(path, m) for m in masks)
                                       and any(rootfs._inside(path, b) or rootfs._inside(b, path) for b in binds))
    return [str(folder / name) for name in os.listdir(folder) if not bound(str(folder / name))]


def _shows_something(path: str) -> bool:
    """path exists and is more than an empty directory (a mask, or a mount point of the sandbox's own)."""
    if not os.path.lexists(path):
        return False
    try:
        return not (os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path))
    except OSError:
        return True


def test_repo_is_invisible(run, sub):
    """Nothing of the repository (hidden tests, solutions, this file), of the grader's cwd or beside the
    repository is visible, wherever the repository lies: under /tmp (whose sandbox copy is its own, empty)
    or under a bound system directory (masked)."""
    repo_files = [str(p) for p in REPO.rglob("*") if ".git" not in p.relative_to(REPO).parts]
    paths = [THIS_FILE, *repo_files, *_not_bound(sub, REPO.parent), *_not_bound(sub, Path.cwd())]
    assert str(REPO / "solutions" / "quiz.py") in paths
    res, _ = run(lambda: {"seen": [p for p in paths if _shows_something(p)], "top": sorted(os.listdir("/"))})
    assert res["seen"] == []
    allowed = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", *[p[1:] for p in SANDBOX_OWN],
               *[p.split("/")[1] for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]}
    assert set(res["top"]) <= allowed, set(res["top"]) - allowed


def test_root_home_is_invisible(run):
    """Of /root only the path down to the Python installation exists, and nothing beside it."""
    if not os.access("/root", os.W_OK):
        pytest.skip("needs write access to /root to plant a marker")
    fd, marker = tempfile.mkstemp(prefix=".sandbox-test-", dir="/root")
    os.close(fd)
    prefix = Path(sys.prefix).resolve()
    dirs = ["/root", *[str(p) for p in prefix.parents if str(p).startswith("/root/")]]

    def body():
        return {"marker": os.path.lexists(marker),
                "listing": {d: sorted(os.listdir(d)) if os.path.isdir(d) else None for d in dirs}}

    try:
        res, _ = run(body)
    finally:
        os.unlink(marker)
    assert res["marker"] is False
    for d, names in res["listing"].items():
        if names is None:
            continue  # the install is not under /root at all
        chain = [p.name for p in [prefix, *prefix.parents] if str(p.parent) == d]
        assert names == chain, (d, names)


def test_writes_outside_tmp_fail(run):
    """Every path outside /tmp (and /dev/shm) is read-only, the submission included."""
    targets = ["/x", "/submission/x", "/usr/x", "/etc/x", "/root/x", f"{sys.prefix}/x", "/dev/x", "/proc/x"]

    def body():
        out = {}
        for t in targets:
            try:
                with open(t, "w") as f:
                    f.write("x")
                out[t] = "written"
            except OSError as e:
                out[t] = errno.errorcode.get(e.errno, str(e.errno))
        return out

    res, _ = run(body)
    assert all(res[t] != "written" for t in targets), res
    assert res["/submission/x"] == "EROFS"  # the directory is mode 777: only the mount stops it


def test_tmp_is_writable_but_capped(run):
    """/tmp is a private writable tmpfs of limits.tmp_mb."""
    marker = tempfile.NamedTemporaryFile(dir="/tmp", prefix="host-only-")  # in the host's /tmp, never in the worker's

    def body():
        written, err = 0, None
        with open("/tmp/fill", "wb") as f:
            try:
                for _ in range(64):
                    f.write(b"\0" * (1 << 20))
                    f.flush()
                    written += 1
            except OSError as e:
                err = errno.errorcode.get(e.errno)
        return {"written_mb": written, "err": err, "tmp": sorted(os.listdir("/tmp"))}

    with marker:
        res, _ = run(body, limits=limits_with(tmp_mb=4))
    assert res["err"] == "ENOSPC" and 1 <= res["written_mb"] <= 4, res
    assert "fill" in res["tmp"] and os.path.basename(marker.name) not in res["tmp"], res  # the host's /tmp is not there


def test_file_size_limit(run):
    """RLIMIT_FSIZE makes an oversized write fail with EFBIG (Python ignores SIGXFSZ)."""
    def body():
        try:
            with open("/tmp/big", "wb") as f:
                f.write(b"\0" * (2 << 20))
        except OSError as e:
            return {"err": errno.errorcode.get(e.errno)}
        return {"err": None}

    res, _ = run(body, limits=limits_with(file_size_mb=1))
    assert res["err"] == "EFBIG"


def test_not_root_and_no_capabilities(run):
    """Started as root, the sandbox runs as the unprivileged SANDBOX_UID with no capabilities and no_new_privs."""
    def body():
        st = _status()
        try:
            os.setuid(0)
            regained = True
        except PermissionError:
            regained = False
        return {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
                "caps": [st[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
                "nnp": st["NoNewPrivs"], "regained": regained}

    res, _ = run(body)
    assert res["uid"] != 0 and res["euid"] != 0 and not res["regained"]
    if IS_ROOT:
        assert res["uid"] == uids.SANDBOX_UID and res["gid"] == uids.SANDBOX_GID
        assert res["groups"] == []
    assert all(int(c, 16) == 0 for c in res["caps"]), res["caps"]
    assert res["nnp"] == "1"


def test_environment_is_scrubbed(run, monkeypatch):
    """The sandbox's environment holds only SANDBOX_ENV, nothing of the parent's."""
    monkeypatch.setenv("GRADER_TEST_SECRET", "hunter2")

    def body():
        env_out = subprocess.run(["/usr/bin/env"], capture_output=True, text=True, timeout=20).stdout
        return {"environ": dict(os.environ), "env_out": env_out}

    res, _ = run(body)
    assert res["environ"] == sandbox.SANDBOX_ENV
    assert "hunter2" not in res["env_out"] and "GRADER_TEST_SECRET" not in res["env_out"]
    assert dict(line.split("=", 1) for line in res["env_out"].splitlines()) == sandbox.SANDBOX_ENV


def test_no_loopback_to_host(run):
    """A TCP listener of the test process on 127.0.0.1 cannot be reached from inside."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def body():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=3).close()
            return {"connected": True}
        except OSError as e:
            return {"connected": False, "err": errno.errorcode.get(e.errno, str(e)),
                    "ifaces": [n for _, n in socket.if_nameindex()]}

    try:
        res, _ = run(body)
        srv.settimeout(0.2)
        with pytest.raises(socket.timeout):
            srv.accept()
    finally:
        srv.close()
    assert res["connected"] is False, res
    assert res["ifaces"] == ["lo"]


def test_no_public_network(run):
    """Sockets to public addresses cannot connect (TCP) or send (UDP)."""
    def body():
        out = {}
        for host, port in (("1.1.1.1", 80), ("8.8.8.8", 53)):
            try:
                socket.create_connection((host, port), timeout=3).close()
                out[f"tcp {host}"] = "connected"
            except OSError as e:
                out[f"tcp {host}"] = errno.errorcode.get(e.errno, str(e))
        try:
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            u.sendto(b"x", ("8.8.8.8", 53))
            out["udp"] = "sent"
        except OSError as e:
            out["udp"] = errno.errorcode.get(e.errno, str(e))
        return out

    res, _ = run(body)
    assert "connected" not in res.values() and res["udp"] != "sent", res


def test_inherited_fds_are_closed(run):
    """Only keep_fds survive: other inherited fds are closed and stdin is /dev/null."""
    with open(THIS_FILE) as leaked:
        fd = leaked.fileno()

        def body():
            try:
                os.fstat(fd)
                open_ = True
            except OSError:
                open_ = False
            return {"open": open_, "stdin": os.readlink("/proc/self/fd/0"),
                    "fds": sorted(int(n) for n in os.listdir("/proc/self/fd"))}

        res, _ = run(body)
    assert res["open"] is False
    assert res["stdin"] == "/dev/null"
    assert max(res["fds"]) < 64  # 0-2, the kept result pipe, the listdir fd


def test_fork_bomb_is_stopped(run):
    """RLIMIT_NPROC stops a fork bomb after a bounded number of processes."""
    def body():
        forks, err = 0, None
        for _ in range(500):
            try:
                pid = os.fork()
            except OSError as e:
                err = errno.errorcode.get(e.errno)
                break
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            forks += 1
        return {"forks": forks, "err": err}

    t0 = time.monotonic()
    res, _ = run(body, limits=limits_with(processes=16), timeout=20)
    assert res["err"] == "EAGAIN" and res["forks"] < 16, res
    assert time.monotonic() - t0 < 15  # the sleeping children died with the namespace


def test_memory_bomb_raises_memory_error(run):
    """RLIMIT_AS turns a memory bomb into a MemoryError inside the process, not a host OOM."""
    def body():
        out = {}
        try:
            bytearray(64 << 30)
        except MemoryError:
            out["huge"] = "MemoryError"
        chunks, total = [], 0
        try:
            while total < (64 << 10):
                chunks.append(bytes(64 << 20))  # calloc'd: counts towards the limit, touches no RAM
                total += 64
        except MemoryError:
            out["bomb"] = "MemoryError"
        chunks.clear()
        out["reached_mb"] = total
        out["still_works"] = float(torch.ones(1000).sum())
        return out

    res, code = run(body, limits=limits_with(memory_mb=1024))
    assert res["huge"] == "MemoryError" and res["bomb"] == "MemoryError", res
    assert res["reached_mb"] <= 1024 and res["still_works"] == 1000.0 and code == 0


def test_cpu_limit_kills(run):
    """RLIMIT_CPU kills a busy loop, and the supervisor reports it as 128+SIGXCPU ("ran out of CPU time"), on a
    busy machine too: the soft limit is cpu_seconds, the hard one (SIGKILL for pid 1) a margin above it."""
    res, _ = run(lambda: {"cpu": list(resource.getrlimit(resource.RLIMIT_CPU))}, limits=limits_with(cpu_seconds=1))
    assert res["cpu"][0] == 1 and res["cpu"][1] == _cpu_hard_limit(1) > 1

    def body():
        while True:
            pass

    res, code = run(body, limits=limits_with(cpu_seconds=1), timeout=300)  # a hang guard, not a time limit
    assert res is None and code == 128 + signal.SIGXCPU


def test_supervisor_mirrors_exit_code(run):
    """The supervisor exits with the inner process's exit code."""
    res, code = run(lambda: os._exit(7))
    assert res is None and code == 7


def test_zygote_ignoring_sigchld(run):
    """A zygote that ignores SIGCHLD still gets the exit status, and the handler is restored inside."""
    def before():
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    res, code = run(lambda: {"ign": signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN}, before=before)
    assert res["ign"] is True and code == 0
    res, code = run(lambda: os._exit(5), before=before)
    assert res is None and code == 5


def test_expose_cuda_without_a_gpu(run):
    """expose_cuda adds only /dev/nvidia* nodes (none here) and drops RLIMIT_AS (CUDA reserves huge ranges), a soft
    bound inherited from a grading process (``memory.bound_grading_memory``) included: it stayed when the test ran
    after an in-process grade."""
    def bounded_grading_process():
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))

    host_nvidia = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
    res, _ = run(lambda: {"dev": sorted(os.listdir("/dev")), "as": resource.getrlimit(resource.RLIMIT_AS)[0]},
                 expose_cuda=True, before=bounded_grading_process)
    assert res["desc"] == "namespaces"
    assert res["dev"] == sorted(["fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout",
                                 "urandom", "zero", *host_nvidia])
    assert res["as"] == resource.RLIM_INFINITY


def _daemonize_holding(fd: int):
    """Double fork (+ setsid where allowed): a grandchild that holds only fd, sleeping."""
    pid = os.fork()
    if pid == 0:
        try:
            try:
                os.setsid()
            except PermissionError:  # refused by the syscall filter: a double fork alone
                pass
            if os.fork() == 0:
                os.closerange(3, fd)
                os.closerange(fd + 1, 1 << 16)
                time.sleep(60)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    os.close(fd)
    return {"daemonized": True}


def _eof_within(fd: int, seconds: float) -> bool:
    return bool(select.select([fd], [], [], seconds)[0]) and os.read(fd, 1) == b""


def test_daemon_dies_when_supervisor_is_killed(spawn):
    """A double-forked, setsid'ed daemon dies when the grader SIGKILLs the supervisor."""
    r, w = os.pipe()
    try:
        child = spawn(lambda: _daemonize_holding(w), keep=(w,), linger=True)
        os.close(w)
        w = None
        res = child.result()
        assert res.get("daemonized"), res
        assert not select.select([r], [], [], 0.3)[0], "the daemon should still be alive"
        os.kill(child.pid, signal.SIGKILL)
        assert _eof_within(r, 5), "the daemon outlived the supervisor"
        assert child.wait() == 137
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


def _pid_namespace_members(namespace: str) -> list[int]:
    """The pids (this namespace's numbers) of the processes, zombies included, in pid namespace ``namespace``."""
    found = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if entry.isdigit() and os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                found.append(int(entry))
    return found


def test_sigterm_ends_the_sandbox_and_leaves_nothing_for_init_to_reap(spawn):
    """SIGTERM to the supervisor (how the grader ends a worker) kills everything in the sandbox and the supervisor
    exits only once all of it is reaped: no process of it is left, not even a zombie for init to reap (on a machine
    whose init never reaps, such zombies filled the sandbox uid's process limit)."""
    r, w = os.pipe()
    try:
        child = spawn(lambda: _daemonize_holding(w), keep=(w,), linger=True)
        os.close(w)
        w = None
        assert child.result().get("daemonized")
        inner = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if parent_of(pid) == child.pid]
        assert len(inner) == 1, inner
        namespace = os.readlink(f"/proc/{inner[0]}/ns/pid")
        assert len(_pid_namespace_members(namespace)) >= 2  # the inner process and the daemon, readable here
        os.kill(child.pid, signal.SIGTERM)
        assert child.wait() == 128 + signal.SIGKILL
        assert _pid_namespace_members(namespace) == []
        assert _eof_within(r, 0)
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


def test_a_terminals_signals_leave_the_sandbox_running(spawn):
    """SIGINT, SIGHUP and SIGQUIT sent to the grading's process group (Ctrl-C on a script that put the batch in the
    background, a `nohup` batch whose SSH session dropped) leave the supervisor and its check running: only the
    grading process acts on them (walk-through 8: the supervisor died, and the check was charged to the student)."""
    r, w = os.pipe()

    def body():
        os.write(w, b"1")
        time.sleep(1.5)
        return {"slept": True}

    try:
        child = spawn(body, keep=(w,))
        assert select.select([r], [], [], 30)[0] and os.read(r, 1) == b"1"
        time.sleep(0.2)
        for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            os.kill(child.pid, sig)
        assert child.result().get("slept") is True
        assert child.wait() == 0
    finally:
        os.close(r)
        os.close(w)


def test_parent_death_signal_cannot_be_cleared(spawn):
    """Student code cannot unset its parent-death signal, so killing the supervisor still kills it."""
    r, w = os.pipe()

    def body():
        libc = ctypes.CDLL(None, use_errno=True)
        cleared = libc.prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG, 0
        return {"cleared": cleared, "errno": errno.errorcode.get(ctypes.get_errno())}

    try:
        child = spawn(body, keep=(w,), linger=True)  # the inner process itself holds w
        os.close(w)
        w = None
        res = child.result()
        assert res["cleared"] == -1 and res["errno"] == "EPERM", res
        assert not select.select([r], [], [], 0.2)[0]
        os.kill(child.pid, signal.SIGKILL)
        assert _eof_within(r, 5), "the sandboxed process outlived its supervisor"
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


def test_daemon_dies_when_inner_process_exits(spawn):
    """A double-forked, setsid'ed daemon dies when the sandboxed process (pid 1) exits."""
    r, w = os.pipe()
    try:
        child = spawn(lambda: _daemonize_holding(w), keep=(w,))
        os.close(w)
        w = None
        assert child.result().get("daemonized")
        assert child.wait() == 0
        assert _eof_within(r, 5), "the daemon outlived the sandbox"
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


# --------------------------------------------------------------------------- the syscall filter, keyrings, channels

SYSCALLS = syscalls.NATIVE_ABIS.get(platform.machine(), (0, {}))[1]
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING = -2, -3
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_SEARCH = 0, 1, 10
HOST_SECRET = b"grader-test-host-secret"
CHANNELS = REPO / "tests" / "grading" / "hostile" / "channels" / "quiz.py"
# Where the kernel may refuse these to any unprivileged process (user namespaces, ptrace, io_uring turned off).
REFUSED_BY_SOME_KERNELS = {"unshare", "clone", "ptrace", "io_uring_setup"}


def _result(ret: int) -> str:
    """'ok', or the errno's name of a failed libc call."""
    return "ok" if ret != -1 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def _raw(name: str, *args) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return libc.syscall(ctypes.c_long(SYSCALLS[name]), *args)


def _os_result(call) -> str:
    try:
        call()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def _in_child(call) -> str:
    """call() in a forked child, which it may change; its result ("died" if it reported nothing)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, call().encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out or "died"


def _clone_new_user() -> str:
    ret = _raw("clone", syscalls.CLONE_NEWUSER | signal.SIGCHLD, 0, 0, 0, 0)
    if ret == 0:  # the new process, had the clone worked
        os._exit(0)
    return _result(ret)


def _probe_refused_calls() -> dict:
    """Each call the filter refuses, with arguments an unprivileged process may use: without the filter it
    works, or fails with another errno than EPERM."""
    libc = ctypes.CDLL(None, use_errno=True)
    handle, mount_id = ctypes.create_string_buffer(64), ctypes.c_int()  # handle_bytes 0: EOVERFLOW unfiltered
    probes = {
        "add_key": lambda: _result(_raw("add_key", b"user", b"grader-probe", b"x", 1, KEY_SPEC_PROCESS_KEYRING)),
        "keyctl": lambda: _result(_raw("keyctl", KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)),
        "request_key": lambda: _result(_raw("request_key", b"user", b"grader-probe", None, 0)),
        "ptrace": lambda: _result(libc.ptrace(0, 0, None, None)),  # PTRACE_TRACEME
        "process_vm_readv": lambda: _result(_raw("process_vm_readv", os.getpid(), None, 0, None, 0, 0)),
        "kcmp": lambda: _result(_raw("kcmp", os.getpid(), os.getpid(), 0, 0, 0)),  # KCMP_FILE, fd 0 and fd 0
        "unshare": lambda: _result(libc.unshare(syscalls.CLONE_NEWUSER)),
        "clone": _clone_new_user,
        "clone3": lambda: _result(_raw("clone3", None, 0)),
        "userfaultfd": lambda: _result(_raw("userfaultfd", 1)),  # UFFD_USER_MODE_ONLY
        "io_uring_setup": lambda: _result(_raw("io_uring_setup", 1, ctypes.create_string_buffer(120))),
        "open_tree": lambda: _result(_raw("open_tree", rootfs.AT_FDCWD, b"/", 0)),
        "name_to_handle_at": lambda: _result(_raw("name_to_handle_at", rootfs.AT_FDCWD, b"/", handle,
                                                  ctypes.byref(mount_id), 0)),
        "personality": lambda: _result(libc.personality(0x0008)),  # PER_LINUX32
        "setsid": lambda: _os_result(os.setsid),
        "setpgid": lambda: _os_result(lambda: os.setpgid(0, 0)),
    }
    if platform.machine() == "x86_64":
        probes["x32 getpid"] = lambda: _result(libc.syscall(ctypes.c_long(0x40000000 | 39)))
    return {name: _in_child(probe) for name, probe in probes.items()}


def _probe_allowed_calls() -> dict:
    """What Python and torch need keeps working: fork, threads (glibc falls back from clone3 to clone),
    subprocesses, the personality query, naming a thread."""
    libc = ctypes.CDLL(None, use_errno=True)

    def thread() -> str:
        done = []
        t = threading.Thread(target=lambda: done.append(1))
        t.start()
        t.join()
        return "ok" if done else "no thread"

    def forked() -> str:
        pid = os.fork()
        if pid == 0:
            os._exit(3)
        return "ok" if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 3 else "bad status"

    probes = {"fork": forked, "thread": thread,
              "subprocess": lambda: "ok" if subprocess.run(["/bin/true"], timeout=30).returncode == 0 else "failed",
              "personality query": lambda: _result(libc.personality(0xFFFFFFFF)),
              "prctl(PR_SET_NAME)": lambda: _result(libc.prctl(15, b"probe", 0, 0, 0))}
    return {name: _in_child(probe) for name, probe in probes.items()}


def _without(*names):
    """A `before` hook: the forked child's sandbox skips these setup steps (to show what each one stops)."""
    def before():
        for name in names:
            assert callable(getattr(sandbox, name)), name  # a step confine() calls by this name
            setattr(sandbox, name, lambda: None)
    return before


def test_syscall_filter_refuses_the_kernels_dangerous_calls(run):
    """Keyrings, ptrace and other processes' memory, new namespaces (unshare, clone with CLONE_NEW*; clone3
    says ENOSYS), io_uring, userfaultfd, the new mount API, file handles, other personalities, new sessions
    and process groups, and the x32 ABI are refused with EPERM; fork, threads and subprocesses still work.
    Without the filter the same calls are not refused here (so the refusals are the filter's)."""
    res, _ = run(lambda: {"refused": _probe_refused_calls(), "allowed": _probe_allowed_calls(),
                          "seccomp": _status()["Seccomp"]})
    assert res["seccomp"] == "2"  # SECCOMP_MODE_FILTER
    expected = {name: "ENOSYS" if name == "clone3" else "EPERM" for name in res["refused"]}
    assert res["refused"] == expected
    assert set(res["allowed"].values()) == {"ok"}, res["allowed"]

    unfiltered, _ = run(_probe_refused_calls, before=_without("install_syscall_filter"))
    del unfiltered["desc"], unfiltered["confine_ms"]
    refused_anyway = {name: got for name, got in unfiltered.items()
                      if got == "EPERM" and name not in REFUSED_BY_SOME_KERNELS}
    assert refused_anyway == {}, unfiltered


def test_syscall_numbers_name_the_kernels_calls():
    """Every refused name is a system call of x86_64 (and those of aarch64 that exist there); where the kernel
    headers are installed, every number is theirs."""
    assert set(seccomp.DENIED_SYSCALLS) <= set(syscalls.X86_64_SYSCALLS)
    headers = {"x86_64": ("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"),
               "generic": ("/usr/include/asm-generic/unistd.h",)}
    tables = {"x86_64": syscalls.X86_64_SYSCALLS, "generic": syscalls.GENERIC_SYSCALLS}
    checked = 0
    for kind, table in tables.items():
        header = next((h for h in headers[kind] if os.path.exists(h)), None)
        if header is None:
            continue
        defined = {name: int(nr) for name, nr in re.findall(r"#define __NR_(\w+)\s+(\d+)", Path(header).read_text())}
        newest = max(defined.values())
        for name, number in table.items():  # a name these headers lack must be newer than all they define
            assert defined.get(name, number) == number and (name in defined or number > newest), (kind, name)
        checked += 1
    if not checked:
        pytest.skip("no kernel headers (linux-libc-dev) installed to check the numbers against")


def _join_host_session_keyring() -> None:
    """A `before` hook: the grader runs in a session keyring holding a secret (a systemd service, a login)."""
    assert _raw("keyctl", KEYCTL_JOIN_SESSION_KEYRING, b"grader-test-host-session") != -1, _result(-1)
    assert _raw("add_key", b"user", HOST_SECRET, b"hunter2", 7, KEY_SPEC_SESSION_KEYRING) != -1, _result(-1)


def _in_host_session(*skipped):
    """A `before` hook: the host session keyring above, and the sandbox skips these setup steps."""
    def before():
        _join_host_session_keyring()
        _without(*skipped)()
    return before


def _look_for_host_secret() -> dict:
    with open("/proc/keys") as f:
        listed = f.read()
    return {"search": _result(_raw("keyctl", KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, b"user", HOST_SECRET, 0)),
            "listed": HOST_SECRET.decode() in listed}


@pytest.mark.skipif(not os.path.exists("/proc/keys"), reason="this kernel has no keyrings")
def test_host_session_keyring_is_out_of_reach(run):
    """The grader's session keyring and its keys are out of the worker's reach: the worker runs in a fresh
    session keyring of its own, the filter refuses the keyring calls, and /proc/keys is empty. Without the
    fresh keyring and the filter the worker finds the secret (the attack works here)."""
    res, _ = run(_look_for_host_secret, before=_in_host_session())
    assert res["search"] == "EPERM" and res["listed"] is False
    alone, _ = run(_look_for_host_secret, before=_in_host_session("install_syscall_filter"))
    assert alone["search"] == "ENOKEY" and alone["listed"] is False
    exposed, _ = run(_look_for_host_secret, before=_in_host_session("install_syscall_filter",
                                                                    "_join_fresh_session_keyring"))
    assert exposed["search"] == "ok"


@pytest.fixture
def channels_sub():
    """A submission holding tests/grading/hostile/channels/quiz.py, readable by the sandbox uid."""
    folder = tempfile.mkdtemp(prefix="sandbox-channels-", dir="/tmp")
    shutil.copy(CHANNELS, Path(folder, "quiz.py"))
    os.chmod(Path(folder, "quiz.py"), 0o644)
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _run_channels() -> dict:
    """tests/grading/hostile/channels run in the sandbox: what it found of another worker's messages, what it left."""
    module = runpy.run_path(f"{rootfs.SUBMISSION_DIR}/quiz.py")
    return {"found": module["FOUND"], "wrote": module["WROTE"]}


def test_nothing_passes_between_workers(spawn, channels_sub):
    """Two workers of the same uid, the first still running (its messages alive, its abstract socket bound):
    the second finds nothing the first left in the keyrings, /tmp, /dev/shm, SysV shared memory, message
    queues and semaphores, POSIX message queues or abstract unix sockets. The keyrings refuse the message."""
    writer = spawn(_run_channels, sub=channels_sub, linger=True)
    first = writer.result()
    assert "error" not in first, first.get("traceback")
    assert first["wrote"] == ["/tmp", "/dev/shm", "sysv shm", "sysv msg", "sysv sem", "mqueue", "abstract socket"]
    reader = spawn(_run_channels, sub=channels_sub)
    second = reader.result()
    assert "error" not in second, second.get("traceback")
    assert os.waitpid(writer.pid, os.WNOHANG) == (0, 0), "the first worker ended before the second looked"
    assert first["found"] == [] and second["found"] == []


def test_torch_works_inside(run):
    """torch (imported before confine) computes attention with autograd inside; a fresh interpreter imports it too."""
    def body():
        torch.manual_seed(0)
        x = torch.randn(2, 5, 8)
        w = torch.randn(8, 24, requires_grad=True)
        q, k, v = (x @ w).split(8, dim=-1)
        out = torch.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, dim=-1) @ v
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        out.sum().backward()
        fresh = subprocess.run([sys.executable, "-c", "import torch; print(torch.arange(4).sum().item())"],
                               capture_output=True, text=True, timeout=60)
        return {"close": bool(torch.allclose(out, ref, atol=1e-5)), "grad": list(w.grad.shape),
                "fresh": fresh.stdout.strip(), "fresh_err": fresh.stderr[-2000:]}

    res, code = run(body, timeout=60)
    assert res["close"] and res["grad"] == [8, 24] and code == 0
    assert res["fresh"] == "6", res["fresh_err"]


def test_confine_time_and_address_space(run):
    """Confining is fast and the default memory limit leaves torch plenty of address space."""
    res, _ = run(lambda: {"vm_kb": int(_status()["VmSize"].split()[0]),
                          "as": list(resource.getrlimit(resource.RLIMIT_AS))})
    assert res["confine_ms"] < 2000
    assert res["as"][0] == sandbox.PROBE_LIMITS.memory_mb << 20
    assert res["vm_kb"] * 1024 < res["as"][0] // 2


def test_degrades_to_rlimits_without_namespaces(run, sub):
    """Without namespaces confine applies rlimits (and the syscall filter) only and says why; with require=True
    it raises, saying why and how to allow the sandbox or grade trusted code without it."""
    def body():
        sandbox._probe_result = (False, "forced by the test")
        try:
            sandbox.confine(sub, sandbox.PROBE_LIMITS, require=True)
            raised = None
        except sandbox.SandboxUnavailable as e:
            raised = str(e)
        desc = sandbox.confine(sub, limits_with(cpu_seconds=5, file_size_mb=1, processes=100),
                               keep_fds=(RESULT_FD,))
        return {"raised": raised, "desc": desc, "pid": os.getpid(), "cwd": os.getcwd(),
                "limits": [resource.getrlimit(getattr(resource, f"RLIMIT_{n}"))[0]
                           for n in ("CPU", "FSIZE", "NPROC", "CORE", "AS")],
                "environ": dict(os.environ), "seccomp": _status()["Seccomp"]}

    res, _ = run(body, confine=False)
    assert res["raised"] == sandbox.refusal("forced by the test")
    assert res["raised"].startswith("no sandbox can be built here (forced by the test)")
    assert TRUSTED_OPTION in res["raised"]
    assert res["desc"] == "rlimits only: forced by the test"
    assert res["pid"] != 1 and res["cwd"] == os.path.realpath(sub)
    assert res["limits"] == [5, 1 << 20, 100, 0, sandbox.PROBE_LIMITS.memory_mb << 20]
    assert res["environ"] == sandbox.SANDBOX_ENV
    assert res["seccomp"] == "2"  # the syscall filter too, where the kernel allows it


def test_unprivileged_caller_uses_user_namespace(spawn):
    """Called by a non-root uid, confine uses a user namespace: same isolation, no capabilities."""
    if not IS_ROOT:
        pytest.skip("needs root to become another uid first")

    def body():
        st = _status()
        try:
            socket.create_connection(("127.0.0.1", 9), timeout=2).close()
            net = "connected"
        except OSError as e:
            net = errno.errorcode.get(e.errno)
        return {"uid": os.getuid(), "pid": os.getpid(), "cap_eff": st["CapEff"], "cap_bnd": st["CapBnd"],
                "nnp": st["NoNewPrivs"], "repo": os.path.lexists(str(REPO)), "net": net,
                "host": socket.gethostname(), "top": sorted(os.listdir("/"))}

    child = spawn(body, as_uid=OTHER_UID)
    res = child.result()
    child.wait()
    if "error" in res and "unshare(" in res["error"]:
        pytest.skip(f"unprivileged user namespaces unavailable: {res['error']}")
    assert "error" not in res, res.get("traceback")
    assert res["desc"] == "namespaces" and res["pid"] == 1 and res["uid"] == OTHER_UID
    assert int(res["cap_eff"], 16) == 0 and int(res["cap_bnd"], 16) == 0 and res["nnp"] == "1"
    assert res["repo"] is False and res["net"] != "connected" and res["host"] == "sandbox"


def test_readonly_without_mount_setattr(run):
    """The /proc/self/mountinfo remount fallback (kernels before 5.12) also leaves every bind read-only."""
    def before():
        rootfs._MOUNT_SETATTR_WORKS = False

    def body():
        with open("/proc/self/mountinfo") as f:
            mounts = {line.split()[4]: line.split()[5] for line in f}
        try:
            open("/submission/x", "w").close()
            sub_write = "ok"
        except OSError as e:
            sub_write = errno.errorcode.get(e.errno)
        return {"mounts": mounts, "sub_write": sub_write}

    res, _ = run(body, before=before)
    rw = {"/proc", "/tmp", "/dev/shm", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
    for point, opts in res["mounts"].items():
        assert point in rw or opts.split(",")[0] == "ro", (point, opts)
    assert res["sub_write"] == "EROFS"


def test_plan_masks_a_course_kept_elsewhere(monkeypatch):
    """The root of a course graded from outside the repository (``Zygote(hide=...)``, told to the zygote on its standard input) is
    masked like the repository: its suites and references stay out of the sandbox's view."""
    monkeypatch.setattr(rootfs, "HIDDEN_TREES", ["/usr/share"])
    ops = rootfs.plan_root(None, expose_cuda=False)
    assert ("mask", "/usr/share") in ops
    assert ops.index(("bind", "/usr", "/usr")) < ops.index(("mask", "/usr/share"))
    monkeypatch.setattr(rootfs, "HIDDEN_TREES", [])
    assert ("mask", "/usr/share") not in rootfs.plan_root(None, expose_cuda=False)


def test_an_installed_grader_hides_its_repository_only_where_it_has_one(monkeypatch):
    """Run from its repository the grader hides that folder; installed (not editable) into a site-packages folder,
    which holds no course but the packages workers import, it hides nothing there: that folder used to be hidden as
    "the repository" (masked, and left unbound), so workers could import nothing of what was installed with it."""
    installed = Path(sysconfig.get_path("purelib"))
    assert rootfs.repository(installed / "grader" / "sandbox" / "rootfs.py") is None
    assert rootfs.repository(REPO / "grader" / "sandbox" / "rootfs.py") == REPO
    monkeypatch.setattr(rootfs, "REPO_ROOT", None)
    monkeypatch.setattr(sys, "path", [*sys.path, str(installed)])
    ops = rootfs.plan_root(None, expose_cuda=False)
    assert not [op for op in ops if op[0] == "mask" and rootfs._inside(op[1], str(installed.resolve()))], ops
    assert any(op[0] == "bind" and rootfs._inside(str(installed.resolve()), op[1]) for op in ops), ops


def test_plan_masks_and_excludes_the_repo(monkeypatch):
    """A hidden tree under a bound directory is masked; sys.path entries around the repo are not bound."""
    monkeypatch.setattr(rootfs, "REPO_ROOT", Path("/usr/share"))
    ops = rootfs.plan_root(None, expose_cuda=False)
    assert ("mask", "/usr/share") in ops
    assert ops.index(("bind", "/usr", "/usr")) < ops.index(("mask", "/usr/share"))

    monkeypatch.setattr(rootfs, "REPO_ROOT", REPO)
    monkeypatch.setattr(sys, "path", [*sys.path, str(REPO), str(REPO.parent), str(REPO / "grader")])
    bound = {op[1] for op in rootfs.plan_root(None, expose_cuda=False) if op[0] == "bind"}
    assert not any(rootfs._inside(b, str(REPO)) or rootfs._inside(str(REPO), b) for b in bound), bound
